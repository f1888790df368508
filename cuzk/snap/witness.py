"""What one EmptySectorUpdate (SnapDeals) partition circuit is made of: its shape, its witness, its
public inputs, and the trace of the circuit's Poseidon_GR hashes.

Follows rust-fil-proofs `storage-proofs-update`: constants.rs (partition and challenge counts, hs,
h_select), circuit.rs:36-92 (PublicInputs: k_and_h_select = k | h_select << partition_bit_len, then
comm_r_old, comm_d_new, comm_r_new), circuit.rs:94-106 (PrivateInputs: comm_c, root_r_old,
root_r_new, apex_leafs, per challenge leaf_r_old, path_r_old, leaf_d_new, path_d_new, leaf_r_new,
path_r_new); ../shared/POST_SNAP.md part B. The host-side derivations (phi, rho, challenges) are
cuzk.snap.derive's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets.merkle import Level
from cuzk.gadgets.scope import CAPACITY
from cuzk.porep.trees import fr_from_le, fr_to_le, level_arities, sha256_nodes

H_SELECT_BITS = 6  # len(hs): every size has six candidate h values (constants.rs:98)


@dataclass(frozen=True)
class SnapShape:
    """What fixes an EmptySectorUpdate partition circuit (constants.rs): sector nodes (size / 32),
    TreeR shape (base, sub, top), partitions, challenges per partition, apex leaves per partition,
    the candidate h values `hs` and the h in use; and the sizes these derive (challenges.rs:10-140),
    for the circuit and the host alike (a registered update proof's circuit_shape)."""

    nodes: int
    tree: tuple[int, int, int]
    partitions: int
    challenges: int
    apex_leaves: int
    hs: tuple[int, ...]
    h: int

    def __post_init__(self) -> None:
        for name in ("nodes", "partitions", "apex_leaves"):
            v = getattr(self, name)
            if v < 1 or v & (v - 1):
                raise InputError(f"{name} must be a power of two, got {v}")
        if len(self.hs) != H_SELECT_BITS or self.h not in self.hs:
            raise InputError(f"hs must hold {H_SELECT_BITS} values including h={self.h}, got {self.hs}")
        if self.challenges < 1 or self.tree_d_levels < 0 or not 0 < self.h <= self.challenge_bit_len:
            raise InputError(f"no EmptySectorUpdate circuit for {self}")
        level_arities(self.nodes, self.tree)  # checks the TreeR shape fits

    @property
    def challenge_bit_len(self) -> int:
        return self.nodes.bit_length() - 1

    @property
    def partition_bit_len(self) -> int:
        return self.partitions.bit_length() - 1

    @property
    def apex_bit_len(self) -> int:
        return self.apex_leaves.bit_length() - 1

    @property
    def random_bits(self) -> int:
        """Random bits per challenge (challenge_bit_len - partition_bit_len); the partition bits follow."""
        return self.challenge_bit_len - self.partition_bit_len

    @property
    def challenges_per_digest(self) -> int:
        return CAPACITY // self.random_bits

    @property
    def digests(self) -> int:
        return -(-self.challenges // self.challenges_per_digest)

    @property
    def tree_d_levels(self) -> int:
        """SHA256 TreeD levels from a challenged leaf up to its apex leaf."""
        return self.random_bits - self.apex_bit_len

    @property
    def tree_r_arities(self) -> tuple[int, ...]:
        return level_arities(self.nodes, self.tree)

    @property
    def h_select(self) -> int:
        """1 << (first index of h in hs) (constants.rs:115)."""
        return 1 << self.hs.index(self.h)

    @property
    def num_inputs(self) -> int:
        """Public inputs including ONE: k_and_h_select, comm_r_old, comm_d_new, comm_r_new."""
        return 5

    def k_and_h_select(self, k: int) -> int:
        if not 0 <= k < self.partitions:
            raise InputError(f"partition {k} outside [0, {self.partitions})")
        return k | (self.h_select << self.partition_bit_len)


@dataclass
class PartitionWitness:
    """One partition's values: commitments and roots as canonical Fr ints; apex_leaves (A, 4) and
    partition_path (partition_bit_len, 4) Montgomery Fr (the TreeD siblings above the apex root); per
    challenge (C of them) leaf_r_old and leaf_d_new (C, 4), the TreeR paths (old, new) and the TreeD
    path up to the apex leaf as merkle.Levels (leaf level first; only the siblings are read: the
    circuit takes the path positions from the challenge bits)."""

    k: int
    comm_r_old: int
    comm_d_new: int
    comm_r_new: int
    comm_c: int
    root_r_old: int
    root_r_new: int
    apex_leaves: np.ndarray
    partition_path: np.ndarray
    leaf_r_old: np.ndarray
    leaf_d_new: np.ndarray
    path_r_old: list[Level]
    path_r_new: list[Level]
    path_d_new: list[Level]

    def check(self, shape: SnapShape) -> None:
        c = shape.challenges
        shape.k_and_h_select(self.k)
        for name in ("comm_r_old", "comm_d_new", "comm_r_new", "comm_c", "root_r_old", "root_r_new"):
            if not 0 <= getattr(self, name) < Fr.modulus:
                raise InputError(f"{name} is not a canonical Fr element")
        if np.shape(self.apex_leaves) != (shape.apex_leaves, 4):
            raise InputError(f"apex_leaves must be ({shape.apex_leaves}, 4), got {np.shape(self.apex_leaves)}")
        if np.shape(self.partition_path) != (shape.partition_bit_len, 4):
            raise InputError(f"partition_path must be ({shape.partition_bit_len}, 4)")
        if np.shape(self.leaf_r_old) != (c, 4) or np.shape(self.leaf_d_new) != (c, 4):
            raise InputError(f"leaf_r_old and leaf_d_new must be ({c}, 4)")
        d_arities = (2,) * shape.tree_d_levels
        for name, arities in (("path_r_old", shape.tree_r_arities), ("path_r_new", shape.tree_r_arities),
                              ("path_d_new", d_arities)):
            path = getattr(self, name)
            if tuple(lv.arity for lv in path) != arities:
                raise InputError(f"{name} arities {[lv.arity for lv in path]} != {list(arities)}")
            if any(np.shape(lv.siblings) != (c, lv.arity - 1, 4) for lv in path):
                raise InputError(f"{name} levels need ({c}, arity - 1, 4) siblings")

    def public_inputs(self, shape: SnapShape) -> list[int]:
        """[k_and_h_select, comm_r_old, comm_d_new, comm_r_new] (circuit.rs:85-92)."""
        return [shape.k_and_h_select(self.k), self.comm_r_old, self.comm_d_new, self.comm_r_new]


def apex_root(apex_leaves: np.ndarray) -> np.ndarray:
    """(4,) Montgomery Fr: the root of the apex tree over (A, 4) Montgomery leaves (TreeD's SHA256
    nodes, cuzk.porep.trees.sha256_nodes)."""
    nodes = fr_to_le(apex_leaves)
    while nodes.shape[0] > 1:
        nodes = sha256_nodes(nodes.reshape(-1, 2, 32))
    return fr_from_le(nodes, "apex root")[0]


def free_values(shape: SnapShape, w: PartitionWitness) -> tuple[np.ndarray, np.ndarray]:
    """What the partition circuit's witness program (cuzk.r1cs.witness_program) starts from besides the
    public inputs, Montgomery Fr in the circuit's allocation order: at top level ((3 + A + P, 4), and
    2 more when P > 0) comm_c, root_r_old, root_r_new, the apex leaves and the partition path (P
    siblings), then, with a partition path, the two children of its first hash: the apex root and the
    first sibling, ordered by partition bit 0 (the apex tree is batch blocks, whose programs run after
    the top level's, so the top level cannot derive them); per challenge ((C, nfree, 4)) leaf_r_old,
    leaf_d_new, then the siblings of path_r_old, path_r_new and path_d_new (levels leaf first). The rest
    (the challenge bits, rho, leaf_r_new, every hash) the program derives."""
    w.check(shape)
    parts = [Fr.from_ints([w.comm_c, w.root_r_old, w.root_r_new]), np.asarray(w.apex_leaves, np.uint64),
             np.asarray(w.partition_path, np.uint64).reshape(-1, 4)]
    if shape.partition_bit_len:
        pair = [apex_root(w.apex_leaves), np.asarray(w.partition_path[0], np.uint64)]
        parts.append(np.stack(pair[::-1] if w.k & 1 else pair))
    c = shape.challenges
    per = [np.asarray(w.leaf_r_old, np.uint64)[:, None], np.asarray(w.leaf_d_new, np.uint64)[:, None]]
    per += [np.asarray(lv.siblings, np.uint64).reshape(c, -1, 4)
            for path in (w.path_r_old, w.path_r_new, w.path_d_new) for lv in path]
    return np.concatenate(parts), np.concatenate(per, axis=1)
