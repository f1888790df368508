"""bincode 1.3 (legacy defaults) reader and writer of FallbackPoStSectorProof (../shared/POST_SNAP.md §A6).

Little-endian fixed-width integers; a Vec is a u64 length then its elements; [u8; 32] is 32 raw bytes.
Layout (MerkleProof and its InclusionPaths as cuzk.porep.bincode reads and writes them):
    FallbackPoStSectorProof = sector_id u64 | comm_r [32] | sectors Vec<SectorProof> (exactly 1)
    SectorProof   = inclusion_proofs Vec<MerkleProof> | comm_c [32] | comm_r_last [32]
The reader checks the shape the registered proof fixes (variant, path lengths, arity - 1 hashes, index
< arity, challenge count) as it goes, so a length is refused before anything is allocated for it.
"""
from __future__ import annotations

from cuzk.porep.bincode import Cursor, ProofData, pack_u64, write_merkle_proof
from cuzk.porep.trees import POSEIDON, level_arities
from cuzk.post.errors import PoStVanillaFormatError
from cuzk.post.registry import RegisteredPoStProof, get_post_proof
from cuzk.post.vanilla import FallbackPoStSectorProof, MerkleProof, SectorProof


def read_sector_proof(data: bytes, proof: RegisteredPoStProof | int | str,
                      sector: int | None = None) -> FallbackPoStSectorProof:
    """Decode one bincode FallbackPoStSectorProof of registered proof `proof`; `sector` (its position in
    the request) is named in errors. PoStVanillaFormatError names the byte offset of any fault."""
    p = get_post_proof(proof)
    cur = Cursor(data, lambda at, reason: PoStVanillaFormatError(sector, at, reason))
    arities = level_arities(p.leaves, p.tree_shape)
    variant = ProofData.of_shape(p.tree_shape)
    sector_id = cur.uint(8, "sector_id")
    comm_r = cur.take(32, "comm_r")
    cur.uint(8, "vanilla_proof.sectors length", equal=1)
    cur.uint(8, "inclusion_proofs length", equal=p.vanilla_challenges)
    proofs = tuple(MerkleProof.from_merkle_path(
        cur.merkle_proof(f"inclusion proof {n}", POSEIDON, arities, variant), p.tree_shape)
        for n in range(p.vanilla_challenges))
    comm_c, comm_r_last = cur.take(32, "comm_c"), cur.take(32, "comm_r_last")
    cur.finish()
    return FallbackPoStSectorProof(sector_id, comm_r, (SectorProof(proofs, comm_c, comm_r_last),))


def read_sector_proofs(items: list[bytes], proof: RegisteredPoStProof | int | str) -> list[FallbackPoStSectorProof]:
    """Decode curio's vanilla_proofs (one bincode element per sector)."""
    return [read_sector_proof(data, proof, i) for i, data in enumerate(items)]


def _write_inclusion_proof(m: MerkleProof) -> bytes:
    levels = m.elements
    return write_merkle_proof(m.variant, m.root, m.leaf, [e.hashes for e in levels], [e.index for e in levels])


def write_sector_proof(sp: FallbackPoStSectorProof) -> bytes:
    """The bincode bytes of a FallbackPoStSectorProof (as rust's bincode::serialize writes them)."""
    out = [pack_u64(sp.sector_id), sp.comm_r, pack_u64(len(sp.sectors))]
    for s in sp.sectors:
        out += [pack_u64(len(s.inclusion_proofs)), *map(_write_inclusion_proof, s.inclusion_proofs),
                s.comm_c, s.comm_r_last]
    return b"".join(out)
