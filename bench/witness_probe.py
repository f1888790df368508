"""Where a witness program level's time goes (a probe, timing only): the cooperative kernel
as built, with its steps skipped (the grid barrier alone), with a block barrier in place of the
grid's (wrong results: time only), and without the short steps' records (every step read through
its heads, as before the records; results right).    python -m bench.witness_probe --proof StackedDrg2KiBV1_1"""
from __future__ import annotations

import argparse

import numpy as np

from cuzk.backend.cuda import loader
from cuzk.backend.cuda import witness as wcuda
from cuzk.backend.cuda.device import cupy
from cuzk.porep import program_witness as pw
from cuzk.porep.synthetic import synthetic_c1
from cuzk.porep.circuit import StackedShape, partition_witnesses
from cuzk import api
from cuzk.backend import get_backend

PROBES = {0: "as built", 1: "steps skipped (barrier only)", 2: "block barrier only (wrong results)",
          3: "without step records"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--proof", default="StackedDrg2KiBV1_1")
    ap.add_argument("--grids", default="132,8")
    ap.add_argument("--probes", default="0,1,2,3")
    ap.add_argument("--defines", default="", help="variants of the kernel's macros, e.g. 'WP_PREFETCH=1;WP_WARP_GATHER=1,WP_PREFETCH=1'")
    args = ap.parse_args()
    cp = cupy()
    compiled = pw.compiled(args.proof)
    pce, program = compiled.pce, compiled.program
    c1 = synthetic_c1(args.proof, prover_id=bytes(range(32)), sector_id=1, ticket=b"\x05" * 32, seed=b"\x06" * 32,
                      rng=np.random.default_rng(1), progress=False)
    shape = StackedShape.from_config(c1.config)
    packs = [pw.pack(shape, partition_witnesses(c1)[0], api.public_inputs(c1)[0])]
    dev = wcuda.upload_program(pce, program)
    src = loader.source("witness")
    src = src.replace("  const u64 taken = wp_items<32>", "  if (WP_PROBE == 1) return;\n  const u64 taken = wp_items<32>")
    src = src.replace("__device__ __forceinline__ void wp_grid_sync(u32* barrier) {\n",
                      "__device__ __forceinline__ void wp_grid_sync(u32* barrier) {\n  if (WP_PROBE == 2) { __syncthreads(); return; }\n")
    levels = int(program.levels.shape[0] - 1)
    print(f"{args.proof}: {levels} levels")
    variants = [(int(v), d) for v in args.probes.split(",") for d in [""] + [x for x in args.defines.split(";") if x]]
    kernels = {}
    for v, defines in variants:
        name = PROBES[v] + (f" [{defines}]" if defines else "")
        opts = ("-std=c++17", f"-DWP_PROBE={v if v in (1, 2) else 0}", *(f"-D{d}" for d in defines.split(",") if d))
        args_v = dev.args.copy()
        if v == 3:
            args_v["words"][0][-1] = 0  # the records pointer, the struct's last word
        if opts not in kernels:  # probe 3 runs the kernel as built
            kernels[opts] = cp.RawModule(code=src, options=opts, enable_cooperative_groups=True).get_function("witness_program")
        fn = kernels[opts]
        for grid in (int(g) for g in args.grids.split(",")):
            times = []
            for _ in range(4):
                w = pw.seeded_device(pce, program, packs, get_backend("cuda"))
                error, barrier = cp.zeros(1, cp.int32), cp.zeros(1, cp.uint32)
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                fn((grid,), (wcuda.THREADS,), (args_v, np.uint32(0), np.uint32(len(dev.runs)), w,
                                                np.uint64(dev.ncols), np.uint32(1), error, barrier))
                e.record()
                e.synchronize()
                times.append(cp.cuda.get_elapsed_time(s, e))
            ms = float(np.median(times[1:]))
            print(f"  {name:60s} grid {grid:4d}: {ms:8.2f} ms  {1e3 * ms / levels:6.2f} us/level")


if __name__ == "__main__":
    main()
