"""The PCE of a partition circuit (PoRep, PoSt or SnapDeals): build (record + template arrays +
witness program), its cache file, its load, and the evaluation a, b, c = A w, B w, C w on the CPU
(numba, every core) and on the GPU, each checked equal to the CPU's; the flat CSR evaluation of the
same circuit is the side-by-side peer where it fits in memory (2KiB, 8MiB).

    python -m bench.pce --proof StackedDrg2KiBV1_1 [--kind porep|post|snap] [--backends cpu,cuda] [--reps 5]
                        [--no-flat] [--no-eval] [--out DIR]

`--proof` takes what `cuzk pce build` does (cuzk.cli.pce.cached_circuit). The file is the cache's
(cuzk.porep.circuit_cache: PCE, witness program, arrays SHA-256) in a temporary parameter directory;
`pce_load` times CachedCircuit.load finding it there. The witness is random canonical Fr (evaluation
cost does not depend on the values). On the GPU, `ms` is the three evaluation kernels with the
witness and the results on the device (where the GPU witness and the quotient keep them);
`host_io_ms` is one backend.evaluate_pce call from and to host memory, `upload_ms` the first call
(the circuit's arrays go to the device then), `check_ms` the first_unsatisfied kernel on the device
results. Peak RSS is the process's maximum so far.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from unittest import mock

import numba
import numpy as np

from bench.common import device_name, event_times_ms, peak_rss_gib, print_table, record
from cuzk.backend.cpu import CpuBackend
from cuzk.cli.pce import KINDS, cached_circuit
from cuzk.porep.circuit_cache import file_arrays
from cuzk.r1cs.pce import build
from cuzk.r1cs.pce_file import write_pce
from cuzk.r1cs.witness_program import compile_program, hint_matrices


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
    ap.add_argument("--proof", default="StackedDrg2KiBV1_1", help="a registered seal, PoSt or update proof")
    ap.add_argument("--kind", choices=list(KINDS), help="the registry --proof is in, where two hold it")
    ap.add_argument("--backends", default="cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-flat", action="store_true", help="skip the flat CSR peer (it needs ~200 B per non-zero)")
    ap.add_argument("--no-eval", action="store_true", help="build and load only (no evaluation rows)")
    ap.add_argument("--out", default=None, help="results directory (default bench/results)")
    args = ap.parse_args()
    backends = args.backends.split(",")
    cpu_name = device_name("cpu") + (" (the H200 host)" if "cuda" in backends else "")
    cached = cached_circuit(args.proof, args.kind)
    load_avg = round(os.getloadavg()[0], 2)  # the machine's other work as the run starts
    rows: list[dict] = []

    t = time.perf_counter()
    cs = cached.synthesize()
    record_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    pce = build(cs)
    build_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    program = compile_program(pce, hint_matrices(cs, pce))
    program_ms = (time.perf_counter() - t) * 1e3
    flat = None if args.no_flat or args.no_eval else cs.to_csr()
    del cs
    m = pce.num_constraints
    arrays = file_arrays(pce, program)
    base = {"backend": "cpu", "device": cpu_name, "n": m, "threads": numba.get_num_threads(), "proof": args.proof,
            "shape": cached.identity["shape"], "load_avg_1m": load_avg}
    rows.append({**base, "bench": "pce_build", "ms": round(record_ms + build_ms + program_ms, 1), "stat": "min",
                 "record_ms": round(record_ms, 1), "build_ms": round(build_ms, 1), "program_ms": round(program_ms, 1),
                 "bytes": sum(a.nbytes for a in arrays.values()), "peak_rss_gib": peak_rss_gib(),
                 "note": "one run: the circuit recorded in constraints mode, its template arrays, then its witness "
                         "program (what the cache builds; bytes: the arrays)"})

    with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"FIL_PROOFS_PARAMETER_CACHE": tmp}):
        t = time.perf_counter()
        write_pce(cached.path, cached.identity, arrays)
        write_ms = (time.perf_counter() - t) * 1e3
        size = cached.path.stat().st_size
        load_ms, (loaded, loaded_program) = timed(lambda: cached.load(progress=False), args.reps)
    assert all(np.array_equal(x, y) for x, y in zip(loaded.to_arrays().values(), pce.to_arrays().values()))
    assert all(np.array_equal(x, y) for x, y in zip(loaded_program.to_arrays().values(), program.to_arrays().values()))
    del loaded, loaded_program, arrays
    rows.append({**base, "bench": "pce_load", "ms": round(load_ms, 1), "stat": "median", "bytes": size,
                 "write_ms": round(write_ms, 1), "peak_rss_gib": peak_rss_gib(),
                 "note": f"CachedCircuit.load of the cache file: read + section checksums + PCE and witness program "
                         f"from_arrays checks, {args.reps} runs, file in the page cache (written just before)"})
    if args.no_eval:
        _report(rows, args.out)
        return

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

    _report(rows, args.out)


def _report(rows: list[dict], out: str | None) -> None:
    """Print the rows as a table and append them to the results."""
    print_table(rows, [("bench", "bench", "s"), ("backend", "backend", "s"), ("n", "rows", "d"), ("ms", "ms", ".2f"),
                       ("peer_ms", "peer ms", ".1f"), ("bytes", "bytes", "d"), ("host_io_ms", "host io ms", ".1f"),
                       ("peak_rss_gib", "rss GiB", ".2f")])
    for path in record(rows, "pce", out):
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
