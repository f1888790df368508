"""Merkle trees of SDR PoRep: SHA256 tree_d, Poseidon trees of every shape, sparse trees, paths."""
import hashlib

import numpy as np
import pytest

from cuzk.errors import InputError, NonCanonicalError
from cuzk.ff.fields import Fr
from cuzk.hashes.poseidon import hash_ints
from cuzk.porep.trees import (POSEIDON, SHA256, MerklePath, MerkleTree, binary_arities, compute_roots,
                              fr_from_le, fr_to_le, level_arities, poseidon2_bytes, random_nodes,
                              tree_r_shape, verify_paths)


def _sha_root(leaves: list[bytes]) -> bytes:
    while len(leaves) > 1:
        nxt = []
        for i in range(0, len(leaves), 2):
            h = bytearray(hashlib.sha256(leaves[i] + leaves[i + 1]).digest())
            h[31] &= 0x3F
            nxt.append(bytes(h))
        leaves = nxt
    return leaves[0]


def _poseidon_root(leaves: list[int], arities) -> int:
    for a in arities:
        leaves = hash_ints([leaves[i:i + a] for i in range(0, len(leaves), a)], a)
    return leaves[0]


def test_sha256_tree_matches_hashlib(rng):
    leaves = random_nodes(SHA256, 64, rng)
    tree = MerkleTree.build(SHA256, leaves, binary_arities(64))
    assert tree.root == _sha_root([bytes(r) for r in leaves])
    nodes = [0, 1, 63, int(rng.integers(64))]
    paths = tree.paths(nodes)
    assert verify_paths(paths).all()
    assert [p.node_index for p in paths] == nodes
    assert all(p.leaf == bytes(leaves[n]) for p, n in zip(paths, nodes))


@pytest.mark.parametrize("arities", [(8, 8), (8, 8, 2), (8, 2), (2, 2, 2)], ids=str)
def test_poseidon_tree_matches_reference(rng, arities):
    n = int(np.prod(arities))
    ints = Fr.to_ints(Fr.random(n, rng))
    ints[0], ints[-1] = 0, Fr.modulus - 1
    tree = MerkleTree.build(POSEIDON, Fr.from_ints(ints), arities)
    assert int.from_bytes(tree.root, "little") == _poseidon_root(ints, arities)
    nodes = rng.choice(n, min(n, 9), replace=False)
    paths = tree.paths(nodes)
    assert verify_paths(paths).all()
    assert [p.node_index for p in paths] == list(nodes)


def test_tampered_paths_fail(rng):
    tree = MerkleTree.build(POSEIDON, Fr.random(128, rng), (8, 8, 2))
    p = tree.path(77)
    bad = [
        MerklePath(p.kind, p.arities, p.leaf, p.root, p.siblings, (p.indices[0] ^ 1,) + p.indices[1:]),
        MerklePath(p.kind, p.arities, (p.leaf[0] ^ 1).to_bytes(1, "little") + p.leaf[1:], p.root,
                   p.siblings, p.indices),
        MerklePath(p.kind, p.arities, p.leaf, p.root[:5] + bytes([p.root[5] ^ 4]) + p.root[6:],
                   p.siblings, p.indices),
        MerklePath(p.kind, p.arities, p.leaf, p.root,
                   p.siblings[:2] + ((bytes(32),),), p.indices),
    ]
    assert not verify_paths(bad).any()
    with pytest.raises(InputError):
        compute_roots([MerklePath(p.kind, p.arities, p.leaf, p.root, p.siblings[:2], p.indices)])
    with pytest.raises(InputError):
        compute_roots([MerklePath(p.kind, p.arities, p.leaf, p.root, p.siblings, (8, 0, 0))])


@pytest.mark.parametrize("kind,arities", [(SHA256, (2,) * 10), (POSEIDON, (8, 8, 8, 2))])
def test_sparse_tree(rng, kind, arities):
    n = int(np.prod(arities))
    idx = np.concatenate([[n - 1], rng.choice(n - 1, 11, replace=False)])  # the last leaf, and 11 distinct others
    vals = random_nodes(kind, 12, rng)
    tree = MerkleTree.sparse(kind, idx, vals, arities, rng)
    paths = tree.paths(idx)
    assert verify_paths(paths).all()
    assert {p.root for p in paths} == {tree.root}
    assert all(p.leaf == bytes(fr_to_le(v)[0] if kind == POSEIDON else v) for p, v in zip(paths, vals))
    full = random_nodes(kind, 64, rng) if kind == SHA256 else Fr.random(64, rng)
    small = (2,) * 6 if kind == SHA256 else (8, 8)
    assert (MerkleTree.sparse(kind, np.arange(64), full, small, rng).root
            == MerkleTree.build(kind, full, small).root)
    with pytest.raises(InputError):
        MerkleTree.sparse(kind, np.array([1, 1]), vals[:2], arities, rng)


def test_shapes():
    assert level_arities(64, tree_r_shape(64)) == (8, 8)
    assert level_arities(1 << 18, tree_r_shape(1 << 18)) == (8,) * 6
    assert level_arities(1 << 30, tree_r_shape(1 << 30)) == (8,) * 10
    assert level_arities(1 << 31, tree_r_shape(1 << 31)) == (8,) * 10 + (2,)
    assert binary_arities(1 << 30) == (2,) * 30
    with pytest.raises(InputError):
        tree_r_shape(1 << 20)
    with pytest.raises(InputError):
        binary_arities(96)


def test_fr_bytes(rng):
    a = Fr.random(5, rng)
    assert np.array_equal(fr_from_le(fr_to_le(a)), a)
    bad = np.frombuffer((Fr.modulus).to_bytes(32, "little"), np.uint8).reshape(1, 32)
    with pytest.raises(NonCanonicalError):
        fr_from_le(bad)
    one, zero = (1).to_bytes(32, "little"), bytes(32)
    assert int.from_bytes(poseidon2_bytes(one, zero), "little") == \
        0x042F94FFBE786BC393C003CC74A24F26EC5907B3DC3094AFB339FF6079800B5E
