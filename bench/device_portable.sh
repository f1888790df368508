#!/usr/bin/env bash
# One call on the lent GPU for the portable package: a wheel built from this tree and installed
# into a clean directory (no source tree on the path) runs `cuzk gpu info/build`, `cuzk selftest`
# and the gpu tests; then, from the tree, MSM G1 2^24 / G2 2^22 at the default VRAM budget and
# at 16 GiB, NTT up to 2^24, and the first-use compile of every module from an empty cache.
# Carry .whl (py-arkworks wheel) and .ntt_ref (python -m bench.device_ntt --make-ref ...).
. bench/device_wheel.sh
step "gpu info / first-use build of every prover module (installed package, empty cache)"
python3 -m cuzk.cli gpu info 2>&1 | tee "$OUT/gpu_info.log"
/usr/bin/time -f "gpu build wall %e s, maxrss %M KB" timeout 200 python3 -m cuzk.cli gpu build 2>&1 | tee "$OUT/gpu_build.log" | tail -16
step "selftest (installed)"
timeout 120 python3 -m cuzk.cli selftest --backend cuda 2>&1 | tee "$OUT/selftest.log" | tail -8
step "gpu tests (installed)"
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backend tests/groth16 tests/ec 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
cd "$REPO"
export PYTHONPATH=/tmp/site:.
step "MSM default budget"
timeout 150 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:20,g1:24,g2:20,g2:22 2>&1 | tee "$OUT/msm.log" | tail -12
step "MSM 16 GiB budget"
timeout 120 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:24,g2:22 --vram-budget 16 2>&1 | tee "$OUT/msm16.log" | tail -8
step "NTT"
timeout 90 python3 -m bench.device_ntt --ref .ntt_ref/ref.npz --out "$OUT" --log-sizes 20,22,24 2>&1 | tee "$OUT/ntt.log" | tail -12
step "first-use compile per module, empty caches"
timeout 200 python3 -m bench.device_compile --out "$OUT" 2>&1 | tee "$OUT/compile.log" | tail -16
ls "$OUT"; tar czf "$FINAL/run.tgz" -C "$OUT" .
