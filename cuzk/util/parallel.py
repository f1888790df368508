"""Thread fan-out for GIL-free numba kernels over an index range."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba

_POOLS: dict[int, ThreadPoolExecutor] = {}


def parallel_for(kernel: Callable[..., None], n: int, *args) -> None:
    """kernel(*args, lo, hi) over [0, n), cut into numba.get_num_threads() concurrent chunks; the
    kernel must release the GIL (numba nogil=True) for the chunks to overlap."""
    k = min(n, numba.get_num_threads())
    if k <= 1:
        if n:
            kernel(*args, 0, n)
        return
    bounds = [n * i // k for i in range(k + 1)]
    futures = [_pool(k).submit(kernel, *args, bounds[i], bounds[i + 1]) for i in range(k)]
    for f in futures:
        f.result()


def _pool(k: int) -> ThreadPoolExecutor:
    if k not in _POOLS:
        _POOLS[k] = ThreadPoolExecutor(max_workers=k, thread_name_prefix="cuzk-parallel")
    return _POOLS[k]
