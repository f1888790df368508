"""CUDA NTT over Fr on the device: correctness against the CPU NTT, then timings against sppark.

Run on a GPU machine from the repo root:
    PYTHONPATH=. python3 bench/device_ntt.py --ref .ntt_ref/ref.npz --out $OUT
The reference file comes from the CPU NTT (cuzk.backend.cpu.ntt), made once on any machine:
    PYTHONPATH=. python3 bench/device_ntt.py --make-ref .ntt_ref/ref.npz
It holds, per size, the outputs of the four transforms of a deterministic input (all outputs up to
2^12, 4096 sampled indices above), so the device needs no numba compile. Then round trips, edge
inputs, an Fr-multiply throughput probe, and CUDA-event timings (median of 7 after warm-up, data on
the GPU) at 2^20..2^26, printed as a table against sppark and appended to <out>/ntt_cuda.jsonl.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import statistics
import sys
from pathlib import Path

import numpy as np

KINDS = ("ntt", "intt", "coset_ntt", "coset_intt")
REF_LOGS = (*range(1, 13), 13, 14, 16, 18, 20, 22, 24)
SAMPLES = 4096
# sppark on the same H200, data on the GPU (shared/ANCHORS.md)
SPPARK_MS = {
    "ntt": {20: 0.28, 22: 1.13, 24: 4.75, 26: 23.8},
    "intt": {20: 0.30, 22: 1.19, 24: 5.00, 26: 25.0},
    "coset_ntt": {20: 0.32, 22: 1.28, 24: 5.35, 26: 26.3},
    "coset_intt": {20: 0.34, 22: 1.35, 24: 5.59, 26: 27.4},
}
KIND_NAMES = {"ntt": "forward", "intt": "inverse", "coset_ntt": "coset forward", "coset_intt": "coset inverse"}


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
    r = ntt_cuda.R_MOD
    for log_n in (1, 2, 5, 8, 9, 13, 16, 17, 20, 23, 24, 25, 26, 27):
        a = rand_device(log_n)
        for fwd, inv in (("ntt", "intt"), ("coset_ntt", "coset_intt")):
            back = getattr(ntt_cuda, inv)(getattr(ntt_cuda, fwd)(a))
            if not bool((back == a).all()):
                failures.append(f"{fwd}/{inv} round trip 2^{log_n}")
        del a, back
        cp.get_default_memory_pool().free_all_blocks()
    one = ntt_cuda._mont_limbs([1])[0]
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
        const = cp.asarray(np.tile(ntt_cuda._mont_limbs([r - 1]), (n, 1)))  # ntt(c,...,c) = (n c, 0, ...)
        want = np.zeros((n, 4), dtype=np.uint64)
        want[0] = ntt_cuda._mont_limbs([n * (r - 1)])[0]
        if not np.array_equal(ntt_cuda.ntt(const).get(), want):
            failures.append(f"ntt of the constant r-1 2^{log_n}")
    bad = cp.asarray(det_input(10))
    bad[3] = cp.asarray(np.array([0xFFFFFFFF00000001, 0x53BDA402FFFE5BFE, 0x3339D80809A1D805,
                                  0x73EDA753299D7D48], dtype=np.uint64))  # r itself
    try:
        ntt_cuda.ntt(bad)
        failures.append("non-canonical input not detected")
    except ntt_cuda.NonCanonicalError:
        pass
    return failures


MUL_PROBE = r"""
#include "ntt_fr.cuh"
extern "C" __global__ void mul_probe(const uint4* in, uint4* out, int iters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  fr_t a[4];
  for (int k = 0; k < 4; k++) {
    uint4 lo = in[2 * ((i + k) & 1023)], hi = in[2 * ((i + k) & 1023) + 1];
    a[k] = fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
  }
  const fr_t b = a[3];
  for (int t = 0; t < iters; t++)
#pragma unroll
    for (int k = 0; k < 4; k++) a[k] = fr_mul(a[k], b);
  fr_t s = fr_add(fr_add(a[0], a[1]), fr_add(a[2], a[3]));
  out[2 * i] = make_uint4(s.v[0], s.v[1], s.v[2], s.v[3]);
  out[2 * i + 1] = make_uint4(s.v[4], s.v[5], s.v[6], s.v[7]);
}
"""


def mul_rate() -> float:
    """Fr Montgomery multiplies per second of ntt_fr.cuh's fr_mul over the whole chip (G mul/s)."""
    import cupy as cp

    from cuzk.backend.cuda import ntt as ntt_cuda

    mod = cp.RawModule(code=MUL_PROBE, options=("--std=c++17", f"-I{ntt_cuda.KERNEL_DIR}"))
    f = mod.get_function("mul_probe")
    a = cp.asarray(det_input(10))
    blocks, threads, iters = 132 * 16, 256, 256
    out = cp.empty((blocks * threads, 4), dtype=cp.uint64)
    f((blocks,), (threads,), (a, out, np.int32(iters)))
    ms = event_ms(lambda: f((blocks,), (threads,), (a, out, np.int32(iters))), 5)
    return blocks * threads * iters * 4 / (ms * 1e-3) / 1e9


def event_ms(fn, repeat: int, warmup: int = 2) -> float:
    import cupy as cp

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def timings(logs: list[int], repeat: int) -> list[dict]:
    import cupy as cp

    from cuzk.backend.cuda import ntt as ntt_cuda

    device = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    rows = []
    for log_n in logs:
        a = rand_device(log_n)
        for kind in KINDS:
            fn = getattr(ntt_cuda, kind)
            ms = event_ms(lambda: fn(a, check=False), repeat)
            peer = SPPARK_MS[kind].get(log_n)
            rows.append({"bench": "ntt", "kind": KIND_NAMES[kind], "backend": "cuda", "device": device,
                         "n": 1 << log_n, "ms": round(ms, 4), "peer": "sppark", "peer_ms": peer})
        ms_chk = event_ms(lambda: ntt_cuda.ntt(a), repeat)
        rows.append({"bench": "ntt", "kind": "forward, canonical check (syncs)", "backend": "cuda",
                     "device": device, "n": 1 << log_n, "ms": round(ms_chk, 4), "peer": "sppark",
                     "peer_ms": SPPARK_MS["ntt"].get(log_n)})
        del a
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--make-ref", type=Path, help="write the CPU reference file and exit")
    ap.add_argument("--ref", type=Path, help="CPU reference file (from --make-ref)")
    ap.add_argument("--out", type=Path, default=Path("bench/results"))
    ap.add_argument("--log-sizes", default="20,22,24,26")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if args.make_ref:
        make_ref(args.make_ref)
        return
    failures = check(args.ref)
    print("correctness:", "all passed" if not failures else failures, flush=True)
    print(f"fr_mul throughput: {mul_rate():.1f} G mul/s", flush=True)
    rows = timings([int(x) for x in args.log_sizes.split(",")], args.repeat)
    today, command = dt.date.today().isoformat(), "python3 " + shlex.join(sys.argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "ntt_cuda.jsonl").open("a") as f:
        for row in rows:
            f.write(json.dumps({**row, "correct": not failures, "date": today, "command": command}) + "\n")
    print(f"\nNTT over Fr on {rows[0]['device']}, data on the GPU, median of {args.repeat} (CUDA events)")
    print(f"{'transform':34s} {'n':>6s} {'ms':>9s} {'sppark':>8s} {'ours/sppark':>11s}")
    for row in rows:
        peer = row["peer_ms"]
        ratio = f"{row['ms'] / peer:.2f}" if peer else "-"
        print(f"{row['kind']:34s} 2^{row['n'].bit_length() - 1:<4d} {row['ms']:9.3f} {peer or '-':>8} {ratio:>11s}")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
