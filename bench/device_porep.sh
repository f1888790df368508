#!/usr/bin/env bash
# One call on the lent GPU machine for the PoRep path: the gpu tests, the Groth16 prove bench at
# 2^20, `cuzk demo` on the CUDA backend twice (the first runs the one-time setup of the 2KiB
# circuit, the second proves with cached parameters), then an 8MiB sector sealed, proven and
# verified. Carry .whl (py-arkworks wheel); compiled kernels are cached in $CUZK_CACHE_DIR; logs land
# in $OUT (copy them to bench/logs/ with the date in the name).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1 CUZK_CACHE_DIR=/tmp/cuzk-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 200 python3 -m pytest -q -m gpu tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -3
timeout 120 python3 -m bench prove --backend cuda --log-sizes 20 --repeat 5 2>&1 | tee "$OUT/prove.log" | tail -4
cp bench/results/prove_cuda.jsonl bench/results/setup_cpu.jsonl "$OUT/"
for run in 1 2; do
  /usr/bin/time -v timeout 420 python3 -m cuzk.cli demo --backend cuda -v 2>&1 | tee "$OUT/demo$run.log" \
    | grep -v "^\s*\(Average\|Exit\|Swaps\|File\|Socket\|Signals\|Page\|Minor\|Major\|Volun\|Invol\|Percent\|System\|User\)"
done
d=/tmp/s8; rm -rf $d
timeout 200 python3 -m cuzk.cli seal $d --proof StackedDrg8MiBV1_1 --seed random -q 2>&1 | tail -2
timeout 300 python3 -m cuzk.cli prove --c1 $d/c1.json --out $d/proof --backend cuda -v 2>&1 | tee "$OUT/prove8m.log" | tail -15
python3 -m cuzk.cli verify --c1 $d/c1.json --proof $d/proof 2>&1 | tee -a "$OUT/prove8m.log"
