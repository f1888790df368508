"""Merkle inclusion gadgets against trees built on the CPU (hashlib / the batch Poseidon)."""
import hashlib

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, merkle, num
from cuzk.hashes.poseidon import hash_ints, trace_length
from cuzk.r1cs import ConstraintSystem

R = Fr.modulus


def sha_node(children: list[int]) -> int:
    """Sha256Function::node / multi_node: SHA256 of the 32-byte LE encodings, top 2 bits cleared."""
    digest = bytearray(hashlib.sha256(b"".join(c.to_bytes(32, "little") for c in children)).digest())
    digest[31] &= 0x3F
    return int.from_bytes(digest, "little")


def build_tree(leaves: list[int], arities: list[int], hasher: str) -> list[list[int]]:
    levels = [leaves]
    for a in arities:
        cur = levels[-1]
        groups = [cur[i:i + a] for i in range(0, len(cur), a)]
        levels.append(hash_ints(groups, a) if hasher == "poseidon" else [sha_node(g) for g in groups])
    assert len(levels[-1]) == 1
    return levels


def paths(levels, arities, challenges) -> list[merkle.Level]:
    out = []
    idx = np.array(challenges)
    for lvl, a in zip(levels, arities):
        pos = idx % a
        sibs = [[lvl[(i // a) * a + j] for j in range(a) if j != p] for i, p in zip(idx, pos)]
        out.append(merkle.Level(a, pos, Fr.from_ints([x for s in sibs for x in s]).reshape(len(idx), a - 1, 4)))
        idx = idx // a
    return out


def run_por(hasher, arities, rng, k=2, corrupt=False):
    n_leaves = int(np.prod(arities))
    leaves = [int(x) for x in Fr.to_ints(Fr.random(n_leaves, rng))]
    levels = build_tree(leaves, arities, hasher)
    challenges = [int(c) for c in rng.integers(0, n_leaves, k)]
    cs = ConstraintSystem("both")
    root = num.alloc(cs, [levels[-1][0]])
    with cs.batch(k) as blk:
        leaf_vals = [leaves[c] for c in challenges]
        if corrupt:
            leaf_vals[0] = (leaf_vals[0] + 1) % R
        leaf = num.alloc(blk, leaf_vals)
        _, inputs = merkle.por(blk, leaf, paths(levels, arities, challenges), hasher, root=num.wire(blk, [root] * k))
    return cs, challenges, inputs


@pytest.mark.parametrize("shape,leaves", [((8, 0, 0), 64), ((8, 8, 0), 512), ((8, 8, 2), 1024), ((2, 0, 0), 16),
                                          ((4, 0, 0), 16)])
def test_poseidon_paths(shape, leaves, rng):
    arities = merkle.tree_shape_levels(shape, leaves)
    cs, challenges, inputs = run_por("poseidon", arities, rng)
    assert cs.is_satisfied()
    assert Fr.to_ints(inputs[0].val) == challenges  # the leaf index, packed as a public input
    assert cs.num_inputs == 1 + len(challenges)
    picks = {2: 2, 4: 8, 8: 22}  # insert_2 / insert_4 / insert_8 rows (insert_8: nor, and, 20 picks)
    per = sum((a.bit_length() - 1) + picks[a] + trace_length(a) for a in arities) + 2
    assert cs.num_constraints == len(challenges) * per


def test_poseidon_path_wrong_leaf_fails(rng):
    cs, _, _ = run_por("poseidon", [8, 8], rng, corrupt=True)
    assert not cs.is_satisfied()


def test_sha256_path(rng):
    """Binary SHA256 path (tree_d): per level 1 index bit, insert_2 and the node hash. The node hash
    takes 255 bits per leaf (to_bits_le) plus a constant pad bit, whose xors fold away: 45,379 rows,
    8 fewer than hash_leaf_bits on 256 allocated bits."""
    arities = [2, 2]
    cs, challenges, inputs = run_por("sha256", arities, rng)
    assert cs.num_constraints == 2 * (2 * (1 + 2 + 45_379) + 2)
    assert Fr.to_ints(inputs[0].val) == challenges
    assert cs.is_satisfied()


def test_sha256_tree_node(rng):
    """storage-proofs-core util.rs hash_leaf_bits_circuit: 45,387 rows with the 512 bit allocations."""
    left, right = (int(x) for x in Fr.to_ints(Fr.random(2, rng)))
    cs = ConstraintSystem("both")
    bits = [boolean.alloc(cs, 256, boolean.bytes_to_bits_le(np.frombuffer(v.to_bytes(32, "little"), np.uint8)[None]))
            for v in (left, right)]
    out = merkle.hash_leaf_bits(cs, *bits)
    assert cs.num_constraints == 45_387
    assert Fr.to_ints(out.val) == [sha_node([left, right])]
    assert cs.is_satisfied()


def test_bad_shapes():
    with pytest.raises(InputError):
        merkle.tree_shape_levels((8, 0, 0), 100)
    cs = ConstraintSystem("constraints")
    with pytest.raises(InputError):
        merkle.root_from_path(cs, num.alloc(cs), [merkle.Level(11)], "poseidon")
