"""Synthetic SnapDeals update: the commitments and vanilla partition proofs of an update for any
registered update proof (32GiB: 16 partitions) that pass cuzk.snap's checks and satisfy the partition
circuit, without sealing or encoding a sector. A benchmark's and a test's input: it proves nothing
about stored data.

Unlike synthetic C1 (cuzk.porep.synthetic), the trees cannot be sparse trees of random siblings grown
around the challenged paths: the challenges come from comm_r_new (cuzk.snap.derive), so every
challenged leaf of TreeR new would move its root and with it the challenges, and rho hangs on
comm_d_new and comm_r_old. So every leaf is fixed before the challenges: each tree is constant over
blocks of B = 8^j consecutive leaves (B inside one rho group of 2^(log2(nodes) - h) leaves, at most
MAX_BLOCKS blocks), one random value per block b:

    old[b]  uniform Fr                               TreeR old -> comm_r_old = Poseidon-2(comm_c, root)
    data[b] 32 random bytes, top two bits clear      TreeD     -> comm_d_new = root
    new[b]  = old[b] + data[b] * rho(b B >> (log2(nodes) - h))     TreeR new -> comm_r_new = Poseidon-2(comm_c, root)

with rho from phi = Poseidon_GR(comm_d_new, comm_r_old) as cuzk.snap.derive / encode compute it. A
block's subtree is a chain of hashes of equal children; above the blocks each tree is built in full.
The challenges then follow from comm_r_new as cuzk.snap derives them, and each tree goes to
cuzk.snap.vanilla.prove_partition as a sparse MerkleTree holding the challenged paths (TreeD also its
apex level), which builds the partition proofs exactly as for an encoded sector.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from cuzk.ff.fields import Fr
from cuzk.porep.trees import (POSEIDON, SHA256, MerkleTree, binary_arities, fr_from_le, fr_to_le,
                              hash_children, level_arities, poseidon2_bytes, random_nodes)
from cuzk.snap.derive import high_shift, node_rhos, partition_challenges, phi
from cuzk.snap.encode import UpdatedSector
from cuzk.snap.registry import RegisteredUpdateProof, get_update_proof
from cuzk.snap.vanilla import PartitionProof, PublicInputs, prove_all, public_inputs
from cuzk.util.progress import StageTimer

MAX_BLOCKS = 1 << 12  # a 32GiB tree: 2^12 blocks of 2^18 leaves (4 per rho group)


class BlockTree:
    """A Merkle tree of `arities` whose leaves are constant over blocks: the first `low` levels hold
    prod(arities[:low]) leaves per block, `blocks` the block values in leaf order (the leaf kind's
    values: (n, 4) Montgomery Fr for Poseidon, (n, 32) uint8 for SHA256)."""

    def __init__(self, kind: str, arities: tuple[int, ...], low: int, blocks: np.ndarray) -> None:
        self.kind, self.arities, self.low = kind, arities, low
        chain = [np.ascontiguousarray(blocks)]  # chain[l][b]: block b's node at level l < low
        for a in arities[:low]:
            chain.append(hash_children(kind, np.repeat(chain[-1][:, None], a, axis=1)))
        self.chain = chain[:low]
        self.upper = MerkleTree.build(kind, chain[-1], arities[low:])

    @property
    def root(self) -> bytes:
        return self.upper.root

    def nodes(self, level: int, idx: np.ndarray) -> np.ndarray:
        """The values of nodes `idx` of `level` (0: the leaves)."""
        if level < self.low:
            return self.chain[level][idx // prod(self.arities[level:self.low])]
        return self.upper.values[level - self.low][idx]

    def sparse(self, leaves: np.ndarray, full: int | None = None) -> MerkleTree:
        """The nodes on the paths of `leaves` as a sparse MerkleTree (level `full` held in full)."""
        cur, values, index = np.unique(leaves), [], []
        for level, a in enumerate(self.arities):
            if level == full:
                idx, kept = np.arange(prod(self.arities[level:])), None
            else:
                idx = kept = np.unique(((cur // a)[:, None] * a + np.arange(a)).reshape(-1))
            values.append(self.nodes(level, idx))
            index.append(kept)
            cur = np.unique(cur // a)
        return MerkleTree(self.kind, self.arities, [*values, self.upper.values[-1]], [*index, None])


def block_levels(p: RegisteredUpdateProof) -> int:
    """j: blocks of base^j leaves (base: TreeR's base arity), the fewest levels that leave at most
    MAX_BLOCKS blocks, within one rho group and TreeR's base levels."""
    base = p.tree_shape[0]
    bits, base_levels = base.bit_length() - 1, level_arities(p.nodes, p.tree_shape).count(base)
    j = 0
    while p.nodes >> (bits * j) > MAX_BLOCKS and bits * (j + 1) <= high_shift(p) and j < base_levels:
        j += 1
    return j


@dataclass(frozen=True)
class SyntheticUpdate:
    """A synthetic update's commitments, every partition's public inputs and vanilla proof."""

    proof: RegisteredUpdateProof
    comm_c: bytes
    comm_r_old: bytes
    comm_d_new: bytes
    comm_r_new: bytes
    public: tuple[PublicInputs, ...]
    vanilla: tuple[PartitionProof, ...]


def synthetic_update(proof: RegisteredUpdateProof | int | str, *, rng: np.random.Generator,
                     progress: bool = True) -> SyntheticUpdate:
    """A SnapDeals update of `proof` whose vanilla proofs pass cuzk.snap.vanilla.verify_partition and
    whose witnesses satisfy the circuit (see the module doc); `rng` draws every block value."""
    p = get_update_proof(proof)
    prog = StageTimer(f"synthetic update {p.name}", echo=progress)
    j = block_levels(p)
    bits, r_ar = p.tree_shape[0].bit_length() - 1, level_arities(p.nodes, p.tree_shape)
    blocks = p.nodes >> (bits * j)
    comm_c = fr_to_le(Fr.random(1, rng))[0].tobytes()
    old = Fr.random(blocks, rng)
    data = random_nodes(SHA256, blocks, rng)
    tree_r_old = BlockTree(POSEIDON, r_ar, j, old)
    tree_d = BlockTree(SHA256, binary_arities(p.nodes), bits * j, data)
    comm_r_old = poseidon2_bytes(comm_c, tree_r_old.root)
    prog.mark("TreeR old, TreeD")
    rhos = node_rhos(p, phi(tree_d.root, comm_r_old), np.arange(blocks, dtype=np.int64) << (bits * j))
    tree_r_new = BlockTree(POSEIDON, r_ar, j, Fr.add(old, Fr.mul(fr_from_le(data, "data"), rhos)))
    comm_r_new = poseidon2_bytes(comm_c, tree_r_new.root)
    prog.mark("TreeR new")
    ch = np.array([c for k in range(p.partitions) for c in partition_challenges(p, comm_r_new, k)], np.int64)
    update = UpdatedSector(p, comm_c, comm_r_old, tree_r_old.sparse(ch),
                           tree_d.sparse(ch, full=p.circuit_shape.tree_d_levels), tree_r_new.sparse(ch))
    vanilla = prove_all(update)
    prog.mark("vanilla proofs")
    return SyntheticUpdate(p, comm_c, comm_r_old, tree_d.root, comm_r_new, tuple(public_inputs(update)),
                           tuple(vanilla))
