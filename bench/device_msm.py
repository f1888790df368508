"""One device call: field-mul throughput, MSM correctness at the benchmark sizes, and timings.

Usage (on the GPU host, repo root): PYTHONPATH=. python3 bench/device_msm.py [--out DIR] [--quick]
Prints a table (ms, ratio to sppark) and appends JSON Lines to DIR/msm_cuda.jsonl.
Bases are k_i * G (random 63-bit k_i) made on the GPU; every MSM result is checked exactly
against (sum_i s_i k_i mod r) * G.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import numpy as np

from cuzk.ec import reference  # noqa: E402

import cupy as cp  # noqa: E402

from cuzk.backend.cuda import msm as cb  # noqa: E402

SPPARK_MS = {("msm_g1", 20): 20, ("msm_g1", 22): 53, ("msm_g1", 24): 154, ("msm_g2", 20): 47, ("msm_g2", 22): 138}
GEN = {"g1": reference.G1, "g2": reference.G2}


def fq_mul_rate(name: str, words: int, threads: int = 132 * 1024, iters: int = 2000) -> float:
    """G mul/s of the standalone Montgomery multiply (2 muls per loop iteration per thread)."""
    inp = cp.asarray(np.random.default_rng(1).integers(0, 2**32, 2 * words, dtype=np.uint32))
    inp[words - 1] &= 0x0FFFFFFF
    inp[2 * words - 1] &= 0x0FFFFFFF
    out = cp.empty(threads * words, dtype=cp.uint32)
    fn = cb._kernel("g1", name)
    fn((threads // 256,), (256,), (inp, np.int32(10), out))
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    fn((threads // 256,), (256,), (inp, np.int32(iters), out))
    cp.cuda.Device().synchronize()
    return 2 * iters * threads / (time.perf_counter() - t0) / 1e9


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
    cb._launch("g1", "fr_from_mont_vec", n, scal_dev, np.int32(n), canon)
    total = reference.dot_mod_r(canon, k2)
    if total == 0:
        return np.zeros(cb._SHAPE[group], np.uint64)
    g = reference.encode([GEN[group]], group == "g2")[0]
    s = cp.asarray(np.array([[(total >> (32 * j)) & 0xFFFFFFFF for j in range(8)]], dtype=np.uint32))
    return cb.to_numpy_points(group, cb.scalar_mul_points(group, g, s, 256))[0]


def time_ms(fn, reps: int) -> list[float]:
    fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b))
    return out


def run_case(be, group, logn, sparse, reps, rng, rows, log):
    n = 1 << logn
    bench = f"msm_{group}" + ("_sparse" if sparse else "")
    pool = cp.get_default_memory_pool()
    t0 = time.perf_counter()
    bases, k2 = make_inputs(group, n, rng)
    cp.cuda.Device().synchronize()
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    pb = getattr(be, f"prepare_bases_{group}")(bases.view(np.uint64).reshape((n, *cb._SHAPE[group])))
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
    med = statistics.median(times)
    peer = SPPARK_MS.get((bench, logn))
    host_ms = None
    if not sparse and logn >= 22:  # scalars from (pageable) host memory, staged through pinned buffers
        scal_h = cp.asnumpy(scal)
        ok = ok and bool(np.array_equal(getattr(be, f"msm_{group}")(pb, scal_h), want))
        host_ms = statistics.median(time_ms(lambda: getattr(be, f"msm_{group}")(pb, scal_h), 3))
    row = dict(bench=bench, n=n, logn=logn, ms=round(med, 2), ok=ok, c=pb.c, multiples=pb.multiples,
               table_gib=round(pb.nbytes / 2**30, 2), peak_gib=round(peak / 2**30, 2),
               work_gib=round((peak - base_used) / 2**30, 2), prep_s=round(t_prep, 2), gen_s=round(t_gen, 2),
               peer_ms=peer, host_ms=None if host_ms is None else round(host_ms, 2), all_ms=[round(t, 2) for t in times])
    rows.append(row)
    print(json.dumps(row), flush=True)
    log.write(json.dumps(row) + "\n")
    del pb, scal
    pool.free_all_blocks()


def profile_case(be, group, logn, variants, reps, rng, log):
    """Per-kernel GPU time of one MSM for several (c, multiples[, L0]) choices; prints one line each."""
    n = 1 << logn
    bases, k2 = make_inputs(group, n, rng)
    flat = bases.view(np.uint64).reshape((n, *cb._SHAPE[group]))
    scal = cp.asarray(reference.random_mont_scalars(rng, n))
    want = expected(group, scal.view(cp.uint32), k2)
    orig, l0_range = cb._launch, (cb._L0_MIN, cb._L0_MAX)
    for c, m, *l0 in variants:
        cb._L0_MIN, cb._L0_MAX = (l0[0], l0[0]) if l0 else l0_range
        pb = be._prepare(flat, group, True, c=c, m=m)
        ok = bool(np.array_equal(cb.to_numpy_points(group, be.msm_device(pb, scal))[0], want))
        recs: list = []

        def timed(g, name, cnt, *args, threads=cb._THREADS):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            orig(g, name, cnt, *args, threads=threads)
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
        row = dict(profile=f"msm_{group}", logn=logn, c=c, multiples=m, l0=l0[0] if l0 else None, ok=ok, ms=round(med, 2),
                   parts={k: round(v, 3) for k, v in parts.items()},
                   glue=round(med - sum(parts.values()), 2))
        print(json.dumps(row), flush=True)
        log.write(json.dumps(row) + "\n")
        del pb
        cp.get_default_memory_pool().free_all_blocks()
    cb._L0_MIN, cb._L0_MAX = l0_range


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cases", default="g1:20,g1:22,g1:24,g2:20,g2:22,g1s:22")
    ap.add_argument("--profile", default="", help="g2:20=20/13+16/16/32,... per-kernel times for c/M[/L0] choices")
    args = ap.parse_args()
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    t0 = time.perf_counter()
    for name in ("msm_g1.cu", "msm_g2.cu"):
        cb._cuda_module.module(name).get_function("scalar_pass" if name == "msm_g1.cu" else "accum_affine_g2")
    print(f"device {dev}; modules loaded in {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"Fq mul {fq_mul_rate('bench_fq_mul', 12):.1f} G/s, Fr mul {fq_mul_rate('bench_fr_mul', 8):.1f} G/s",
          flush=True)
    be = cb.CudaBackend()
    rows: list[dict] = []
    cases = [c.split(":") for c in args.cases.split(",") if c]
    if args.quick:
        cases = [(g, str(min(int(e), 16))) for g, e in cases]
    with open(os.path.join(args.out, "msm_log.jsonl"), "a") as log:
        for spec in filter(None, args.profile.split(",")):
            ge, vs = spec.split("=")
            g, e = ge.split(":")
            variants = [tuple(map(int, v.split("/"))) for v in vs.split("+")]
            profile_case(be, g, int(e), variants, args.reps, rng, log)
        for g, e in cases:
            run_case(be, g.rstrip("s"), int(e), g.endswith("s"), args.reps, rng, rows, log)
    date = datetime.date.today().isoformat()
    cmd = "PYTHONPATH=. python3 bench/device_msm.py " + " ".join(sys.argv[1:])
    with open(os.path.join(args.out, "msm_cuda.jsonl"), "a") as f:
        for r in rows:
            if r["ok"]:
                f.write(json.dumps(dict(bench=r["bench"], backend="cuda", device=dev, n=r["n"], ms=r["ms"],
                                        peer="sppark" if r["peer_ms"] else None, peer_ms=r["peer_ms"], date=date,
                                        command=cmd)) + "\n")
    print(f"\n{'bench':16} {'n':>6} {'ms':>8} {'sppark':>7} {'ratio':>6} {'ok':>4} {'c/M':>6} {'table':>7} {'peak':>7} {'host':>7}")
    for r in rows:
        ratio = f"{r['ms'] / r['peer_ms']:.2f}" if r["peer_ms"] else "-"
        print(f"{r['bench']:16} 2^{r['logn']:<4} {r['ms']:8.2f} {r['peer_ms'] or '-':>7} {ratio:>6} "
              f"{'yes' if r['ok'] else 'NO':>4} {r['c']:>3}/{r['multiples']:<2} {r['table_gib']:6.2f}G "
              f"{r['peak_gib']:6.2f}G {r['host_ms'] or '-':>7}")


if __name__ == "__main__":
    main()
