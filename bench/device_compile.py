"""First-use compile time of each CUDA module, as a user meets it on a fresh GPU host.

On the GPU host, from the repo root (or anywhere, against an installed cuzk):
    python -m bench.device_compile [--out DIR] [--modules msm_g1,ntt,...]
Without a GPU, ahead of time with the nvcc on PATH for a named architecture:
    python -m bench.device_compile --compiler nvcc --arch sm_90

CUZK_CACHE_DIR (and CuPy's CUPY_CACHE_DIR) point at new empty temp directories, so nothing compiled
earlier is reused. Each module the prover uses (cuzk.backend.cuda.loader.PRODUCTION, or --modules)
is first compiled alone through loader.build, one after the other: one `compile` line per module
(n = 0, `module`). Then, from another empty cache, all of them at once as first use does
(loader.build compiles them concurrently): one line with `module` "all" and the wall time.
Lines go to DIR/compile_cuda.jsonl (DIR: $OUT, else bench/results).
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import RESULTS, device_name, record


def fresh_cache(root: Path, name: str) -> Path:
    """Point cuzk's kernel cache (and CuPy's) at a new empty directory under root."""
    path = root / name
    path.mkdir(parents=True)
    os.environ["CUZK_CACHE_DIR"] = str(path / "cuzk")
    os.environ["CUPY_CACHE_DIR"] = str(path / "cupy")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", str(RESULTS)))
    ap.add_argument("--modules", default="", help="comma-separated loader module names (default: PRODUCTION)")
    ap.add_argument("--compiler", default="nvrtc", choices=["nvrtc", "nvcc"])
    ap.add_argument("--arch", default=None, help="sm_XY (default: the current GPU's, read from the device)")
    ap.add_argument("--no-serial", action="store_true", help="only the concurrent build of all modules")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cuzk-compile-"))
    try:
        run(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args, root: Path) -> None:
    fresh_cache(root, "serial")

    from cuzk.backend.cuda import loader

    modules = [m for m in args.modules.split(",") if m] or list(loader.PRODUCTION)
    unknown = [m for m in modules if m not in loader.MODULES]
    if unknown:
        raise SystemExit(f"unknown modules {unknown}; the loader has {', '.join(loader.MODULES)}")
    arch = args.arch or loader.arch()
    version = "%d.%d" % loader.compiler_version(args.compiler)
    if args.arch is None:
        device, where = device_name("cuda"), f"first use on this GPU ({arch})"
    else:
        device, where = device_name("cpu"), f"ahead of time for {arch}, no GPU"
    context = f"{where}; {args.compiler.upper()} {version}; empty CUZK_CACHE_DIR; one run"
    print(f"{device}: compiling {', '.join(modules)} for {arch} with {args.compiler} {version}", flush=True)

    rows = []
    if not args.no_serial:
        for m in modules:
            [built] = loader.build([m], arch, args.compiler)
            assert not built.cached, f"{m} was cached in a fresh directory"
            rows.append({"bench": "compile", "backend": "cuda", "device": device, "n": 0,
                         "ms": round(built.seconds * 1e3, 1), "module": m, "arch": arch,
                         "note": f"{context}; this module alone"})
    fresh_cache(root, "all")
    start = time.perf_counter()
    built = loader.build(modules, arch, args.compiler)
    wall = time.perf_counter() - start
    each = ", ".join(f"{b.module} {b.seconds:.1f} s" for b in built)
    rows.append({"bench": "compile", "backend": "cuda", "device": device, "n": 0, "ms": round(wall * 1e3, 1),
                 "module": "all", "arch": arch, "modules": modules,
                 "note": f"{context}; all modules at once as first use builds them (concurrently: {each})"})
    print(f"\n{'module':20s} {'seconds':>8s}")
    for row in rows:
        print(f"{row['module']:20s} {row['ms'] / 1e3:8.2f}")
    print("recorded in", *record(rows, "compile", out=args.out))


if __name__ == "__main__":
    main()
