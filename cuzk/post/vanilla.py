"""Fallback PoSt vanilla proofs as curio sends them (../shared/POST_SNAP.md §A6), one per sector.

rust-fil-proofs `filecoin-proofs/src/types/mod.rs:114-123` (FallbackPoStSectorProof),
`storage-proofs-post/src/fallback/vanilla.rs:107-124` (Proof, SectorProof) and
`storage-proofs-core/src/merkle/proof.rs:167-460` (MerkleProof's ProofData: Single / Sub / Top,
InclusionPath = Vec<PathElement{hashes, index}>). Every node is a 32-byte little-endian Fr.
"""
from __future__ import annotations

from dataclasses import dataclass

from cuzk.porep.bincode import ProofData
from cuzk.porep.trees import POSEIDON, MerklePath, level_arities


@dataclass(frozen=True)
class PathElement:
    """One level: the arity - 1 sibling hashes and the running node's position among the children."""

    hashes: tuple[bytes, ...]
    index: int


InclusionPath = tuple[PathElement, ...]


@dataclass(frozen=True)
class MerkleProof:
    """A TreeR inclusion proof; `sub` / `top` are None for a Single (8-0-0) proof, `top` for a Sub one."""

    root: bytes
    leaf: bytes
    base: InclusionPath
    sub: InclusionPath | None = None
    top: InclusionPath | None = None

    @property
    def variant(self) -> ProofData:
        return ProofData.TOP if self.top is not None else ProofData.SUB if self.sub is not None else ProofData.SINGLE

    @property
    def elements(self) -> InclusionPath:
        """Every level, leaves first: base, then sub, then top."""
        return self.base + (self.sub or ()) + (self.top or ())

    def merkle_path(self, leaves: int, shape: tuple[int, int, int]) -> MerklePath:
        """As cuzk.porep.trees' MerklePath over a Poseidon tree of `leaves` leaves and `shape`."""
        levels = self.elements
        return MerklePath(POSEIDON, level_arities(leaves, shape), self.leaf, self.root,
                          tuple(e.hashes for e in levels), tuple(e.index for e in levels))

    @classmethod
    def from_merkle_path(cls, path: MerklePath, shape: tuple[int, int, int]) -> MerkleProof:
        """Split a MerklePath of a base / sub / top tree into the base, sub and top inclusion paths."""
        levels = tuple(PathElement(h, i) for h, i in zip(path.siblings, path.indices))
        tail = (1 if shape[1] else 0) + (1 if shape[2] else 0)
        base, rest = levels[:len(levels) - tail], levels[len(levels) - tail:]
        sub = rest[:1] if shape[1] else None
        top = rest[-1:] if shape[2] else None
        return cls(path.root, path.leaf, base, sub, top)

    def leaf_index(self) -> int:
        """The leaf the path proves: its indices as a mixed-radix number, lowest level first."""
        out = 0
        for e in reversed(self.elements):
            out = out * (len(e.hashes) + 1) + e.index
        return out


@dataclass(frozen=True)
class SectorProof:
    """The inclusion proofs of one sector's challenges, and the sector's comm_c and comm_r_last."""

    inclusion_proofs: tuple[MerkleProof, ...]
    comm_c: bytes
    comm_r_last: bytes


@dataclass(frozen=True)
class FallbackPoStSectorProof:
    """One element of curio's vanilla_proofs: the sector id, comm_r and Proof{sectors} (always one)."""

    sector_id: int
    comm_r: bytes
    sectors: tuple[SectorProof, ...]

    @property
    def sector_proof(self) -> SectorProof:
        return self.sectors[0]
