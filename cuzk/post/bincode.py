"""bincode 1.3 (legacy defaults) reader and writer of FallbackPoStSectorProof (../shared/POST_SNAP.md §A6).

Little-endian fixed-width integers; a Vec is a u64 length then its elements; an enum a u32 variant then
its fields; [u8; 32] is 32 raw bytes. Layout:
    FallbackPoStSectorProof = sector_id u64 | comm_r [32] | sectors Vec<SectorProof> (exactly 1)
    SectorProof   = inclusion_proofs Vec<MerkleProof> | comm_c [32] | comm_r_last [32]
    MerkleProof   = u32 variant; 0 Single: root | leaf | path; 1 Sub: base | sub | root | leaf;
                    2 Top: base | sub | top | root | leaf
    InclusionPath = Vec<PathElement>; PathElement = hashes Vec<[32]> | index u64
The reader checks the shape the registered proof fixes (variant, path lengths, arity - 1 hashes, index
< arity, challenge count) as it goes, so a length is refused before anything is allocated for it.
"""
from __future__ import annotations

import struct

from cuzk.porep.trees import level_arities
from cuzk.post.errors import PoStVanillaFormatError
from cuzk.post.registry import RegisteredPoStProof, get_post_proof
from cuzk.post.vanilla import (FallbackPoStSectorProof, InclusionPath, MerkleProof, PathElement, ProofData,
                               SectorProof)


class _Reader:
    def __init__(self, data: bytes, sector: int | None) -> None:
        self.data, self.pos, self.sector = data, 0, sector

    def error(self, reason: str, offset: int | None = None) -> PoStVanillaFormatError:
        return PoStVanillaFormatError(self.sector, self.pos if offset is None else offset, reason)

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise self.error(f"truncated: {what} needs {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self, what: str) -> int:
        return struct.unpack("<I", self.take(4, what))[0]

    def u64(self, what: str) -> int:
        return struct.unpack("<Q", self.take(8, what))[0]

    def length(self, what: str, want: int) -> None:
        at = self.pos
        got = self.u64(f"the length of {what}")
        if got != want:
            raise self.error(f"{what} has {got} elements, expected {want}", at)

    def path(self, what: str, arities: tuple[int, ...]) -> InclusionPath:
        self.length(what, len(arities))
        out = []
        for level, a in enumerate(arities):
            self.length(f"{what} level {level} hashes", a - 1)
            hashes = tuple(self.take(32, f"{what} level {level} hash") for _ in range(a - 1))
            at = self.pos
            index = self.u64(f"{what} level {level} index")
            if index >= a:
                raise self.error(f"{what} level {level} index {index} is not below the arity {a}", at)
            out.append(PathElement(hashes, index))
        return tuple(out)


def read_sector_proof(data: bytes, proof: RegisteredPoStProof | int | str,
                      sector: int | None = None) -> FallbackPoStSectorProof:
    """Decode one bincode FallbackPoStSectorProof of registered proof `proof`; `sector` (its position in
    the request) is named in errors. PoStVanillaFormatError names the byte offset of any fault."""
    p = get_post_proof(proof)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise PoStVanillaFormatError(sector, 0, f"expected bytes, got {type(data).__name__}")
    r = _Reader(bytes(data), sector)
    arities = level_arities(p.leaves, p.tree_shape)
    variant = ProofData.of_shape(p.tree_shape)
    tail = (variant >= ProofData.SUB) + (variant >= ProofData.TOP)
    base_ar, rest_ar = arities[:len(arities) - tail], arities[len(arities) - tail:]
    sector_id = r.u64("sector_id")
    comm_r = r.take(32, "comm_r")
    r.length("vanilla_proof.sectors", 1)
    r.length("inclusion_proofs", p.vanilla_challenges)
    proofs = []
    for n in range(p.vanilla_challenges):
        at = r.pos
        got = r.u32(f"inclusion proof {n} variant")
        if got != variant:
            raise r.error(f"inclusion proof {n} variant {got}, expected {int(variant)} ({variant.name.title()}) "
                          f"for a {'-'.join(map(str, p.tree_shape))} tree", at)
        if variant is ProofData.SINGLE:
            root, leaf = r.take(32, "root"), r.take(32, "leaf")
            proofs.append(MerkleProof(root, leaf, r.path(f"inclusion proof {n} path", base_ar)))
            continue
        base = r.path(f"inclusion proof {n} base_proof", base_ar)
        sub = r.path(f"inclusion proof {n} sub_proof", rest_ar[:1])
        top = r.path(f"inclusion proof {n} top_proof", rest_ar[1:]) if variant is ProofData.TOP else None
        root, leaf = r.take(32, "root"), r.take(32, "leaf")
        proofs.append(MerkleProof(root, leaf, base, sub, top))
    comm_c, comm_r_last = r.take(32, "comm_c"), r.take(32, "comm_r_last")
    if r.pos != len(r.data):
        raise r.error(f"{len(r.data) - r.pos} bytes after the end of the proof")
    return FallbackPoStSectorProof(sector_id, comm_r, (SectorProof(tuple(proofs), comm_c, comm_r_last),))


def read_sector_proofs(items: list[bytes], proof: RegisteredPoStProof | int | str) -> list[FallbackPoStSectorProof]:
    """Decode curio's vanilla_proofs (one bincode element per sector)."""
    return [read_sector_proof(data, proof, i) for i, data in enumerate(items)]


def _vec(n: int) -> bytes:
    return struct.pack("<Q", n)


def _path(path: InclusionPath) -> bytes:
    return _vec(len(path)) + b"".join(_vec(len(e.hashes)) + b"".join(e.hashes) + struct.pack("<Q", e.index)
                                      for e in path)


def write_merkle_proof(m: MerkleProof) -> bytes:
    head = struct.pack("<I", m.variant)
    if m.variant is ProofData.SINGLE:
        return head + m.root + m.leaf + _path(m.base)
    return head + _path(m.base) + _path(m.sub or ()) + (_path(m.top) if m.top is not None else b"") + m.root + m.leaf


def write_sector_proof(sp: FallbackPoStSectorProof) -> bytes:
    """The bincode bytes of a FallbackPoStSectorProof (as rust's bincode::serialize writes them)."""
    out = [struct.pack("<Q", sp.sector_id), sp.comm_r, _vec(len(sp.sectors))]
    for s in sp.sectors:
        out += [_vec(len(s.inclusion_proofs)), *map(write_merkle_proof, s.inclusion_proofs), s.comm_c, s.comm_r_last]
    return b"".join(out)
