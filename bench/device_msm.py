"""One device call: field-mul throughput, MSM correctness at the benchmark sizes, and timings.

Usage (on the GPU host, repo root): python -m bench.device_msm [--out DIR] [--quick] [--vram-budget GIB]
Prints a table (ms, ratio to sppark from bench/peers.py) and appends BENCH.md lines to
DIR/msm_cuda.jsonl (DIR: $OUT, else bench/results): msm_g1 / msm_g2 / msm_g1_sparse with the
data on the GPU, and for the dense MSMs from 2^22 up a second line with the scalars from host memory.
Every line carries `peak_vram_gib` (CuPy's pool at its peak), the GPU lines the stage split
(`plan_ms`, `sort_ms`, `accumulate_ms`, `reduce_ms`, `copy_ms`: cuzk.backend.cuda.msm_stages, from
further runs) and, under --vram-budget (or $CUZK_VRAM_BUDGET), the budget in `note`. Per-run details
go to DIR/msm_log.jsonl.
Bases are k_i * G (random 63-bit k_i) made on the GPU; every MSM result is checked exactly
against (sum_i s_i k_i mod r) * G; a result that differs is printed and not recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import cupy as cp
import numpy as np

from bench import peers
from bench.common import RESULTS, device_name, event_times_ms, field_mul_rate, gib, record
from cuzk.backend.cuda import CudaBackend, loader
from cuzk.backend.cuda import msm as cb
from cuzk.backend.cuda import msm_stages
from cuzk.backend.cuda.layout import POINT_SHAPE
from cuzk.ec import reference

GEN = {"g1": reference.G1, "g2": reference.G2}


def make_inputs(group: str, n: int, rng):
    k = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    kk = cp.zeros((n, 8), dtype=cp.uint32)
    kk[:, :2] = cp.asarray(k.view(np.uint32).reshape(n, 2))
    g = reference.encode([GEN[group]], group == "g2")[0]
    bases = cb.scalar_mul_points(group, g, kk, 64)
    return bases, kk[:, :2].copy()


def expected(group: str, scal_dev, k2) -> np.ndarray:
    n = scal_dev.shape[0]
    canon = cp.empty((n, 8), dtype=cp.uint32)
    cb._launch("fr_from_mont_vec", n, scal_dev, np.int32(n), canon)
    total = reference.dot_mod_r(canon, k2)
    if total == 0:
        return np.zeros(POINT_SHAPE[group], np.uint64)
    g = reference.encode([GEN[group]], group == "g2")[0]
    s = cp.asarray(np.array([[(total >> (32 * j)) & 0xFFFFFFFF for j in range(8)]], dtype=np.uint32))
    return cb.to_numpy_points(group, cb.scalar_mul_points(group, g, s, 256))[0]


def time_ms(fn, reps: int) -> list[float]:
    return event_times_ms(fn, reps, warmup=1)


def run_case(be, group, logn, sparse, reps, rng, rows, log, budget):
    n = 1 << logn
    bench = f"msm_{group}" + ("_sparse" if sparse else "")
    pool = cp.get_default_memory_pool()
    t0 = time.perf_counter()
    bases, k2 = make_inputs(group, n, rng)
    cp.cuda.Device().synchronize()
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    pb = getattr(be, f"prepare_bases_{group}")(bases.view(np.uint64).reshape((n, *POINT_SHAPE[group])))
    cp.cuda.Device().synchronize()
    t_prep = time.perf_counter() - t0
    del bases
    scal = cp.asarray(reference.random_mont_scalars(rng, n))
    if sparse:
        kind = cp.asarray(rng.random(n))
        scal[kind < 0.35] = 0
        scal[(kind >= 0.35) & (kind < 0.7)] = cp.asarray(reference.fr_to_mont_array([1])[0])
    want = expected(group, scal.view(cp.uint32), k2)
    pool.free_all_blocks()
    base_used = pool.used_bytes()
    got = cb.to_numpy_points(group, be.msm_device(pb, scal, sparse=sparse))[0]
    ok = bool(np.array_equal(got, want))
    peak = pool.total_bytes()
    times = time_ms(lambda: be.msm_device(pb, scal, sparse=sparse), reps)
    peak = max(peak, pool.total_bytes())
    med = statistics.median(times)
    stages = stage_split(be, lambda: be.msm_device(pb, scal, sparse=sparse), reps)
    host_ms = host_ok = None
    if not sparse and logn >= 22:  # scalars from (pageable) host memory, staged through pinned buffers
        scal_h = cp.asnumpy(scal)
        host_ok = bool(np.array_equal(getattr(be, f"msm_{group}")(pb, scal_h), want))
        host_ms = statistics.median(time_ms(lambda: getattr(be, f"msm_{group}")(pb, scal_h), 3))
        peak = max(peak, pool.total_bytes())
    row = dict(bench=bench, n=n, logn=logn, ms=round(med, 2), ok=ok, c=pb.c, multiples=pb.multiples,
               table_gib=gib(pb.nbytes), peak_gib=gib(peak), work_gib=gib(peak - base_used),
               prep_s=round(t_prep, 2), gen_s=round(t_gen, 2), peer_ms=peers.sppark_ms(bench, n),
               host_ms=None if host_ms is None else round(host_ms, 2), host_ok=host_ok,
               all_ms=[round(t, 2) for t in times], stages=stages, budget=budget)
    rows.append(row)
    print(json.dumps(row), flush=True)
    log.write(json.dumps(row) + "\n")
    del pb, scal
    pool.free_all_blocks()


def stage_split(be, msm, reps: int) -> dict[str, float]:
    """The median GPU ms of each MSM stage (cuzk.backend.cuda.msm_stages) over `reps` runs of `msm`
    with the stages recorded, as BENCH.md's <stage>_ms fields (runs apart from the timed ones)."""
    with be.recording_msm_stages() as split:
        for _ in range(reps):
            msm()
    return {k: round(statistics.median(s[k] for s in split), 2) for k in split[0] if k.endswith("_ms")}


def result_lines(rows: list[dict], device: str, reps: int) -> list[dict]:
    """BENCH.md lines of the checked rows: data on the GPU, and scalars from host memory where timed."""
    lines = []
    for r in rows:
        common = {"bench": r["bench"], "backend": "cuda", "device": device, "n": r["n"], "stat": "median",
                  "peak_vram_gib": r["peak_gib"], "c": r["c"], "multiples": r["multiples"],
                  "table_gib": r["table_gib"]}
        where = "; ".join(filter(None, [f"bases k_i G, result checked exactly; median of {reps}; peak_vram_gib: "
                                        f"CuPy's memory pool at its peak", r["budget"]]))
        if r["ok"]:
            peer = peers.peer_fields(r["bench"], r["n"], "cuda")
            lines.append({**common, "ms": r["ms"], "scalars": "gpu", **peer, **r["stages"],
                          "note": f"points and scalars on the GPU; {where}; <stage>_ms: GPU time per stage "
                                  f"(CUDA events, median of {reps} further runs; ms - their sum is host glue)"})
        if r["host_ok"]:
            log_n = r["n"].bit_length() - 1
            peer = peers.MSM_PINNED_HOST_MS.get((r["bench"], log_n))
            lines.append({**common, "ms": r["host_ms"], "scalars": "host", "peer": "sppark" if peer else None,
                          "peer_ms": peer,
                          "note": f"scalars from pageable host memory (staged through pinned buffers), bases "
                                  f"on the GPU; peer: sppark with both from pinned host memory; {where}"})
    return lines


def budget_note(be: CudaBackend) -> str:
    """The backend's VRAM budget and where it came from (--vram-budget, $CUZK_VRAM_BUDGET or the default)."""
    budget = be.budget
    return f"VRAM budget {budget.bytes / 2**30:.2f} GiB ({budget.source})"


def load_modules() -> None:
    """Compile (or find cached) every CUDA module the MSM uses, so that no timing includes a compile."""
    loader.build_all()
    loader.build([m for m, spec in loader.MODULES.items() if spec.family == "test"], loader.arch())


def profile_case(be, group, logn, variants, reps, rng, log):
    """Per-kernel GPU time of one MSM for several (c, multiples[, L0]) choices; prints one line each.
    L0 (points per item when summing buckets) is pinned through the msm module's _L0_MIN/_L0_MAX."""
    n = 1 << logn
    bases, k2 = make_inputs(group, n, rng)
    flat = bases.view(np.uint64).reshape((n, *POINT_SHAPE[group]))
    scal = cp.asarray(reference.random_mont_scalars(rng, n))
    want = expected(group, scal.view(cp.uint32), k2)
    orig, l0_range = cb._launch, (cb._L0_MIN, cb._L0_MAX)
    for c, m, *l0 in variants:
        cb._L0_MIN, cb._L0_MAX = (l0[0], l0[0]) if l0 else l0_range
        pb = be._prepare(flat, group, True, c=c, m=m)
        ok = bool(np.array_equal(cb.to_numpy_points(group, be.msm_device(pb, scal))[0], want))
        recs: list = []

        def timed(name, cnt, *args, threads=cb._THREADS):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            orig(name, cnt, *args, threads=threads)
            b.record()
            recs.append((name, cnt, a, b))

        totals = time_ms(lambda: be.msm_device(pb, scal), reps)  # plain runs
        cb._launch = timed
        try:
            recs.clear()
            be.msm_device(pb, scal)
            cp.cuda.Device().synchronize()
        finally:
            cb._launch = orig
        parts: dict = {}
        for name, cnt, a, b in recs:
            key = name.replace(f"_{group}", "")
            if key == "accum_xyzz" or key == "accum_affine":
                key = f"{key}[{cnt}]"
            parts[key] = parts.get(key, 0.0) + cp.cuda.get_elapsed_time(a, b)
        med = statistics.median(totals)
        row = dict(profile=f"msm_{group}", logn=logn, c=c, multiples=m, l0=l0[0] if l0 else None, ok=ok,
                   ms=round(med, 2),
                   parts={k: round(v, 3) for k, v in parts.items()}, glue=round(med - sum(parts.values()), 2))
        print(json.dumps(row), flush=True)
        log.write(json.dumps(row) + "\n")
        del pb
        cp.get_default_memory_pool().free_all_blocks()
    cb._L0_MIN, cb._L0_MAX = l0_range


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", str(RESULTS)))
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cases", default="g1:20,g1:22,g1:24,g2:20,g2:22,g1s:22")
    ap.add_argument("--vram-budget", type=float, default=None, metavar="GIB",
                    help="VRAM budget of the backend in GiB (default: $CUZK_VRAM_BUDGET, else the backend's own)")
    ap.add_argument("--profile", default="", help="g2:20=20/13+16/16/32,... per-kernel times for c/M[/L0] choices")
    args = ap.parse_args()
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    dev = device_name("cuda")
    t0 = time.perf_counter()
    load_modules()
    print(f"device {dev}; modules loaded in {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"Fq mul {field_mul_rate('bench_fq_mul', 12):.1f} G/s, Fr mul {field_mul_rate('bench_fr_mul', 8):.1f} G/s",
          flush=True)
    be = CudaBackend(vram_budget=None if args.vram_budget is None else int(args.vram_budget * 2**30))
    budget = budget_note(be)
    print(budget, flush=True)
    rows: list[dict] = []
    cases = [c.split(":") for c in args.cases.split(",") if c]
    if args.quick:
        cases = [(g, str(min(int(e), 16))) for g, e in cases]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "msm_log.jsonl"), "a") as log:
        for spec in filter(None, args.profile.split(",")):
            ge, vs = spec.split("=")
            g, e = ge.split(":")
            variants = [tuple(map(int, v.split("/"))) for v in vs.split("+")]
            profile_case(be, g, int(e), variants, args.reps, rng, log)
        for g, e in cases:
            try:
                run_case(be, g.rstrip("s"), int(e), g.endswith("s"), args.reps, rng, rows, log, budget)
            except Exception as exc:  # e.g. the typed error of a job that does not fit the budget
                print(f"{g}:{e}: {type(exc).__name__}: {exc}", flush=True)
                log.write(json.dumps({"case": f"{g}:{e}", "error": f"{type(exc).__name__}: {exc}",
                                      "budget": budget}) + "\n")
                cp.get_default_memory_pool().free_all_blocks()
    lines = result_lines(rows, dev, args.reps)
    if lines:
        print("recorded in", *record(lines, "msm", out=args.out))
    print(f"\n{'bench':16} {'n':>6} {'ms':>8} {'sppark':>7} {'ratio':>6} {'ok':>4} {'c/M':>6} {'table':>7} {'peak':>7} {'host':>7}")
    for r in rows:
        ratio = f"{r['ms'] / r['peer_ms']:.2f}" if r["peer_ms"] else "-"
        print(f"{r['bench']:16} 2^{r['logn']:<4} {r['ms']:8.2f} {r['peer_ms'] or '-':>7} {ratio:>6} "
              f"{'yes' if r['ok'] else 'NO':>4} {r['c']:>3}/{r['multiples']:<2} {r['table_gib']:6.2f}G "
              f"{r['peak_gib']:6.2f}G {r['host_ms'] or '-':>7}")
    print(f"\n{'stage split (ms)':16} {'n':>6} " + " ".join(f"{k:>10}" for k in msm_stages.STAGES) + f" {'glue':>8}")
    for r in rows:
        split = [r["stages"][f"{k}_ms"] for k in msm_stages.STAGES]
        print(f"{r['bench']:16} 2^{r['logn']:<4} " + " ".join(f"{v:10.2f}" for v in split)
              + f" {r['ms'] - sum(split):8.2f}")
    print(budget)


if __name__ == "__main__":
    main()
