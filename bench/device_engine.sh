#!/usr/bin/env bash
# One call on the lent GPU for the engine (issue 14): a 2KiB sector sealed, then bench.engine (warm
# latency and sustained throughput per setting, every proof verified). Run from the repository root
# with .whl carried; results and timelines land in $OUT/results.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
. bench/device_env.sh
python3 -c "import sys; from cuzk.cli import main; sys.exit(main())" seal /tmp/s2k --seed random --c1 /tmp/c1.json -q > /dev/null
timeout 240 python3 -m bench.engine --c1 /tmp/c1.json --backend cuda --proofs 4 --settings ${SETTINGS:-1x1,2x2} \
  --out "$OUT/results" 2>&1 | grep -v "compil" | tail -8
