"""Fr, Fq and Fq2 against Python integers and py_ecc, on fresh random inputs and edge values."""
import numpy as np
import pytest
from py_ecc.optimized_bls12_381 import FQ, FQ2

from cuzk.ff import codegen as _codegen
from cuzk.errors import InputError, NonCanonicalError
from cuzk.ff.fields import Fq, Fq2, Fr


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


def test_generated_code_is_current():
    assert _codegen.TARGET.read_text() == _codegen.generate(), "run: python -m cuzk.ff.codegen"
