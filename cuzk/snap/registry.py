"""Registered SnapDeals (EmptySectorUpdate) proofs and their constants (../shared/POST_SNAP.md §B1, §B7).

- ids: Go/FFI RegisteredUpdateProof 0..4 = StackedDrg{2KiB,8MiB,512MiB,32GiB,64GiB}V1 (filecoin-ffi;
  rust-filecoin-proofs-api `src/registry.rs:119-126`, internally API V1_1).
- constants (rust-fil-proofs `storage-proofs-update/src/constants.rs`): partition_count :65,
  challenge_count :78, apex_leaf_count :126, hs :98, h_default = hs[3], h_select = 1 << (first index
  of h in hs) :115. TreeD is binary SHA256; TreeR old / new have the PoRep tree_r_last shape.
- the bit sizes these fix (challenge, partition, random and apex bits, challenges per digest, h_select):
  circuit_shape, a cuzk.snap.witness.SnapShape.
- parameter stem (`vanilla.rs:78-87`, parameter_cache.rs): v28-empty-sector-update-merkletree-
  poseidon_hasher-{base}-{sub}-{top}-sha256("empty_sector_update::PublicParams{ sector_nodes: N }").
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from cuzk.porep.registry import NODE_SIZE, SECTOR_SIZES, lookup
from cuzk.snap.errors import UnknownUpdateProofError
from cuzk.snap.witness import SnapShape
from cuzk.util.jsonio import quote

PARAMS_VERSION = 28
_SMALL_HS, _HS = (1,) * 6, (7, 8, 9, 10, 11, 12)
# sector size -> (partitions, challenges per partition, apex leaves per partition, hs)   (§B1)
_CONSTANTS = {2 << 10: (1, 10, 8, _SMALL_HS), 8 << 20: (4, 10, 128, _HS), 512 << 20: (16, 86, 128, _HS),
              32 << 30: (16, 86, 128, _HS), 64 << 30: (16, 86, 128, _HS)}


@dataclass(frozen=True)
class RegisteredUpdateProof:
    """One registered EmptySectorUpdate proof and what its sector size fixes."""

    id: int
    name: str
    sector_size: int
    tree_shape: tuple[int, int, int]
    partitions: int
    challenges: int  # per partition
    apex_leaves: int  # per partition
    hs: tuple[int, ...]

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def h(self) -> int:
        """h_default = hs[3]: how many high bits of a challenge select its rho."""
        return self.hs[3]

    @functools.cached_property
    def circuit_shape(self) -> SnapShape:
        """The partition circuit's shape (cuzk.snap.witness.SnapShape), which derives its bit sizes."""
        return SnapShape(self.nodes, self.tree_shape, self.partitions, self.challenges, self.apex_leaves, self.hs,
                         self.h)

    @property
    def identifier(self) -> str:
        return f"empty_sector_update::PublicParams{{ sector_nodes: {self.nodes} }}"

    @property
    def params_stem(self) -> str:
        """The official parameter / verifying-key file name without .params / .vk."""
        base, sub, top = self.tree_shape
        digest = hashlib.sha256(self.identifier.encode()).hexdigest()
        return f"v{PARAMS_VERSION}-empty-sector-update-merkletree-poseidon_hasher-{base}-{sub}-{top}-{digest}"


def _registry() -> dict[int, RegisteredUpdateProof]:
    out = {}
    for k, size in enumerate(SECTOR_SIZES.values()):
        partitions, challenges, apex, hs = _CONSTANTS[size.size]
        out[k] = RegisteredUpdateProof(k, f"StackedDrg{size.label}V1", size.size, size.tree_shape,
                                       partitions, challenges, apex, hs)
    return out


UPDATE_PROOFS: dict[int, RegisteredUpdateProof] = _registry()
BY_NAME: dict[str, RegisteredUpdateProof] = {p.name: p for p in UPDATE_PROOFS.values()}
BY_SIZE: dict[int, RegisteredUpdateProof] = {p.sector_size: p for p in UPDATE_PROOFS.values()}


def get_update_proof(key: int | str | RegisteredUpdateProof) -> RegisteredUpdateProof:
    """A registered update proof by id (0..4), name ("StackedDrg32GiBV1") or passed through."""
    return lookup(key, RegisteredUpdateProof, UPDATE_PROOFS, BY_NAME, "registered update proof",
                  UnknownUpdateProofError)


def update_proof_for_size(sector_size: int) -> RegisteredUpdateProof:
    """The update proof of a sector size in bytes (UnknownUpdateProofError for an unsupported one)."""
    found = BY_SIZE.get(sector_size) if isinstance(sector_size, int) and not isinstance(sector_size, bool) else None
    if found is None:
        raise UnknownUpdateProofError(f"no update proof is registered for a sector of {quote(sector_size)} bytes")
    return found
