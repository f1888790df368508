"""Points of bellperson's .params files on the GPU: raw file bytes streamed to the device and decoded
there (`upload`), and device vectors encoded there and streamed back to the host (`encoded_chunks`).

Both layouts and the decoder's checks are stated in kernels/params/points.cu: zcash uncompressed
big-endian affine points in the file (G1 96 bytes, G2 192), cuzk.ec.curves' affine Montgomery limbs
on the device (cupy uint64 (n, 2, 6) / (n, 2, 2, 6), the layout the CUDA prover takes its bases in).
Transfers go through two pinned host buffers of about CHUNK_BYTES each, so a vector is never whole
in host memory. CuPy is imported lazily: this module imports on machines without it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from cuzk.backend.cuda import loader
from cuzk.backend.cuda.device import cupy
from cuzk.backend.cuda.layout import POINT_SHAPE
from cuzk.errors import InputError

SIZE = {"g1": 96, "g2": 192}  # bytes per point, encoded and on the device alike
CHUNK_BYTES = 128 << 20
READERS = 4  # concurrent reads per chunk (the disk's queue depth)
THREADS = 256  # PT_THREADS of kernels/params/points.cu
_NONE = (1 << 64) - 1  # the decoder's "no bad point"

ReadInto = Callable[[int, memoryview], None]


def _check_group(group: str) -> int:
    if group not in SIZE:
        raise InputError(f"group must be g1 or g2, got {group!r}")
    return SIZE[group]


def _ranges(count: int, per: int) -> list[tuple[int, int]]:
    return [(lo, min(count, lo + per)) for lo in range(0, count, per)]


def chunk_points(group: str, chunk_bytes: int | None = None) -> int:
    """Points per transfer chunk of about chunk_bytes (default CHUNK_BYTES, read at the call)."""
    return max(1, (CHUNK_BYTES if chunk_bytes is None else chunk_bytes) // _check_group(group))


def upload_bytes(group: str, count: int, chunk_bytes: int | None = None) -> int:
    """Device bytes of `upload`: the vector and one chunk of raw bytes."""
    size = _check_group(group)
    return size * (count + min(count, chunk_points(group, chunk_bytes)))


def _pinned(nbytes: int) -> np.ndarray:
    import cupyx

    return cupyx.empty_pinned(nbytes, dtype=np.uint8)


def _h2d(dst, src: np.ndarray, stream) -> None:
    rt = cupy().cuda.runtime
    rt.memcpyAsync(dst.data.ptr, src.ctypes.data, src.nbytes, rt.memcpyHostToDevice, stream.ptr)


def _d2h(dst: np.ndarray, src, stream) -> None:
    rt = cupy().cuda.runtime
    rt.memcpyAsync(dst.ctypes.data, src.data.ptr, dst.nbytes, rt.memcpyDeviceToHost, stream.ptr)


def _device(x):
    """The cupy Device of a device array (a context manager making it current)."""
    return x.device


def _launch(name: str, n: int, args: tuple) -> None:
    loader.function(name)(((n + THREADS - 1) // THREADS,), (THREADS,), args)


def upload(read_into: ReadInto, offset: int, count: int, group: str, *, chunk_bytes: int | None = None,
           readers: int = READERS) -> tuple[Any, int | None]:
    """The `count` encoded points of `group` at bytes [offset, offset + count * SIZE) of a file, decoded
    on the current device: (cupy (count, *shape) uint64 affine Montgomery array, index of the first
    point that failed a check or None; such points are zeros in the array).

    read_into(pos, view) fills `view` with the file's bytes at `pos` (raising on a short read). Chunk
    k + 1 (chunk_bytes: as chunk_points) is read into one pinned buffer, `readers` threads reading
    one slice each, while chunk k is copied from the other and decoded, on one stream; the array is
    complete when this returns. Device memory: upload_bytes."""
    size = _check_group(group)
    cp = cupy()
    out = cp.empty((count, *POINT_SHAPE[group]), dtype=cp.uint64)
    if count == 0:
        return out, None
    ranges = _ranges(count, chunk_points(group, chunk_bytes))
    per = ranges[0][1]
    host = [_pinned(per * size) for _ in range(min(2, len(ranges)))]
    raw = cp.empty(per * size, dtype=cp.uint8)
    bad = cp.full(1, np.uint64(_NONE), dtype=cp.uint64)
    stream = cp.cuda.Stream(non_blocking=True)
    # out and raw may be memory the current stream freed while its kernels still use it
    stream.wait_event(cp.cuda.get_current_stream().record())
    copied: list[Any] = [None] * len(host)  # event: the device has read host[b]

    with ThreadPoolExecutor(max(1, readers), thread_name_prefix="cuzk-params-read") as pool:
        def fill(k: int) -> list[Future]:
            b = k % len(host)
            if copied[b] is not None:
                copied[b].synchronize()
            lo, hi = ranges[k]
            view = memoryview(host[b])[:(hi - lo) * size]
            per_reader = -(-len(view) // readers)
            return [pool.submit(read_into, offset + lo * size + s, view[s:e]) for s, e in _ranges(len(view), per_reader)]

        pending = fill(0)
        try:
            for k, (lo, hi) in enumerate(ranges):
                for f in pending:
                    f.result()
                pending = fill(k + 1) if k + 1 < len(ranges) else []
                b, nbytes = k % len(host), (hi - lo) * size
                _h2d(raw[:nbytes], host[b][:nbytes], stream)
                copied[b] = stream.record()
                with stream:
                    _launch(f"params_decode_{group}", hi - lo,
                            (raw, np.uint64(hi - lo), np.uint64(lo), out[lo:hi], bad))
        finally:
            for f in pending:
                f.cancel()
            stream.synchronize()  # the pinned buffers outlive every copy out of them
    first = int(bad[0])
    return out, None if first == _NONE else first


def encoded_chunks(points, group: str, chunk_bytes: int | None = None) -> Iterator[memoryview]:
    """The file encoding of a device vector (cupy (n, *shape) uint64 affine Montgomery, the identity as
    zeros), in order, as views of two pinned host buffers of about chunk_bytes: chunk k + 1 is
    encoded and copied on the vector's device while the caller consumes chunk k, and a view is
    valid until the next one is asked for (chunk_bytes: as chunk_points)."""
    size = _check_group(group)
    cp = cupy()
    n = int(points.shape[0])
    if n == 0:
        return
    if points.dtype != np.uint64 or tuple(points.shape[1:]) != POINT_SHAPE[group]:
        raise InputError(f"{group} points must be uint64 (n, {', '.join(map(str, POINT_SHAPE[group]))}), "
                         f"got {points.dtype} {tuple(points.shape)}")
    ranges = _ranges(n, chunk_points(group, chunk_bytes))
    per = ranges[0][1]
    with _device(points):
        pts = cp.ascontiguousarray(points)
        host = [_pinned(per * size) for _ in range(min(2, len(ranges)))]
        raw = cp.empty(per * size, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        stream.wait_event(cp.cuda.get_current_stream().record())

    def issue(k: int):
        lo, hi = ranges[k]
        with _device(points), stream:
            _launch(f"params_encode_{group}", hi - lo, (pts[lo:hi], np.uint64(hi - lo), raw))
            _d2h(host[k % len(host)][:(hi - lo) * size], raw, stream)
            return stream.record()

    try:
        done = issue(0)
        for k, (lo, hi) in enumerate(ranges):
            done.synchronize()
            done = issue(k + 1) if k + 1 < len(ranges) else None
            yield memoryview(host[k % len(host)])[:(hi - lo) * size]
    finally:
        stream.synchronize()
