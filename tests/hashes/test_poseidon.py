"""Native Poseidon: neptune's outputs (published vector, committed poseidon-hash vectors, the plain
permutation) and the batch hash."""
import json
from pathlib import Path

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.hashes.poseidon import hash_ints, hash_many, hash_reference, hash_trace, trace_length
from cuzk.hashes.poseidon_constants import R, constants

VECTORS = json.loads((Path(__file__).parent / "data" / "poseidon_vectors.json").read_text())["vectors"]


def test_filecoin_hash2_vector():
    """filecoin-hashers poseidon.rs: hash2(1, 0)."""
    expect = 0x042f94ffbe786bc393c003cc74a24f26ec5907b3dc3094afb339ff6079800b5e
    assert hash_reference([1, 0], 2) == expect
    assert hash_ints([[1, 0]], 2) == [expect]


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_committed_vectors(arity):
    cases = VECTORS[str(arity)]["cases"]
    assert VECTORS[str(arity)]["partial_rounds"] == constants(arity).partial_rounds
    inputs = [[int(x, 16) for x in c["inputs"]] for c in cases]
    expect = [int(c["output"], 16) for c in cases]
    assert hash_ints(inputs, arity) == expect
    assert [hash_reference(x, arity) for x in inputs[:2]] == expect[:2]


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_batch_hash_equals_reference(arity, rng):
    n = 7
    rows = [[int(v) for v in Fr.to_ints(Fr.random(arity, rng))] for _ in range(n)]
    rows[0] = [R - 1] * arity
    assert hash_ints(rows, arity) == [hash_reference(r, arity) for r in rows]


@pytest.mark.parametrize("arity", [2, 11])
def test_trace_ends_with_the_hash(arity, rng):
    vals = Fr.random(3 * arity, rng).reshape(3, arity, 4)
    trace = hash_trace(vals, arity)
    assert trace.shape == (3, trace_length(arity), 4)
    np.testing.assert_array_equal(trace[:, -1], hash_many(vals, arity))


def test_bad_input():
    with pytest.raises(InputError):
        hash_many(np.zeros((2, 3, 4), np.uint64), 2)
    with pytest.raises(InputError):
        constants(3)
