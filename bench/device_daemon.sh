#!/usr/bin/env bash
# One call on the lent GPU for the daemon (issue 15): a 2KiB sector sealed, then bench.daemon: a real
# `cuzk daemon --backend cuda` subprocess, a warm-up proof, 3 Prove calls one at a time, then PROOFS
# (default 6) proofs through SubmitProof + AwaitProof at once, every proof verified; the daemon's
# /status, /metrics and log saved. Run from the repository root with .whl carried (grpcio, protobuf and
# prometheus-client among the wheels); results land in $OUT/results. The call ends within ~4 minutes:
# the bench is sent SIGTERM (it then stops the daemon and saves its pages) at 200 s, killed 45 s later.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
timeout 60 python3 -c "import sys; from cuzk.cli import main; sys.exit(main())" seal /tmp/s2k --seed random \
  --c1 /tmp/c1.json -q > /dev/null || exit 1
timeout -k 45 $((200 - SECONDS)) python3 -m bench.daemon --c1 /tmp/c1.json --backend cuda --proofs "${PROOFS:-6}" \
  --latency-runs 3 --out "$OUT/results" 2>&1 | tee "$OUT/results/bench_daemon.log"
