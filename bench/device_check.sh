#!/usr/bin/env bash
# One call on the lent GPU machine: the gpu-marked tests, `cuzk selftest` on the CUDA backend and
# the Groth16 prove bench on it. Run from the repo root with .whl (py-arkworks wheel) carried;
# compiled kernels are cached in $CUZK_CACHE_DIR. Logs and JSON lines land in $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1 CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cuzk-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,memory.used --format=csv | tee "$OUT/gpu.txt"
timeout 300 python3 -m pytest -q -m gpu tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -4
timeout 120 python3 -m cuzk.cli selftest --backend cuda --log-n 10 2>&1 | tee "$OUT/selftest.log"
timeout 300 python3 -m bench prove --backend cuda --log-sizes ${PROVE_SIZES:-16,20} --repeat 5 2>&1 | tee "$OUT/prove.log"
cp bench/results/prove_cuda.jsonl bench/results/setup_cpu.jsonl "$OUT/" 2>/dev/null
