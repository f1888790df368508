#!/usr/bin/env bash
# One call on the lent GPU for .params files on the GPU (issue 16: upload_params, export_params):
#   bash bench/device_params_stream.sh [all|tests|bench] [GIB]     (all: both, within one 10-minute call)
# tests: the params_points module compiled (NVRTC, with its register counts), then the GPU tests of
# the upload (every kind of corrupt point, G1 and G2, against the host reader's error; proofs with the
# uploaded vectors; their export equal to the file) and of the export of a GPU setup's device-held
# vectors. bench: bench.params_stream on a generated GIB-GiB file (default 16) in /var/tmp: cold disk
# read vs cold upload, warm upload, export. Run from the repository root (.whl carried when the device
# needs wheels); JSON lines land in $OUT/results, logs in $OUT; cubins are cached in /tmp/cache.
set -uo pipefail
MODE=${1:-all}
GIB=${2:-16}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
nvidia-smi --query-gpu=name,compute_cap,memory.used,memory.total --format=csv,noheader
df -h /var/tmp | tail -1
step "compile: params_points"
timeout 120 python3 -c "
from cuzk.backend.cuda import loader
(b,) = loader.build(['params_points'], loader.arch())
print(f'{b.module} {b.seconds:.1f} s{\" (cached)\" if b.cached else \"\"}')
for k in loader.MODULES['params_points'].kernels:
    print(k, 'registers', loader.function(k).attributes['num_regs'], 'local bytes', loader.function(k).attributes.get('local_size_bytes'))
" 2>&1 | tee "$OUT/compile.log" | grep -v "^cuzk:"
if [ "$MODE" != bench ]; then
  step "gpu tests: upload_params, export_params"
  timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu -rs --durations=8 tests/groth16/test_params_device.py \
    tests/porep/test_params_export.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
fi
if [ "$MODE" != tests ]; then
  step "bench.params_stream ${GIB} GiB"
  timeout 420 python3 -m bench.params_stream --gib "$GIB" --dir /var/tmp --warm --export \
    --out "$OUT/results/params_load_cuda.jsonl" 2>&1 | tee "$OUT/params_stream.log" | tail -20
fi
