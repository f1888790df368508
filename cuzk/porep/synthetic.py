"""Synthetic C1: vanilla proofs that satisfy the PoRep circuit for any sector shape (32GiB, 64GiB)
without sealing a sector. Not to be confused with Filecoin's SyntheticPoRep feature.

The sector is a CC sector (all-zero data), so tree_d and comm_d are fixed before the challenges are
known: every tree_d path is the chain of zero-subtree roots. Then replica_id, the interactive
challenges and their parents follow; parent columns get random labels, each challenged node's labels
are computed from its parents layer by layer (exactly as SDR would, given those parent labels),
replica node = last label (data is zero), and tree_c / tree_r_last are sparse trees holding only the
touched leaves (random untouched subtrees), so every path reaches one comm_c / comm_r_last, and
comm_r = Poseidon-2(comm_c, comm_r_last). The result verifies with the vanilla verifier and is a valid
witness for the circuit, but proves nothing about stored data. Interactive challenges only: synthetic-
and non-interactive PoRep derive challenges from comm_r, which would depend on the challenges.
"""
from __future__ import annotations

import hashlib

import numpy as np

from cuzk.errors import InputError
from cuzk.porep.c1 import C1Output
from cuzk.porep.challenges import PoRepConfig, partition_challenges
from cuzk.porep.graph import SdrGraph
from cuzk.porep.labels import expand_label_parents, label_node, replica_id as make_replica_id
from cuzk.porep.registry import BASE_DEGREE, RegisteredProof, get_proof
from cuzk.porep.trees import (POSEIDON, SHA256, MerklePath, MerkleTree, binary_arities, fr_from_le,
                              level_arities, poseidon2_bytes, random_nodes, tree_r_shape)
from cuzk.porep.vanilla import build_proofs, column_hashes
from cuzk.util.progress import StageTimer


class ZeroTree:
    """tree_d of an all-zero sector: level l is the root of a zero subtree of 2**l leaves everywhere."""

    def __init__(self, nodes: int) -> None:
        self.arities = binary_arities(nodes)
        z = [bytes(32)]
        for _ in self.arities:
            h = bytearray(hashlib.sha256(z[-1] + z[-1]).digest())
            h[31] &= 0x3F
            z.append(bytes(h))
        self.levels = z

    @property
    def root(self) -> bytes:
        return self.levels[-1]

    def paths(self, nodes) -> list[MerklePath]:
        return [MerklePath(SHA256, self.arities, self.levels[0], self.root,
                           tuple((z,) for z in self.levels[:-1]),
                           tuple((int(n) >> b) & 1 for b in range(len(self.arities)))) for n in nodes]


def synthetic_c1(proof: RegisteredProof | int | str, *, prover_id: bytes, sector_id: int, ticket: bytes,
                 seed: bytes, rng: np.random.Generator | None = None, progress: bool = True) -> C1Output:
    """A C1 output for `proof` whose vanilla proofs are valid for the circuit (see the module doc)."""
    p = get_proof(proof)
    config = PoRepConfig.from_proof(p)
    if config.feature is not None:
        raise InputError(f"synthetic C1 needs interactive challenges; {p.name} derives them from comm_r")
    rng = rng or np.random.default_rng()
    prog = StageTimer(f"synthetic C1 {p.name}", echo=progress)
    tree_d = ZeroTree(p.nodes)
    rid = make_replica_id(prover_id, sector_id, ticket, tree_d.root, p.porep_id)
    graph = SdrGraph.for_config(config)
    challenges = [partition_challenges(config, rid, seed, None, k) for k in range(config.partitions)]
    flat = sorted({c for part in challenges for c in part})
    parents = {c: graph.parents_of(c) for c in flat}
    prog.mark("challenges and parents")

    touched = sorted(set(flat).union(*map(set, parents.values())))
    slot = {n: i for i, n in enumerate(touched)}
    cols = np.empty((len(touched), p.layers, 32), np.uint8)
    for layer in range(p.layers):
        cols[:, layer] = random_nodes(SHA256, len(touched), rng)  # label-shaped: top two bits clear
    for layer in range(1, p.layers + 1):
        for c in flat:  # ascending: DRG parents (< c) that are challenged are already relabelled
            par = parents[c]
            base = [cols[slot[q], layer - 1].tobytes() for q in par[:BASE_DEGREE]]
            exp = [cols[slot[q], layer - 2].tobytes() for q in par[BASE_DEGREE:]] if layer > 1 else []
            cols[slot[c], layer - 1] = np.frombuffer(
                label_node(rid, layer, c, expand_label_parents(layer, base + exp)), np.uint8)
    prog.mark("labels")

    arities = level_arities(p.nodes, tree_r_shape(p.nodes))
    tree_c = MerkleTree.sparse(POSEIDON, np.array(touched), column_hashes(cols), arities, rng)
    prog.mark("tree_c")
    ch_idx = np.array([slot[c] for c in flat])
    tree_r = MerkleTree.sparse(POSEIDON, np.array(flat), fr_from_le(cols[ch_idx, -1], "label"), arities, rng)
    prog.mark("tree_r_last")
    comm_r = poseidon2_bytes(tree_c.root, tree_r.root)
    columns = lambda nodes: cols[[slot[int(n)] for n in nodes]]  # noqa: E731
    vanilla = [build_proofs(part, [parents[c] for c in part], columns, tree_d, tree_c, tree_r)
               for part in challenges]
    prog.mark("vanilla proofs")
    return C1Output(p, vanilla, comm_r, tree_d.root, rid, bytes(seed), bytes(ticket))
