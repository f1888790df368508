#!/usr/bin/env bash
# One call on the lent GPU: the gpu tests against a wheel built from this tree and installed into a
# clean directory (no source tree on the path), then the first-use compile bench (every module in
# a fresh process and empty cache) and a second sample of the MSM timings. Carry .whl (py-arkworks,
# py_ecc and its dependencies as wheels); everything lands in $OUT/run.tgz.
set -uo pipefail
REPO=$PWD; FINAL=${OUT:-/tmp/out}; OUT=/tmp/run; mkdir -p "$OUT" "$FINAL"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
step() { echo; echo "== $1 ($(date +%T))"; }
step "wheel"
python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/dist . 2>&1 | tail -2
python3 -m pip install -q --no-deps --no-index --target /tmp/inst /tmp/dist/cuzk-*.whl || exit 1
mkdir -p /tmp/clean && cp -r tests pyproject.toml /tmp/clean/
cd /tmp/clean
export PYTHONPATH=/tmp/inst:/tmp/site CUZK_CACHE_DIR=/tmp/cache-installed
python3 -c "import cuzk; print('cuzk from', cuzk.__file__)"
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
