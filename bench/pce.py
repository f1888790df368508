"""The PCE of a partition circuit: build (record + template arrays), file size, load, and the
evaluation a, b, c = A w, B w, C w on the CPU (numba, every core) and on the GPU, each checked
equal to the CPU's; the flat CSR evaluation of the same circuit is the side-by-side peer where it
fits in memory (2KiB, 8MiB).

    python -m bench.pce --proof StackedDrg2KiBV1_1 [--backends cpu,cuda] [--reps 5] [--no-flat] [--out DIR]

The witness is random canonical Fr (evaluation cost does not depend on the values). On the GPU,
`ms` is the three evaluation kernels with the witness and the results on the device (where the GPU
witness and the quotient keep them); `host_io_ms` is one backend.evaluate_pce call from and to host
memory, `upload_ms` the first call (the circuit's arrays go to the device then), `check_ms` the
first_unsatisfied kernel on the device results. Peak RSS is the process's maximum so far.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from bench.common import device_name, event_times_ms, peak_rss_gib, print_table, record
from cuzk.backend.cpu import CpuBackend
from cuzk.porep import pce_cache
from cuzk.porep.circuit import circuit
from cuzk.r1cs.pce import PCE, build
from cuzk.r1cs.pce_file import read_pce, write_pce


def random_witness(columns: int, seed: int = 1) -> np.ndarray:
    """(columns, 4) canonical Fr limbs (top limb below 2^62 < r / 2^192), made without Python ints."""
    w = np.random.default_rng(seed).integers(0, 2**64, (columns, 4), dtype=np.uint64)
    w[:, 3] >>= np.uint64(2)
    return w


def timed(fn, reps: int) -> tuple[float, object]:
    """(median ms over reps, last result)."""
    times, out = [], None
    for _ in range(reps):
        out = None
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proof", default="StackedDrg2KiBV1_1")
    ap.add_argument("--backends", default="cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-flat", action="store_true", help="skip the flat CSR peer (it needs ~200 B per non-zero)")
    ap.add_argument("--out", default=None, help="results directory (default bench/results)")
    args = ap.parse_args()
    backends = args.backends.split(",")
    cpu_name = device_name("cpu") + (" (the H200 host)" if "cuda" in backends else "")
    shape = pce_cache.shape_of(args.proof)
    rows: list[dict] = []

    t = time.perf_counter()
    cs = circuit(shape)
    record_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    pce = build(cs)
    build_ms = (time.perf_counter() - t) * 1e3
    flat = None if args.no_flat else cs.to_csr()
    del cs
    m = pce.num_constraints
    base = {"backend": "cpu", "device": cpu_name, "n": m, "threads": numba.get_num_threads(), "proof": args.proof}
    rows.append({**base, "bench": "pce_build", "ms": round(record_ms + build_ms, 1), "stat": "min",
                 "record_ms": round(record_ms, 1), "build_ms": round(build_ms, 1), "bytes": pce.nbytes,
                 "peak_rss_gib": peak_rss_gib(),
                 "note": "one run: the circuit recorded in constraints mode, then its template arrays"})

    with tempfile.TemporaryDirectory() as tmp:
        path, ident = Path(tmp) / "bench.pce", pce_cache.identity(args.proof)
        arrays = pce.to_arrays()
        t = time.perf_counter()
        write_pce(path, ident, {**arrays, pce_cache.SHA256_SECTION: pce_cache.digest_section(arrays)})
        write_ms = (time.perf_counter() - t) * 1e3
        size = path.stat().st_size

        def load() -> PCE:
            loaded = read_pce(path, ident)
            loaded.pop(pce_cache.SHA256_SECTION)
            return PCE.from_arrays(loaded)

        load_ms, loaded = timed(load, args.reps)
    assert all(np.array_equal(x, y) for x, y in zip(loaded.to_arrays().values(), arrays.values()))
    del loaded
    rows.append({**base, "bench": "pce_load", "ms": round(load_ms, 1), "stat": "median", "bytes": size,
                 "write_ms": round(write_ms, 1), "peak_rss_gib": peak_rss_gib(),
                 "note": f"read + section checksums + PCE.from_arrays checks, {args.reps} runs, file in the page "
                         "cache (written just before)"})

    w = random_witness(pce.shape[1])
    cpu = CpuBackend()
    cpu.evaluate_pce(pce, w)  # compile (numba cache) and touch
    eval_ms, ref = timed(lambda: cpu.evaluate_pce(pce, w), args.reps)
    peer_ms = None
    if flat is not None:
        peer_ms, got = timed(lambda: tuple(cpu.evaluate(mat, w) for mat in flat), args.reps)
        assert all(np.array_equal(x, y) for x, y in zip(got, ref)), "flat CSR and PCE evaluations differ"
        del got
    check_ms, bad = timed(lambda: cpu.first_unsatisfied(*ref), args.reps)
    rows.append({**base, "bench": "pce_eval", "ms": round(eval_ms, 1), "stat": "median", "check_ms": round(check_ms, 1),
                 "peer": None if flat is None else "flat CSR SpMV (3 x evaluate)",
                 "peer_ms": None if peer_ms is None else round(peer_ms, 1), "peak_rss_gib": peak_rss_gib(),
                 "note": f"A w, B w, C w from the template form, random witness, {args.reps} runs"})

    if "cuda" in backends:
        import cupy as cp

        from cuzk.backend.cuda import CudaBackend
        from cuzk.backend.cuda import pce as pce_cuda

        gpu = CudaBackend()
        t = time.perf_counter()
        first = gpu.evaluate_pce(pce, w)
        upload_ms = (time.perf_counter() - t) * 1e3
        assert all(np.array_equal(x, y) for x, y in zip(first, ref)), "GPU and CPU evaluations differ"
        del first
        host_ms, _ = timed(lambda: gpu.evaluate_pce(pce, w), args.reps)
        with cp.cuda.Device(gpu.device):
            dev = pce_cuda.resident(pce, gpu._reserve, gpu.residency)
            w_dev = cp.asarray(w)
            kernel_ms = statistics.median(event_times_ms(lambda: pce_cuda.evaluate_device(dev, w_dev, m), args.reps))
            outs = pce_cuda.evaluate_device(dev, w_dev, m)
            check_dev_ms = statistics.median(event_times_ms(lambda: gpu.first_unsatisfied(*outs), args.reps))
            assert gpu.first_unsatisfied(*outs) == bad
            vram = cp.cuda.runtime.memGetInfo()
            del outs, w_dev
        peer_gpu = None
        if flat is not None:
            peer_gpu, _ = timed(lambda: tuple(gpu.evaluate(mat, w) for mat in flat), args.reps)
        rows.append({"backend": "cuda", "device": device_name("cuda"), "n": m, "proof": args.proof,
                     "bench": "pce_eval", "ms": round(kernel_ms, 2), "stat": "median",
                     "host_io_ms": round(host_ms, 1), "upload_ms": round(upload_ms, 1),
                     "check_ms": round(check_dev_ms, 2), "resident_bytes": pce_cuda.resident_bytes(pce),
                     "peak_vram_gib": round((vram[1] - vram[0]) / 2**30, 2),
                     "peer": None if flat is None else "flat CSR GPU SpMV from host memory (3 x evaluate)",
                     "peer_ms": None if peer_gpu is None else round(peer_gpu, 1),
                     "note": f"3 template-form kernels, witness and a, b, c on the device (CUDA events), {args.reps} "
                             "runs; equal to the CPU's; peak_vram_gib: device memory in use after the runs"})

    print_table(rows, [("bench", "bench", "s"), ("backend", "backend", "s"), ("n", "rows", "d"), ("ms", "ms", ".2f"),
                       ("peer_ms", "peer ms", ".1f"), ("bytes", "bytes", "d"), ("host_io_ms", "host io ms", ".1f"),
                       ("peak_rss_gib", "rss GiB", ".2f")])
    for path in record(rows, "pce", args.out):
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
