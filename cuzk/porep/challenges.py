"""PoRep challenges (rust-fil-proofs `stacked/vanilla/challenges.rs`, filecoin-proofs `parameters.rs`).

- Interactive (V1, V1_1): challenge j = LE(SHA256(replica_id || seed || u32 LE(j))) mod (nodes - 1) + 1,
  j = k * per_partition + i for partition k.
- Synthetic PoRep: min(nodes, 2**18) synthetic challenges come from a ChaCha20 keystream (key =
  Blake2b-256 keyed "filecoin.io|PoRep|1|Synthetic|1|Generation" of replica_id || comm_r, nonce
  "synth-porep\\0"), 32 bytes each, mapped like interactive ones; the porep challenges of partition k
  select synthetic indices u32 LE(keystream of the "...|Selection" key over replica_id || seed, at byte
  4 * k * per_partition) mod count.
- Non-interactive: as interactive with SHA256("filecoin.io|PoRep|1|NonInteractive|1" || replica_id ||
  comm_r || u32 LE(j)).
Challenges per partition = ceil(minimum challenges / partitions): minimum 2 (small sizes) or 176
(32/64 GiB) interactive, 26 or 2253 non-interactive.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from cuzk.errors import InputError
from cuzk.porep.registry import ApiFeature, ApiVersion, RegisteredProof, get_proof

GiB = 1 << 30
SYNTH_CHALLENGE_COUNT = 1 << 18
_SYNTH_GEN_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Generation"
_SYNTH_SEL_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Selection"
_SYNTH_NONCE = b"synth-porep\x00"
_NI_TAG = b"filecoin.io|PoRep|1|NonInteractive|1"
_LAYERS = {2048: 2, 8 << 20: 2, 512 << 20: 2, 32 * GiB: 11, 64 * GiB: 11}
_FEATURES = {"SyntheticPoRep": ApiFeature.SYNTHETIC_POREP,
             "NonInteractivePoRep": ApiFeature.NON_INTERACTIVE_POREP}


@dataclass(frozen=True)
class PoRepConfig:
    """What fixes a PoRep's graph, challenges and circuit: rust's PoRepConfig (sector size, partitions,
    porep_id, API version and features). Regression records use porep_ids of no registered proof."""

    sector_size: int
    partitions: int
    porep_id: bytes
    api_version: ApiVersion
    feature: ApiFeature | None = None

    def __post_init__(self) -> None:
        if self.sector_size not in _LAYERS:
            raise InputError(f"unsupported sector size {self.sector_size}")
        if not isinstance(self.porep_id, bytes) or len(self.porep_id) != 32:
            raise InputError("porep_id must be 32 bytes")
        if not 1 <= self.partitions <= 255:
            raise InputError(f"partitions must be in [1, 255], got {self.partitions}")

    @classmethod
    def from_proof(cls, proof: RegisteredProof | int | str) -> PoRepConfig:
        p = get_proof(proof)
        return cls(p.sector_size, p.partitions, p.porep_id, p.api_version, p.feature)

    @classmethod
    def from_json(cls, obj: dict) -> PoRepConfig:
        """From rust's serde PoRepConfig (as in seal regression records)."""
        try:
            features = [_FEATURES[f] for f in obj.get("api_features", [])]
            if len(features) > 1:
                raise InputError(f"at most one API feature is supported, got {obj['api_features']}")
            return cls(int(obj["sector_size"]), int(obj["partitions"]), bytes(obj["porep_id"]),
                       ApiVersion[obj["api_version"]], features[0] if features else None)
        except KeyError as e:
            raise InputError(f"porep_config: missing or unknown value {e}") from None

    @property
    def nodes(self) -> int:
        return self.sector_size // 32

    @property
    def layers(self) -> int:
        return _LAYERS[self.sector_size]

    @property
    def minimum_challenges(self) -> int:
        big = self.sector_size >= 32 * GiB
        if self.feature is ApiFeature.NON_INTERACTIVE_POREP:
            return 2253 if big else 26
        return 176 if big else 2

    @property
    def challenges_per_partition(self) -> int:
        return -(-self.minimum_challenges // self.partitions)


def _challenge(digest: bytes, nodes: int) -> int:
    """Never node 0: (LE integer mod (nodes - 1)) + 1."""
    return int.from_bytes(digest, "little") % (nodes - 1) + 1


def _check32(**values: bytes) -> None:
    for name, v in values.items():
        if not isinstance(v, (bytes, bytearray)) or len(v) != 32:
            raise InputError(f"{name} must be 32 bytes")


def interactive_challenges(nodes: int, replica_id: bytes, seed: bytes, per_partition: int, k: int
                           ) -> list[int]:
    _check32(replica_id=replica_id, seed=seed)
    prefix = hashlib.sha256(bytes(replica_id) + bytes(seed))
    out = []
    for i in range(per_partition):
        h = prefix.copy()
        h.update(struct.pack("<I", per_partition * k + i))
        out.append(_challenge(h.digest(), nodes))
    return out


def ni_challenges(nodes: int, replica_id: bytes, comm_r: bytes, per_partition: int, k: int) -> list[int]:
    _check32(replica_id=replica_id, comm_r=comm_r)
    prefix = hashlib.sha256(_NI_TAG + bytes(replica_id) + bytes(comm_r))
    out = []
    for i in range(per_partition):
        h = prefix.copy()
        h.update(struct.pack("<I", per_partition * k + i))
        out.append(_challenge(h.digest(), nodes))
    return out


# ---------------------------------------------------------------- ChaCha20 (RFC 8439), random access

def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


def chacha20_block(key: bytes, nonce: bytes, counter: int, rounds: int = 20) -> bytes:
    """One 64-byte ChaCha keystream block (IETF layout: 32-bit counter, 96-bit nonce)."""
    init = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *struct.unpack("<8I", key),
            counter & 0xFFFFFFFF, *struct.unpack("<3I", nonce)]
    x = list(init)
    for _ in range(rounds // 2):
        for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            x[a] = (x[a] + x[b]) & 0xFFFFFFFF
            x[d] = _rotl(x[d] ^ x[a], 16)
            x[c] = (x[c] + x[d]) & 0xFFFFFFFF
            x[b] = _rotl(x[b] ^ x[c], 12)
            x[a] = (x[a] + x[b]) & 0xFFFFFFFF
            x[d] = _rotl(x[d] ^ x[a], 8)
            x[c] = (x[c] + x[d]) & 0xFFFFFFFF
            x[b] = _rotl(x[b] ^ x[c], 7)
    return struct.pack("<16I", *((v + w) & 0xFFFFFFFF for v, w in zip(x, init)))


def chacha20_keystream(key: bytes, nonce: bytes, offset: int, length: int) -> bytes:
    """`length` keystream bytes starting at byte `offset` (a seek, as RustCrypto's try_seek)."""
    first, last = offset // 64, (offset + length + 63) // 64
    stream = b"".join(chacha20_block(key, nonce, b) for b in range(first, last))
    return stream[offset - 64 * first: offset - 64 * first + length]


def _synth_key(tag: bytes, replica_id: bytes, other: bytes) -> bytes:
    return hashlib.blake2b(bytes(replica_id) + bytes(other), digest_size=32, key=tag).digest()


def synthetic_challenge_count(nodes: int) -> int:
    return min(nodes, SYNTH_CHALLENGE_COUNT)


def synthetic_challenge(nodes: int, replica_id: bytes, comm_r: bytes, i: int,
                        count: int | None = None) -> int:
    """The i-th synthetic challenge."""
    count = synthetic_challenge_count(nodes) if count is None else count
    if not 0 <= i < count:
        raise InputError(f"synthetic challenge index {i} outside [0, {count})")
    key = _synth_key(_SYNTH_GEN_KEY, replica_id, comm_r)
    return _challenge(chacha20_keystream(key, _SYNTH_NONCE, 32 * i, 32), nodes)


def synthetic_indexes(nodes: int, replica_id: bytes, seed: bytes, per_partition: int, k: int,
                      count: int | None = None) -> list[int]:
    """Indexes of the synthetic challenges that partition k's porep challenges select."""
    _check32(replica_id=replica_id, seed=seed)
    count = synthetic_challenge_count(nodes) if count is None else count
    key = _synth_key(_SYNTH_SEL_KEY, replica_id, seed)
    raw = chacha20_keystream(key, _SYNTH_NONCE, 4 * k * per_partition, 4 * per_partition)
    return [v % count for v in struct.unpack(f"<{per_partition}I", raw)]


def synthetic_porep_challenges(nodes: int, replica_id: bytes, comm_r: bytes, seed: bytes,
                               per_partition: int, k: int, count: int | None = None) -> list[int]:
    _check32(replica_id=replica_id, comm_r=comm_r, seed=seed)
    return [synthetic_challenge(nodes, replica_id, comm_r, i, count)
            for i in synthetic_indexes(nodes, replica_id, seed, per_partition, k, count)]


def partition_challenges(config: PoRepConfig, replica_id: bytes, seed: bytes | None, comm_r: bytes | None,
                         k: int) -> list[int]:
    """The challenges of partition k, for whichever challenge scheme the config uses."""
    if not 0 <= k < config.partitions:
        raise InputError(f"partition {k} outside [0, {config.partitions})")
    n, per = config.nodes, config.challenges_per_partition
    if config.feature is ApiFeature.NON_INTERACTIVE_POREP:
        if comm_r is None:
            raise InputError("non-interactive challenges need comm_r")
        return ni_challenges(n, replica_id, comm_r, per, k)
    if seed is None:
        raise InputError("interactive challenges need the seed")
    if config.feature is ApiFeature.SYNTHETIC_POREP:
        if comm_r is None:
            raise InputError("synthetic challenges need comm_r")
        return synthetic_porep_challenges(n, replica_id, comm_r, seed, per, k)
    return interactive_challenges(n, replica_id, seed, per, k)


def all_challenges(config: PoRepConfig, replica_id: bytes, seed: bytes | None, comm_r: bytes | None
                   ) -> list[list[int]]:
    return [partition_challenges(config, replica_id, seed, comm_r, k) for k in range(config.partitions)]
