"""Poseidon's legacy circuit: exact counts, values equal to the native hash, satisfiability (the native
hash itself is tested in tests/hashes/test_poseidon.py)."""
import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets import num
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.hashes.poseidon import hash_many, trace_length
from cuzk.r1cs import ConstraintSystem

COUNTS = {2: 311, 4: 377, 8: 505, 11: 598}  # neptune circuit.rs tests; 311 / 598: rust-fil-proofs hash.rs


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_circuit_counts_and_values(arity, rng):
    k = 3
    vals = Fr.random(k * arity, rng).reshape(k, arity, 4)
    cs = ConstraintSystem("both")
    with cs.batch(k) as blk:
        ins = num.alloc_many(blk, arity, vals)
        out = poseidon_hash(blk, ins)
    assert cs.num_constraints == k * COUNTS[arity] == k * trace_length(arity)
    np.testing.assert_array_equal(out.val, hash_many(vals, arity))
    assert cs.is_satisfied()
    w = cs.witness()
    w[1 + k * arity + int(rng.integers(0, COUNTS[arity]))] = Fr.random(1, rng)[0]
    assert cs.first_unsatisfied(w) is not None


def test_hash2_circuit_count():
    """stacked/circuit/hash.rs test_hash2_circuit: 311 rows (two allocated inputs, no rows for them)."""
    cs = ConstraintSystem("constraints")
    a, b = num.alloc(cs), num.alloc(cs)
    poseidon_hash(cs, [a, b])
    assert cs.num_constraints == 311


def test_bad_input():
    cs = ConstraintSystem("constraints")
    with pytest.raises(InputError):
        poseidon_hash(cs, [num.alloc(cs)], arity=2)
