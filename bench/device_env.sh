# Sourced by bench/device_*.sh on the lent GPU, from the repository root: the carried wheels (.whl, when
# there are any) installed into /tmp/site, the checkout and them on PYTHONPATH, the cache in /tmp/cache
# (cubins compiled by an earlier call on a warm machine are reused; cubins built ahead with nvcc, `cuzk gpu
# build --arch sm_90` into .whl/cache, are seeded into it), and step() to head each stage.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl 2>&1 | grep -v WARNING
fi
if [ -d .whl/cache/kernels ]; then mkdir -p /tmp/cache/kernels && cp -n .whl/cache/kernels/*.cubin /tmp/cache/kernels/; fi
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 CUZK_CACHE_DIR=/tmp/cache
step() { echo; echo "== $1 ($(date +%T), ${SECONDS}s)"; }
