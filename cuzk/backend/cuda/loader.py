"""The one loader of the CUDA kernels: compiles each module for the compute capability of the device
in use, caches the cubins on disk, and hands out kernels by name.

A module is one .cu file under kernels/ (package data, read with importlib.resources) with its local
#include "..." headers inlined, each once, with paths relative to kernels/. `function(name, device)`
finds the module holding kernel `name` (KERNELS), compiles it with NVRTC for that device's
architecture (-arch=sm_XY read from the device at run time) unless the cubin is cached, and returns
the CuPy RawKernel, cached per device. On a miss every uncached module of the same family (all the
prover's, the Groth16 setup's, or the test kernels) is compiled with it, concurrently (NVRTC releases
the GIL).

Cubins live in $CUZK_CACHE_DIR, else $XDG_CACHE_HOME/cuzk, else ~/.cache/cuzk, under kernels/, named
<module>-<arch>-<key>.cubin; the key hashes the inlined source, the architecture, the options and the
CUDA version of the compiler, so a change to any of them compiles afresh. `build` fills the cache
ahead (`cuzk gpu build`), with NVRTC or, for named architectures without a GPU, nvcc.
CuPy is imported lazily: this module imports on machines without it.
"""
from __future__ import annotations

import hashlib
import importlib.resources
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cuzk.backend.cuda.device import cuda_available, cupy, info
from cuzk.errors import BackendUnavailableError
from cuzk.util.atomic import atomic_write
from cuzk.util.cache_dirs import cache_root
from cuzk.util.progress import Progress

Compiler = Literal["nvrtc", "nvcc"]
OPTIONS = ("-std=c++17",)  # front-end options, the same for NVRTC and nvcc; -arch=sm_XY is added per target


@dataclass(frozen=True)
class Module:
    """One compilation unit: kernels/<path> and the extern "C" kernels it defines."""

    name: str
    path: str
    family: str  # "prover", "setup" or "test": a miss compiles every uncached module of its family
    kernels: tuple[str, ...]


MODULES: dict[str, Module] = {m.name: m for m in (
    Module("msm_scalars", "msm/scalars.cu", "prover", ("scalar_pass", "fr_from_mont_vec")),
    Module("msm_g1_accum", "msm/msm_g1_accum.cu", "prover", ("accum_affine_g1", "accum_xyzz_g1")),
    Module("msm_g1_reduce", "msm/msm_g1_reduce.cu", "prover", ("bucket_reduce_g1", "horner_affine_g1")),
    Module("msm_g1_precompute", "msm/msm_g1_precompute.cu", "prover", ("precompute_g1",)),
    Module("msm_g2_accum", "msm/msm_g2_accum.cu", "prover", ("accum_affine_g2",)),
    Module("msm_g2_reduce", "msm/msm_g2_reduce.cu", "prover", ("accum_xyzz_g2", "bucket_reduce_g2", "horner_affine_g2")),
    Module("msm_g2_precompute", "msm/msm_g2_precompute.cu", "prover", ("precompute_g2",)),
    Module("ntt", "ntt/ntt.cu", "prover", ("ntt_pass", "fr_powers", "fr_twiddles", "fr_mul_assign", "fr_sub_scale")),
    Module("spmv", "spmv/spmv.cu", "prover", ("fr_spmv_i32", "fr_spmv_i64")),
    Module("pce", "pce/pce.cu", "prover", ("pce_evaluate", "fr_first_unsatisfied")),
    Module("witness", "witness/witness.cu", "prover", ("witness_level", "witness_program")),
    Module("params_points", "params/points.cu", "prover",
           ("params_decode_g1", "params_decode_g2", "params_encode_g1", "params_encode_g2")),
    Module("setup_fr", "setup/setup_fr.cu", "setup", ("setup_lagrange", "pce_transpose", "setup_fold", "fr_lincomb")),
    Module("setup_g1", "setup/setup_g1.cu", "setup", ("fb_table_g1", "fb_mul_g1")),
    Module("setup_g2", "setup/setup_g2.cu", "setup", ("fb_table_g2", "fb_mul_g2")),
    Module("test_ff", "test/ff.cu", "test", ("bench_fq_mul", "bench_fr_mul", "fq_mul_vec")),
    Module("test_g1", "test/ec_g1.cu", "test", ("scalar_mul_g1", "add_pairs_g1")),
    Module("test_g2", "test/ec_g2.cu", "test", ("scalar_mul_g2", "add_pairs_g2")),
)}
KERNELS: dict[str, str] = {k: m.name for m in MODULES.values() for k in m.kernels}  # kernel -> module
PRODUCTION = tuple(n for n, m in MODULES.items() if m.family != "test")

_INCLUDE = re.compile(r'^#include "([^"]+)"\s*$', re.M)


class KernelBuildError(BackendUnavailableError):
    """A CUDA module could not be compiled (no compiler, an unsupported architecture, or an error)."""


# ---------------------------------------------------------------- sources
def _read(rel: str) -> str:
    return importlib.resources.files(__package__).joinpath("kernels", *rel.split("/")).read_text()


def source(module: str) -> str:
    """The module's source with its local #include "..." headers inlined (each once)."""
    seen: set[str] = set()

    def expand(rel: str) -> str:
        if rel in seen:
            return ""
        seen.add(rel)
        return _INCLUDE.sub(lambda m: expand(m.group(1)), _read(rel).replace("#pragma once\n", ""))

    return expand(MODULES[module].path)


def _define(rel: str, name: str) -> int:
    m = re.search(rf"^#define {name} (\d+)\b", _read(rel), re.M)
    if m is None:
        raise KernelBuildError(f"#define {name} not found in kernels/{rel}")
    return int(m.group(1))


MAX_MULTIPLES = _define("msm/params.cuh", "PRE_MAX")  # most multiples per base in a precomputed table


# ---------------------------------------------------------------- cache
def cache_dir() -> Path:
    """Directory of the compiled cubins: $CUZK_CACHE_DIR, else $XDG_CACHE_HOME/cuzk, else ~/.cache/cuzk;
    then kernels/."""
    return cache_root() / "kernels"


def cache_key(module: str, arch: str, cuda_version: tuple[int, int]) -> str:
    """Hash of (inlined source, architecture, options, compiler CUDA version)."""
    text = "\0".join((source(module), arch, " ".join(OPTIONS), "cuda-%d.%d" % cuda_version))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cubin_path(module: str, arch: str, cuda_version: tuple[int, int]) -> Path:
    return cache_dir() / f"{module}-{arch}-{cache_key(module, arch, cuda_version)}.cubin"


# ---------------------------------------------------------------- compilers
def _nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as e:
        raise KernelBuildError(f"NVRTC is not available ({e}); install cupy and the CUDA NVRTC library") from e
    return nvrtc


def _nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise KernelBuildError("nvcc not found on PATH")
    return nvcc


def default_compiler(named_archs: bool) -> Compiler:
    """nvcc for named architectures when it is on PATH (no GPU or cupy needed), else NVRTC."""
    return "nvcc" if named_archs and shutil.which("nvcc") else "nvrtc"


def compiler_version(compiler: Compiler) -> tuple[int, int]:
    """(major, minor) CUDA version of NVRTC or of the nvcc on PATH."""
    if compiler == "nvrtc":
        return tuple(_nvrtc().getVersion())[:2]
    out = subprocess.run([_nvcc(), "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", out)
    if m is None:
        raise KernelBuildError(f"cannot read the CUDA version from nvcc --version: {out!r}")
    return int(m.group(1)), int(m.group(2))


def nvcc_command(src: str | os.PathLike, out: str | os.PathLike, arch: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The nvcc command line that compiles the inlined source file `src` to the cubin `out` with the
    loader's options (`extra`: more flags, e.g. -Xptxas -v)."""
    return [_nvcc(), "-cubin", *OPTIONS, f"-arch={arch}", *extra, "-o", os.fspath(out), os.fspath(src)]


def _compile(module: str, arch: str, compiler: Compiler) -> bytes:
    """The cubin of `module` for `arch`."""
    text = source(module)
    if compiler == "nvcc":
        with tempfile.TemporaryDirectory(prefix="cuzk-nvcc-") as tmp:
            src, out = Path(tmp) / f"{module}.cu", Path(tmp) / f"{module}.cubin"
            src.write_text(text)
            res = subprocess.run(nvcc_command(src, out, arch), capture_output=True, text=True)
            if res.returncode != 0:
                raise KernelBuildError(f"nvcc failed on {module} for {arch}:\n{res.stderr}")
            return out.read_bytes()
    nvrtc = _nvrtc()
    supported = nvrtc.getSupportedArchs()
    if int(arch.removeprefix("sm_")) not in supported:
        raise KernelBuildError(f"NVRTC {'.'.join(map(str, nvrtc.getVersion()))} cannot compile for {arch} "
                               f"(supported: {', '.join(f'sm_{a}' for a in supported)}); install a newer CUDA NVRTC")
    prog = nvrtc.createProgram(text, f"{module}.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, [*OPTIONS, f"-arch={arch}"])
        except nvrtc.NVRTCError as e:
            raise KernelBuildError(f"NVRTC failed on {module} for {arch}:\n{nvrtc.getProgramLog(prog)}") from e
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


# ---------------------------------------------------------------- build
@dataclass(frozen=True)
class Built:
    """One module's cubin: where it is, and the compile time (0 when it was already cached)."""

    module: str
    arch: str
    seconds: float
    path: Path
    cached: bool


_lock = threading.Lock()
_inflight: dict[Path, Future] = {}
_pool: ThreadPoolExecutor | None = None


def _compile_to(module: str, arch: str, compiler: Compiler, path: Path) -> float:
    t0 = time.perf_counter()
    cubin = _compile(module, arch, compiler)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, cubin)
    seconds = time.perf_counter() - t0
    print(f"cuzk: compiled CUDA module {module} for {arch} in {seconds:.1f} s", file=sys.stderr)
    return seconds


def build(modules: Sequence[str], arch: str | Sequence[str], compiler: Compiler = "nvrtc") -> list[Built]:
    """Cubins of `modules` for `arch` (e.g. "sm_90", or several): those not cached are compiled
    concurrently, with a line on stderr and an elapsed-time ticker while they compile."""
    global _pool
    archs = [arch] if isinstance(arch, str) else list(arch)
    version = compiler_version(compiler)
    jobs: list[tuple[str, str, Path, Future | None]] = []
    started: list[str] = []
    with _lock:
        for a in archs:
            for m in modules:
                path = cubin_path(m, a, version)
                fut = _inflight.get(path)
                if fut is None and not path.exists():
                    if _pool is None:
                        _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="cuzk-compile")
                    fut = _inflight[path] = _pool.submit(_compile_to, m, a, compiler, path)
                    started.append(f"{m}/{a}")
                jobs.append((m, a, path, fut))
    if all(fut is None for *_, fut in jobs):
        return [Built(m, a, 0.0, path, True) for m, a, path, _ in jobs]
    if started:
        print(f"cuzk: compiling CUDA modules {', '.join(started)} with {compiler.upper()} {version[0]}.{version[1]} "
              f"(once; cached in {cache_dir()})", file=sys.stderr)
    out = []
    try:
        with Progress(f"cuzk: compiling CUDA modules for {', '.join(archs)}", every=10.0):
            for m, a, path, fut in jobs:
                out.append(Built(m, a, fut.result(), path, False) if fut is not None else Built(m, a, 0.0, path, True))
    finally:
        with _lock:
            for *_, path, fut in jobs:
                if fut is not None and fut.done():
                    _inflight.pop(path, None)
    return out


def build_all(device: int | None = None, modules: Sequence[str] = PRODUCTION) -> list[Built]:
    """Cubins of `modules` (default: every module the prover uses) for `device`'s architecture."""
    return build(modules, arch(device))


# ---------------------------------------------------------------- devices and kernels
def _device_id(device: int | None) -> int:
    return cupy().cuda.Device().id if device is None else int(device)


def arch(device: int | None = None) -> str:
    """sm_XY of the device (the current one by default), read from the device."""
    major, minor = info(_device_id(device)).compute_capability
    return f"sm_{major}{minor}"


def local_archs() -> list[str]:
    """The architectures of the visible CUDA devices (empty without cupy or a GPU)."""
    if not cuda_available():
        return []
    return sorted({arch(i) for i in range(cupy().cuda.runtime.getDeviceCount())})


_modules: dict[tuple[str, int], Any] = {}
_kernels: dict[tuple[str, int], Any] = {}


def _module(module: str, device: int):
    key = (module, device)
    mod = _modules.get(key)
    if mod is None:
        target = arch(device)
        path = cubin_path(module, target, compiler_version("nvrtc"))
        if not path.exists():
            family = MODULES[module].family
            build([n for n, m in MODULES.items() if m.family == family], target)
        mod = _modules.setdefault(key, cupy().RawModule(path=str(path)))
    return mod


def function(name: str, device: int | None = None):
    """The CuPy RawKernel `name` compiled for `device` (the current device by default); launch it with
    that device current."""
    if name not in KERNELS:
        raise KeyError(f"no CUDA kernel {name!r} (known: {', '.join(sorted(KERNELS))})")
    dev = _device_id(device)
    key = (name, dev)
    kern = _kernels.get(key)
    if kern is None:
        with cupy().cuda.Device(dev):  # get_function loads the cubin into the current device
            kern = _kernels.setdefault(key, _module(KERNELS[name], dev).get_function(name))
    return kern

