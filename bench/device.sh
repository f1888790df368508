#!/usr/bin/env bash
# One entry point for a lent GPU machine: `bash bench/device.sh NAME [ARGS]`, from any directory (it
# runs from the repository root). `bash bench/device.sh help` lists the names. Each run is one device
# call of at most 10 minutes; logs and JSON lines land in $OUT (default /tmp/out), mostly $OUT/results.
#
# Set-up shared by every subcommand but the wheel ones (setup_env): the carried wheels (.whl/*.whl,
# when there are any) installed into /tmp/site, the checkout and them on PYTHONPATH, the kernel cache
# in $CUZK_CACHE_DIR (default /tmp/cache: cubins compiled by an earlier call on a warm machine are
# reused; cubins built ahead with nvcc, `cuzk gpu build --arch sm_90` into .whl/cache, are seeded into
# it). The wheel subcommands (gpu-tests, portable, wheel-check; setup_wheel) instead build a wheel of
# this tree, install it into /tmp/inst and run the tests from a copy in /tmp/clean, with no source
# tree on the path.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

usage() {
  cat <<'EOF'
usage: bash bench/device.sh NAME [ARGS]   (from a GPU host; OUT=DIR for the output, default /tmp/out)
  check           gpu tests, `cuzk selftest --backend cuda`, the prove bench (PROVE_SIZES, default 16,20)
  porep           gpu tests, prove bench 2^20, `cuzk demo --backend cuda` twice, an 8MiB sector proven
  pce             GPU tests of the template-form kernels; bench.pce for 2KiB, 8MiB, a 32GiB partition
  pce-prove       a 2KiB sector; `cuzk prove` cold and cached (peak RSS); bench.pce_prove
  witness         GPU tests of the witness program; bench.witness 2KiB, 8MiB, 32GiB (GRIDS, P32, TESTS_S)
  engine          bench.engine on a 2KiB sector (SETTINGS, default 1x1,2x2)
  service         bench.engine 2KiB and 8MiB, bench.daemon (PROOFS, SETTINGS, SETTINGS8, DAEMON_S, E8_S)
  daemon          bench.daemon: cold SubmitProof, warm Prove latency, throughput (PROOFS, LATENCY, TESTS=1)
  seam            gpu tests of the engine, witness program, export, Groth16, backends; then bench.daemon
  msm             gpu MSM tests; bench.device_msm with each MSM's stage split (CASES, default g1:24,g2:22,g1:27)
  porep32g        bench.porep32g: 2KiB gate, then 32GiB (PROOFS, GATE, TESTS, CAP, CPU_WITNESS, SYNTHESIS, ...)
  post            bench.post: 2KiB gate, then a full 32GiB WindowPoSt partition, WinningPoSt warm and beside PoRep
  snap            bench.snap: 2KiB gate, then 32GiB SnapDeals updates, 16 partitions each (PROOFS, SYNTHESIS, NO_ALONE, GATE, SNAP_S)
  setup [MODE]    the GPU Groth16 setup: MODE all | tests | bench (bench.setup_gpu)
  params-stream [MODE] [GIB]   .params upload/export: MODE all | tests | bench, GIB default 16
  gpu-tests       wheel: gpu tests from the installed package, first-use compile, MSM second sample
  portable        wheel: gpu info/build, selftest, gpu tests; from the tree MSM, NTT, compile times
  wheel-check     wheel: `cuzk gpu build` from an empty cache, selftest, all gpu tests, `cuzk demo`
EOF
}

step() { echo; echo "== $1 ($(date +%T), ${SECONDS}s)"; }

CLI=(python3 -c "import sys; from cuzk.cli import main; sys.exit(main())")  # `cuzk` from the checkout
cli() { "${CLI[@]}" "$@"; }

setup_env() {  # the checkout on the path, with the carried wheels and the kernel cache
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl 2>&1 | grep -v WARNING
  fi
  export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cache}
  if [ -d .whl/cache/kernels ]; then
    mkdir -p "$CUZK_CACHE_DIR/kernels" && cp -n .whl/cache/kernels/*.cubin "$CUZK_CACHE_DIR/kernels/"
  fi
}

setup_wheel() {  # a wheel of this tree installed into /tmp/inst; the shell left in /tmp/clean (tests only)
  REPO=$PWD; FINAL=${OUT:-/tmp/out}; OUT=/tmp/run; mkdir -p "$OUT" "$FINAL"
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl 2>&1 | grep -v WARNING
  export PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,compute_cap,clocks.sm,memory.used,memory.total --format=csv | tee "$OUT/gpu.txt"
  step "wheel"
  python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/dist . 2>&1 | tail -2
  python3 -m pip install -q --no-deps --no-index --upgrade --target /tmp/inst /tmp/dist/cuzk-*.whl || exit 1
  mkdir -p /tmp/clean && cp -r tests pyproject.toml /tmp/clean/
  cd /tmp/clean || exit 1
  export PYTHONPATH=/tmp/inst:/tmp/site CUZK_CACHE_DIR=/tmp/cache-installed
  python3 -c "import cuzk; print('cuzk from', cuzk.__file__)"
}

gpu_line() { nvidia-smi --query-gpu=name,compute_cap,memory.used,memory.total --format=csv,noheader; }

seal_2k() { timeout 60 "${CLI[@]}" seal /tmp/s2k --seed random --c1 /tmp/c1.json -q > /dev/null || exit 1; }

cmd_check() {  # the gpu-marked tests, `cuzk selftest` on the CUDA backend, the Groth16 prove bench
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
  setup_env
  nvidia-smi --query-gpu=name,clocks.sm,memory.used --format=csv | tee "$OUT/gpu.txt"
  timeout 300 python3 -m pytest -q -m gpu tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -4
  timeout 120 python3 -m cuzk.cli selftest --backend cuda --log-n 10 2>&1 | tee "$OUT/selftest.log"
  timeout 300 python3 -m bench prove --backend cuda --log-sizes "${PROVE_SIZES:-16,20}" --repeat 5 2>&1 | tee "$OUT/prove.log"
  cp bench/results/prove_cuda.jsonl bench/results/setup_cpu.jsonl "$OUT/" 2>/dev/null
}

cmd_porep() {  # gpu tests, prove bench at 2^20, `cuzk demo` twice (one-time setup, then cached), 8MiB
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
  setup_env
  timeout 200 python3 -m pytest -q -m gpu tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -3
  timeout 120 python3 -m bench prove --backend cuda --log-sizes 20 --repeat 5 2>&1 | tee "$OUT/prove.log" | tail -4
  cp bench/results/prove_cuda.jsonl bench/results/setup_cpu.jsonl "$OUT/"
  for run in 1 2; do
    /usr/bin/time -v timeout 420 python3 -m cuzk.cli demo --backend cuda -v 2>&1 | tee "$OUT/demo$run.log" \
      | grep -v "^\s*\(Average\|Exit\|Swaps\|File\|Socket\|Signals\|Page\|Minor\|Major\|Volun\|Invol\|Percent\|System\|User\)"
  done
  local d=/tmp/s8; rm -rf $d
  timeout 200 python3 -m cuzk.cli seal $d --proof StackedDrg8MiBV1_1 --seed random -q 2>&1 | tail -2
  timeout 300 python3 -m cuzk.cli prove --c1 $d/c1.json --out $d/proof --backend cuda -v 2>&1 | tee "$OUT/prove8m.log" | tail -15
  python3 -m cuzk.cli verify --c1 $d/c1.json --proof $d/proof 2>&1 | tee -a "$OUT/prove8m.log"
}

cmd_pce() {  # GPU tests of the template-form kernels and of proving; bench.pce, CPU and CUDA
  FINAL=${OUT:-/tmp/out}; OUT=/tmp/run; mkdir -p "$OUT/results" "$FINAL"
  setup_env
  gpu_line
  step "gpu tests"
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m "gpu" -rs tests/backend/cuda/test_pce.py tests/backend/cuda/test_backend.py \
    tests/backend/test_interface.py tests/groth16/test_prove_cuda.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m "gpu and slow" -rs tests/backend/cuda/test_pce.py 2>&1 | tee "$OUT/gpu_slow.log" | tail -4
  for proof in StackedDrg2KiBV1_1 StackedDrg8MiBV1_1; do
    step "bench.pce $proof"
    timeout 120 python3 -m bench.pce --proof $proof --backends cpu,cuda --reps 5 --out "$OUT/results" 2>&1 | tee "$OUT/pce_$proof.log" | tail -6
  done
  step "bench.pce 32GiB partition"
  timeout 300 python3 -m bench.pce --proof StackedDrg32GiBV1_1 --backends cpu,cuda --reps 3 --no-flat --out "$OUT/results" 2>&1 | tee "$OUT/pce_32g.log" | tail -6
  cp -r "$OUT/results" "$FINAL/"
  tar czf "$FINAL/run.tgz" -C "$OUT" .
}

cmd_pce_prove() {  # `cuzk prove` in a fresh cache (PCE and parameters built), again cached; bench.pce_prove
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"  # logs and results straight into $OUT: a cut-off run still returns them
  setup_env
  step "seal"
  cli seal /tmp/s2k --seed random --c1 /tmp/c1.json -q
  step "first prove (builds PCE and parameters)"
  timeout 200 python3 ./bench/peak_rss.py "${CLI[@]}" prove --c1 /tmp/c1.json --backend cuda -v 2>&1 | tee "$OUT/first.log" | grep -E "PCE|setup|wrote|Maximum resident|total"
  step "cached prove"
  timeout 120 python3 ./bench/peak_rss.py "${CLI[@]}" prove --c1 /tmp/c1.json --backend cuda -v 2>&1 | tee "$OUT/cached.log" | grep -E "^\s+(circuit|params|witness|prove.0|verify|total)|Maximum resident"
  step "bench.pce_prove"
  timeout 150 python3 -m bench.pce_prove --c1 /tmp/c1.json --backend cuda --reps 3 --out "$OUT/results" 2>&1 | tee "$OUT/pce_prove.log" | tail -4
}

cmd_witness() {  # the witness program's GPU tests, then bench.witness for 2KiB, 8MiB and 32GiB partitions
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  gpu_line
  step "gpu tests"
  timeout "${TESTS_S:-240}" python3 -m pytest -q -x -p no:cacheprovider -m "gpu and not slow" -rs tests/backend/cuda/test_witness.py tests/porep/test_program_witness.py \
    tests/groth16/test_prove_cuda.py tests/backend/cuda/test_pce.py tests/backend/cuda/test_backend.py tests/backend/test_interface.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
  step "gpu slow: a 2KiB proof from the GPU witness"
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m "gpu and slow" -rs tests/porep/test_program_witness.py 2>&1 | tee "$OUT/gpu_slow.log" | tail -4
  local args
  for args in "StackedDrg2KiBV1_1 --partitions 1 --gadgets" "StackedDrg8MiBV1_1 --partitions 2"; do
    step "bench.witness $args"
    # shellcheck disable=SC2086  # $args is the proof and its flags
    timeout 100 python3 -m bench.witness --proof $args --backends cpu,cuda --reps 5 --grids "${GRIDS:-0,132}" --out "$OUT/results" 2>&1 | tee -a "$OUT/witness.log" | tail -6
  done
  step "bench.witness 32GiB partitions"
  timeout 240 python3 -m bench.witness --proof StackedDrg32GiBV1_1 --partitions "${P32:-2}" --backends cpu,cuda --reps 2 --out "$OUT/results" 2>&1 | tee -a "$OUT/witness.log" | tail -6
}

cmd_engine() {  # a 2KiB sector sealed, then bench.engine (warm latency, sustained throughput per setting)
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  cli seal /tmp/s2k --seed random --c1 /tmp/c1.json -q > /dev/null
  timeout 240 python3 -m bench.engine --c1 /tmp/c1.json --backend cuda --proofs 4 --settings "${SETTINGS:-1x1,2x2}" \
    --out "$OUT/results" 2>&1 | grep -v "compil" | tail -8
}

cmd_service() {  # bench.engine on 2KiB over SETTINGS, bench.daemon on 2KiB, bench.engine on 8MiB last
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  cli seal /tmp/s2k --seed random --c1 /tmp/c1.json -q > /dev/null || exit 1
  cli seal /tmp/s8m --proof StackedDrg8MiBV1_1 --seed random --c1 /tmp/c8.json -q > /dev/null || exit 1
  step "engine 2KiB"
  timeout 200 python3 -m bench.engine --c1 /tmp/c1.json --backend cuda --proofs "${PROOFS:-6}" \
    --settings "${SETTINGS:-1x1,2x1x8,2x2x8}" --out "$OUT/results" 2>&1 | grep -v "compil" | tail -5
  step "daemon 2KiB"
  timeout -k 30 "${DAEMON_S:-150}" python3 -m bench.daemon --c1 /tmp/c1.json --backend cuda --proofs "${PROOFS:-6}" \
    --latency-runs 3 --out "$OUT/results" 2>&1 | tee "$OUT/results/bench_daemon.log" | tail -12
  step "engine 8MiB"  # its parameters are generated on the host's cores by the warm-up proof
  timeout "${E8_S:-150}" python3 -m bench.engine --c1 /tmp/c8.json --backend cuda --proofs 4 \
    --settings "${SETTINGS8:-1x1,2x1x8}" --out "$OUT/results" 2>&1 | grep -v "compil" | tail -4
  step "done"
}

cmd_daemon() {
  # A 2KiB sector sealed, then bench.daemon: a real `cuzk daemon --backend cuda --allow-setup`
  # subprocess; one SubmitProof on it while it has loaded nothing (daemon_submit, cold), that job's
  # proof awaited (the warm-up), LATENCY (default 5) Prove calls one at a time, then PROOFS (default 6)
  # proofs through SubmitProof + AwaitProof at once, every proof verified (daemon_prove); the daemon's
  # /status, /metrics and log saved. TESTS=1 first runs the GPU tests of the engine and the CUDA memory
  # budget, and checks that memory.vram_fraction sizes the device's VRAM budget. The bench is sent
  # SIGTERM (it then stops the daemon and saves its pages) at 420 s.
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
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
  seal_2k
  step "bench.daemon"
  timeout -k 45 $((420 - SECONDS)) python3 -m bench.daemon --c1 /tmp/c1.json --backend cuda --proofs "${PROOFS:-6}" \
    --latency-runs "${LATENCY:-5}" --out "$OUT/results" 2>&1 | tee "$OUT/results/bench_daemon.log"
}

cmd_seam() {  # the gpu tests of the engine, witness program, parameter export, Groth16, backends; bench.daemon
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  step "gpu tests"
  timeout 400 python3 -m pytest -q -m gpu -p no:cacheprovider -rs tests/engine tests/porep/test_program_witness.py \
    tests/porep/test_params_export.py tests/groth16 tests/backend --deselect tests/groth16/test_groth16.py \
    2>&1 | tee "$OUT/results/gpu_tests.log" | tail -25
  step "seal a 2KiB sector"
  seal_2k
  step "bench.daemon"
  timeout -k 30 $((560 - SECONDS)) python3 -m bench.daemon --c1 /tmp/c1.json --backend cuda --proofs 6 --latency-runs 5 \
    --out "$OUT/results" 2>&1 | tail -6
}

porep32g_run() {  # porep32g_run LOG TIMEOUT ARGS...
  local log=$1 limit=$2; shift 2
  timeout -k 20 "$limit" python3 -m bench.porep32g --backend cuda --synthesis "${SYNTHESIS:-4}" --out "$OUT/results" "$@" 2>&1 \
    | grep -v -e "^cuzk: setup points" -e "it/s\]$" | tee -a "$OUT/$log" | tail -"${TAIL:-8}"
  return "${PIPESTATUS[0]}"
}

cmd_msm() {  # the MSM's gpu tests, then bench.device_msm: times, sppark ratios and the stage split per size
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  gpu_line
  step "gpu tests: MSM"
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/backend/cuda/test_msm.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -4
  step "bench.device_msm ${CASES:-g1:24,g2:22,g1:27}"
  timeout 420 python3 -m bench.device_msm --cases "${CASES:-g1:24,g2:22,g1:27}" --reps "${REPS:-5}" --out "$OUT/results" 2>&1 \
    | tee "$OUT/msm.log" | tail -16
}

cmd_porep32g() {
  # bench.porep32g (parameters generated on the GPU from the partition PCE and kept there; every
  # partition proof verified by the engine): first on GATE (default StackedDrg2KiBV1_1, 2 proofs: the
  # same path at a small shape; GATE=none skips it), then, only if that passed, PROOFS (default 5)
  # synthetic C1s of PROOF (default StackedDrg32GiBV1_1). CPU_WITNESS=1 runs the 32GiB run again with
  # pipeline.gpu_witness = false (CPU_PROOFS proofs; SKIP_GPU_WITNESS=1 runs only that one). TESTS=1
  # runs the GPU tests of the setup, .params upload, backend and engine first (TESTS_S seconds). If the
  # gate fails, the GPU setup's own tests run instead, to say why. SYNTHESIS (default 4) synthesis
  # processes: the cores are shared out among them, so any count keeps up. The PCE of the 32GiB
  # partition is built on first use (about a minute on 16 cores) and a 5-proof run from a fresh start
  # takes about 225 s, so keep GPU_S (default 420) at 300 or more; GATE_S, CPU_S: the other limits.
  # CAP=16GiB proves the 32GiB run under that VRAM cap (bench.porep32g --vram-cap: the key in host
  # memory, streamed as the plan says; a porep_prove line).
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
  if [ -n "${TESTS:-}" ]; then
    step "gpu tests: setup, .params on the device, backend, engine"
    timeout "${TESTS_S:-240}" python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/backend/cuda/test_setup.py \
      tests/groth16/test_params_device.py tests/backend/cuda/test_backend.py tests/backend/cuda/test_stream.py \
      tests/groth16/test_prove_cuda.py tests/engine/test_multi_gpu.py 2>&1 \
      | tee "$OUT/gpu_tests.log" | tail -8
  fi
  local gate=${GATE:-StackedDrg2KiBV1_1}
  if [ "$gate" != none ]; then
    step "gate: $gate, GPU setup + engine"
    if ! porep32g_run gate.log "${GATE_S:-150}" --proof "$gate" --proofs 2; then
      step "gate failed: the GPU setup's tests"
      timeout 200 python3 -m pytest -q -x -p no:cacheprovider -m gpu -rs tests/backend/cuda/test_setup.py 2>&1 \
        | tee "$OUT/gpu_tests.log" | tail -30
      exit 1
    fi
  fi
  if [ -z "${SKIP_GPU_WITNESS:-}" ]; then
    step "32GiB, GPU witness"
    porep32g_run porep32g.log "${GPU_S:-420}" --proof "${PROOF:-StackedDrg32GiBV1_1}" --proofs "${PROOFS:-5}" \
      ${CAP:+--vram-cap "$CAP"}
  fi
  if [ -n "${CPU_WITNESS:-}" ]; then
    step "32GiB, witness on the host's cores"
    porep32g_run porep32g_cpu.log "${CPU_S:-400}" --proof "${PROOF:-StackedDrg32GiBV1_1}" \
      --proofs "${CPU_PROOFS:-${PROOFS:-5}}" --cpu-witness
  fi
  step "done"
}

cmd_snap() {
  # bench.snap (synthetic updates, cuzk.snap.synthetic; the partition key generated on the GPU from its
  # PCE and kept there; every partition proof verified by the engine): a 2KiB gate (GATE=none skips it,
  # GATE_S its limit), then, only if it passed, PROOFS (default 3) updates of SIZE (default 32GiB)
  # submitted at once after one alone (NO_ALONE=1 skips it); SYNTHESIS (default 4) processes; SNAP_S limit.
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  gpu_line
  if [ "${GATE:-2KiB}" != none ]; then
    step "gate: a 2KiB update"
    if ! timeout -k 20 "${GATE_S:-150}" python3 -m bench.snap --backend cuda --proof StackedDrg2KiBV1 --proofs 1 \
        --no-alone --out "$OUT/results" 2>&1 | tee "$OUT/snap_gate.log" | tail -8; then
      step "gate failed"; exit 1
    fi
  fi
  local size=${SIZE:-32GiB}
  step "$size: SnapDeals updates"
  timeout -k 20 "${SNAP_S:-540}" python3 -m bench.snap --backend cuda --proof "StackedDrg${size}V1" --proofs "${PROOFS:-3}" \
    --synthesis "${SYNTHESIS:-4}" ${NO_ALONE:+--no-alone} --out "$OUT/results" 2>&1 \
    | grep -v -e "^cuzk: setup points" -e "it/s\]$" | tee "$OUT/snap.log" | tail -12
  step "done"
}

cmd_post() {
  # bench.post (synthetic vanilla proofs, cuzk.post.synthetic; keys generated on the GPU from each
  # circuit's PCE and kept there; every proof verified by the engine): first a gate at 2KiB (Window,
  # Winning, Winning beside a 2KiB PoRep; GATE=none skips it, GATE_S its limit), then, only if it
  # passed, SIZE (default 32GiB): one full WindowPoSt partition (2,349 sectors x 10 challenges) per run,
  # RUNS (default 3) runs, its key evicted, then WinningPoSt warm and beside BUSY (default 1) PoRep
  # proofs of the same size. POST_S (default 420) limits the 32GiB run: its PCEs (WindowPoSt and
  # PoRep) are built on first use, about a minute each on 16 cores.
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  gpu_line
  if [ "${GATE:-2KiB}" != none ]; then
    step "gate: 2KiB WindowPoSt, WinningPoSt, WinningPoSt beside PoRep"
    if ! timeout -k 20 "${GATE_S:-150}" python3 -m bench.post --backend cuda --runs 2 --busy 1 \
        --proof StackedDrgWindow2KiBV1_2,StackedDrgWinning2KiBV1 --out "$OUT/results" 2>&1 | tee "$OUT/post_gate.log" | tail -8; then
      step "gate failed"; exit 1
    fi
  fi
  local size=${SIZE:-32GiB}
  step "$size: WindowPoSt partition, WinningPoSt warm and busy"
  timeout -k 20 "${POST_S:-420}" python3 -m bench.post --backend cuda --runs "${RUNS:-3}" --busy "${BUSY:-1}" \
    --proof "StackedDrgWindow${size}V1_2,StackedDrgWinning${size}V1" --out "$OUT/results" 2>&1 \
    | grep -v -e "^cuzk: setup points" -e "it/s\]$" | tee "$OUT/post.log" | tail -20
  step "done"
}

cmd_setup() {
  # The Groth16 setup on the GPU. MODE tests: the setup and prover kernels compiled (NVRTC, timed per
  # module), then the GPU tests of the setup and of the PCE evaluation. MODE bench: bench.setup_gpu for
  # synthetic circuits of 2^20 and 2^22 rows (stage times, pool peak VRAM, a proof verified against each
  # key; 2^14 also on the CPU, the keys compared point for point) and its projection to the 32GiB
  # partition. MODE all (default): both.
  local mode=${1:-all}
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  gpu_line
  step "compile: setup and prover kernels"
  timeout 150 python3 -c "
import time
from cuzk.backend.cuda import loader
t = time.perf_counter()
for b in loader.build([m for m in loader.MODULES if loader.MODULES[m].family != 'test'], loader.arch()):
    print(f'{b.module:20s} {b.seconds:6.1f} s{\" (cached)\" if b.cached else \"\"}')
print(f'wall {time.perf_counter() - t:.1f} s')" 2>&1 | tee "$OUT/compile.log" | grep -v "^cuzk:"
  if [ "$mode" != bench ]; then
    step "gpu tests: setup, PCE"
    timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rs --durations=8 tests/backend/cuda/test_setup.py \
      tests/backend/cuda/test_pce.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -20
  fi
  if [ "$mode" != tests ]; then
    step "bench.setup_gpu 2^14 (and CPU), 2^20, 2^22"
    timeout 230 python3 -m bench.setup_gpu --log-rows 20,22 --cpu-log-rows 14 --out "$OUT/results" 2>&1 \
      | tee "$OUT/setup.log" | grep -v "^cuzk: setup points" | tail -20
  fi
}

cmd_params_stream() {
  # .params files on the GPU (upload_params, export_params). MODE tests: the params_points module
  # compiled (NVRTC, with its register counts), then the GPU tests of the upload (every kind of corrupt
  # point, G1 and G2, against the host reader's error; proofs with the uploaded vectors; their export
  # equal to the file) and of the export of a GPU setup's device-held vectors. MODE bench:
  # bench.params_stream on a generated GIB-GiB file (default 16) in /var/tmp: cold disk read vs cold
  # upload, warm upload, export. MODE all (default): both.
  local mode=${1:-all} gib=${2:-16}
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/results"
  setup_env
  gpu_line
  df -h /var/tmp | tail -1
  step "compile: params_points"
  timeout 120 python3 -c "
from cuzk.backend.cuda import loader
(b,) = loader.build(['params_points'], loader.arch())
print(f'{b.module} {b.seconds:.1f} s{\" (cached)\" if b.cached else \"\"}')
for k in loader.MODULES['params_points'].kernels:
    print(k, 'registers', loader.function(k).attributes['num_regs'], 'local bytes', loader.function(k).attributes.get('local_size_bytes'))
" 2>&1 | tee "$OUT/compile.log" | grep -v "^cuzk:"
  if [ "$mode" != bench ]; then
    step "gpu tests: upload_params, export_params"
    timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu -rs --durations=8 tests/groth16/test_params_device.py \
      tests/porep/test_params_export.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
  fi
  if [ "$mode" != tests ]; then
    step "bench.params_stream ${gib} GiB"
    timeout 420 python3 -m bench.params_stream --gib "$gib" --dir /var/tmp --warm --export \
      --out "$OUT/results/params_load_cuda.jsonl" 2>&1 | tee "$OUT/params_stream.log" | tail -20
  fi
}

cmd_gpu_tests() {  # wheel: the gpu tests from the installed package; first-use compile; MSM second sample
  setup_wheel
  step "gpu tests (installed package)"
  timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider -rs tests/backend tests/groth16 tests/ec 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
  cd "$REPO" || exit 1
  export PYTHONPATH=/tmp/site:.
  step "first-use compile, each measurement in a fresh process"
  timeout 150 python3 -m bench.device_compile --out "$OUT" 2>&1 | tee "$OUT/compile.log" | tail -13
  step "MSM, second sample"
  timeout 100 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:24,g2:22 2>&1 | tee "$OUT/msm.log" | tail -5
  timeout 100 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:24,g2:22 --vram-budget 16 2>&1 | tee "$OUT/msm16.log" | tail -5
  tar czf "$FINAL/run.tgz" -C "$OUT" .
}

cmd_portable() {
  # Wheel: `cuzk gpu info/build`, `cuzk selftest` and the gpu tests from the installed package; then,
  # from the tree, MSM G1 2^24 / G2 2^22 at the default VRAM budget and at 16 GiB, NTT up to 2^24, and
  # the first-use compile of every module from an empty cache. Carry .whl and .ntt_ref (python -m
  # bench.device_ntt --make-ref ...).
  setup_wheel
  step "gpu info / first-use build of every prover module (installed package, empty cache)"
  python3 -m cuzk.cli gpu info 2>&1 | tee "$OUT/gpu_info.log"
  /usr/bin/time -f "gpu build wall %e s, maxrss %M KB" timeout 200 python3 -m cuzk.cli gpu build 2>&1 | tee "$OUT/gpu_build.log" | tail -16
  step "selftest (installed)"
  timeout 120 python3 -m cuzk.cli selftest --backend cuda 2>&1 | tee "$OUT/selftest.log" | tail -8
  step "gpu tests (installed)"
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backend tests/groth16 tests/ec 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
  cd "$REPO" || exit 1
  export PYTHONPATH=/tmp/site:.
  step "MSM default budget"
  timeout 150 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:20,g1:24,g2:20,g2:22 2>&1 | tee "$OUT/msm.log" | tail -12
  step "MSM 16 GiB budget"
  timeout 120 python3 -m bench.device_msm --out "$OUT" --reps 7 --cases g1:24,g2:22 --vram-budget 16 2>&1 | tee "$OUT/msm16.log" | tail -8
  step "NTT"
  timeout 90 python3 -m bench.device_ntt --ref .ntt_ref/ref.npz --out "$OUT" --log-sizes 20,22,24 2>&1 | tee "$OUT/ntt.log" | tail -12
  step "first-use compile per module, empty caches"
  timeout 200 python3 -m bench.device_compile --out "$OUT" 2>&1 | tee "$OUT/compile.log" | tail -16
  ls "$OUT"; tar czf "$FINAL/run.tgz" -C "$OUT" .
}

cmd_wheel_check() {  # wheel: `cuzk gpu build` from an empty cache, selftest, every gpu test, `cuzk demo`
  setup_wheel
  step "first-use build of every prover module (empty cache)"
  /usr/bin/time -f "gpu build wall %e s" timeout 120 python3 -m cuzk.cli gpu build 2>&1 | tee "$OUT/gpu_build.log" | tail -13
  step "selftest"
  timeout 120 python3 -m cuzk.cli selftest --backend cuda 2>&1 | tee "$OUT/selftest.log" | tail -7
  step "gpu tests"
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -rs tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
  step "demo on the GPU"
  /usr/bin/time -f "demo wall %e s, maxrss %M KB" timeout 240 python3 -m cuzk.cli demo --backend cuda 2>&1 | tee "$OUT/demo.log" | tail -9
  tar czf "$FINAL/run.tgz" -C "$OUT" .
}

name=${1:-help}
[ $# -gt 0 ] && shift
case "$name" in
  help|-h|--help) usage; exit 0 ;;
esac
fn=cmd_${name//-/_}
if ! declare -F "$fn" > /dev/null; then
  echo "bench/device.sh: no subcommand '$name'" >&2; usage >&2; exit 2
fi
"$fn" "$@"
