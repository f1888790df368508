"""CPU Pippenger MSM against a naive sum of scalar multiples and against py-arkworks."""
import numpy as np
import py_arkworks_bls12381 as ark
import pytest

from cuzk.backend.cpu.msm import msm_g1, msm_g2, window_bits
from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.ec.encoding import encode

R = Fr.modulus
CASES = [pytest.param((G1, msm_g1, ark.G1Point), id="G1"), pytest.param((G2, msm_g2, ark.G2Point), id="G2")]


@pytest.fixture(params=CASES)
def case(request):
    return request.param



def naive(c, bases, scalars):
    """sum_i [k_i] P_i via per-point scalar multiplication and a pairwise (tree) sum."""
    terms = c.scalar_mul(np.concatenate([c.identity(1), bases]), [0] + Fr.to_ints(scalars))
    while len(terms) > 1:
        if len(terms) % 2:
            terms = np.concatenate([terms, c.to_jacobian(c.identity(1))])
        terms = c.add(terms[0::2], terms[1::2])
    return c.to_affine(terms)[0]


def xy_bytes(c, pt) -> bytes:
    """py-arkworks' from_xy_bytes_be layout: G1 x || y, G2 x.c0 || x.c1 || y.c0 || y.c1."""
    coords = [pt[0], pt[1]] if c is G1 else [*pt[0], *pt[1]]
    return b"".join(v.to_bytes(48, "big") for v in coords)


def arkworks_msm(c, point_cls, bases, scalars):
    pts = [point_cls.identity() if p is None else point_cls.from_xy_bytes_unchecked_be(xy_bytes(c, p))
           for p in c.to_ints(bases)]
    out = point_cls.multiexp_unchecked(pts, [ark.Scalar(k) for k in Fr.to_ints(scalars)])
    return bytes(out.to_compressed_bytes())


@pytest.mark.parametrize("n", [0, 1, 2, 3, 100, 1000])
def test_random_against_naive(case, rng, n):
    c, msm, _ = case
    bases, scalars = c.random(n, rng), Fr.random(n, rng)
    out = msm(bases, scalars)
    assert out.shape == c.affine_shape
    assert np.array_equal(out, naive(c, bases, scalars))


def test_random_1000_against_arkworks(case, rng):
    c, msm, point_cls = case
    bases, scalars = c.random(1000, rng), Fr.random(1000, rng)
    assert encode(c, msm(bases, scalars)) == arkworks_msm(c, point_cls, bases, scalars)


def test_special_scalars(case, rng):
    c, msm, point_cls = case
    bases = c.random(8, rng)
    for ks in ([0] * 8, [1] * 8, [R - 1] * 8, [7] * 8, [0, 1, R - 1, 2, R - 2, 0, 2**64, (R - 1) // 2]):
        scalars = Fr.from_ints(ks)
        out = msm(bases, scalars)
        assert np.array_equal(out, naive(c, bases, scalars))
        assert encode(c, out) == arkworks_msm(c, point_cls, bases, scalars)
    assert not msm(bases, Fr.from_ints([0] * 8)).any()
    # all scalars equal: [k] (sum of bases)
    k = int(rng.integers(1, 2**62))
    total = bases[0]
    for b in bases[1:]:
        total = c.add(total, b)
    assert np.array_equal(msm(bases, Fr.from_ints([k] * 8)), c.to_affine(c.scalar_mul(total, k)))


def test_identity_repeated_and_opposite_bases(case, rng):
    c, msm, _ = case
    p = c.random(2, rng)
    bases = np.stack([p[0], p[0], c.neg(p[0]), c.identity(1)[0], p[1], p[1], p[1], c.neg(p[1])])
    for ks in (Fr.random(8, rng), Fr.from_ints([5, 5, 5, 9, 3, 3, 3, 3]), Fr.from_ints([1, 1, 2, 1, 1, 1, 0, 2])):
        assert np.array_equal(msm(bases, ks), naive(c, bases, ks))
    # P and -P with equal scalars cancel; a lone identity base contributes nothing
    assert not msm(np.stack([p[0], c.neg(p[0]), c.identity(1)[0]]), Fr.from_ints([6, 6, 11])).any()
    assert not msm(c.identity(5), Fr.random(5, rng)).any()


def test_window_choice_grows_with_n():
    widths = [window_bits(n) for n in (1, 10, 1000, 2**16, 2**20, 2**26)]
    assert widths == sorted(widths) and 1 <= widths[0] and widths[-1] <= 16


def test_bad_input():
    b, s = G1.identity(3), Fr.zeros(3)
    with pytest.raises(InputError, match="3 bases but 2 scalars"):
        msm_g1(b, s[:2])
    with pytest.raises(InputError):
        msm_g1(b.astype(np.int64), s)
    with pytest.raises(InputError):
        msm_g1(G2.identity(3), s)
    with pytest.raises(InputError):
        msm_g2(b, s)
    with pytest.raises(InputError):
        msm_g1(b, np.zeros((3, 6), dtype=np.uint64))
    with pytest.raises(InputError):
        msm_g1(b, [0, 0, 0])
