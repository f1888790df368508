"""cuzk.ff.domain: roots of unity, cosets and Lagrange bases of bellperson's and snarkjs's domains,
against Python integers and the constants ff and ffjavascript publish."""
import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.ff.domain import MULTIPLICATIVE_GENERATOR, SNARKJS_GENERATOR, TWO_ADICITY, Domain, powers
from cuzk.ff.fields import Fr

R = Fr.modulus
# bls12_381 / ff's published Scalar::ROOT_OF_UNITY (a primitive 2^32-th root), canonical
FF_ROOT_OF_UNITY = 0x16A2A19EDFE81F20D09B681922C813B4B63683508C2280B93829971F439F0D2B
# ffjavascript 0.3's Fr.w[16] for bls12381 (snarkjs's roots)
FFJS_W16 = 46605497109352149548364111935960392432509601054990529243781317021485154656122


def test_constants():
    assert (R - 1) % (1 << TWO_ADICITY) == 0 and ((R - 1) >> TWO_ADICITY) % 2 == 1
    assert MULTIPLICATIVE_GENERATOR == 7 and SNARKJS_GENERATOR == 5
    for g in (5, 7):
        assert pow(g, (R - 1) // 2, R) == R - 1  # non-residues: their roots are primitive
    assert pow(2, (R - 1) // 2, R) == 1 and pow(3, (R - 1) // 2, R) == 1  # 5 is the smallest
    assert Domain(32).root == FF_ROOT_OF_UNITY
    assert Domain.snarkjs(16).root == FFJS_W16


@pytest.mark.parametrize("log_n", [0, 1, 2, 5, 20, 31, 32])
def test_roots_are_primitive_and_nested(log_n):
    d = Domain(log_n)
    assert d.n == 1 << log_n
    assert pow(d.root, d.n, R) == 1
    assert log_n == 0 or pow(d.root, d.n // 2, R) == R - 1  # w^(n/2) = -1 != 1
    assert d.root * d.root_inv % R == 1 and d.n * d.n_inv % R == 1
    assert d.shift == 7 and d.shift * d.shift_inv % R == 1
    assert d.root == pow(FF_ROOT_OF_UNITY, 1 << (32 - log_n), R)  # the old ntt_cpu.root_of_unity
    if log_n:
        assert Domain(log_n - 1).root == d.root * d.root % R
    snark = Domain.snarkjs(min(log_n, 31))
    assert pow(snark.root, snark.n, R) == 1
    assert snark.n == 1 or pow(snark.root, snark.n // 2, R) == R - 1


def test_cosets_miss_the_domain():
    for log_n in (0, 3, 16, 32):
        d = Domain(log_n)
        assert d.vanishing(d.shift) != 0 and d.coset_vanishing_inv == pow(pow(7, d.n, R) - 1, -1, R)
    for log_n in (0, 3, 16, 31):
        d = Domain.snarkjs(log_n)
        assert d.shift == Domain(log_n + 1, SNARKJS_GENERATOR).root  # w_2n: the odd points of the 2n-domain
        assert pow(d.shift, d.n, R) == R - 1 and d.coset_vanishing_inv == pow(R - 2, -1, R)
    with pytest.raises(InputError, match="odd coset"):
        Domain.snarkjs(32)
    with pytest.raises(InputError, match="coset shift"):
        Domain(3, shift=Domain(3).root)
    with pytest.raises(InputError, match="coset shift"):
        Domain(3, shift=0)
    with pytest.raises(InputError, match="square"):
        Domain(3, generator=4)


@pytest.mark.parametrize("bad", [-1, 33])
def test_log_n_range(bad):
    with pytest.raises(InputError):
        Domain(bad)


def test_for_size():
    cases = {0: 1, 1: 1, 2: 2, 3: 4, 5: 8, 1000: 1024, 1024: 1024, 1025: 2048, 2**31 + 1: 2**32, 2**32: 2**32}
    for m, size in cases.items():
        d = Domain.for_size(m)
        assert d.n == size and d == Domain(size.bit_length() - 1)
    for bad in (-1, 2**32 + 1):
        with pytest.raises(InputError):
            Domain.for_size(bad)


def test_points_and_powers(rng):
    d = Domain(4)
    assert Fr.to_ints(d.points()) == [pow(d.root, j, R) for j in range(16)]
    assert Fr.to_ints(d.points(5, start=3, step=2)) == [pow(d.root, 3 + 2 * j, R) for j in range(5)]
    x = int.from_bytes(rng.bytes(32), "little") % R
    for count in (0, 1, 2, 7, 64):
        assert Fr.to_ints(powers(x, count)) == [pow(x, i, R) for i in range(count)]


def _lagrange(points: list[int], i: int, tau: int) -> int:
    num = den = 1
    for k, xk in enumerate(points):
        if k != i:
            num, den = num * (tau - xk) % R, den * (points[i] - xk) % R
    return num * pow(den, -1, R) % R


@pytest.mark.parametrize("domain", [Domain(3), Domain.snarkjs(3)], ids=["bellperson", "snarkjs"])
def test_lagrange_basis(domain, rng):
    """Against the product formula; on H itself the basis is the indicator."""
    tau = int.from_bytes(rng.bytes(40), "little") % R
    h = [pow(domain.root, j, R) for j in range(domain.n)]
    assert Fr.to_ints(domain.lagrange_at(tau)) == [_lagrange(h, i, tau) for i in range(domain.n)]
    assert Fr.to_ints(domain.lagrange_at(tau, 3, start=2, step=3)) == \
        [_lagrange(h, (2 + 3 * j) % 8, tau) for j in range(3)]
    assert Fr.to_ints(domain.lagrange_at(h[5])) == [int(i == 5) for i in range(domain.n)]


def test_snarkjs_h_query_recovers_h_times_z(rng):
    """sum_j P(x_j) L'_j(tau) = P(tau) for P = q Z, deg q < n, x_j = shift w_n^j the odd points of the
    2n-domain and L'_j its Lagrange basis there (snarkjs's H query); f(tau) from the n-domain too."""
    d = Domain.snarkjs(3)
    n, double = d.n, Domain.snarkjs(4)
    tau = int.from_bytes(rng.bytes(40), "little") % R
    q = [int.from_bytes(rng.bytes(40), "little") % R for _ in range(n - 1)]

    def p(x):
        return sum(c * pow(x, i, R) for i, c in enumerate(q)) * (pow(x, n, R) - 1) % R

    odd = Fr.to_ints(double.lagrange_at(tau, n, start=1, step=2))
    assert sum(p(d.shift * pow(d.root, j, R)) * lj for j, lj in enumerate(odd)) % R == p(tau)
    f = q + [1]
    lag = Fr.to_ints(d.lagrange_at(tau))
    assert sum(sum(c * pow(d.root, i * j, R) for i, c in enumerate(f)) * lj for j, lj in enumerate(lag)) % R \
        == sum(c * pow(tau, i, R) for i, c in enumerate(f)) % R


def test_lagrange_matches_inverse_ntt_of_powers(rng):
    """bellperson's setup used intt(tau^i): the same field elements, so the same key bytes."""
    from cuzk.backend.cpu.ntt import intt

    tau = int.from_bytes(rng.bytes(40), "little") % R
    d = Domain(6)
    assert np.array_equal(d.lagrange_at(tau), intt(powers(tau, d.n)))
