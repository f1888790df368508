"""Host-side SnapDeals derivations (../shared/POST_SNAP.md §B3; rust-fil-proofs
`storage-proofs-update/src/challenges.rs:10-140`, `vanilla.rs:629-650`, `constants.rs:17-22`).

    Poseidon_GR(a, b) = neptune Poseidon arity 2, Strength::Standard, domain tag
                        HashType::Custom(Arbitrary(1)) = 2^40 (the Merkle-tree variant's constants,
                        only the tag differs)
    phi       = Poseidon_GR(comm_d_new, comm_r_old)            (comm_d first)
    rho(high) = Poseidon_GR(phi, high),  high = c >> (log2(nodes) - h)
    digest(d) = Poseidon_GR(comm_r_new, d),  d = k * digests + j
    challenge i of a digest: c = ((digest >> (i * rb)) & (2^rb - 1)) | (k << rb)
(digests per partition, rb = random bits: the proof's circuit_shape, cuzk.snap.witness.SnapShape).
Field elements are (n, 4) Montgomery limbs (cuzk.ff.fields.Fr); commitments 32-byte LE reprs.
"""
from __future__ import annotations

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.hashes.poseidon import hash_many
from cuzk.porep.trees import fr_from_le
from cuzk.snap.registry import RegisteredUpdateProof
from cuzk.util.jsonio import quote

GR_TAG = 1 << 40


def poseidon_gr(pairs: np.ndarray) -> np.ndarray:
    """Poseidon_GR of n pairs: (n, 2, 4) Montgomery Fr -> (n, 4)."""
    return hash_many(np.ascontiguousarray(pairs, dtype=np.uint64), 2, GR_TAG)


def _pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    first = np.broadcast_to(first.reshape(-1, 4), second.shape)
    return np.stack([first, second], axis=1)


def commitment_fr(value: bytes, what: str) -> np.ndarray:
    """A 32-byte commitment as (1, 4) Montgomery Fr (NonCanonicalError naming `what` if >= r)."""
    if not isinstance(value, (bytes, bytearray)) or len(value) != 32:
        raise InputError(f"{what} must be 32 bytes, got {quote(value)}")
    return fr_from_le(np.frombuffer(bytes(value), np.uint8), what)


def phi(comm_d_new: bytes, comm_r_old: bytes) -> np.ndarray:
    """phi = Poseidon_GR(comm_d_new, comm_r_old), (1, 4)."""
    return poseidon_gr(_pairs(commitment_fr(comm_d_new, "comm_d_new"), commitment_fr(comm_r_old, "comm_r_old")))


def high_shift(p: RegisteredUpdateProof) -> int:
    """c >> high_shift(p) is a node's h high bits."""
    return p.circuit_shape.challenge_bit_len - p.h


def rho_table(p: RegisteredUpdateProof, phi_value: np.ndarray) -> np.ndarray:
    """rho(high) for every high in [0, 2^h): (2^h, 4)."""
    return poseidon_gr(_pairs(phi_value, Fr.from_ints(range(1 << p.h))))


def node_rhos(p: RegisteredUpdateProof, phi_value: np.ndarray, nodes: np.ndarray | None = None) -> np.ndarray:
    """rho of each node index in `nodes` (every node of the sector when None): (n, 4)."""
    nodes = np.arange(p.nodes, dtype=np.int64) if nodes is None else np.asarray(nodes, dtype=np.int64)
    return rho_table(p, phi_value)[nodes >> high_shift(p)]


def partition_challenges(p: RegisteredUpdateProof, comm_r_new: bytes, k: int) -> list[int]:
    """The p.challenges challenged node indices of partition k, in order."""
    shape = p.circuit_shape
    first = k * shape.digests
    digests = poseidon_gr(_pairs(commitment_fr(comm_r_new, "comm_r_new"),
                                 Fr.from_ints(range(first, first + shape.digests))))
    rb, mask, per = shape.random_bits, (1 << shape.random_bits) - 1, shape.challenges_per_digest
    out = [((d >> (i * rb)) & mask) | (k << rb) for d in Fr.to_ints(digests) for i in range(per)]
    return out[:p.challenges]
