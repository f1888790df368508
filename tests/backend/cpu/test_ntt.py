"""CPU NTT over Fr against a naive DFT on Python ints, round trips, edge cases and errors."""
import random

import numpy as np
import pytest

from cuzk.backend.cpu import ntt as ntt_cpu
from cuzk.backend.cpu.ntt import coset_intt, coset_ntt, intt, ntt
from cuzk.errors import InputError, NonCanonicalError
from cuzk.ff.domain import Domain
from cuzk.ff.fields import Fr

R = Fr.modulus
G = 7


def rand_ints(n: int) -> list[int]:
    return [random.randrange(R) for _ in range(n)]


def dft(x: list[int], w: int, shift: int = 1) -> list[int]:
    n = len(x)
    xs = [v * pow(shift, i, R) % R for i, v in enumerate(x)]
    return [sum(v * pow(w, i * j, R) for i, v in enumerate(xs)) % R for j in range(n)]


def idft(y: list[int], w: int, shift: int = 1) -> list[int]:
    n = len(y)
    x = dft(y, pow(w, -1, R))
    return [v * pow(n, -1, R) * pow(shift, -i, R) % R for i, v in enumerate(x)]


def poly_at(coeffs: list[int], z: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * z + c) % R
    return acc


# ---------------------------------------------------------------- against the naive DFT
@pytest.mark.parametrize("log_n", [0, 1, 2, 3, 4, 6])
def test_against_naive_dft(log_n):
    n = 1 << log_n
    x = rand_ints(n)
    x[n // 2] = R - 1
    if n > 2:
        x[1] = 0
    w = Domain(log_n).root
    a = Fr.from_ints(x)
    shift = random.randrange(1, R)
    assert Fr.to_ints(ntt(a)) == dft(x, w)
    assert Fr.to_ints(intt(a)) == idft(x, w)
    assert Fr.to_ints(coset_ntt(a)) == dft(x, w, G)
    assert Fr.to_ints(coset_intt(a)) == idft(x, w, G)
    assert Fr.to_ints(coset_ntt(a, shift=shift)) == dft(x, w, shift)
    assert Fr.to_ints(coset_intt(a, shift=shift)) == idft(x, w, shift)


@pytest.mark.parametrize("log_n", [12, 16])
def test_large_against_evaluation(log_n):
    """ntt(a)[j] is the polynomial a evaluated at w^j; coset_ntt at g*w^j (sampled j)."""
    n = 1 << log_n
    x = rand_ints(n)
    a = Fr.from_ints(x)
    w = Domain(log_n).root
    y, yc = Fr.to_ints(ntt(a)), Fr.to_ints(coset_ntt(a))
    for j in [0, 1, n // 2, n - 1] + random.sample(range(n), 4):
        z = pow(w, j, R)
        assert y[j] == poly_at(x, z)
        assert yc[j] == poly_at(x, G * z % R)


@pytest.mark.parametrize("max_stages, cols", [(1, 1), (2, 2), (3, 4), (4, 8)])
def test_many_passes(monkeypatch, max_stages, cols):
    """Few stages per pass and other tile widths exercise the multi-pass paths at small sizes."""
    monkeypatch.setattr(ntt_cpu, "_MAX_PASS_STAGES", max_stages)
    monkeypatch.setattr(ntt_cpu, "_COLS", cols)
    for log_n in (5, 7):
        x = rand_ints(1 << log_n)
        w = Domain(log_n).root
        a = Fr.from_ints(x)
        assert Fr.to_ints(ntt(a)) == dft(x, w)
        assert Fr.to_ints(intt(a)) == idft(x, w)
        assert Fr.to_ints(coset_ntt(a)) == dft(x, w, G)
        assert Fr.to_ints(coset_intt(a)) == idft(x, w, G)


# ---------------------------------------------------------------- round trips and edge cases
@pytest.mark.parametrize("log_n", [10, 16])
def test_round_trips(log_n):
    a = Fr.random(1 << log_n)
    assert np.array_equal(intt(ntt(a)), a)
    assert np.array_equal(ntt(intt(a)), a)
    assert np.array_equal(coset_intt(coset_ntt(a)), a)
    shift = random.randrange(1, R)
    assert np.array_equal(coset_intt(coset_ntt(a, shift), shift), a)


@pytest.mark.parametrize("n", [1, 8, 1 << 11])
def test_zero_and_constant(n):
    zero = Fr.zeros(n)
    for f in (ntt, intt, coset_ntt, coset_intt):
        assert not f(zero).any()
    c = random.randrange(R)
    y = Fr.to_ints(ntt(Fr.from_ints([c] * n)))
    assert y == [n * c % R] + [0] * (n - 1)
    assert Fr.to_ints(intt(Fr.from_ints([c] + [0] * (n - 1)))) == [c * pow(n, -1, R) % R] * n
    assert Fr.to_ints(ntt(Fr.from_ints([R - 1] + [0] * (n - 1)))) == [R - 1] * n


def test_out_and_in_place():
    a = Fr.random(1 << 11)
    expect = ntt(a)
    out = np.empty_like(a)
    assert ntt(a, out=out) is out and np.array_equal(out, expect)
    b = a.copy()
    assert coset_intt(coset_ntt(b, out=b), out=b) is b and np.array_equal(b, a)
    strided = np.repeat(a, 2, axis=0)[::2]  # non-contiguous input
    assert np.array_equal(ntt(strided), expect)
    assert np.array_equal(a, strided)  # input untouched


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("bad", [
    np.zeros((0, 4), np.uint64), np.zeros((3, 4), np.uint64), np.zeros((12, 4), np.uint64),
    np.zeros((8, 4), np.int64), np.zeros((8, 3), np.uint64), np.zeros(32, np.uint64),
    np.zeros((8, 4, 1), np.uint64), [[0, 0, 0, 0]],
])
def test_bad_input(bad):
    for f in (ntt, intt, coset_ntt, coset_intt):
        with pytest.raises(InputError):
            f(bad)


def test_non_canonical_and_bad_args():
    a = Fr.random(8)
    a[3] = [0xFFFFFFFF00000001, 0x53BDA402FFFE5BFE, 0x3339D80809A1D805, 0x73EDA753299D7D48]  # = r
    with pytest.raises(NonCanonicalError):
        ntt(a)
    a = Fr.random(8)
    with pytest.raises(InputError):
        coset_ntt(a, shift=R)  # zero in Fr
    for out in (np.empty((4, 4), np.uint64), np.empty((8, 4), np.int64), np.empty((4, 8), np.uint64).T):
        with pytest.raises(InputError):
            ntt(a, out=out)
