"""Fr, Fq and Fq2 against Python integers and py_ecc, on fresh random inputs and edge values."""
import numpy as np
import pytest
from py_ecc.optimized_bls12_381 import FQ, FQ2

from cuzk.ff import codegen as _codegen
from cuzk.errors import InputError, NonCanonicalError
from cuzk.ff.fields import Fq, Fq2, Fr, int_limbs


def sample(field, rng, n=40):
    p = field.modulus
    edge = [0, 1, 2, p - 1, p - 2, (p - 1) // 2, 2**64 - 1, 2**64]
    return edge + [int.from_bytes(rng.bytes(64), "little") % p for _ in range(n)]


@pytest.mark.parametrize("field", [Fr, Fq], ids=["Fr", "Fq"])
def test_prime_field_ops_match_integers(field, rng):
    p = field.modulus
    xs = sample(field, rng)
    ys = list(reversed(sample(field, rng)))
    a, b = field.from_ints(xs), field.from_ints(ys)
    assert field.to_ints(a) == xs
    assert field.to_ints(field.add(a, b)) == [(x + y) % p for x, y in zip(xs, ys)]
    assert field.to_ints(field.sub(a, b)) == [(x - y) % p for x, y in zip(xs, ys)]
    assert field.to_ints(field.mul(a, b)) == [x * y % p for x, y in zip(xs, ys)]
    assert field.to_ints(field.sqr(a)) == [x * x % p for x in xs]
    assert field.to_ints(field.neg(a)) == [-x % p for x in xs]
    assert field.to_ints(field.pow(a, 5)) == [pow(x, 5, p) for x in xs]
    assert field.to_ints(field.pow(a, p - 1)) == [1 if x else 0 for x in xs]
    assert field.to_ints(field.batch_inv(a)) == [pow(x, -1, p) if x else 0 for x in xs]
    nonzero = field.from_ints([x for x in xs if x])
    assert field.to_ints(field.inv(nonzero)) == [pow(x, -1, p) for x in xs if x]


def test_fq_matches_py_ecc(rng):
    xs, ys = sample(Fq, rng), sample(Fq, rng)[::-1]
    got = Fq.to_ints(Fq.mul(Fq.from_ints(xs), Fq.from_ints(ys)))
    assert got == [(FQ(x) * FQ(y)).n for x, y in zip(xs, ys)]
    got = Fq.to_ints(Fq.batch_inv(Fq.from_ints(ys)))
    assert got == [(FQ(1) / FQ(y)).n if y else 0 for y in ys]


def test_fq2_matches_py_ecc(rng):
    xs, ys = sample(Fq, rng), sample(Fq, rng)[::-1]
    pairs_a = list(zip(xs, ys))
    pairs_b = list(zip(ys[3:] + ys[:3], xs[5:] + xs[:5]))
    a, b = Fq2.from_ints(pairs_a), Fq2.from_ints(pairs_b)
    ref_a = [FQ2(list(x)) for x in pairs_a]
    ref_b = [FQ2(list(x)) for x in pairs_b]

    def ints(elems):
        return [tuple(int(c) for c in e.coeffs) for e in elems]

    assert Fq2.to_ints(a) == pairs_a
    assert Fq2.to_ints(Fq2.add(a, b)) == ints(x + y for x, y in zip(ref_a, ref_b))
    assert Fq2.to_ints(Fq2.sub(a, b)) == ints(x - y for x, y in zip(ref_a, ref_b))
    assert Fq2.to_ints(Fq2.mul(a, b)) == ints(x * y for x, y in zip(ref_a, ref_b))
    assert Fq2.to_ints(Fq2.sqr(a)) == ints(x * x for x in ref_a)
    assert Fq2.to_ints(Fq2.neg(a)) == ints(-x for x in ref_a)
    nonzero = [x for x in pairs_a if x != (0, 0)]
    assert Fq2.to_ints(Fq2.inv(Fq2.from_ints(nonzero))) == ints(FQ2([1, 0]) / FQ2(list(x)) for x in nonzero)


def test_sqrt_fq_and_fq2(rng):
    a = Fq.from_ints(sample(Fq, rng))
    roots, ok = Fq.sqrt(Fq.sqr(a))
    assert ok.all() and Fq.to_ints(Fq.sqr(roots)) == Fq.to_ints(Fq.sqr(a))
    # -1 is not a square in Fq (p = 3 mod 4)
    _, ok = Fq.sqrt(Fq.from_ints([-1]))
    assert not ok[0]
    b = Fq2.random(30, rng)
    roots, ok = Fq2.sqrt(Fq2.sqr(b))
    assert ok.all() and Fq2.to_ints(Fq2.sqr(roots)) == Fq2.to_ints(Fq2.sqr(b))
    roots, ok = Fq2.sqrt(b)
    assert Fq2.to_ints(Fq2.sqr(roots[ok])) == Fq2.to_ints(b[ok])
    for x, is_sq in zip(Fq2.to_ints(b), ok):  # Euler's criterion through the norm
        norm = (x[0] ** 2 + x[1] ** 2) % Fq.modulus
        assert bool(is_sq) == (pow(norm, (Fq.modulus - 1) // 2, Fq.modulus) == 1)


def test_bytes_roundtrip_and_strictness(rng):
    xs = sample(Fr, rng)
    data = Fr.to_bytes(Fr.from_ints(xs))
    assert data == b"".join(x.to_bytes(32, "little") for x in xs)
    assert Fr.to_ints(Fr.from_bytes(data)) == xs
    with pytest.raises(NonCanonicalError, match="element 1"):
        Fr.from_bytes((5).to_bytes(32, "little") + Fr.modulus.to_bytes(32, "little"))
    with pytest.raises(InputError, match="multiple of 32"):
        Fr.from_bytes(b"\x00" * 33)
    assert Fq.to_bytes(Fq.from_ints([1])) == (1).to_bytes(48, "big")


def test_bad_arrays_and_zero_inverse():
    with pytest.raises(InputError, match="shape"):
        Fq.mul(np.zeros((3, 4), np.uint64), np.zeros((3, 4), np.uint64))
    with pytest.raises(InputError, match="int64"):
        Fr.add(np.zeros((3, 4), np.int64), np.zeros((3, 4), np.int64))
    with pytest.raises(ZeroDivisionError):
        Fr.inv(Fr.from_ints([3, 0]))


def test_random_is_uniform_enough(rng):
    values = Fr.to_ints(Fr.random(2000, rng))
    assert len(set(values)) == 2000
    assert all(0 <= v < Fr.modulus for v in values)
    top = sum(v > Fr.modulus // 2 for v in values)
    assert 850 < top < 1150


def limb_rows(values, n):
    """Plain little-endian limb rows of arbitrary integers below 2^(64 n), by Python ints."""
    return np.array([[(v >> (64 * i)) & (2**64 - 1) for i in range(n)] for v in values], dtype=np.uint64)


def row_int(row) -> int:
    return sum(int(x) << (64 * i) for i, x in enumerate(row))


@pytest.mark.parametrize("field", [Fr, Fq], ids=["Fr", "Fq"])
def test_const_and_canonical_conversions(field, rng):
    p, n = field.modulus, field.nlimbs
    big = 2 ** (64 * n)
    mont = pow(2, 64 * n, p)
    def uniform(lo: int, hi: int) -> int:
        return lo + int.from_bytes(rng.bytes(8 * n + 8), "little") % (hi - lo)

    below = [0, 1, 2, p - 1, p - 2, 2**64 - 1] + [uniform(0, p) for _ in range(30)]
    above = [p, p + 1, big - 1] + [uniform(p, big) for _ in range(10)]  # r, 2^256 - 1 for Fr
    for x in below + [-1, -p, p + 5, 3 * p + 2]:
        assert row_int(field.const(x)) == x % p * mont % p  # x R mod p
        assert field.const(x).shape == (n,) and field.const(x).dtype == np.uint64
    assert np.array_equal(np.stack([field.const(x) for x in below]), field.from_ints(below))  # kernel agrees
    plain = limb_rows(below + above, n)
    mask = field.is_canonical(plain)
    assert mask.tolist() == [True] * len(below) + [False] * len(above)
    assert np.array_equal(field.is_canonical(plain[:48].reshape(2, 24, n)), mask[:48].reshape(2, 24))
    ok = limb_rows(below, n)
    mont_rows = field.from_canonical_limbs(ok)
    assert [row_int(r) for r in mont_rows] == [x * mont % p for x in below]
    assert np.array_equal(field.to_canonical_limbs(mont_rows), ok)
    assert field.to_ints(mont_rows) == below
    assert np.array_equal(field.from_canonical_limbs(ok[3]), field.const(below[3]))  # one element
    assert field.check_canonical(ok) is ok
    bad = ok.copy()
    bad[[7, 9]] = limb_rows([p, big - 1], n)
    for check in (field.check_canonical, field.from_canonical_limbs):
        with pytest.raises(NonCanonicalError, match=f"node 7 is not below {field.symbol}"):
            check(bad, "node")
    with pytest.raises(InputError, match="shape"):
        field.is_canonical(np.zeros((3, n + 1), np.uint64))
    with pytest.raises(InputError, match="int64"):
        field.to_canonical_limbs(np.zeros((3, n), np.int64))


def test_fq2_const_and_canonical(rng):
    pairs = [(0, 0), (1, 0), (0, 1), (Fq.modulus - 1, 5)]
    assert np.array_equal(np.stack([Fq2.const(x) for x in pairs]), Fq2.from_ints(pairs))
    plain = Fq2.to_canonical_limbs(Fq2.random(6, rng))
    assert Fq2.is_canonical(plain).all() and Fq2.is_canonical(plain).shape == (6,)
    plain[4, 1, 5] = np.uint64(2**64 - 1)  # c1 above p
    assert Fq2.is_canonical(plain).tolist() == [True] * 4 + [False, True]
    with pytest.raises(NonCanonicalError, match="element 4"):
        Fq2.from_canonical_limbs(plain)


def test_int_limbs():
    assert int_limbs(0, 4) == (0, 0, 0, 0)
    assert int_limbs(2**256 - 1, 4) == (2**64 - 1,) * 4
    assert int_limbs(Fr.modulus, 4) == tuple(limb_rows([Fr.modulus], 4)[0])
    assert all(isinstance(v, np.uint64) for v in int_limbs(5, 6))
    for bad in (-1, 2**256):
        with pytest.raises(InputError):
            int_limbs(bad, 4)


def test_generated_code_is_current():
    assert _codegen.TARGET.read_text() == _codegen.generate(), "run: python -m cuzk.ff.codegen"
