"""MSMs over bases that stay in host memory: the bases cross to the device in chunks while the
chunk before is being summed, and every scalar set given shares each chunk's crossing (the MSMs of
several proofs over one key vector: the key crosses once for all of them). A scalar set in host
memory crosses chunk by chunk beside the bases.

    sum_i s_i P_i = sum over chunks [lo, hi) of sum_(lo <= i < hi) s_i P_i

Each chunk's MSM is Pippenger on the chunk's bases as they arrived (one table multiple: m = 1, the
window c the cheapest for the chunk's size); the chunk sums are added on the host (Curve.sum). Two
device buffers and a copy stream: chunk k + 1 is copied while chunk k's buckets are summed, events
order each buffer's reuse. The host bases are page-locked in place (cudaHostRegister, once per
array, undone when it dies), so the copies run at the link's speed without a second copy of the key;
an array that cannot be registered is copied as it is (pageable: slower, not overlapped).

Device memory: the two buffers (2 chunk A, A = 96 / 192 bytes per G1 / G2 point), one chunk
MSM's working memory (msm.msm_bytes run of `chunk` points) and a host set's chunk (32 chunk);
cuzk.backend.cuda.vram_plan sizes the chunk. CuPy is imported lazily.
"""
from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from cuzk.backend.cuda import msm
from cuzk.backend.cuda.device import cupy
from cuzk.backend.cuda.layout import POINT_SHAPE, WORDS
from cuzk.ec.curves import G1, G2

log = logging.getLogger("cuzk.cuda")
_CURVE = {"g1": G1, "g2": G2}


def chunk_ranges(n: int, chunk: int) -> list[tuple[int, int]]:
    """[lo, hi) of each chunk of at most `chunk` of n points."""
    return [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)]


@dataclass
class StreamStats:
    """Host -> device bytes a backend streamed (key chunks, offloaded vectors coming back) and the
    number of copies."""

    h2d_bytes: int = 0
    chunks: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.h2d_bytes += nbytes
            self.chunks += 1


class PinnedArrays:
    """Host arrays page-locked in place (cudaHostRegister), each once and until it dies."""

    def __init__(self) -> None:
        self._pinned: dict[int, int] = {}  # id(array) -> bytes
        self._failed: set[int] = set()
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(self._pinned.values())

    def pin(self, array: np.ndarray) -> bool:
        """Whether `array` (C-contiguous, owning or viewing host memory) is page-locked: registered now
        or before; False where the driver refuses (then it is copied as pageable memory)."""
        key = id(array)
        with self._lock:
            if key in self._pinned:
                return True
            if key in self._failed:
                return False
            cp = cupy()
            ptr = array.ctypes.data
            try:
                cp.cuda.runtime.hostRegister(ptr, array.nbytes, 0)
            except cp.cuda.runtime.CUDARuntimeError as e:
                log.warning("cuda: %.2f GiB of host bases could not be page-locked (%s): copied as pageable",
                            array.nbytes / 2**30, e)
                self._failed.add(key)
                weakref.finalize(array, self._failed.discard, key)
                return False
            self._pinned[key] = array.nbytes
            weakref.finalize(array, self._unpin, key, ptr)
            return True

    def _unpin(self, key: int, ptr: int) -> None:
        with self._lock:
            self._pinned.pop(key, None)
        try:
            cupy().cuda.runtime.hostUnregister(ptr)
        except Exception:  # the process may be ending: the driver unregisters with the context
            pass


def msm_streamed(bases: np.ndarray, scalar_sets: Sequence, group: str, *, sparse: bool, chunk: int, items: int,
                 pinned: PinnedArrays, stats: StreamStats, upload: Callable | None = None) -> list[np.ndarray]:
    """sum_i s_i P_i for each scalar set s ((n, 4) uint64 Montgomery arrays, on the device or in host
    memory) over the host bases P ((n, *POINT_SHAPE) uint64 affine), the bases crossing once in chunks
    of `chunk` points; a host set's chunk crosses with its bases' (by `upload`, default cupy.asarray;
    its bytes counted in `stats`). Each result a numpy affine point."""
    cp = cupy()
    n, words = int(bases.shape[0]), WORDS[group]
    host = np.ascontiguousarray(bases).reshape(n, -1).view(np.uint32)
    locked = pinned.pin(bases) if host.base is not None and bases.flags.c_contiguous else False
    ranges = chunk_ranges(n, chunk)
    size = min(chunk, n)
    buffers = [cp.empty((size, words), dtype=cp.uint32) for _ in range(min(2, len(ranges)))]
    copy = cp.cuda.Stream(non_blocking=True)
    compute = cp.cuda.get_current_stream()
    copy.wait_event(compute.record())  # the buffers may be memory the compute stream just freed
    freed: list = [None] * len(buffers)
    sums: list[list] = [[] for _ in scalar_sets]

    def send(k: int):
        lo, hi = ranges[k]
        b = k % len(buffers)
        if freed[b] is not None:
            copy.wait_event(freed[b])
        buffers[b][: hi - lo].set(host[lo:hi], stream=copy)
        stats.add((hi - lo) * 4 * words)
        return copy.record()

    ready = send(0)
    for k, (lo, hi) in enumerate(ranges):
        b = k % len(buffers)
        compute.wait_event(ready)
        if k + 1 < len(ranges):
            ready = send(k + 1) if len(buffers) == 2 else None
        plan = msm.streamed_plan(group, hi - lo, items, sparse)
        prepared = msm.PreparedBases(group, hi - lo, plan.c, 1, buffers[b][: hi - lo])
        for s, scalars in enumerate(scalar_sets):
            part = scalars[lo:hi]
            if isinstance(part, np.ndarray):
                stats.add(part.nbytes)
                part = (upload or cp.asarray)(np.ascontiguousarray(part))
            sc = part.view(cp.uint32).reshape(hi - lo, 8)
            idx, ones = msm.split_sparse(sc) if sparse else (None, None)
            sums[s].append(msm.pippenger(prepared, sc, idx, ones, items))
        freed[b] = compute.record()
        if ready is None and k + 1 < len(ranges):  # one buffer: the next copy waits for this chunk
            ready = send(k + 1)
    if not locked:
        log.debug("cuda: %d %s bases streamed from pageable memory", n, group.upper())
    curve = _CURVE[group]
    return [curve.sum([cp.asnumpy(p).view(np.uint64).reshape(POINT_SHAPE[group]) for p in per]) for per in sums]
