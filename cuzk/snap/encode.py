"""SnapDeals encoding of new data into a committed-capacity sector sealed by cuzk (../shared/POST_SNAP.md
§B3; rust-fil-proofs `storage-proofs-update/src/vanilla.rs` encode / decode, :629-650):

    tree_d_new  = binary SHA256 tree over the new data           comm_d_new = its root
    phi         = Poseidon_GR(comm_d_new, comm_r_old)
    replica_new[n] = replica_old[n] + data[n] * rho(n >> (log2(nodes) - h))     (in Fr, node by node)
    tree_r_new  = Poseidon tree of the TreeR shape over replica_new  comm_r_last_new = its root
    comm_r_new  = Poseidon-2(comm_c, comm_r_last_new)            (comm_c is the sector's, unchanged)
    decode: data[n] = (replica_new[n] - replica_old[n]) / rho(...)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.porep.seal import Sector
from cuzk.porep.trees import (POSEIDON, SHA256, MerkleTree, binary_arities, fr_from_le, fr_to_le, level_arities,
                              poseidon2_bytes)
from cuzk.snap.derive import high_shift, node_rhos, phi, rho_table
from cuzk.snap.registry import RegisteredUpdateProof, update_proof_for_size


@dataclass
class UpdatedSector:
    """An encoded sector in memory: the old sector's TreeR (the sector key), TreeD over the new data,
    TreeR over the new replica, and the commitments the proofs bind."""

    proof: RegisteredUpdateProof
    comm_c: bytes
    comm_r_old: bytes
    tree_r_old: MerkleTree
    tree_d_new: MerkleTree
    tree_r_new: MerkleTree

    @property
    def comm_d_new(self) -> bytes:
        return self.tree_d_new.root

    @property
    def comm_r_last_new(self) -> bytes:
        return self.tree_r_new.root

    @property
    def comm_r_new(self) -> bytes:
        return poseidon2_bytes(self.comm_c, self.comm_r_last_new)

    @property
    def data(self) -> bytes:
        return self.tree_d_new.values[0].tobytes()

    @property
    def replica(self) -> bytes:
        return fr_to_le(self.tree_r_new.values[0]).tobytes()


def _nodes(value: bytes | bytearray | memoryview | np.ndarray, nodes: int, what: str) -> np.ndarray:
    """`what` as (nodes, 32) uint8 (InputError for another type or length)."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint8:
        raw = value.reshape(-1)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(bytes(value), np.uint8)
    else:
        raise InputError(f"{what} must be bytes or a uint8 array, got {type(value).__name__}")
    if raw.size != nodes * 32:
        raise InputError(f"{what} must be exactly {nodes * 32:,} bytes (the sector size), got {raw.size:,}")
    return np.ascontiguousarray(raw).reshape(nodes, 32)


def encode(sector: Sector, data: bytes | np.ndarray) -> UpdatedSector:
    """Encode `data` (the sector size; every 32-byte node a canonical Fr, NonCanonicalError naming the
    node otherwise) into the sealed CC `sector` (checked first: cuzk.porep.seal.Sector.check)."""
    p = update_proof_for_size(sector.proof.sector_size)
    leaves = _nodes(data, p.nodes, "new sector data")
    data_fr = fr_from_le(leaves, "new data node")
    sector.check()
    tree_r_old = sector.tree("tree_r_last")
    tree_d = MerkleTree.build(SHA256, leaves, binary_arities(p.nodes))
    rhos = node_rhos(p, phi(tree_d.root, sector.comm_r))
    replica = Fr.add(tree_r_old.values[0], Fr.mul(data_fr, rhos))
    tree_r_new = MerkleTree.build(POSEIDON, replica, level_arities(p.nodes, p.tree_shape))
    return UpdatedSector(p, sector.comm_c, sector.comm_r, tree_r_old, tree_d, tree_r_new)


def decode(sector: Sector, replica_new: bytes | np.ndarray, comm_d_new: bytes) -> bytes:
    """The data encoded into `sector` as `replica_new` under `comm_d_new`: (new - old) / rho, node by
    node. The result is not checked against comm_d_new (a wrong comm_d_new gives wrong data)."""
    p = update_proof_for_size(sector.proof.sector_size)
    new = fr_from_le(_nodes(replica_new, p.nodes, "new replica"), "new replica node")
    inv = Fr.batch_inv(rho_table(p, phi(comm_d_new, sector.comm_r)))
    old = sector.tree("tree_r_last").values[0]
    data = Fr.mul(Fr.sub(new, old), inv[np.arange(p.nodes) >> high_shift(p)])
    return fr_to_le(data).tobytes()
