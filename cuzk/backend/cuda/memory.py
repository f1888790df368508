"""Device memory of the CUDA backend: the VRAM budget, the residency of prepared bases under it, and
host -> device uploads through pinned staging buffers.

The budget of a device is, first found: the `vram_budget` a CudaBackend was made with (its own
accounting only), a VRAM cap (CudaBackend.use_vram_cap: memory.vram_budget, or the environment
variable CUZK_VRAM_BUDGET; bytes, or a number with a binary unit: 16GiB, 16G, 512M), else
DEFAULT_FRACTION of the memory free on the device at first use. A cap bounds the device's whole use:
CuPy's memory pool is limited to the cap less CONTEXT_BYTES (the CUDA context and the kernels'
modules, outside the pool) and the budget is that limit. Every
prepared table counts against the budget while it lives; one MSM also needs its working memory
(cuzk.backend.cuda.msm.msm_bytes) on top. PoolPeak records the pool's high-water mark. Imports
without cupy.
"""
from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.backend.cuda.device import cupy
from cuzk.errors import InputError, VramBudgetError
from cuzk.util.sizes import parse_bytes

ENV = "CUZK_VRAM_BUDGET"
DEFAULT_FRACTION = 0.8
GIB = 1 << 30
STAGE_BYTES = 16 << 20  # host arrays above this size go through two pinned staging buffers
_WHAT = "VRAM budget"
log = logging.getLogger("cuzk.cuda")


CONTEXT_BYTES = 1 << 30


@dataclass(frozen=True)
class VramBudget:
    """Bytes of device memory cuzk may use on one device, and where that number came from; `cap`:
    the whole device use it stands for when it is a cap (the pool limited to `bytes`), else None."""

    bytes: int
    source: str
    cap: int | None = None


def pool_limit(cap: int) -> int:
    """CuPy's pool limit under a VRAM cap: the cap less CONTEXT_BYTES."""
    return max(cap - CONTEXT_BYTES, 0)


def capped(cap: int, source: str) -> VramBudget:
    """The budget of a cap: its pool limit. InputError for a cap that leaves the pool nothing."""
    if cap <= CONTEXT_BYTES:
        raise InputError(f"a VRAM cap ({source}) must be above the {CONTEXT_BYTES >> 30} GiB the CUDA context takes")
    return VramBudget(pool_limit(cap), source, cap)


def resolve_budget(explicit: int | str | None, device: int, free: Callable[[], int],
                   fraction: float = DEFAULT_FRACTION, cap: tuple[int | str, str] | None = None) -> VramBudget:
    """The budget of `device`: `explicit` (a CudaBackend argument), else `cap` ((size, where it was
    set): memory.vram_budget), else $CUZK_VRAM_BUDGET (both caps), else `fraction`
    (memory.vram_fraction; DEFAULT_FRACTION) of free() (bytes free on the device now)."""
    if explicit is not None:
        return VramBudget(parse_bytes(explicit, what=_WHAT), f"CudaBackend(vram_budget={explicit!r})")
    if cap is not None:
        return capped(parse_bytes(cap[0], what=_WHAT), f"{cap[1]} = {cap[0]}")
    env = os.environ.get(ENV, "").strip()
    if env:
        return capped(parse_bytes(env, what=_WHAT), f"{ENV}={env}")
    available = free()
    return VramBudget(int(available * fraction),
                      f"memory.vram_fraction {fraction:g} of the {available / GIB:.2f} GiB free on device "
                      f"{device} at first use")


class PoolPeak:
    """The high-water mark of CuPy's default memory pool on each device: its allocator wrapped so that
    every allocation reads the pool's total bytes (blocks in use and cached) afterwards. Installed
    once per process (`install`); `reset` starts a new mark. The wrapper also retries an allocation
    that the pool's limit (a VRAM cap) refused, once, after giving the pool's cached free blocks back
    to the driver: CuPy counts them against its limit and refuses before releasing them."""

    def __init__(self) -> None:
        self._peak: dict[int, int] = {}
        self._installed = False
        self._lock = threading.Lock()

    def install(self) -> None:
        with self._lock:
            if self._installed:
                return
            cp = cupy()
            pool = cp.get_default_memory_pool()

            def malloc(size: int):
                try:
                    mem = pool.malloc(size)
                except cp.cuda.memory.OutOfMemoryError:
                    if not pool.get_limit() or not pool.free_bytes():
                        raise
                    pool.free_all_blocks()
                    mem = pool.malloc(size)
                device, total = mem.device_id, pool.total_bytes()
                if total > self._peak.get(device, 0):
                    self._peak[device] = total
                return mem

            cp.cuda.set_allocator(malloc)
            self._installed = True

    def peak(self, device: int) -> int:
        return self._peak.get(device, 0)

    def reset(self, device: int) -> None:
        """Start the mark again from the pool's bytes now."""
        cp = cupy()
        with cp.cuda.Device(device):
            self._peak[device] = int(cp.get_default_memory_pool().total_bytes())


POOL_PEAK = PoolPeak()


class Residency:
    """The prepared tables of one device, counted against its VRAM budget.

    Every table registered with `track` counts while it lives (a weakref finalizer releases it).
    Tables made for host objects (base arrays, a circuit's template form) are also kept in an LRU cache
    keyed by the object, each entry dropped when its object dies; `make_room` evicts the least recently used entries."""

    def __init__(self) -> None:
        self._held: dict[int, int] = {}  # id(prepared) -> bytes, for every live tracked table
        self._cache: OrderedDict[int, tuple[weakref.ref, Any]] = OrderedDict()  # id(host) -> (ref, prepared)
        self._lock = threading.RLock()

    @property
    def held(self) -> int:
        """Bytes of the live tracked tables."""
        with self._lock:
            return sum(self._held.values())

    def track(self, prepared: Any, nbytes: int) -> None:
        with self._lock:
            self._held[id(prepared)] = nbytes
        weakref.finalize(prepared, self._release, id(prepared))

    def kept(self) -> list[Any]:
        """The cached prepared tables, least recently used first."""
        with self._lock:
            return [prepared for _ref, prepared in self._cache.values()]

    def holds(self, obj: Any) -> bool:
        """Whether `obj` itself is tracked (a device array counted with `track`)."""
        with self._lock:
            return id(obj) in self._held

    def _release(self, key: int) -> None:
        with self._lock:
            self._held.pop(key, None)

    def lookup(self, host: Any) -> Any | None:
        """The cached table of `host` (now the most recently used), or None."""
        with self._lock:
            entry = self._cache.get(id(host))
            if entry is None or entry[0]() is not host:
                return None
            self._cache.move_to_end(id(host))
            return entry[1]

    def insert(self, host: Any, prepared: Any) -> None:
        key = id(host)
        with self._lock:
            self._cache[key] = (weakref.ref(host, lambda ref: self._drop(key, ref)), prepared)

    def _drop(self, key: int, ref: weakref.ref) -> None:
        with self._lock:
            if key in self._cache and self._cache[key][0] is ref:
                del self._cache[key]

    def evict_lru(self, keep: Any = None, why: str = "a new table") -> bool:
        """Drop the least recently used cache entry other than `keep` that counts any bytes (logged,
        with `why`: what needs the room); False when there is none. Its table is freed unless a caller
        still holds it. An entry of no bytes (a table that is its held bases themselves) stays:
        dropping it would free nothing and cost its rebuild."""
        with self._lock:
            for key, (_ref, prepared) in list(self._cache.items()):
                if prepared is not keep and self._held.get(id(prepared), 0) > 0:
                    before = self.held
                    del self._cache[key]
                    log.info("cuda: evicted a kept %s (%.2f GiB freed) to make room for %s", type(prepared).__name__,
                             (before - self.held) / GIB, why)
                    return True
            return False

    def make_room(self, need: int, budget: VramBudget, what: str, keep: Any = None) -> None:
        """Evict LRU entries (never `keep`) until held + need fits the budget; VramBudgetError if it
        cannot."""
        while self.held + need > budget.bytes and self.evict_lru(keep, what):
            pass
        held = self.held
        if held + need > budget.bytes:
            raise VramBudgetError(what, need, budget.bytes, budget.source, held)


class Stager:
    """Host -> device copies through two pinned buffers: the memcpy into one overlaps the DMA of the
    other. The copies run on a stream of their own, after the work queued on the current stream
    (their target may be memory that work still reads). Buffers and stream are made at first use on
    the current device."""

    def __init__(self) -> None:
        self._buffers: list[np.ndarray] | None = None
        self._host: np.ndarray | None = None  # the offload buffer
        self._stream = None
        self._lock = threading.Lock()  # one upload at a time through the two buffers (GPU workers share a backend)

    def upload(self, host: np.ndarray):
        """A cupy copy of a contiguous numpy array (same dtype and shape)."""
        import cupyx

        with self._lock:
            return self._upload(host, cupyx)

    def _upload(self, host: np.ndarray, cupyx):
        cp = cupy()
        if self._buffers is None:
            self._buffers = [cupyx.empty_pinned(STAGE_BYTES, dtype=np.uint8) for _ in range(2)]
            self._stream = cp.cuda.Stream(non_blocking=True)
        flat = host.reshape(-1).view(np.uint8)
        out = cp.empty(flat.nbytes, dtype=cp.uint8)
        # `out` may be memory the current stream freed while a kernel still reads it (the pool hands
        # it out at once): the copies wait for that stream's work so far
        self._stream.wait_event(cp.cuda.get_current_stream().record())
        done = [None, None]
        for j, off in enumerate(range(0, flat.nbytes, STAGE_BYTES)):
            k, size = j % 2, min(STAGE_BYTES, flat.nbytes - off)
            if done[k] is not None:
                done[k].synchronize()
            self._buffers[k][:size] = flat[off: off + size]
            out[off: off + size].set(self._buffers[k][:size], stream=self._stream)
            done[k] = self._stream.record()
        self._stream.synchronize()
        return out.view(host.dtype).reshape(host.shape)

    def parts(self, values, rows: int = STAGE_BYTES // 32) -> Iterator[tuple[int, Any]]:
        """(row offset, device rows) covering `values`: a device array whole, a host (n, 4) array
        uploaded `rows` at a time (each part a fresh device array, freed when dropped)."""
        if not isinstance(values, np.ndarray):
            yield 0, values
            return
        for lo in range(0, values.shape[0], rows):
            yield lo, self.upload(np.ascontiguousarray(values[lo: lo + rows]))

    def offload(self, values) -> np.ndarray:
        """A host copy of device array `values` in this stager's pinned buffer (grown to fit, then
        reused: valid until the next offload); pinned_bytes is its size."""
        import cupyx

        if self._host is None or self._host.nbytes < values.nbytes:
            self._host = None
            self._host = cupyx.empty_pinned(values.nbytes, dtype=np.uint8)
        view = self._host[: values.nbytes].view(values.dtype).reshape(values.shape)
        values.get(out=view)
        return view

    @property
    def pinned_bytes(self) -> int:
        """Pinned host bytes this stager holds (its staging buffers and its offload buffer)."""
        staging = 2 * STAGE_BYTES if self._buffers is not None else 0
        return staging + (0 if self._host is None else self._host.nbytes)

    def to_device(self, host):
        """A contiguous cupy array of `host`: staged when it is a large numpy array, else cupy.asarray
        (no copy for a contiguous cupy array)."""
        cp = cupy()
        if isinstance(host, np.ndarray) and host.nbytes > STAGE_BYTES:
            return self.upload(np.ascontiguousarray(host))
        return cp.ascontiguousarray(cp.asarray(host))
