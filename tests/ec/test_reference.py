"""cuzk.ec.reference (the plain-int oracle) against cuzk.ff and cuzk.ec: its own limb conversions and
its group law give the same bytes and points."""
import numpy as np

from cuzk.ec import reference
from cuzk.ec.curves import G1, G2
from cuzk.ff.fields import Fq, Fr


def test_conversions_match_ff(rng):
    r = Fr.modulus
    values = [0, 1, r - 1] + [int.from_bytes(rng.bytes(40), "little") % r for _ in range(20)]
    assert np.array_equal(reference.fr_to_mont_array(values), Fr.from_ints(values))
    for v in (0, 1, Fq.modulus - 1, int.from_bytes(rng.bytes(48), "little") % Fq.modulus):
        assert reference.fq_to_mont(v) == [int(x) for x in Fq.const(v)]
        assert reference.fq_from_mont(Fq.const(v)) == v


def test_group_law_matches_curves(rng):
    for curve, g, g2 in ((G1, reference.G1, False), (G2, reference.G2, True)):
        assert curve.to_ints(curve.generator()[None]) == [g]
        ks = [0, 1, 2, Fr.modulus - 1] + [int.from_bytes(rng.bytes(40), "little") % Fr.modulus
                                          for _ in range(3)]
        want = [reference.mul(g, k) for k in ks]
        got = curve.to_affine(curve.scalar_mul(curve.generator(), ks))
        assert np.array_equal(got, reference.encode(want, g2))
        assert [reference.decode(p, g2) for p in got] == want
        assert reference.add(want[1], reference.neg(want[1])) is None
