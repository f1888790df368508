"""A tiny satisfied circuit for examples, benches and tests of the machinery around a proof (queues,
dispatch, transport) where the proof's own cost should vanish."""
from __future__ import annotations

import numpy as np

from cuzk.ff.fields import Fr
from cuzk.r1cs.lc import ONE
from cuzk.r1cs.system import ConstraintSystem


def squares_circuit(values: list[int]) -> ConstraintSystem:
    """y_i = x_i (x_i + 1) for each public input x_i: one constraint per value, witness included."""
    cs = ConstraintSystem()
    x = Fr.from_ints(values)
    xc = cs.alloc_input_many(x)
    yc = cs.alloc_many(Fr.mul(x, Fr.add(x, Fr.ones(len(values)))))
    ones = np.full(len(values), ONE.code, np.int64)
    cs.enforce_many((xc[:, None], [1]), (np.stack([xc, ones], axis=1), [1, 1]), (yc[:, None], [1]), len(values))
    return cs
