#!/usr/bin/env bash
# One call on the lent GPU for issue 16 (run `bash bench/device_setup.sh tests` first: the GPU setup's
# own tests): PROOFS (default 5) synthetic 32GiB C1s through the engine with the parameters generated
# on the GPU from the partition PCE and kept there (bench.porep32g), then the same with the GPU witness
# off (pipeline.gpu_witness = false: the witnesses on the host's 16 cores). Every partition proof is
# verified by the engine. The PCE of the 32GiB partition is built on first use (~1 min on 16 cores).
# Run from the repository root with .whl carried; JSON lines, timelines and their PNGs in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl 2>&1 | grep -v WARNING
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1 CUZK_CACHE_DIR=/tmp/cache
step() { echo; echo "== $1 ($(date +%T), ${SECONDS}s)"; }
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
step "32GiB, GPU witness"
timeout ${GPU_S:-420} python3 -m bench.porep32g --proof ${PROOF:-StackedDrg32GiBV1_1} --proofs ${PROOFS:-5} \
  --backend cuda --out "$OUT/results" 2>&1 | grep -v "^cuzk: setup points" | tee "$OUT/porep32g.log" | tail -8
if [ -n "${CPU_WITNESS:-}" ]; then
  step "32GiB, witness on the host's cores"
  timeout ${CPU_S:-400} python3 -m bench.porep32g --proof ${PROOF:-StackedDrg32GiBV1_1} --proofs ${PROOFS:-5} \
    --backend cuda --cpu-witness --out "$OUT/results" 2>&1 | tee -a "$OUT/porep32g.log" | tail -6
fi
step "done"
