"""CUDA NTT over Fr against the CPU NTT (cuzk.backend.cpu.ntt): all four transforms, fresh random inputs."""
import numpy as np
import pytest

from cuzk.backend.cpu import ntt as ntt_cpu
from cuzk.backend.cuda import ntt as ntt_cuda
from cuzk.errors import InputError, NonCanonicalError
from cuzk.ff.fields import Fr

pytestmark = pytest.mark.gpu
KINDS = ("ntt", "intt", "coset_ntt", "coset_intt")
R = Fr.modulus


def rand(n: int, rng) -> np.ndarray:
    return Fr.random(n, rng)


@pytest.mark.parametrize("log_n", [*range(1, 17), 18, 20])
def test_matches_cpu(log_n, rng):
    a = rand(1 << log_n, rng)
    for kind in KINDS:
        np.testing.assert_array_equal(getattr(ntt_cuda, kind)(a), getattr(ntt_cpu, kind)(a), err_msg=kind)


@pytest.mark.parametrize("limit", [0, 1 << 16])
@pytest.mark.parametrize("log_n", [9, 17, 20])
def test_twiddles_from_the_root_tables_match_cpu(log_n, limit, rng):
    """Passes whose table is over the limit (every one at 0) compute their twiddles from the root
    tables; tables made before the limit and above it are dropped."""
    a = rand(1 << log_n, rng)
    ntt_cuda.ntt(a)  # its tables made without a limit
    try:
        ntt_cuda.limit_twiddle_tables(limit)
        assert all(t.nbytes <= limit for k, t in ntt_cuda._tables.items() if k[1] == "tw")
        for kind in KINDS:
            np.testing.assert_array_equal(getattr(ntt_cuda, kind)(a), getattr(ntt_cpu, kind)(a), err_msg=kind)
    finally:
        ntt_cuda.limit_twiddle_tables(None)


def test_cupy_in_cupy_out_and_round_trips(rng):
    import cupy as cp

    for log_n in (3, 11, 17, 21):
        a = cp.asarray(rand(1 << log_n, rng))
        y = ntt_cuda.ntt(a)
        assert isinstance(y, cp.ndarray)
        assert bool((ntt_cuda.intt(y) == a).all())
        assert bool((ntt_cuda.coset_intt(ntt_cuda.coset_ntt(a)) == a).all())


def test_other_shift(rng):
    a = rand(1 << 9, rng)
    for kind in ("coset_ntt", "coset_intt"):
        np.testing.assert_array_equal(getattr(ntt_cuda, kind)(a, shift=5), getattr(ntt_cpu, kind)(a, shift=5))


@pytest.mark.parametrize("log_n", [0, 5, 14])
def test_edge_inputs(log_n):
    n = 1 << log_n
    for values in ([0] * n, [1] * n, [R - 1] * n, [R - 1 - i for i in range(n)]):
        a = Fr.from_ints(values)
        for kind in KINDS:
            np.testing.assert_array_equal(getattr(ntt_cuda, kind)(a), getattr(ntt_cpu, kind)(a), err_msg=kind)


def test_bad_input(rng):
    a = rand(16, rng)
    with pytest.raises(InputError):
        ntt_cuda.ntt(a[:12])
    with pytest.raises(InputError):
        ntt_cuda.ntt(a.astype(np.int64))
    with pytest.raises(InputError):
        ntt_cuda.coset_ntt(a, shift=R)
    a[5] = Fr.from_ints([0])[0] + np.array([0xFFFFFFFF00000001, 0x53BDA402FFFE5BFE, 0x3339D80809A1D805,
                                             0x73EDA753299D7D48], dtype=np.uint64)
    with pytest.raises(NonCanonicalError):
        ntt_cuda.intt(a)
