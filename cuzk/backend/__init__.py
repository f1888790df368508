"""One compute interface (base.Backend), two implementations: `cpu` (numba, the reference) and
`cuda` (CuPy). Callers outside this package use get_backend and Backend only."""
from __future__ import annotations

import functools

from cuzk.backend.base import Backend
from cuzk.errors import BackendUnavailableError, InputError

__all__ = ["Backend", "get_backend"]


def get_backend(name: str = "auto") -> Backend:
    """The backend called `name`: "cpu", "cuda", or "auto" (CUDA when a GPU is usable, else CPU)."""
    if name == "cpu":
        from cuzk.backend.cpu import CpuBackend

        return CpuBackend()
    if name in ("cuda", "auto"):
        from cuzk.backend import cuda

        if cuda.cuda_available():
            return _cuda_backend()
        if name == "cuda":
            raise BackendUnavailableError("the cuda backend needs cupy and a CUDA GPU; this machine lacks one or both")
        return get_backend("cpu")
    raise InputError(f"unknown backend {name!r}: choose cpu, cuda or auto")


@functools.cache
def _cuda_backend() -> Backend:
    """One CUDA backend per process, so bases it keeps on the GPU are shared by every caller."""
    from cuzk.backend.cuda import CudaBackend

    return CudaBackend()
