"""CUDA NTT over Fr on the device: correctness against the CPU NTT, then timings against sppark.

Run on a GPU machine from the repo root:
    python -m bench.device_ntt --ref .ntt_ref/ref.npz --out $OUT
The reference file comes from the CPU NTT (cuzk.backend.cpu.ntt), made once on any machine:
    python -m bench.device_ntt --make-ref .ntt_ref/ref.npz
It holds, per size, the outputs of the four transforms of a deterministic input (all outputs up to
2^12, 4096 sampled indices above), so the device needs no numba compile. Then round trips, edge
inputs, the Fr-multiply throughput probe of the kernels' test module, and CUDA-event timings
(median of 7 after warm-up, data on the GPU) at 2^20..2^26, printed as a table against sppark
(bench/peers.py) and, when every check passed, appended to <out>/ntt_cuda.jsonl as ntt / intt /
coset_ntt / coset_intt lines (--out: $OUT, else bench/results).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from bench import peers
from bench.common import RESULTS, device_name, event_ms, field_mul_rate, record
from cuzk.errors import NonCanonicalError
from cuzk.ff.fields import Fr

KINDS = ("ntt", "intt", "coset_ntt", "coset_intt")  # BENCH.md's bench names, and the module's functions
REF_LOGS = (*range(1, 13), 13, 14, 16, 18, 20, 22, 24)
SAMPLES = 4096


def det_input(log_n: int) -> np.ndarray:
    """Deterministic canonical Fr limbs (values below 2^252 < r), the same on every machine."""
    a = np.random.default_rng(1000 + log_n).integers(0, 2**64, size=(1 << log_n, 4), dtype=np.uint64)
    a[:, 3] &= np.uint64(0x0FFFFFFFFFFFFFFF)
    return a


def rand_device(log_n: int):
    """Fresh random canonical Fr limbs (each limb < 2^62, so the value is < 2^254 < r) on the GPU."""
    import cupy as cp

    return cp.random.randint(0, 2**62, size=(1 << log_n, 4), dtype=cp.int64).astype(cp.uint64)


def sample_idx(log_n: int) -> np.ndarray:
    n = 1 << log_n
    if n <= SAMPLES:
        return np.arange(n)
    return np.sort(np.random.default_rng(7 + log_n).choice(n, SAMPLES, replace=False))


def make_ref(path: Path) -> None:
    from cuzk.backend.cpu import ntt as ntt_cpu

    data = {}
    for log_n in REF_LOGS:
        a, idx = det_input(log_n), sample_idx(log_n)
        data[f"in_{log_n}"] = a[:8].copy()
        for kind in KINDS:
            data[f"{kind}_{log_n}"] = getattr(ntt_cpu, kind)(a)[idx]
        print("reference 2^%d done" % log_n, flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **data)


def check(ref_path: Path | None) -> list[str]:
    import cupy as cp

    from cuzk.backend.cuda import ntt as ntt_cuda

    failures = []
    if ref_path is not None:
        ref = np.load(ref_path)
        for log_n in REF_LOGS:
            a = det_input(log_n)
            if not np.array_equal(a[:8], ref[f"in_{log_n}"]):
                failures.append(f"2^{log_n}: deterministic input differs from the reference's")
                continue
            da, idx = cp.asarray(a), sample_idx(log_n)
            for kind in KINDS:
                got = getattr(ntt_cuda, kind)(da).get()[idx]
                if not np.array_equal(got, ref[f"{kind}_{log_n}"]):
                    bad = int((got != ref[f"{kind}_{log_n}"]).any(axis=1).sum())
                    failures.append(f"{kind} 2^{log_n}: {bad}/{len(idx)} sampled outputs differ from the CPU NTT")
        print(f"reference check: sizes {REF_LOGS}, {len(failures)} failures", flush=True)
    r = Fr.modulus
    for log_n in (1, 2, 5, 8, 9, 13, 16, 17, 20, 23, 24, 25, 26, 27):
        a = rand_device(log_n)
        for fwd, inv in (("ntt", "intt"), ("coset_ntt", "coset_intt")):
            back = getattr(ntt_cuda, inv)(getattr(ntt_cuda, fwd)(a))
            if not bool((back == a).all()):
                failures.append(f"{fwd}/{inv} round trip 2^{log_n}")
        del a, back
        cp.get_default_memory_pool().free_all_blocks()
    one = Fr.const(1)
    for log_n in (4, 12, 20):
        n = 1 << log_n
        zeros = cp.zeros((n, 4), dtype=cp.uint64)
        for kind in KINDS:
            if bool(getattr(ntt_cuda, kind)(zeros).any()):
                failures.append(f"{kind} of zeros 2^{log_n}")
        delta = zeros.copy()
        delta[0] = cp.asarray(one)
        if not bool((ntt_cuda.ntt(delta) == cp.asarray(one)).all()):  # ntt(e_0) = all ones
            failures.append(f"ntt of the unit impulse 2^{log_n}")
        const = cp.asarray(np.tile(Fr.const(r - 1), (n, 1)))  # ntt(c,...,c) = (n c, 0, ...)
        want = np.zeros((n, 4), dtype=np.uint64)
        want[0] = Fr.const(n * (r - 1))
        if not np.array_equal(ntt_cuda.ntt(const).get(), want):
            failures.append(f"ntt of the constant r-1 2^{log_n}")
    bad = cp.asarray(det_input(10))
    bad[3] = cp.asarray(np.array([0xFFFFFFFF00000001, 0x53BDA402FFFE5BFE, 0x3339D80809A1D805,
                                  0x73EDA753299D7D48], dtype=np.uint64))  # r itself
    try:
        ntt_cuda.ntt(bad)
        failures.append("non-canonical input not detected")
    except NonCanonicalError:
        pass
    return failures


def timings(logs: list[int], repeat: int) -> list[dict]:
    import cupy as cp

    from cuzk.backend.cuda import ntt as ntt_cuda

    device = device_name("cuda")
    rows = []
    for log_n in logs:
        a = rand_device(log_n)
        n = 1 << log_n
        for kind in KINDS:
            fn = getattr(ntt_cuda, kind)
            ms = event_ms(lambda: fn(a, check=False), repeat, warmup=2)
            rows.append({"bench": kind, "backend": "cuda", "device": device, "n": n, "ms": round(ms, 4),
                         "stat": "median", **peers.peer_fields(kind, n, "cuda"),
                         "note": "data on the GPU, natural order in and out, no input check; CUDA events"})
        ms_chk = event_ms(lambda: ntt_cuda.ntt(a), repeat, warmup=2)
        rows.append({"bench": "ntt", "backend": "cuda", "device": device, "n": n, "ms": round(ms_chk, 4),
                     "stat": "median", **peers.peer_fields("ntt", n, "cuda"),
                     "note": "data on the GPU, with the canonical-input check (it syncs); CUDA events"})
        del a
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--make-ref", type=Path, help="write the CPU reference file and exit")
    ap.add_argument("--ref", type=Path, help="CPU reference file (from --make-ref)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", RESULTS)))
    ap.add_argument("--log-sizes", default="20,22,24,26")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if args.make_ref:
        make_ref(args.make_ref)
        return
    failures = check(args.ref)
    print("correctness:", "all passed" if not failures else failures, flush=True)
    print(f"fr_mul throughput: {field_mul_rate('bench_fr_mul', 8):.1f} G mul/s", flush=True)
    rows = timings([int(x) for x in args.log_sizes.split(",")], args.repeat)
    checked = "every check passed" if not failures else f"{len(failures)} check(s) FAILED: not recorded"
    print(f"\nNTT over Fr on {rows[0]['device']}, data on the GPU, median of {args.repeat} (CUDA events); {checked}")
    print(f"{'transform':12s} {'check':6s} {'n':>6s} {'ms':>9s} {'sppark':>8s} {'ours/sppark':>11s}")
    for row in rows:
        peer = row.get("peer_ms")
        ratio = f"{row['ms'] / peer:.2f}" if peer else "-"
        check_mark = "yes" if "canonical" in row["note"] else "no"
        print(f"{row['bench']:12s} {check_mark:6s} 2^{row['n'].bit_length() - 1:<4d} {row['ms']:9.3f} "
              f"{peer or '-':>8} {ratio:>11s}")
    if failures:
        sys.exit(1)
    checks = "round trips to 2^27 and edge inputs checked"
    if args.ref:
        checks = "outputs equal the CPU NTT's (sampled above 2^12), " + checks
    for row in rows:
        row["note"] += "; " + checks
    print("recorded in", *record(rows, "ntt", out=args.out))


if __name__ == "__main__":
    main()
