"""Partition witnesses by the witness program: CPU (all cores) and GPU, checked equal.

    python -m bench.witness --proof StackedDrg2KiBV1_1 [--backends cpu,cuda] [--partitions P]
        [--reps N] [--gadgets] [--out DIR]

One synthetic C1 (cuzk.porep.synthetic) of the proof; its first P partitions' witnesses computed
by the program on the CPU (P at once, all cores) and, with cuda, on the GPU (inputs and free values
packed on the host and copied in, then the program's kernels: cooperative and per-level launches);
the GPU witness is compared with the CPU's value for value. --gadgets also times the gadgets'
own witness-mode synthesis of partition 0 (the CPU path before the program) and compares it too.
One JSON line per backend and mode (bench `witness`, n = constraints of one partition, ms per
partition).
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from bench.common import device_name, peak_rss_gib, print_table, record
from cuzk import api
from cuzk.backend import get_backend
from cuzk.backend.cpu import CpuBackend
from cuzk.porep import program_witness as pw
from cuzk.porep.circuit import StackedShape, circuit, partition_witnesses
from cuzk.porep.synthetic import synthetic_c1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proof", default="StackedDrg2KiBV1_1")
    ap.add_argument("--backends", default="cpu")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gadgets", action="store_true", help="also time the gadgets' witness-mode synthesis (peer)")
    ap.add_argument("--grids", default="0", help="cooperative grid caps to time, comma separated (0: all resident)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    backends = args.backends.split(",")

    t = time.perf_counter()
    compiled = pw.compiled(args.proof, progress=True)
    pce, program = compiled.pce, compiled.program
    load_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    c1 = synthetic_c1(args.proof, prover_id=bytes(range(32)), sector_id=1, ticket=b"\x05" * 32, seed=b"\x06" * 32,
                      rng=np.random.default_rng(1), progress=False)
    c1_ms = (time.perf_counter() - t) * 1e3
    shape = StackedShape.from_config(c1.config)
    P = min(args.partitions, c1.config.partitions)
    ws, ins = partition_witnesses(c1)[:P], api.public_inputs(c1)[:P]
    packs = [pw.pack(shape, w, x) for w, x in zip(ws, ins)]
    cpu = CpuBackend()
    m = pce.num_constraints
    stats = program.stats()
    base = {"bench": "witness", "n": m, "proof": args.proof, "partitions": P, "steps": stats["steps"],
            "levels": stats["levels"], "load_ms": round(load_ms, 1), "synthetic_c1_ms": round(c1_ms, 1)}
    rows = []

    cpu_ms = []
    for _ in range(args.reps):
        t = time.perf_counter()
        ref = pw.expand(compiled, packs, cpu)
        cpu_ms.append((time.perf_counter() - t) * 1e3)
    cpu_ms = cpu_ms[1:] if len(cpu_ms) > 1 else cpu_ms  # the first run may compile (numba cache)
    peer = peer_ms = None
    if args.gadgets:
        t = time.perf_counter()
        gadget = circuit(shape, ws[0], mode="witness").witness()
        peer_ms, peer = round((time.perf_counter() - t) * 1e3, 1), "the gadgets' witness-mode synthesis, partition 0"
        assert np.array_equal(gadget, ref[0]), "program and gadget witnesses differ"
        del gadget
    rows.append({**base, "backend": "cpu", "device": device_name("cpu") + (" (the H200 host)" if "cuda" in backends else ""),
                 "ms": round(float(np.median(cpu_ms)) / P, 1), "stat": "median", "peer": peer, "peer_ms": peer_ms,
                 "threads": numba.get_num_threads(), "peak_rss_gib": peak_rss_gib(),
                 "note": f"witness program on all cores, {P} partition(s) per call, ms per partition, "
                         f"{len(cpu_ms)} run(s)" + (" after a first" if args.reps > 1 else "") + ("; equal to the gadgets' witness" if peer else "")})

    if "cuda" in backends:
        import cupy as cp

        from cuzk.backend.cuda import witness as wcuda

        dev = wcuda.upload_program(pce, program)
        modes = [(True, int(g)) for g in args.grids.split(",")] + [(False, 0)]
        for cooperative, grid in modes:
            times, seeds = [], []
            for rep in range(args.reps + 1):
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                w = pw.seeded_device(pce, program, packs, get_backend("cuda"))
                cp.cuda.Device().synchronize()
                seeds.append((time.perf_counter() - t) * 1e3)
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                wcuda.run_device(dev, w, P, cooperative, grid or None)
                end.record()
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end))
                if rep == 0:
                    equal = all(np.array_equal(cp.asnumpy(w[p]), ref[p]) for p in range(P))
                    assert equal, "GPU and CPU witnesses differ"
                del w
            times, seeds = times[1:], seeds[1:]
            rows.append({**base, "backend": "cuda", "device": device_name("cuda"), "ms": round(float(np.median(times)) / P, 2),
                         "stat": "median", "peer": "the witness program on the host's cores (this run's cpu line)",
                         "peer_ms": rows[0]["ms"], "peak_vram_gib": round(cp.get_default_memory_pool().total_bytes() / 2**30, 2),
                         "seed_ms": round(float(np.median(seeds)), 1), "mode": ("cooperative" + (f", grid {grid}" if grid else "")) if cooperative else "per-level",
                         "note": f"{'one cooperative launch' if cooperative else 'one launch per level'}, "
                                 f"{P} partition(s) at once, ms per partition (CUDA events, {len(times)} runs after a "
                                 "first that is compared with the CPU witness: equal); seed_ms: inputs and free values "
                                 "packed on the host and scattered into a zeroed device witness (all partitions)"})
    print_table(rows, [("backend", "backend", ""), ("mode", "mode", ""), ("ms", "ms/partition", ".2f"),
                       ("peer_ms", "peer ms", ".1f"), ("steps", "steps", ""), ("levels", "levels", "")])
    for path in record(rows, "witness", args.out):
        print("wrote", path)


if __name__ == "__main__":
    main()
