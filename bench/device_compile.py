"""First-use compile time of each CUDA module, as a user meets it on a fresh GPU host.

On the GPU host, from the repo root (or anywhere, against an installed cuzk):
    python -m bench.device_compile [--out DIR] [--modules msm_g1_accum,ntt,...]
Without a GPU, ahead of time with the nvcc on PATH for a named architecture:
    python -m bench.device_compile --compiler nvcc --arch sm_90

Every measurement runs in a new process with CUZK_CACHE_DIR (and CuPy's CUPY_CACHE_DIR) pointing at
a new empty directory: a second compile of the same source inside one process was seen to return
in a fraction of a second (H200, NVRTC 13.0), so nothing earlier may be reused. First all modules
the prover uses (cuzk.backend.cuda.loader.PRODUCTION, or --modules) at once, as first use builds
them (concurrently): one `compile` line with `module` "all" and the wall time; then each module
alone: one line per module (n = 0). Lines go to DIR/compile_cuda.jsonl (DIR: $OUT, else bench/results).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import RESULTS, device_name, record


def measure(modules: list[str], arch: str | None, compiler: str) -> dict:
    """In this (fresh) process: build `modules` from an empty cache; wall seconds and per-module seconds."""
    from cuzk.backend.cuda import loader

    target = arch or loader.arch()
    start = time.perf_counter()
    built = loader.build(modules, target, compiler)
    wall = time.perf_counter() - start
    if any(b.cached for b in built):
        raise SystemExit(f"a module was cached in a fresh directory: {[b.module for b in built if b.cached]}")
    return {"wall": wall, "arch": target, "version": "%d.%d" % loader.compiler_version(compiler),
            "each": {b.module: b.seconds for b in built}}


def in_fresh_process(modules: list[str], args) -> dict:
    with tempfile.TemporaryDirectory(prefix="cuzk-compile-") as root:
        env = dict(os.environ, CUZK_CACHE_DIR=f"{root}/cuzk", CUPY_CACHE_DIR=f"{root}/cupy")
        cmd = [sys.executable, "-m", "bench.device_compile", "--child", ",".join(modules), "--compiler", args.compiler]
        if args.arch:
            cmd += ["--arch", args.arch]
        res = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, check=True, text=True)
        return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", str(RESULTS)))
    ap.add_argument("--modules", default="", help="comma-separated loader module names (default: PRODUCTION)")
    ap.add_argument("--compiler", default="nvrtc", choices=["nvrtc", "nvcc"])
    ap.add_argument("--arch", default=None, help="sm_XY (default: the current GPU's, read from the device)")
    ap.add_argument("--no-serial", action="store_true", help="only the concurrent build of all modules")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child.split(","), args.arch, args.compiler)))
        return

    from cuzk.backend.cuda import loader

    modules = [m for m in args.modules.split(",") if m] or list(loader.PRODUCTION)
    unknown = [m for m in modules if m not in loader.MODULES]
    if unknown:
        raise SystemExit(f"unknown modules {unknown}; the loader has {', '.join(loader.MODULES)}")
    device = device_name("cpu" if args.arch else "cuda")
    print(f"{device}: compiling {', '.join(modules)} with {args.compiler}", flush=True)
    together = in_fresh_process(modules, args)
    where = f"ahead of time for {together['arch']}, no GPU" if args.arch else f"first use on this GPU ({together['arch']})"
    context = f"{where}; {args.compiler.upper()} {together['version']}; empty CUZK_CACHE_DIR; new process; one run"
    each = ", ".join(f"{m} {s:.1f} s" for m, s in together["each"].items())
    rows = [{"bench": "compile", "backend": "cuda", "device": device, "n": 0, "ms": round(together["wall"] * 1e3, 1),
             "module": "all", "arch": together["arch"], "modules": modules,
             "note": f"{context}; all modules at once as first use builds them (concurrently: {each})"}]
    if not args.no_serial:
        for m in modules:
            alone = in_fresh_process([m], args)
            rows.append({"bench": "compile", "backend": "cuda", "device": device, "n": 0,
                         "ms": round(alone["wall"] * 1e3, 1), "module": m, "arch": alone["arch"],
                         "note": f"{context}; this module alone"})
    print(f"\n{'module':20s} {'seconds':>8s}")
    for row in rows:
        print(f"{row['module']:20s} {row['ms'] / 1e3:8.2f}")
    print("recorded in", *record(rows, "compile", out=args.out))


if __name__ == "__main__":
    main()
