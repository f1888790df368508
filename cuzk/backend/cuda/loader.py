"""Loads the CUDA kernels in kernels/ once per process (CuPy RawModule).

The headers are inlined into one source text, so the source hash covers every file. If
kernels/build/msm_<hash>.cubin exists (built ahead with `nvcc -cubin -arch=sm_90`, see
`build_cubin`), it is loaded as is; otherwise NVRTC compiles the source at first use.
"""
from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
BUILD_DIR = KERNEL_DIR / "build"
NVRTC_OPTIONS = ("-std=c++17", "-arch=sm_90")
NVCC_OPTIONS = ("-std=c++17", "-arch=sm_90", "-cubin", "-Xptxas", "-v")
_INCLUDE = re.compile(r'^#include "([^"]+)"\s*$', re.M)


def source(name: str) -> str:
    """The kernel source with its local #include "..." headers inlined (each once)."""
    seen: set[str] = set()

    def expand(fname: str) -> str:
        if fname in seen:
            return ""
        seen.add(fname)
        text = (KERNEL_DIR / fname).read_text().replace("#pragma once\n", "")
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return expand(name)


def source_hash(name: str) -> str:
    return hashlib.sha256(source(name).encode()).hexdigest()[:16]


def cubin_path(name: str) -> Path:
    return BUILD_DIR / f"{Path(name).stem}_{source_hash(name)}.cubin"


def build_cubin(name: str, nvcc: str | None = None) -> Path:
    """Compile the kernels for sm_90 with nvcc into kernels/build/ (for carrying to a GPU host)."""
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found on PATH")
    out = cubin_path(name)
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_suffix(".cu")
    src.write_text(source(name))
    subprocess.run([nvcc, *NVCC_OPTIONS, "-o", str(out), str(src)], check=True)
    return out


@functools.cache
def module(name: str):
    """The compiled cupy.RawModule (cached for the process)."""
    import cupy as cp

    cubin = cubin_path(name)
    if cubin.exists():
        return cp.RawModule(path=str(cubin))
    return cp.RawModule(code=source(name), options=NVRTC_OPTIONS)
