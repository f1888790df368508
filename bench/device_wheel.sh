# Sourced by the device scripts: carried wheels into /tmp/site, a wheel of this tree built and
# installed into /tmp/inst, the tests copied to /tmp/clean (no source tree), and the shell left
# there with PYTHONPATH on the installed package. Logs go to $OUT=/tmp/run, packed by the caller.
set -uo pipefail
REPO=$PWD; FINAL=${OUT:-/tmp/out}; OUT=/tmp/run; mkdir -p "$OUT" "$FINAL"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl 2>&1 | grep -v WARNING
export PYTHONUNBUFFERED=1
step() { echo; echo "== $1 ($(date +%T))"; }
nvidia-smi --query-gpu=name,compute_cap,clocks.sm,memory.used,memory.total --format=csv | tee "$OUT/gpu.txt"
step "wheel"
python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/dist . 2>&1 | tail -2
python3 -m pip install -q --no-deps --no-index --upgrade --target /tmp/inst /tmp/dist/cuzk-*.whl || exit 1
mkdir -p /tmp/clean && cp -r tests pyproject.toml /tmp/clean/
cd /tmp/clean
export PYTHONPATH=/tmp/inst:/tmp/site CUZK_CACHE_DIR=/tmp/cache-installed
python3 -c "import cuzk; print('cuzk from', cuzk.__file__)"
