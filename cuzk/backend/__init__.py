"""One compute interface (base.Backend), two implementations: `cpu` (numba, the reference) and
`cuda` (CuPy). Callers outside this package use get_backend and Backend only."""
from __future__ import annotations

import functools
import sys
from collections.abc import Sequence

from cuzk.backend.base import Backend
from cuzk.errors import BackendUnavailableError, DeviceError, InputError

__all__ = ["Backend", "device_backends", "get_backend", "vram_context_bytes"]


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


def _cuda_backend() -> Backend:
    """The CUDA backend of the current device: the same instance device_backends gives for it, so a
    device has one VRAM budget and one residency per process (what the GPU setup keeps there, an
    engine's tables) shared by every caller."""
    from cuzk.backend.cuda.device import cupy

    return _cuda_backend_on(int(cupy().cuda.Device().id))


def is_device_error(error: BaseException) -> bool:
    """Whether `error` means its device failed: cuzk's DeviceError, or CuPy's CUDA runtime or driver
    error (when CuPy is loaded). Anything else (a bug, a bad input, a budget refusal, CuPy's
    out-of-memory: under a VRAM cap that is the work outgrowing its plan, not a failed device) is the
    work's own."""
    if isinstance(error, DeviceError):
        return True
    cp = sys.modules.get("cupy")
    if cp is None:
        return False
    cuda = cp.cuda
    return isinstance(error, (cuda.runtime.CUDARuntimeError, cuda.driver.CUDADriverError))


def device_backends(name: str = "auto", devices: Sequence[int] = (), vram_fraction: float | None = None,
                    vram_budget: int | str | None = None) -> list[Backend]:
    """One backend per compute device: the CPU backend alone for "cpu" (or "auto" without a GPU);
    for CUDA one per device of `devices` (every visible one when empty), each bound to its device and
    shared per process, capped at `vram_budget` (memory.vram_budget: CudaBackend.use_vram_cap) when
    given, else its VRAM budget `vram_fraction` of the memory free at first use unless
    $CUZK_VRAM_BUDGET caps it (None: the default fraction). Ordinals count the visible devices
    (CUDA_VISIBLE_DEVICES renumbers them from 0); one that is not visible is an InputError."""
    backend = get_backend(name)
    if backend.name == "cpu":
        return [backend]
    from cuzk.backend.cuda.device import cupy

    count = cupy().cuda.runtime.getDeviceCount()
    missing = [int(d) for d in devices if not 0 <= int(d) < count]
    if missing:
        raise InputError(f"no CUDA device {', '.join(map(str, missing))}: {count} visible (ordinals 0 to {count - 1})")
    backends = [_cuda_backend_on(int(d)) for d in (devices or range(count))]
    for be in backends:
        if vram_fraction is not None:
            be.use_vram_fraction(vram_fraction)
        if vram_budget is not None:
            be.use_vram_cap(vram_budget)
    return backends


def vram_context_bytes() -> int:
    """What a VRAM cap sets aside for the CUDA context, outside CuPy's pool (a cap must exceed it)."""
    from cuzk.backend.cuda.memory import CONTEXT_BYTES

    return CONTEXT_BYTES


@functools.cache
def _cuda_backend_on(device: int) -> Backend:
    from cuzk.backend.cuda import CudaBackend

    return CudaBackend(device=device)
