"""bincode 1.3 (legacy defaults) as rust-fil-proofs serializes its vanilla proofs: a byte cursor whose
refusals name the field and byte offset, and the MerkleProof encoding PoSt and SnapDeals proofs share
(rust-fil-proofs `storage-proofs-core/src/merkle/proof.rs` ProofData, InclusionPath, PathElement).

Little-endian fixed-width integers; a Vec is a u64 length then its elements; an enum a u32 variant then
its fields; [u8; 32] is 32 raw bytes. Layout:
    MerkleProof   = u32 variant; 0 Single: root | leaf | path; 1 Sub: base_proof | sub_proof | root | leaf;
                    2 Top: base_proof | sub_proof | top_proof | root | leaf
                    (variant by tree shape: 8-0-0, 8-8-0, 8-8-2; sub_proof and top_proof one level each)
    InclusionPath = Vec<PathElement>; PathElement = hashes Vec<[32]> | index u64
A reader checks the shape its caller expects (variant, path lengths, arity - 1 hashes, index < arity) as
it goes, so a length is refused before anything is allocated for it.
"""
from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Sequence

from cuzk.errors import InputError
from cuzk.porep.trees import MerklePath

# (byte offset, reason) -> the caller's typed error, which names what the bytes are (sector, partition)
Refusal = Callable[[int, str], InputError]


class ProofData(enum.IntEnum):
    """MerkleProof's enum variant (bincode u32), which is also the number of one-level paths (sub_proof,
    top_proof) after base_proof: by tree shape 8-0-0, 8-8-0, 8-8-2."""

    SINGLE = 0
    SUB = 1
    TOP = 2

    @classmethod
    def of_shape(cls, shape: tuple[int, int, int]) -> ProofData:
        return cls.TOP if shape[2] else cls.SUB if shape[1] else cls.SINGLE


def pack_u64(n: int) -> bytes:
    """A u64 (a Vec's length, an index, an id) as bincode writes it."""
    return struct.pack("<Q", n)


class Cursor:
    """A read position in one bincode value; every refusal is `refuse(offset, reason)`, the reason naming
    the field. Refuses anything but bytes-like `data` at offset 0."""

    def __init__(self, data: object, refuse: Refusal) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise refuse(0, f"expected bytes, got {type(data).__name__}")
        self.data, self.pos, self.refuse = bytes(data), 0, refuse

    def error(self, reason: str, at: int | None = None) -> InputError:
        """The refusal at byte `at` (default: the read position)."""
        return self.refuse(self.pos if at is None else at, reason)

    def take(self, n: int, what: str) -> bytes:
        """The next `n` bytes, field `what`."""
        if self.pos + n > len(self.data):
            raise self.error(f"truncated: {what} needs {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint(self, size: int, what: str, equal: int | None = None, below: int | None = None) -> int:
        """The next little-endian unsigned integer of `size` bytes, refused (at its offset) unless it
        equals `equal` / is below `below` where given."""
        at = self.pos
        value = int.from_bytes(self.take(size, what), "little")
        if equal is not None and value != equal:
            raise self.error(f"{what} is {value}, expected {equal}", at)
        if below is not None and value >= below:
            raise self.error(f"{what} is {value}, not below {below}", at)
        return value

    def finish(self) -> None:
        """Refuse bytes after the end of the value."""
        if self.pos != len(self.data):
            raise self.error(f"{len(self.data) - self.pos} bytes after the end of the proof")

    def path(self, what: str, arities: tuple[int, ...]) -> tuple[list[tuple[bytes, ...]], list[int]]:
        """An InclusionPath of one level per arity: each level's sibling hashes and index."""
        self.uint(8, f"{what} length", equal=len(arities))
        sibs, idx = [], []
        for level, a in enumerate(arities):
            self.uint(8, f"{what} level {level} hashes length", equal=a - 1)
            sibs.append(tuple(self.take(32, f"{what} level {level} hash") for _ in range(a - 1)))
            idx.append(self.uint(8, f"{what} level {level} index", below=a))
        return sibs, idx

    def merkle_proof(self, what: str, kind: str, arities: tuple[int, ...], variant: ProofData) -> MerklePath:
        """A MerkleProof of `variant` over a tree of `kind` whose levels (leaves first) have `arities`."""
        at = self.pos
        got = self.uint(4, f"{what} variant")
        if got != variant:
            raise self.error(f"{what} variant is {got}, expected {int(variant)} ({variant.name.title()})", at)
        if variant is ProofData.SINGLE:
            root, leaf = self.take(32, f"{what} root"), self.take(32, f"{what} leaf")
            parts = [("path", arities)]
        else:
            base = len(arities) - variant
            parts = list(zip(("base_proof", "sub_proof", "top_proof"),
                             [arities[:base]] + [(a,) for a in arities[base:]]))
        sibs: list[tuple[bytes, ...]] = []
        idx: list[int] = []
        for name, part in parts:
            s, i = self.path(f"{what} {name}", part)
            sibs += s
            idx += i
        if variant is not ProofData.SINGLE:
            root, leaf = self.take(32, f"{what} root"), self.take(32, f"{what} leaf")
        return MerklePath(kind, arities, leaf, root, tuple(sibs), tuple(idx))


def _write_path(siblings: Sequence[Sequence[bytes]], indices: Sequence[int]) -> bytes:
    return pack_u64(len(siblings)) + b"".join(pack_u64(len(h)) + b"".join(h) + pack_u64(i)
                                              for h, i in zip(siblings, indices))


def write_merkle_proof(variant: ProofData, root: bytes, leaf: bytes, siblings: Sequence[Sequence[bytes]],
                       indices: Sequence[int]) -> bytes:
    """The bincode bytes of a MerkleProof of `variant` whose levels, leaves first, have `siblings` and
    `indices`: the last `variant` levels are its one-level sub_proof and top_proof."""
    head = struct.pack("<I", variant)
    if variant is ProofData.SINGLE:
        return head + root + leaf + _write_path(siblings, indices)
    base = len(siblings) - variant
    paths = [_write_path(siblings[:base], indices[:base])]
    paths += [_write_path(siblings[n:n + 1], indices[n:n + 1]) for n in range(base, len(siblings))]
    return head + b"".join(paths) + root + leaf
