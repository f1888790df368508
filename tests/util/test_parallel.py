"""cuzk.util.parallel: every index of [0, n) is visited exactly once, over any thread count."""
import numba
import numpy as np
import pytest
from numba import njit

from cuzk.util.parallel import parallel_for


@njit(nogil=True, cache=True)
def _count(out, lo, hi):
    for i in range(lo, hi):
        out[i] += 1


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_covers_the_range_once(n):
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS), numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(threads)
        out = np.zeros(n, np.int64)
        parallel_for(_count, n, out)
        assert (out == 1).all()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_kernel_errors_propagate():
    def boom(lo, hi):
        raise ValueError(f"chunk {lo}")

    with pytest.raises(ValueError, match="chunk"):
        parallel_for(boom, 10)
