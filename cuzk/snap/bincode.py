"""bincode 1.3 (legacy defaults) form of SnapDeals PartitionProof, and curio's snap-vproof.json
(../shared/POST_SNAP.md §B6; rust-fil-proofs `storage-proofs-update/src/vanilla.rs:168-255`,
`storage-proofs-core/src/merkle/proof.rs` ProofData; curio `lib/ffi/snap_funcs.go:350-380`).

    PartitionProof = comm_c [32] | apex_leafs Vec<[32]> | challenge_proofs Vec<ChallengeProof>
    ChallengeProof = proof_r_old MerkleProof | proof_d_new MerkleProof (SHA256, Single) | proof_r_new
    MerkleProof    = u32 variant; 0 Single: root | leaf | path; 1 Sub: base | sub | root | leaf;
                     2 Top: base | sub | top | root | leaf       (variant by TreeR shape 8-0-0/8-8-0/8-8-2)
    path           = Vec<PathElement>; PathElement = hashes Vec<[32]> | index u64
A Vec is a u64 LE length then its elements. Sizes: 2KiB 15,064 B, 8MiB 43,864 B, 32GiB 561,768 B.
snap-vproof.json is Go's json.Marshal([][]byte): a JSON array of standard base64 strings, one per partition.
"""
from __future__ import annotations

import base64
import binascii
import json
import struct

from cuzk.porep.trees import POSEIDON, SHA256, MerklePath, binary_arities, level_arities
from cuzk.snap.errors import SnapVanillaFormatError
from cuzk.snap.registry import RegisteredUpdateProof, get_update_proof
from cuzk.snap.vanilla import ChallengeProof, PartitionProof

VPROOF_MAX_BYTES = 64 << 20  # 16 x 561,768 B of 32GiB proofs is 12 MiB as base64


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def _split(arities: tuple[int, ...], shape: tuple[int, int, int]) -> tuple[int, list[tuple[int, ...]]]:
    """(variant, the arities of each path the variant writes) of a tree of `shape`."""
    tail = (1 if shape[1] else 0) + (1 if shape[2] else 0)
    base = arities[:len(arities) - tail]
    return tail, [base] + [(a,) for a in arities[len(arities) - tail:]]


class _Cursor:
    def __init__(self, data: bytes, partition: int | None) -> None:
        self.data, self.pos, self.partition = data, 0, partition

    def fail(self, reason: str, at: int | None = None) -> SnapVanillaFormatError:
        return SnapVanillaFormatError(self.partition, self.pos if at is None else at, reason)

    def bytes(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise self.fail(f"{what}: {n} bytes needed, {len(self.data) - self.pos} left")
        out, self.pos = self.data[self.pos:end], end
        return out

    def int(self, size: int, what: str, below: int | None = None, equal: int | None = None) -> int:
        at = self.pos
        value = int.from_bytes(self.bytes(size, what), "little")
        if equal is not None and value != equal:
            raise self.fail(f"{what} is {value}, expected {equal}", at)
        if below is not None and value >= below:
            raise self.fail(f"{what} is {value}, not below {below}", at)
        return value

    def path(self, what: str, arities: tuple[int, ...]) -> tuple[list[tuple[bytes, ...]], list[int]]:
        self.int(8, f"{what} length", equal=len(arities))
        sibs, idx = [], []
        for level, a in enumerate(arities):
            self.int(8, f"{what} level {level} hash count", equal=a - 1)
            sibs.append(tuple(self.bytes(32, f"{what} level {level} hash") for _ in range(a - 1)))
            idx.append(self.int(8, f"{what} level {level} index", below=a))
        return sibs, idx

    def merkle(self, what: str, kind: str, arities: tuple[int, ...], shape: tuple[int, int, int]) -> MerklePath:
        variant, parts = _split(arities, shape)
        self.int(4, f"{what} variant", equal=variant)
        if variant == 0:
            root, leaf = self.bytes(32, f"{what} root"), self.bytes(32, f"{what} leaf")
        sibs: list[tuple[bytes, ...]] = []
        idx: list[int] = []
        for n, part in enumerate(parts):
            s, i = self.path(f"{what} {('base', 'sub', 'top')[n]} path", part)
            sibs += s
            idx += i
        if variant:
            root, leaf = self.bytes(32, f"{what} root"), self.bytes(32, f"{what} leaf")
        return MerklePath(kind, arities, leaf, root, tuple(sibs), tuple(idx))


def read_partition_proof(data: bytes, proof: RegisteredUpdateProof | int | str,
                         partition: int | None = None) -> PartitionProof:
    """Decode one bincode PartitionProof of update proof `proof`, checking its shape as it goes;
    SnapVanillaFormatError names `partition` and the byte offset of a fault."""
    p = get_update_proof(proof)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise SnapVanillaFormatError(partition, 0, f"expected bytes, got {type(data).__name__}")
    cur = _Cursor(bytes(data), partition)
    r_ar, d_ar = level_arities(p.nodes, p.tree_shape), binary_arities(p.nodes)
    comm_c = cur.bytes(32, "comm_c")
    cur.int(8, "apex_leafs length", equal=p.apex_leaves)
    apex = tuple(cur.bytes(32, f"apex_leafs[{n}]") for n in range(p.apex_leaves))
    cur.int(8, "challenge_proofs length", equal=p.challenges)
    cps = tuple(ChallengeProof(cur.merkle(f"challenge {n} proof_r_old", POSEIDON, r_ar, p.tree_shape),
                               cur.merkle(f"challenge {n} proof_d_new", SHA256, d_ar, (2, 0, 0)),
                               cur.merkle(f"challenge {n} proof_r_new", POSEIDON, r_ar, p.tree_shape))
                for n in range(p.challenges))
    if cur.pos != len(cur.data):
        raise cur.fail(f"{len(cur.data) - cur.pos} bytes after the end of the proof")
    return PartitionProof(comm_c, apex, cps)


def _write_merkle(m: MerklePath, shape: tuple[int, int, int]) -> bytes:
    variant, parts = _split(m.arities, shape)
    out, level = [], 0
    for part in parts:
        out.append(_u64(len(part)))
        for _ in part:
            out += [_u64(len(m.siblings[level])), *m.siblings[level], _u64(m.indices[level])]
            level += 1
    ends = m.root + m.leaf
    return struct.pack("<I", variant) + (ends + b"".join(out) if variant == 0 else b"".join(out) + ends)


def write_partition_proof(proof: PartitionProof, p: RegisteredUpdateProof | int | str) -> bytes:
    """The bincode bytes of a PartitionProof (as rust's bincode::serialize writes them)."""
    shape = get_update_proof(p).tree_shape
    out = [proof.comm_c, _u64(len(proof.apex_leafs)), *proof.apex_leafs, _u64(len(proof.challenge_proofs))]
    for cp in proof.challenge_proofs:
        out += [_write_merkle(cp.proof_r_old, shape), _write_merkle(cp.proof_d_new, (2, 0, 0)),
                _write_merkle(cp.proof_r_new, shape)]
    return b"".join(out)


def read_vproof_json(text: bytes | str, proof: RegisteredUpdateProof | int | str) -> list[PartitionProof]:
    """Decode curio's snap-vproof.json: exactly one base64 PartitionProof per partition, in order."""
    p = get_update_proof(proof)
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if not isinstance(text, (bytes, bytearray, memoryview)):
        raise SnapVanillaFormatError(None, 0, f"expected JSON bytes or str, got {type(text).__name__}")
    if len(text) > VPROOF_MAX_BYTES:
        raise SnapVanillaFormatError(None, VPROOF_MAX_BYTES, f"{len(text):,} bytes, more than {VPROOF_MAX_BYTES:,}")
    try:
        items = json.loads(bytes(text).decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SnapVanillaFormatError(None, e.start, "not UTF-8") from None
    except json.JSONDecodeError as e:
        raise SnapVanillaFormatError(None, e.pos, f"not JSON: {e.msg}") from None
    except RecursionError:
        raise SnapVanillaFormatError(None, 0, "JSON nested too deeply") from None
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise SnapVanillaFormatError(None, 0, "expected a JSON array of base64 strings")
    if len(items) != p.partitions:
        raise SnapVanillaFormatError(None, 0, f"{len(items)} partition proofs, {p.name} has {p.partitions}")
    out = []
    for k, item in enumerate(items):
        try:
            raw = base64.b64decode(item.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError) as e:
            raise SnapVanillaFormatError(k, 0, f"not standard base64: {e}") from None
        out.append(read_partition_proof(raw, p, k))
    return out


def write_vproof_json(proofs: list[PartitionProof], p: RegisteredUpdateProof | int | str) -> bytes:
    """snap-vproof.json as Go's json.Marshal([][]byte) writes it."""
    return json.dumps([base64.b64encode(write_partition_proof(x, p)).decode() for x in proofs],
                      separators=(",", ":")).encode()
