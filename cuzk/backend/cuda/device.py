"""CUDA devices as the backend sees them: CuPy (imported lazily), and each device's properties read
from the runtime (getDeviceProperties, memGetInfo), never assumed. Imports without cupy."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from cuzk.errors import BackendUnavailableError


class CudaUnavailableError(BackendUnavailableError):
    """cupy or a CUDA GPU is missing."""


def cuda_available() -> bool:
    """True when cupy imports and sees at least one CUDA device."""
    try:
        import cupy as cp

        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def cupy():
    """The cupy module; CudaUnavailableError when it is missing or sees no GPU."""
    try:
        import cupy as cp
    except ImportError as e:
        raise CudaUnavailableError("the CUDA backend needs cupy (pip install 'cuzk[gpu]' for cupy-cuda12x, or the "
                                   "cupy wheel that matches your CUDA)") from e
    if not cuda_available():
        raise CudaUnavailableError("the CUDA backend needs a CUDA GPU; none is visible")
    return cp


@dataclass(frozen=True)
class DeviceInfo:
    """The properties of one CUDA device that sizing and launch geometry depend on."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    total_bytes: int
    shared_mem_per_block: int        # without opt-in
    shared_mem_per_block_optin: int  # the most a kernel may opt in to


@functools.cache
def info(device: int) -> DeviceInfo:
    """DeviceInfo of device `device` (cached: these properties do not change)."""
    props = cupy().cuda.runtime.getDeviceProperties(device)
    name = props["name"]
    return DeviceInfo(
        index=device,
        name=name.decode() if isinstance(name, bytes) else str(name),
        compute_capability=(int(props["major"]), int(props["minor"])),
        sm_count=int(props["multiProcessorCount"]),
        total_bytes=int(props["totalGlobalMem"]),
        shared_mem_per_block=int(props["sharedMemPerBlock"]),
        shared_mem_per_block_optin=int(props["sharedMemPerBlockOptin"]),
    )


def free_bytes(device: int) -> int:
    """Device memory free to cuzk now: the driver's free memory plus the blocks CuPy's memory pool
    holds unused (its allocations reuse them)."""
    cp = cupy()
    with cp.cuda.Device(device):
        free, _total = cp.cuda.runtime.memGetInfo()
        return int(free) + int(cp.get_default_memory_pool().free_bytes())
