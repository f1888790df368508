#!/usr/bin/env bash
# One call on the lent GPU for the engine (issue 14) and the daemon (issue 15): a 2KiB and an 8MiB
# sector sealed; bench.engine on 2KiB over SETTINGS (warm latency, sustained proofs/hour, timelines);
# bench.daemon (2KiB through a real `cuzk daemon --backend cuda`); bench.engine on 8MiB last (its
# parameters are generated on the host's cores by the warm-up proof). Every proof verified. Run from
# the repository root with .whl carried; results land in $OUT/results.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
cli() { python3 -c "import sys; from cuzk.cli import main; sys.exit(main())" "$@"; }
cli seal /tmp/s2k --seed random --c1 /tmp/c1.json -q > /dev/null || exit 1
cli seal /tmp/s8m --proof StackedDrg8MiBV1_1 --seed random --c1 /tmp/c8.json -q > /dev/null || exit 1
step "engine 2KiB"
timeout 200 python3 -m bench.engine --c1 /tmp/c1.json --backend cuda --proofs ${PROOFS:-6} \
  --settings ${SETTINGS:-1x1,2x1x8,2x2x8} --out "$OUT/results" 2>&1 | grep -v "compil" | tail -5
step "daemon 2KiB"
timeout -k 30 ${DAEMON_S:-150} python3 -m bench.daemon --c1 /tmp/c1.json --backend cuda --proofs ${PROOFS:-6} \
  --latency-runs 3 --out "$OUT/results" 2>&1 | tee "$OUT/results/bench_daemon.log" | tail -12
step "engine 8MiB"
timeout ${E8_S:-150} python3 -m bench.engine --c1 /tmp/c8.json --backend cuda --proofs 4 \
  --settings ${SETTINGS8:-1x1,2x1x8} --out "$OUT/results" 2>&1 | grep -v "compil" | tail -4
step "done"
