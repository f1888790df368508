"""A synthetic circuit of any size with a PoRep-like witness (mostly bits and zeros), for benches and tests.

Half the rows are booleanity checks b (1 - b) = 0 on random bits; the other half are products
(c_j b_j) (v_j + x_i) = z_j of a bit, a random field element v_j and a public input x_i, so about half
of the z_j are zero. Built in bulk (alloc_many / enforce_many), so 2^20 rows take seconds.
"""
from __future__ import annotations

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.r1cs import ONE, ConstraintSystem


def synthetic_circuit(num_constraints: int, num_inputs: int = 2,
                      rng: np.random.Generator | None = None) -> ConstraintSystem:
    """A satisfied ConstraintSystem ("both" mode) with `num_constraints` rows and `num_inputs`
    public inputs besides ONE; num_constraints + num_inputs + 1 = 2^k gives a domain of exactly 2^k."""
    if num_constraints < 2 or num_inputs < 1:
        raise InputError("a synthetic circuit needs at least 2 constraints and 1 public input")
    rng = rng or np.random.default_rng()
    nb = num_constraints // 2
    nf = num_constraints - nb
    cs = ConstraintSystem()
    x = Fr.random(num_inputs, rng)
    x_codes = cs.alloc_input_many(x)
    bits = rng.integers(0, 2, nb)
    b_codes = cs.alloc_many(Fr.from_ints(bits.tolist()))
    v = Fr.random(nf, rng)
    v_codes = cs.alloc_many(v)
    pick = np.arange(nf) % nb
    which = np.arange(nf) % num_inputs
    coeff = rng.integers(1, 2**62, nf)
    z = Fr.mul(Fr.mul(Fr.from_ints(coeff.tolist()), Fr.from_ints(bits[pick].tolist())),
               Fr.add(v, x[which]))
    z_codes = cs.alloc_many(z)

    ones = np.full(nb, ONE.code, dtype=np.int64)
    cs.enforce_many((b_codes[:, None], [1]), (np.stack([ones, b_codes], axis=1), [1, -1]), None, nb)
    cs.enforce_many((b_codes[pick][:, None], coeff[:, None]),
                    (np.stack([v_codes, x_codes[which]], axis=1), [1, 1]), (z_codes[:, None], [1]), nf)
    return cs
