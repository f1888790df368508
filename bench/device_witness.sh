#!/usr/bin/env bash
# One call on the lent GPU for the witness program (issue 13): its GPU tests, then bench.witness for
# 2KiB, 8MiB and one 32GiB partition, CPU (16 cores) and CUDA. Run from the
# repository root with .whl carried; JSON lines land in $OUT/results, logs in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
nvidia-smi --query-gpu=name,compute_cap,memory.used,memory.total --format=csv,noheader
step "gpu tests"
timeout ${TESTS_S:-240} python3 -m pytest -q -x -p no:cacheprovider -m "gpu and not slow" -rs tests/backend/cuda/test_witness.py tests/porep/test_program_witness.py \
  tests/groth16/test_prove_cuda.py tests/backend/cuda/test_pce.py tests/backend/cuda/test_backend.py tests/backend/test_interface.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
step "gpu slow: a 2KiB proof from the GPU witness"
timeout 200 python3 -m pytest -q -p no:cacheprovider -m "gpu and slow" -rs tests/porep/test_program_witness.py 2>&1 | tee "$OUT/gpu_slow.log" | tail -4
for args in "StackedDrg2KiBV1_1 --partitions 1 --gadgets" "StackedDrg8MiBV1_1 --partitions 2"; do
  set -- $args
  step "bench.witness $args"
  timeout 100 python3 -m bench.witness --proof $args --backends cpu,cuda --reps 5 --grids ${GRIDS:-0,132} --out "$OUT/results" 2>&1 | tee -a "$OUT/witness.log" | tail -6
done
step "bench.witness 32GiB partitions"
timeout 240 python3 -m bench.witness --proof StackedDrg32GiBV1_1 --partitions ${P32:-2} --backends cpu,cuda --reps 2 --out "$OUT/results" 2>&1 | tee -a "$OUT/witness.log" | tail -6
