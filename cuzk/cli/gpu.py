"""`cuzk gpu info` and `cuzk gpu build` (cuzk.cli): the CUDA devices, and the kernels compiled ahead
into the cache."""
from __future__ import annotations

import argparse
import time

from cuzk.errors import InputError


def _arch_arg(text: str) -> str:
    if not (text.startswith("sm_") and text[3:].isdigit()):
        raise argparse.ArgumentTypeError(f"expected an architecture like sm_90, got {text!r}")
    return text


def _gpu_info(args: argparse.Namespace) -> int:
    from cuzk.backend.cuda import device

    if not device.cuda_available():
        print("no CUDA device visible (needs cupy and an NVIDIA GPU)")
        return 1
    for i in range(device.cupy().cuda.runtime.getDeviceCount()):
        d = device.info(i)
        print(f"{i}: {d.name}  sm_{d.compute_capability[0]}{d.compute_capability[1]}  {d.sm_count} SMs  VRAM "
              f"{device.free_bytes(i) / 2**30:.1f} GiB free of {d.total_bytes / 2**30:.1f} GiB")
    return 0


def _gpu_build(args: argparse.Namespace) -> int:
    from cuzk.backend.cuda import loader

    archs = list(dict.fromkeys(args.arch or loader.local_archs()))
    if not archs:
        raise InputError("no CUDA device visible: name the architectures with --arch sm_XY")
    compiler = args.compiler or loader.default_compiler(bool(args.arch))
    t0 = time.perf_counter()
    built = loader.build(tuple(loader.MODULES) if args.tests else loader.PRODUCTION, archs, compiler)
    print(f"{'module':<18} {'arch':<7} {'seconds':>7}  cubin")
    for b in built:
        print(f"{b.module:<18} {b.arch:<7} {'cached' if b.cached else f'{b.seconds:.1f}':>7}  {b.path}")
    print(f"{len(built)} module(s) ready in {time.perf_counter() - t0:.1f} s ({compiler})")
    return 0


def add_commands(sub) -> None:
    gp = sub.add_parser("gpu", help="CUDA devices and kernels: info, build")
    gsub = gp.add_subparsers(dest="gpu_command", required=True)
    gsub.add_parser("info", help="list the CUDA devices (name, architecture, SMs, VRAM)").set_defaults(run=_gpu_info)
    bp = gsub.add_parser("build", help="compile the CUDA kernels ahead into the cache (for the local GPUs by default)")
    bp.add_argument("--arch", action="append", type=_arch_arg, metavar="sm_XY",
                    help="compile for this architecture instead (repeatable; no GPU needed)")
    bp.add_argument("--compiler", choices=["nvrtc", "nvcc"],
                    help="default: nvcc for --arch when on PATH, else NVRTC (what the runtime uses)")
    bp.add_argument("--tests", action="store_true", help="also the test and benchmark kernels")
    bp.set_defaults(run=_gpu_build)
