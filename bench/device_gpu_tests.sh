#!/usr/bin/env bash
# One call on the lent GPU: the gpu tests against a wheel built from this tree and installed into a
# clean directory (no source tree on the path), then the first-use compile bench (every module in
# a fresh process and empty cache) and a second sample of the MSM timings. Carry .whl (py-arkworks,
# py_ecc and its dependencies as wheels); everything lands in $OUT/run.tgz.
. bench/device_wheel.sh
step "gpu tests (installed package)"
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider -rs tests/backend tests/groth16 tests/ec 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
cd "$REPO"
export PYTHONPATH=/tmp/site:.
step "first-use compile, each measurement in a fresh process"
timeout 150 python3 -m bench.device_compile --out "$OUT" 2>&1 | tee "$OUT/compile.log" | tail -13
step "MSM, second sample"
timeout 100 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:24,g2:22 2>&1 | tee "$OUT/msm.log" | tail -5
timeout 100 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:24,g2:22 --vram-budget 16 2>&1 | tee "$OUT/msm16.log" | tail -5
tar czf "$FINAL/run.tgz" -C "$OUT" .
