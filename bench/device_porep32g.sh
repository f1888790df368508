#!/usr/bin/env bash
# One call on the lent GPU for issue 16: bench.porep32g (parameters generated on the GPU from the
# partition PCE and kept there; every partition proof verified by the engine) first on 2KiB (GATE,
# default StackedDrg2KiBV1_1, 2 proofs: the same path at a small shape), then, only if that passed,
# PROOFS (default 5) synthetic 32GiB C1s; with CPU_WITNESS=1 the 32GiB run again with
# pipeline.gpu_witness = false (the witnesses on the host's 16 cores; SKIP_GPU_WITNESS=1 runs only
# that one); TESTS=1 runs the GPU tests of the setup, .params upload, backend and engine first. If the
# gate fails, the GPU setup's own tests run instead, to say why. SYNTHESIS (default 4) synthesis processes: with the
# cores shared out among them one packs a 32GiB partition in ~0.02 s (session 6), so any count keeps
# up. The PCE of the 32GiB partition is built on first use (~1 min on 16 cores); session 6's 5-proof
# GPU-witness run took 225 s from a fresh start, so keep GPU_S >= 300. Run from the repository root
# with .whl carried; JSON lines, timelines and their PNGs in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
porep() {  # porep() LOG TIMEOUT ARGS...
  local log=$1 limit=$2; shift 2
  timeout -k 20 "$limit" python3 -m bench.porep32g --backend cuda --synthesis ${SYNTHESIS:-4} --out "$OUT/results" "$@" 2>&1 \
    | grep -v -e "^cuzk: setup points" -e "it/s\]$" | tee -a "$OUT/$log" | tail -${TAIL:-8}
  return "${PIPESTATUS[0]}"
}
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
if [ -n "${TESTS:-}" ]; then  # the GPU tests of what this pipeline uses, first (TESTS=1)
  step "gpu tests: setup, .params on the device, backend, engine"
  timeout ${TESTS_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/backend/cuda/test_setup.py \
    tests/groth16/test_params_device.py tests/backend/cuda/test_backend.py tests/engine/test_multi_gpu.py 2>&1 \
    | tee "$OUT/gpu_tests.log" | tail -8
fi
if [ "${GATE:-StackedDrg2KiBV1_1}" != none ]; then
  step "gate: ${GATE:-StackedDrg2KiBV1_1}, GPU setup + engine"
  if ! porep gate.log ${GATE_S:-150} --proof ${GATE:-StackedDrg2KiBV1_1} --proofs 2; then
    step "gate failed: the GPU setup's tests"
    timeout 200 python3 -m pytest -q -x -p no:cacheprovider -m gpu -rs tests/backend/cuda/test_setup.py 2>&1 \
      | tee "$OUT/gpu_tests.log" | tail -30
    exit 1
  fi
fi
if [ -z "${SKIP_GPU_WITNESS:-}" ]; then
  step "32GiB, GPU witness"
  porep porep32g.log ${GPU_S:-420} --proof ${PROOF:-StackedDrg32GiBV1_1} --proofs ${PROOFS:-5}
fi
if [ -n "${CPU_WITNESS:-}" ]; then
  step "32GiB, witness on the host's cores"
  porep porep32g_cpu.log ${CPU_S:-400} --proof ${PROOF:-StackedDrg32GiBV1_1} --proofs ${CPU_PROOFS:-${PROOFS:-5}} --cpu-witness
fi
step "done"
