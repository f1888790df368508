#!/usr/bin/env bash
# One call on the lent GPU for the PCE (issue 12): the GPU tests of the template-form kernels and
# of proving, then bench.pce for 2KiB, 8MiB and one 32GiB partition (CPU and CUDA). Run from the
# repository root with .whl carried; JSON lines land in $OUT/results, logs in $OUT/run.tgz.
set -uo pipefail
FINAL=${OUT:-/tmp/out}; OUT=/tmp/run; mkdir -p "$OUT/results" "$FINAL"
. bench/device_env.sh
nvidia-smi --query-gpu=name,compute_cap,memory.used,memory.total --format=csv,noheader
step "gpu tests"
timeout 240 python3 -m pytest -q -p no:cacheprovider -m "gpu" -rs tests/backend/cuda/test_pce.py tests/backend/cuda/test_backend.py \
  tests/backend/test_interface.py tests/groth16/test_prove_cuda.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
timeout 120 python3 -m pytest -q -p no:cacheprovider -m "gpu and slow" -rs tests/backend/cuda/test_pce.py 2>&1 | tee "$OUT/gpu_slow.log" | tail -4
for proof in StackedDrg2KiBV1_1 StackedDrg8MiBV1_1; do
  step "bench.pce $proof"
  timeout 120 python3 -m bench.pce --proof $proof --backends cpu,cuda --reps 5 --out "$OUT/results" 2>&1 | tee "$OUT/pce_$proof.log" | tail -6
done
step "bench.pce 32GiB partition"
timeout 300 python3 -m bench.pce --proof StackedDrg32GiBV1_1 --backends cpu,cuda --reps 3 --no-flat --out "$OUT/results" 2>&1 | tee "$OUT/pce_32g.log" | tail -6
cp -r "$OUT/results" "$FINAL/"
tar czf "$FINAL/run.tgz" -C "$OUT" .
