"""Fallback PoSt challenges (../shared/POST_SNAP.md §A5).

- Leaf challenge (rust-fil-proofs `storage-proofs-post/src/fallback/vanilla.rs:203-254`):
  leaf = u64 LE(SHA256(randomness || u64 LE(sector_id) || u64 LE(challenge_index))[0..8]) mod leaves,
  randomness being the 32 raw bytes of a canonical Fr (`as_safe_commitment`).
- Challenge index (`storage-proofs-post/src/fallback/utils.rs:4-16`): V1_0_0 / V1_1_0:
  sector_index * challenge_count + n; V1_2_0 (FIP-0061): n alone. sector_index is the sector's position
  over all partitions, partition_index * sector_count + i (`filecoin-proofs/src/api/post_util.rs:22-95`).
- WinningPoSt sector selection (vanilla.rs:190-201): position n of the sector set is
  u64 LE(SHA256(prover_id || randomness || u64 LE(n))[0..8]) mod len(sector set), n < 1.
- prover_id = LEB128(miner id) zero-padded to 32 bytes (curio `extern/cuzk/cuzk-core/src/prover.rs:58-73`).
"""
from __future__ import annotations

import hashlib
import struct

from cuzk.ff.fields import Fr
from cuzk.porep.registry import ApiVersion
from cuzk.post.errors import PoStInputError
from cuzk.post.registry import WINNING_POST_SECTOR_COUNT, RegisteredPoStProof, get_post_proof

U64 = 1 << 64


def _u64(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < U64:
        raise PoStInputError(field, f"must be a u64, got {type(value).__name__} {str(value)[:24]}")
    return value


def check_bytes32(field: str, value: object) -> bytes:
    """`value` as 32 bytes (PoStInputError unless bytes-like of length 32)."""
    if not isinstance(value, (bytes, bytearray, memoryview)) or len(bytes(value)) != 32:
        got = f"{len(bytes(value))} bytes" if isinstance(value, (bytes, bytearray, memoryview)) else type(value).__name__
        raise PoStInputError(field, f"must be 32 bytes, got {got}")
    return bytes(value)


def check_randomness(randomness: object, field: str = "randomness") -> bytes:
    """The 32-byte randomness, refused unless it is a canonical (little-endian, < r) Fr."""
    raw = check_bytes32(field, randomness)
    if int.from_bytes(raw, "little") >= Fr.modulus:
        raise PoStInputError(field, "not a canonical Fr (little-endian value >= r)")
    return raw


def challenge_index(version: ApiVersion, sector_index: int, challenge_count: int, n: int) -> int:
    """get_challenge_index: sector_index * challenge_count + n before V1_2_0, n from V1_2_0 on."""
    if version is ApiVersion.V1_2_0:
        return n
    return sector_index * challenge_count + n


def leaf_challenge(randomness: bytes, sector_id: int, index: int, leaves: int) -> int:
    """The challenged leaf of challenge `index` of sector `sector_id` in a tree of `leaves` leaves."""
    h = hashlib.sha256(check_randomness(randomness))
    h.update(struct.pack("<Q", _u64("sector_id", sector_id)))
    h.update(struct.pack("<Q", _u64("challenge_index", index)))
    return int.from_bytes(h.digest()[:8], "little") % leaves


def sector_challenges(proof: RegisteredPoStProof | int | str, randomness: bytes, sector_id: int,
                      sector_index: int = 0, count: int | None = None) -> list[int]:
    """The leaves a vanilla proof of sector `sector_id` at position `sector_index` (over all partitions)
    challenges: `count` (default the proof's vanilla_challenges: 66 Winning, 10 Window) challenges,
    indexed with that count."""
    p = get_post_proof(proof)
    count = p.vanilla_challenges if count is None else count
    _u64("sector_index", sector_index)
    return [leaf_challenge(randomness, sector_id, challenge_index(p.api_version, sector_index, count, n), p.leaves)
            for n in range(count)]


def winning_sector_positions(randomness: bytes, prover_id: bytes, sector_set_len: int,
                             count: int = WINNING_POST_SECTOR_COUNT) -> list[int]:
    """Positions in the (sorted) sector set that WinningPoSt challenges."""
    randomness, prover_id = check_randomness(randomness), check_bytes32("prover_id", prover_id)
    if _u64("sector_set_len", sector_set_len) == 0:
        raise PoStInputError("sector_set_len", "the sector set is empty")
    return [int.from_bytes(hashlib.sha256(prover_id + randomness + struct.pack("<Q", n)).digest()[:8], "little")
            % sector_set_len for n in range(count)]


def prover_id_of_miner(miner_id: int) -> bytes:
    """prover_id: the miner's actor id as unsigned LEB128, zero-padded to 32 bytes."""
    _u64("miner_id", miner_id)
    out = bytearray()
    while True:
        byte, miner_id = miner_id & 0x7F, miner_id >> 7
        out.append(byte | (0x80 if miner_id else 0))
        if not miner_id:
            return bytes(out).ljust(32, b"\0")
