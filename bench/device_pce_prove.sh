#!/usr/bin/env bash
# One call on the lent GPU for the PCE (issue 12): a 2KiB sector sealed, `cuzk prove` on the CUDA
# backend in a fresh cache (it says that it builds the PCE and the parameters), again with both
# cached (peak RSS by /usr/bin/time), then bench.pce_prove (with and without the PCE, fresh
# processes). Run from the repository root with .whl carried.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"  # logs and results straight into $OUT: a cut-off run still returns them
. bench/device_env.sh
CUZK=(python3 -c "import sys; from cuzk.cli import main; sys.exit(main())")
cuzk() { "${CUZK[@]}" "$@"; }
step "seal"
cuzk seal /tmp/s2k --seed random --c1 /tmp/c1.json -q
step "first prove (builds PCE and parameters)"
timeout 200 python3 ./bench/peak_rss.py "${CUZK[@]}" prove --c1 /tmp/c1.json --backend cuda -v 2>&1 | tee "$OUT/first.log" | grep -E "PCE|setup|wrote|Maximum resident|total"
step "cached prove"
timeout 120 python3 ./bench/peak_rss.py "${CUZK[@]}" prove --c1 /tmp/c1.json --backend cuda -v 2>&1 | tee "$OUT/cached.log" | grep -E "^\s+(circuit|params|witness|prove.0|verify|total)|Maximum resident"
step "bench.pce_prove"
timeout 150 python3 -m bench.pce_prove --c1 /tmp/c1.json --backend cuda --reps 3 --out "$OUT/results" 2>&1 | tee "$OUT/pce_prove.log" | tail -4
