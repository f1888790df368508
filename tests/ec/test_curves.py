"""G1 / G2 against py_ecc (optimized_bls12_381) on fresh random inputs and edge cases."""
import numpy as np
import pytest
from py_ecc import optimized_bls12_381 as pe

from cuzk.ec.curves import G1, G2
from cuzk.ec.subgroup import BETA, X_ABS
from cuzk.errors import InputError
from cuzk.ff.fields import Fq, Fr

P, R = Fq.modulus, Fr.modulus

CURVES = [pytest.param((G1, pe.G1, pe.Z1), id="G1"), pytest.param((G2, pe.G2, pe.Z2), id="G2")]


@pytest.fixture(params=CURVES)
def curve(request):
    return request.param



def to_pe(c, pt):
    """py_ecc point from a (x, y) integer tuple (None: the identity)."""
    if pt is None:
        return pe.Z1 if c is G1 else pe.Z2
    field = pe.FQ if c is G1 else (lambda v: pe.FQ2(list(v)))
    return (field(pt[0]), field(pt[1]), field(1) if c is G1 else pe.FQ2.one())


def from_pe(c, p):
    if pe.is_inf(p):
        return None
    x, y = pe.normalize(p)
    return (x.n, y.n) if c is G1 else (tuple(x.coeffs), tuple(y.coeffs))


def test_generator_and_random_points(curve, rng):
    c, g, _ = curve
    assert c.to_ints(c.generator()) == [from_pe(c, g)]
    pts = c.random(50, rng)
    assert c.is_on_curve(pts).all() and c.in_subgroup(pts).all()
    assert len({p for p in c.to_ints(pts)}) == 50
    for p in c.to_ints(pts[:3]):
        assert pe.is_on_curve(to_pe(c, p), pe.b if c is G1 else pe.b2)


def test_ints_round_trip(curve, rng):
    c, _, _ = curve
    pts = np.concatenate([c.random(5, rng), c.identity(2)])
    ints = c.to_ints(pts)
    assert ints[-2:] == [None, None]
    assert np.array_equal(c.from_ints(ints), pts)


def test_scalar_mul_matches_py_ecc(curve, rng):
    c, g, _ = curve
    base = c.random(1, rng)[0]
    ks = [int(v) for v in rng.integers(0, 2**63, 3)] + [0, 1, 2, R - 1, R, R + 1, 2**256 - 1]
    got = c.to_ints(c.scalar_mul(base, ks))
    ref_base = to_pe(c, c.to_ints(base)[0])
    assert got == [from_pe(c, pe.multiply(ref_base, k)) for k in ks]
    assert got[3] is None and got[7] is None and got[6] == from_pe(c, pe.neg(ref_base))


def test_scalar_mul_fr_montgomery_scalars(curve, rng):
    c, _, _ = curve
    pts = c.random(4, rng)
    ks = [int(v) for v in rng.integers(0, 2**62, 2)] + [0, R - 1]
    assert np.array_equal(c.to_affine(c.scalar_mul(pts, Fr.from_ints(ks))),
                          c.to_affine(c.scalar_mul(pts, ks)))
    assert c.to_ints(c.scalar_mul(pts[3], [R - 1]))[0] == c.to_ints(c.neg(pts[3]))[0]


def test_add_double_neg_match_py_ecc(curve, rng):
    c, _, _ = curve
    a, b = c.random(3, rng), c.random(3, rng)
    s = c.add(a, b)
    for pa, pb, ps in zip(c.to_ints(a), c.to_ints(b), c.to_ints(s)):
        assert ps == from_pe(c, pe.add(to_pe(c, pa), to_pe(c, pb)))
    for pa, pd in zip(c.to_ints(a), c.to_ints(c.double(a))):
        assert pd == from_pe(c, pe.double(to_pe(c, pa)))
    assert c.to_ints(c.neg(a)) == [from_pe(c, pe.neg(to_pe(c, p))) for p in c.to_ints(a)]


def test_group_law_edge_cases(curve, rng):
    c, _, _ = curve
    a = c.random(4, rng)
    ident = c.identity(4)
    assert c.eq(c.add(a, a), c.double(a)).all()  # P + P through add
    assert c.eq(c.add(a, c.neg(a)), ident).all()  # P + (-P)
    assert c.eq(c.add(a, ident), a).all() and c.eq(c.add(ident, a), a).all()
    assert c.eq(c.double(ident), ident).all() and c.eq(c.add(ident, ident), ident).all()
    jac = c.double(a)  # mixed forms: Jacobian with Z != 1 plus affine
    assert c.eq(c.add(jac, a), c.scalar_mul(a, 3)).all()
    assert c.eq(c.add(c.add(jac, a), c.neg(a)), jac).all()
    assert c.eq(c.add(jac, c.neg(jac)), ident).all()
    assert c.eq(c.scalar_mul(ident, [5, 0, R - 1, 1]), ident).all()
    assert np.array_equal(c.neg(ident), ident)


def test_to_affine_batch_with_identities(curve, rng):
    c, _, _ = curve
    a = c.random(200, rng)
    a[::7] = 0
    jac = c.add(c.double(a), a)  # [3] a, with Z != 1 and Z == 0 mixed
    ref = c.scalar_mul(a, 3)
    assert np.array_equal(c.to_affine(jac), c.to_affine(ref))
    assert not c.to_affine(jac)[::7].any()
    assert c.to_affine(jac[:0]).shape == (0, *c.affine_shape)


def test_on_curve_and_subgroup_checks(curve, rng):
    c, _, _ = curve
    good = c.random(3, rng)
    assert c.is_on_curve(c.identity(1)).all() and c.in_subgroup(c.identity(1)).all()
    off = good.copy()
    off[:, 1] = c.field.add(off[:, 1], c.field.from_ints([1 if c is G1 else (1, 0)]))
    assert not c.is_on_curve(off).any() and not c.in_subgroup(off).any()
    wild = c.random_on_curve(20, rng)  # the whole curve: outside the subgroup w.h.p.
    assert c.is_on_curve(wild).all()
    by_order = c.eq(c.scalar_mul(wild, R), c.identity(1))  # [r] P == O, the definition
    assert np.array_equal(c.in_subgroup(wild), by_order) and not by_order.any()
    if c is G1:  # clearing the cofactor lands in the subgroup
        h1 = 0x396C8C005555E1568C00AAAB0000AAAB
        assert c.in_subgroup(c.to_affine(c.scalar_mul(wild, h1))).all()


def test_endomorphism_constants():
    beta = Fq.to_ints(np.array(BETA, dtype=np.uint64))[0]
    assert beta != 1 and pow(beta, 3, P) == 1
    assert (X_ABS * X_ABS).bit_length() <= 128


def test_scalar_mul_broadcast_shapes(curve, rng):
    c, _, _ = curve
    pts = c.random(6, rng).reshape(2, 3, *c.affine_shape)
    out = c.scalar_mul(pts, 2)
    assert out.shape == (2, 3, *c.jacobian_shape)
    assert c.eq(out, c.double(pts)).all()


def test_bad_input(curve):
    c, _, _ = curve
    with pytest.raises(InputError):
        c.add(np.zeros((3, 4, 6), dtype=np.uint64), c.identity(3))
    with pytest.raises(InputError):
        c.double(np.zeros((3, *c.affine_shape), dtype=np.int64))
    with pytest.raises(InputError):
        c.scalar_mul(c.identity(1), [-1])
    with pytest.raises(InputError):
        c.scalar_mul(c.identity(1), [2**256])


def test_generator_mul(curve, rng):
    c, _, _ = curve
    ks = [int(v) for v in rng.integers(0, 2**63, 3)] + [0, 1, R - 1, R, 2**256 - 1]
    ref = c.to_affine(c.scalar_mul(c.generator(), ks))
    assert np.array_equal(c.generator_mul(ks), ref)
    assert np.array_equal(c.generator_mul(Fr.from_ints(ks)), c.to_affine(c.scalar_mul(c.generator(), Fr.from_ints(ks))))
    assert c.generator_mul([]).shape == (0, *c.affine_shape)
