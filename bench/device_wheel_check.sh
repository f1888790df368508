#!/usr/bin/env bash
# One call on the lent GPU, all against a wheel of this tree installed into a clean directory (no
# source tree on the path): `cuzk gpu build` from an empty cache (first-use compile), `cuzk selftest
# --backend cuda`, every gpu-marked test, and `cuzk demo --backend cuda` (2KiB sector sealed, proven
# on the GPU, verified). Carry .whl (py-arkworks, py_ecc and its dependencies); logs in $OUT/run.tgz.
. bench/device_wheel.sh
step "first-use build of every prover module (empty cache)"
/usr/bin/time -f "gpu build wall %e s" timeout 120 python3 -m cuzk.cli gpu build 2>&1 | tee "$OUT/gpu_build.log" | tail -13
step "selftest"
timeout 120 python3 -m cuzk.cli selftest --backend cuda 2>&1 | tee "$OUT/selftest.log" | tail -7
step "gpu tests"
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -rs tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
step "demo on the GPU"
/usr/bin/time -f "demo wall %e s, maxrss %M KB" timeout 240 python3 -m cuzk.cli demo --backend cuda 2>&1 | tee "$OUT/demo.log" | tail -9
tar czf "$FINAL/run.tgz" -C "$OUT" .
