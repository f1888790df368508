#!/usr/bin/env bash
# One call on the lent GPU for the Groth16 setup on the GPU (issue 16, part 1):
#   bash bench/device_setup.sh [all|tests|bench]      (all: both, within one 10-minute call)
# tests: the setup and prover kernels compiled (NVRTC, timed per module), then the GPU tests of the
# setup and of the PCE evaluation (its kernel now walks the circuit through kernels/pce/walk.cuh,
# shared with the setup's transposed product). bench: bench.setup_gpu for synthetic circuits of 2^20
# and 2^22 rows (stage times, pool peak VRAM, a proof verified against each key; 2^14 also on the
# CPU, the keys compared point for point) and its projection to the 32GiB partition. Run from the
# repository root (.whl carried when the device needs wheels); JSON lines land in $OUT/results, logs
# in $OUT. Cubins are cached in /tmp/cache, so a later call on a warm machine skips the compile.
set -uo pipefail
MODE=${1:-all}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
nvidia-smi --query-gpu=name,compute_cap,memory.used,memory.total --format=csv,noheader
step "compile: setup and prover kernels"
timeout 150 python3 -c "
import time
from cuzk.backend.cuda import loader
t = time.perf_counter()
for b in loader.build([m for m in loader.MODULES if loader.MODULES[m].family != 'test'], loader.arch()):
    print(f'{b.module:20s} {b.seconds:6.1f} s{\" (cached)\" if b.cached else \"\"}')
print(f'wall {time.perf_counter() - t:.1f} s')" 2>&1 | tee "$OUT/compile.log" | grep -v "^cuzk:"
if [ "$MODE" != bench ]; then
  step "gpu tests: setup, PCE"
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rs --durations=8 tests/backend/cuda/test_setup.py \
    tests/backend/cuda/test_pce.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -20
fi
if [ "$MODE" != tests ]; then
  step "bench.setup_gpu 2^14 (and CPU), 2^20, 2^22"
  timeout 230 python3 -m bench.setup_gpu --log-rows 20,22 --cpu-log-rows 14 --out "$OUT/results" 2>&1 \
    | tee "$OUT/setup.log" | grep -v "^cuzk: setup points" | tail -20
fi
