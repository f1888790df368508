"""Registered SnapDeals (EmptySectorUpdate) proofs and their constants (../shared/POST_SNAP.md §B1, §B7).

- ids: Go/FFI RegisteredUpdateProof 0..4 = StackedDrg{2KiB,8MiB,512MiB,32GiB,64GiB}V1 (filecoin-ffi;
  rust-filecoin-proofs-api `src/registry.rs:119-126`, internally API V1_1).
- constants (rust-fil-proofs `storage-proofs-update/src/constants.rs`): partition_count :65,
  challenge_count :78, apex_leaf_count :126, hs :98, h_default = hs[3], h_select = 1 << (first index
  of h in hs) :115. TreeD is binary SHA256; TreeR old / new have the PoRep tree_r_last shape.
- challenge bits (`challenges.rs:10-140`): challenge_bit_len = log2(nodes), partition_bits =
  log2(partitions), rb = challenge_bit_len - partition_bits random bits per challenge,
  floor(254 / rb) challenges per Poseidon digest (Fr::CAPACITY = 254).
- parameter stem (`vanilla.rs:78-87`, parameter_cache.rs): v28-empty-sector-update-merkletree-
  poseidon_hasher-{base}-{sub}-{top}-sha256("empty_sector_update::PublicParams{ sector_nodes: N }").
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cuzk.porep.registry import NODE_SIZE, SECTOR_SIZES
from cuzk.snap.errors import UnknownUpdateProofError
from cuzk.util.jsonio import quote

PARAMS_VERSION = 28
FR_CAPACITY = 254
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

    @property
    def h_select(self) -> int:
        """1 << (the first index of h in hs): the one-hot selector the circuit inputizes."""
        return 1 << self.hs.index(self.h)

    @property
    def challenge_bits(self) -> int:
        return self.nodes.bit_length() - 1

    @property
    def partition_bits(self) -> int:
        return self.partitions.bit_length() - 1

    @property
    def random_bits(self) -> int:
        """rb: the random bits of a challenge (the partition index fills the rest)."""
        return self.challenge_bits - self.partition_bits

    @property
    def challenges_per_digest(self) -> int:
        return FR_CAPACITY // self.random_bits

    @property
    def digests_per_partition(self) -> int:
        return -(-self.challenges // self.challenges_per_digest)

    @property
    def apex_bits(self) -> int:
        return self.apex_leaves.bit_length() - 1

    @property
    def apex_height(self) -> int:
        """TreeD levels from a leaf up to its apex leaf: challenge_bits - partition_bits - apex_bits."""
        return self.random_bits - self.apex_bits

    @property
    def k_and_h_select_base(self) -> int:
        """h_select << partition_bits: public input 0 of partition k is this + k (circuit.rs:64)."""
        return self.h_select << self.partition_bits

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
    if isinstance(key, RegisteredUpdateProof):
        return key
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise UnknownUpdateProofError(f"a registered update proof is an id or a name, got {type(key).__name__}")
    found = UPDATE_PROOFS.get(key) if isinstance(key, int) else BY_NAME.get(key)
    if found is None:
        raise UnknownUpdateProofError(f"unknown registered update proof {quote(key)}")
    return found


def update_proof_for_size(sector_size: int) -> RegisteredUpdateProof:
    """The update proof of a sector size in bytes (UnknownUpdateProofError for an unsupported one)."""
    found = BY_SIZE.get(sector_size) if isinstance(sector_size, int) and not isinstance(sector_size, bool) else None
    if found is None:
        raise UnknownUpdateProofError(f"no update proof is registered for a sector of {quote(sector_size)} bytes")
    return found
