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
Challenges per partition = ceil(minimum challenges / partitions), both from the sector-size table
(cuzk.porep.registry.SECTOR_SIZES).
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from cuzk.errors import InputError
from cuzk.hashes import chacha
from cuzk.porep.registry import ApiFeature, ApiVersion, RegisteredProof, SectorSize, get_proof, sector_size

SYNTH_CHALLENGE_COUNT = 1 << 18
_SYNTH_GEN_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Generation"
_SYNTH_SEL_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Selection"
_SYNTH_NONCE = b"synth-porep\x00"
_NI_TAG = b"filecoin.io|PoRep|1|NonInteractive|1"
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
        sector_size(self.sector_size)  # a supported size
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
    def size(self) -> SectorSize:
        """The sector-size table entry (cuzk.porep.registry.SECTOR_SIZES)."""
        return sector_size(self.sector_size)

    @property
    def layers(self) -> int:
        return self.size.layers

    @property
    def minimum_challenges(self) -> int:
        if self.feature is ApiFeature.NON_INTERACTIVE_POREP:
            return self.size.ni_min_challenges
        return self.size.min_challenges

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


def _hashed_challenges(prefix: bytes, nodes: int, per_partition: int, k: int) -> list[int]:
    """Challenges j = k * per_partition + i of SHA256(prefix || u32 LE(j))."""
    head = hashlib.sha256(prefix)
    out = []
    for i in range(per_partition):
        h = head.copy()
        h.update(struct.pack("<I", per_partition * k + i))
        out.append(_challenge(h.digest(), nodes))
    return out


def interactive_challenges(nodes: int, replica_id: bytes, seed: bytes, per_partition: int, k: int
                           ) -> list[int]:
    _check32(replica_id=replica_id, seed=seed)
    return _hashed_challenges(bytes(replica_id) + bytes(seed), nodes, per_partition, k)


def ni_challenges(nodes: int, replica_id: bytes, comm_r: bytes, per_partition: int, k: int) -> list[int]:
    _check32(replica_id=replica_id, comm_r=comm_r)
    return _hashed_challenges(_NI_TAG + bytes(replica_id) + bytes(comm_r), nodes, per_partition, k)


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
    return _challenge(chacha.keystream(key, _SYNTH_NONCE, 32 * i, 32), nodes)


def synthetic_indexes(nodes: int, replica_id: bytes, seed: bytes, per_partition: int, k: int,
                      count: int | None = None) -> list[int]:
    """Indexes of the synthetic challenges that partition k's porep challenges select."""
    _check32(replica_id=replica_id, seed=seed)
    count = synthetic_challenge_count(nodes) if count is None else count
    key = _synth_key(_SYNTH_SEL_KEY, replica_id, seed)
    raw = chacha.keystream(key, _SYNTH_NONCE, 4 * k * per_partition, 4 * per_partition)
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
