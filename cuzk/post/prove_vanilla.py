"""Fallback PoSt vanilla proofs from sectors sealed by cuzk (cuzk.porep.seal.Sector), as
rust-filecoin-proofs-api `src/post.rs:113-165` `generate_single_vanilla_proof`: the sector's challenges
(cuzk.post.challenges) and, per challenge, the TreeR (tree_r_last) inclusion proof of that leaf, with
the sector's comm_c, comm_r_last and comm_r.
"""
from __future__ import annotations

from collections.abc import Sequence

from cuzk.porep.seal import Sector
from cuzk.post.challenges import sector_challenges
from cuzk.post.errors import PoStInputError
from cuzk.post.registry import PoStKind, RegisteredPoStProof, get_post_proof
from cuzk.post.vanilla import FallbackPoStSectorProof, MerkleProof, SectorProof


def sector_vanilla_proof(proof: RegisteredPoStProof | int | str, randomness: bytes, sector: Sector,
                         sector_index: int = 0) -> FallbackPoStSectorProof:
    """The vanilla proof of one sealed sector at position `sector_index` over all partitions."""
    p = get_post_proof(proof)
    if sector.proof.sector_size != p.sector_size:
        raise PoStInputError("sector", f"sector {sector.sector_id} is {sector.proof.sector_size} bytes, "
                                       f"{p.name} proves {p.sector_size}")
    tree = sector.tree("tree_r_last")
    paths = tree.paths(sector_challenges(p, randomness, sector.sector_id, sector_index))
    proofs = tuple(MerkleProof.from_merkle_path(path, p.tree_shape) for path in paths)
    return FallbackPoStSectorProof(sector.sector_id, sector.comm_r,
                                   (SectorProof(proofs, sector.comm_c, sector.comm_r_last),))


def vanilla_proofs(proof: RegisteredPoStProof | int | str, randomness: bytes, sectors: Sequence[Sector],
                   partition_index: int = 0) -> list[FallbackPoStSectorProof]:
    """One vanilla proof per sector: a WindowPoSt partition's sectors (sorted by sector id, as curio
    sends them) or WinningPoSt's one challenged sector."""
    p = get_post_proof(proof)
    limit = 1 if p.kind is PoStKind.WINNING else p.sector_count
    if not 1 <= len(sectors) <= limit:
        raise PoStInputError("sectors", f"{len(sectors)} sectors, {p.name} takes 1 to {limit}")
    ids = [s.sector_id for s in sectors]
    if ids != sorted(set(ids)):
        raise PoStInputError("sectors", "sector ids must be distinct and sorted")
    base = partition_index * p.sector_count
    return [sector_vanilla_proof(p, randomness, s, base + i) for i, s in enumerate(sectors)]
