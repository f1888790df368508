"""SnapDeals vanilla partition proofs, their public inputs and their checks (../shared/POST_SNAP.md §B4,
§B6; rust-fil-proofs `storage-proofs-update/src/vanilla.rs:168-255` (PartitionProof, ChallengeProof),
:485-590 (verify), `circuit.rs:64,85-92` (PublicInputs)).

    PartitionProof = comm_c | apex_leafs (the apex_leaves TreeD nodes at height tree_d_levels under
                     partition k's subtree) | challenge_proofs
    ChallengeProof = proof_r_old (TreeR old) | proof_d_new (TreeD, the full binary path) | proof_r_new
    public inputs  = [k | h_select << partition_bit_len, comm_r_old, comm_d_new, comm_r_new]
                     (2KiB: partition_bit_len = 0 and h_select = 1, so input 0 is 1)
Checks per challenge c: each path's index is c and its leaf hashes to its root; comm_r_old / comm_r_new
= Poseidon-2(comm_c, root_r_old / root_r_new); TreeD's root is comm_d_new; leaf_r_new = leaf_r_old +
leaf_d_new * rho(c_high); TreeD's node at tree_d_levels is apex_leafs[(c >> tree_d_levels) mod apex_leaves]
and the apex tree's root is the path's node apex_bit_len levels higher (sizes: the proof's
circuit_shape, cuzk.snap.witness.SnapShape).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.porep.trees import (POSEIDON, SHA256, MerklePath, MerkleTree, binary_arities, check_path_shape,
                              compute_roots, fr_from_le, level_arities, poseidon2_bytes)
from cuzk.snap.derive import node_rhos, partition_challenges, phi
from cuzk.snap.encode import UpdatedSector
from cuzk.snap.errors import SnapVanillaProofError
from cuzk.snap.registry import RegisteredUpdateProof, get_update_proof


@dataclass(frozen=True)
class ChallengeProof:
    proof_r_old: MerklePath
    proof_d_new: MerklePath
    proof_r_new: MerklePath


@dataclass(frozen=True)
class PartitionProof:
    comm_c: bytes
    apex_leafs: tuple[bytes, ...]
    challenge_proofs: tuple[ChallengeProof, ...]


@dataclass(frozen=True)
class PublicInputs:
    """One partition's public inputs (circuit.rs PublicInputs)."""

    k: int
    comm_r_old: bytes
    comm_d_new: bytes
    comm_r_new: bytes

    def k_and_h_select(self, p: RegisteredUpdateProof) -> int:
        return p.circuit_shape.k_and_h_select(self.k)

    def to_ints(self, p: RegisteredUpdateProof) -> list[int]:
        """The Groth16 public inputs after ONE: [k_and_h_select, comm_r_old, comm_d_new, comm_r_new]."""
        return [self.k_and_h_select(p)] + [int.from_bytes(c, "little") for c in
                                            (self.comm_r_old, self.comm_d_new, self.comm_r_new)]


def public_inputs(update: UpdatedSector) -> list[PublicInputs]:
    """The public inputs of every partition of an encoded sector."""
    return [PublicInputs(k, update.comm_r_old, update.comm_d_new, update.comm_r_new)
            for k in range(update.proof.partitions)]


def prove_partition(update: UpdatedSector, k: int) -> PartitionProof:
    """The vanilla proof of partition k of an encoded sector."""
    p = update.proof
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < p.partitions:
        raise InputError(f"partition must be an int in [0, {p.partitions}), got {k!r}")
    ch = partition_challenges(p, update.comm_r_new, k)
    apex = update.tree_d_new.values[p.circuit_shape.tree_d_levels][k * p.apex_leaves:(k + 1) * p.apex_leaves]
    proofs = zip(update.tree_r_old.paths(ch), update.tree_d_new.paths(ch), update.tree_r_new.paths(ch))
    return PartitionProof(update.comm_c, tuple(a.tobytes() for a in apex),
                          tuple(ChallengeProof(*three) for three in proofs))


def prove_all(update: UpdatedSector) -> list[PartitionProof]:
    return [prove_partition(update, k) for k in range(update.proof.partitions)]


def _shape_errors(p: RegisteredUpdateProof, k: int, proof: PartitionProof) -> None:
    err = lambda n, field, why: SnapVanillaProofError(k, n, field, why)  # noqa: E731
    if not isinstance(proof, PartitionProof):
        raise err(None, "proof", f"expected a PartitionProof, got {type(proof).__name__}")
    if len(proof.apex_leafs) != p.apex_leaves or any(not isinstance(a, bytes) or len(a) != 32
                                                    for a in proof.apex_leafs):
        raise err(None, "apex_leafs", f"expected {p.apex_leaves} nodes of 32 bytes")
    if len(proof.challenge_proofs) != p.challenges:
        raise err(None, "challenge_proofs", f"{len(proof.challenge_proofs)} proofs, expected {p.challenges}")
    r_ar, d_ar = level_arities(p.nodes, p.tree_shape), binary_arities(p.nodes)
    for n, cp in enumerate(proof.challenge_proofs):
        for field, kind, arities in (("proof_r_old", POSEIDON, r_ar), ("proof_d_new", SHA256, d_ar),
                                     ("proof_r_new", POSEIDON, r_ar)):
            path = getattr(cp, field)
            if not isinstance(path, MerklePath) or path.kind != kind or path.arities != arities:
                raise err(n, field, f"expected a {kind} path of arities {arities}")
            try:
                check_path_shape(path)
            except InputError as e:
                raise err(n, field, str(e)) from None


def _fr(k: int, n: int | None, field: str, nodes: list[bytes]) -> np.ndarray:
    try:
        return fr_from_le(np.frombuffer(b"".join(nodes), np.uint8), field)
    except InputError as e:
        raise SnapVanillaProofError(k, n, field, str(e)) from None


def verify_partition(proof_id: RegisteredUpdateProof | int | str, public: PublicInputs,
                     proof: PartitionProof) -> None:
    """Check partition `public.k`'s vanilla proof (see the module docstring); SnapVanillaProofError names
    the partition, the challenge and the field at fault."""
    p, k = get_update_proof(proof_id), public.k
    _shape_errors(p, k, proof)
    cps = proof.challenge_proofs
    err = lambda n, field, why: SnapVanillaProofError(k, n, field, why)  # noqa: E731
    ch = partition_challenges(p, public.comm_r_new, k)
    fields = ("proof_r_old", "proof_d_new", "proof_r_new")
    for n, (c, cp) in enumerate(zip(ch, cps)):
        for field in fields:
            if getattr(cp, field).node_index != c:
                raise err(n, f"{field}.path", f"proves node {getattr(cp, field).node_index}, the challenge is {c}")
    for field in fields:
        paths = [getattr(cp, field) for cp in cps]
        for n, (root, q) in enumerate(zip(_roots(k, field, paths), paths)):
            if root != q.root:
                raise err(n, field, "the path does not hash to its root")
    for n, cp in enumerate(cps):
        for field, comm in (("proof_r_old", public.comm_r_old), ("proof_r_new", public.comm_r_new)):
            if poseidon2_bytes(proof.comm_c, getattr(cp, field).root) != comm:
                raise err(n, f"{field}.root", "Poseidon-2(comm_c, root) is not the public comm_r")
        if cp.proof_d_new.root != public.comm_d_new:
            raise err(n, "proof_d_new.root", "is not comm_d_new")
    old, new = (_fr(k, None, f + ".leaf", [getattr(cp, f).leaf for cp in cps]) for f in fields[::2])
    data = _fr(k, None, "proof_d_new.leaf", [cp.proof_d_new.leaf for cp in cps])
    want = Fr.add(old, Fr.mul(data, node_rhos(p, phi(public.comm_d_new, public.comm_r_old), ch)))
    for n in np.flatnonzero(np.any(want != new, axis=1)):
        raise err(int(n), "proof_r_new.leaf", "is not leaf_r_old + leaf_d_new * rho")
    _check_apex(p, k, proof, ch)


def _roots(k: int, field: str, paths: list[MerklePath]) -> list[bytes]:
    """compute_roots, a non-canonical Poseidon node refused as SnapVanillaProofError naming `field`."""
    try:
        return compute_roots(paths)
    except InputError as e:
        raise SnapVanillaProofError(k, None, field, str(e)) from None


def _truncated(path: MerklePath, height: int) -> MerklePath:
    return replace(path, arities=path.arities[:height], siblings=path.siblings[:height], indices=path.indices[:height])


def _check_apex(p: RegisteredUpdateProof, k: int, proof: PartitionProof, ch: list[int]) -> None:
    paths = [cp.proof_d_new for cp in proof.challenge_proofs]
    height, apex_bits = p.circuit_shape.tree_d_levels, p.circuit_shape.apex_bit_len
    at_apex = _roots(k, "proof_d_new", [_truncated(q, height) for q in paths])
    top = _roots(k, "proof_d_new", [_truncated(q, height + apex_bits) for q in paths])
    leaves = np.frombuffer(b"".join(proof.apex_leafs), np.uint8).reshape(-1, 32)
    apex_root = MerkleTree.build(SHA256, leaves, binary_arities(p.apex_leaves)).root
    for n, (c, node, root) in enumerate(zip(ch, at_apex, top)):
        slot = (c >> height) % p.apex_leaves
        if node != proof.apex_leafs[slot]:
            raise SnapVanillaProofError(k, n, f"apex_leafs[{slot}]", "is not the TreeD path's node at the apex")
        if root != apex_root:
            raise SnapVanillaProofError(k, n, "apex_leafs", "the apex tree's root is not the TreeD path's node above")
