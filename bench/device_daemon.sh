#!/usr/bin/env bash
# One call on the lent GPU for the daemon: a 2KiB sector sealed, then bench.daemon: a real `cuzk daemon
# --backend cuda --allow-setup` subprocess; one SubmitProof on it while it has loaded nothing (daemon_submit,
# cold), that job's proof awaited (the warm-up), LATENCY (default 5) Prove calls one at a time, then PROOFS
# (default 6) proofs through SubmitProof + AwaitProof at once, every proof verified (daemon_prove); the
# daemon's /status, /metrics and log saved. With TESTS=1 first the GPU tests of the engine and the CUDA
# memory budget, and a check that memory.vram_fraction sizes the device's VRAM budget. Run from the
# repository root with .whl carried (grpcio, protobuf, prometheus-client, py-arkworks); results land in
# $OUT/results. The bench is sent SIGTERM (it then stops the daemon and saves its pages) at 420 s.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
if [ "${TESTS:-0}" = 1 ]; then
  step "GPU tests: engine, CUDA memory"
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/engine tests/backend/cuda/test_memory.py 2>&1 | tail -15
  step "memory.vram_fraction"
  timeout 60 python3 -c "
from cuzk.engine import Engine, EngineConfig, MemoryBudget
from cuzk.engine.config import MemoryConfig
with Engine(EngineConfig(memory=MemoryConfig(vram_fraction=0.25)), backend='cuda', budget=MemoryBudget(1 << 36, 'RAM')) as e:
    b = e._devices[0].backend.budget
    print('VRAM budget', b.bytes / 2**30, 'GiB from', b.source)
    assert 'memory.vram_fraction 0.25' in b.source
"
fi
step "seal a 2KiB sector"
timeout 60 python3 -c "import sys; from cuzk.cli import main; sys.exit(main())" seal /tmp/s2k --seed random \
  --c1 /tmp/c1.json -q > /dev/null || exit 1
step "bench.daemon"
timeout -k 45 $((420 - SECONDS)) python3 -m bench.daemon --c1 /tmp/c1.json --backend cuda --proofs "${PROOFS:-6}" \
  --latency-runs "${LATENCY:-5}" --out "$OUT/results" 2>&1 | tee "$OUT/results/bench_daemon.log"
