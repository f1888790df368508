"""Merkle inclusion (rust-fil-proofs' PoRCircuit) over Poseidon or SHA256 trees, in bulk.

A path is a list of levels, leaf first; each level has an arity (2, 4 or 8: a base level of the tree
shape, then its sub and top levels, e.g. 8-8-2), the index of the current node among its siblings, and
the arity - 1 siblings. Per level: the index bits are allocated, then the siblings, the current node
is inserted among them (insertion.rs: insert_2 / insert_4 / insert_8), and the level is hashed
(hash_multi_leaf_circuit). The index bits of all levels are then packed into public inputs
(multipack::pack_into_inputs), and the computed root is constrained equal to the root.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.errors import InputError
from cuzk.gadgets import boolean, num, sha256
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.num import Num
from cuzk.gadgets.poseidon import poseidon_hash

ARITIES = (2, 4, 8)


@dataclass
class Level:
    """One level of a path for K instances: index (K,) ints in [0, arity) and siblings (K, arity-1, 4)
    Montgomery Fr, or both None in constraint mode."""

    arity: int
    index: np.ndarray | None = None
    siblings: np.ndarray | None = None


def insert(scope, element: Num, bits: Bits, elements: list[Num]) -> list[Num]:
    """insertion::insert for 2, 4 or 8 slots: element placed at the position given by bits (LE)."""
    size = len(elements) + 1
    if size not in ARITIES or 1 << len(bits) != size:
        raise InputError(f"insert supports 2, 4 or 8 slots with matching index bits, got {size} and {len(bits)}")
    pick = lambda cond, a, b: num.pick(scope, cond, a, b)  # noqa: E731
    b0, b1 = bits[0], bits[1] if size > 2 else None
    a = element
    if size == 2:
        return [pick(b0, elements[0], a), pick(b0, a, elements[0])]
    if size == 4:
        b, c, d = elements
        return [pick(b1, b, pick(b0, b, a)), pick(b1, c, pick(b0, a, b)),
                pick(b1, pick(b0, d, a), c), pick(b1, pick(b0, a, d), d)]
    b2 = bits[2]
    b, c, d, e, f, g, h = elements
    nor = boolean.and_(scope, b0.not_(), b1.not_())
    both = boolean.and_(scope, b0, b1)
    out = [pick(b2, b, pick(nor, a, b))]
    out.append(pick(b2, c, pick(b1, c, pick(b0, a, b))))
    out.append(pick(b2, d, pick(b1, pick(b0, d, a), c)))
    out.append(pick(b2, e, pick(both, a, d)))
    out.append(pick(b2, pick(nor, a, f), e))
    out.append(pick(b2, pick(b1, g, pick(b0, a, f)), f))
    out.append(pick(b2, pick(b1, pick(b0, h, a), g), g))
    out.append(pick(b2, pick(both, a, h), h))
    return out


def sha256_hash_leaves(scope, leaves: list[Num]) -> Num:
    """Sha256Function::hash_multi_leaf_circuit: each leaf's 255 bits (padded to bytes, bit order
    reversed per byte), SHA256, the digest's first 254 bits little-endian packed into one number."""
    bits = boolean.concat([boolean.reverse_bit_numbering(num.to_bits_le(scope, leaf)) for leaf in leaves])
    digest = sha256.sha256(scope, bits)
    return num.pack_bits(scope, boolean.reverse_bit_numbering(digest))


def hash_leaf_bits(scope, left: Bits, right: Bits) -> Num:
    """Sha256Function::hash_leaf_bits_circuit: SHA256 of two little-endian bit strings (each padded to
    whole bytes, bit order reversed per byte), packed as for a tree node."""
    both = boolean.concat([boolean.reverse_bit_numbering(left), boolean.reverse_bit_numbering(right)])
    digest = sha256.sha256(scope, both)
    return num.pack_bits(scope, boolean.reverse_bit_numbering(digest))


def _level_hash(scope, hasher: str, nodes: list[Num]) -> Num:
    if hasher == "poseidon":
        return poseidon_hash(scope, nodes)
    if hasher == "sha256":
        return sha256_hash_leaves(scope, nodes)
    raise InputError(f"hasher must be 'poseidon' or 'sha256', got {hasher!r}")


def root_from_path(scope, leaf: Num, path: list[Level], hasher: str) -> tuple[Num, Bits]:
    """The root computed from leaf and path, and the index bits of all levels (leaf level first)."""
    cur, index_bits = leaf, []
    for level in path:
        if level.arity not in ARITIES:
            raise InputError(f"tree arity must be 2, 4 or 8, got {level.arity}")
        nbits = level.arity.bit_length() - 1
        vals = None
        if level.index is not None:
            idx = np.asarray(level.index, dtype=np.int64).reshape(-1)
            if np.any((idx < 0) | (idx >= level.arity)):
                raise InputError(f"path index out of range for arity {level.arity}")
            vals = ((idx[:, None] >> np.arange(nbits)) & 1).astype(bool)
        bits = boolean.alloc(scope, nbits, vals)
        index_bits.append(bits)
        siblings = [num.alloc(scope, None if level.siblings is None else level.siblings[:, j])
                    for j in range(level.arity - 1)]
        cur = _level_hash(scope, hasher, insert(scope, cur, bits, siblings))
    return cur, boolean.concat(index_bits)


def por(scope, leaf: Num, path: list[Level], hasher: str, root: Num | None = None,
        root_values=None, private: bool = True) -> tuple[Num, list[Num]]:
    """PoRCircuit::synthesize: leaf's inclusion under a root (given as a Num, or allocated from
    root_values). Returns the root variable and the public inputs holding the packed index bits (and
    the root itself when not private)."""
    computed, bits = root_from_path(scope, leaf, path, hasher)
    inputs = num.pack_into_inputs(scope, bits)
    if root is None:
        root = num.alloc(scope, root_values)
    num.enforce_equal(scope, computed, root)
    if not private:
        inputs.append(num.inputize(scope, root))
    return root, inputs


def tree_shape_levels(shape: tuple[int, int, int], leaves: int) -> list[int]:
    """Arities of a path in a tree of `leaves` leaves with shape (base, sub, top), e.g. (8, 8, 2)."""
    base, sub, top = shape
    rest = leaves // (max(sub, 1) * max(top, 1))
    depth = 0
    while rest > 1:
        if rest % base:
            raise InputError(f"{leaves} leaves do not fit a {shape} tree")
        rest //= base
        depth += 1
    return [base] * depth + ([sub] if sub else []) + ([top] if top else [])
