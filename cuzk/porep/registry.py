"""Registered SDR PoRep seal proofs: ids, sector sizes, layers, partitions, API versions, porep_id.

Mirrors rust-filecoin-proofs-api `src/registry.rs` and rust-fil-proofs `filecoin-proofs/src/constants.rs`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from cuzk.errors import InputError

NODE_SIZE = 32
BASE_DEGREE = 6
EXP_DEGREE = 8
DEGREE = BASE_DEGREE + EXP_DEGREE


class ApiVersion(enum.Enum):
    """Proof API version; it decides where the DRG predecessor parent sits (and V1's u32 cast)."""

    V1_0_0 = "1.0.0"
    V1_1_0 = "1.1.0"
    V1_2_0 = "1.2.0"


class ApiFeature(enum.Enum):
    SYNTHETIC_POREP = "synthetic-porep"
    NON_INTERACTIVE_POREP = "non-interactive-porep"


def make_porep_id(proof_id: int, nonce: int = 0) -> bytes:
    """porep_id = u64 LE(registered proof id) || u64 LE(nonce) || 16 zero bytes."""
    if not (0 <= proof_id < 1 << 64 and 0 <= nonce < 1 << 64):
        raise InputError(f"proof id and nonce must be u64, got {proof_id}, {nonce}")
    return proof_id.to_bytes(8, "little") + nonce.to_bytes(8, "little") + bytes(16)


@dataclass(frozen=True)
class RegisteredProof:
    """One registered seal proof (e.g. StackedDrg32GiBV1_1)."""

    id: int
    name: str
    sector_size: int
    layers: int
    partitions: int
    api_version: ApiVersion
    feature: ApiFeature | None = None

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def porep_id(self) -> bytes:
        return make_porep_id(self.id)


KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
_SIZES = [
    ("2KiB", 2 * KiB), ("8MiB", 8 * MiB), ("512MiB", 512 * MiB), ("32GiB", 32 * GiB), ("64GiB", 64 * GiB)
]
_LAYERS = {2 * KiB: 2, 8 * MiB: 2, 512 * MiB: 2, 32 * GiB: 11, 64 * GiB: 11}
_PARTITIONS = {2 * KiB: 1, 8 * MiB: 1, 512 * MiB: 1, 32 * GiB: 10, 64 * GiB: 10}
_NI_PARTITIONS = {2 * KiB: 13, 8 * MiB: 13, 512 * MiB: 13, 32 * GiB: 126, 64 * GiB: 126}
_FAMILIES = [  # (first id, name suffix, api version, feature)
    (0, "V1", ApiVersion.V1_0_0, None),
    (5, "V1_1", ApiVersion.V1_1_0, None),
    (10, "V1_1_Feat_SyntheticPoRep", ApiVersion.V1_2_0, ApiFeature.SYNTHETIC_POREP),
    (15, "V1_2_Feat_NonInteractivePoRep", ApiVersion.V1_2_0, ApiFeature.NON_INTERACTIVE_POREP),
]


def _registry() -> dict[int, RegisteredProof]:
    proofs = {}
    for first, suffix, version, feature in _FAMILIES:
        partitions = _NI_PARTITIONS if feature is ApiFeature.NON_INTERACTIVE_POREP else _PARTITIONS
        for k, (label, size) in enumerate(_SIZES):
            proofs[first + k] = RegisteredProof(
                id=first + k,
                name=f"StackedDrg{label}{suffix}",
                sector_size=size,
                layers=_LAYERS[size],
                partitions=partitions[size],
                api_version=version,
                feature=feature,
            )
    return proofs


PROOFS: dict[int, RegisteredProof] = _registry()
BY_NAME: dict[str, RegisteredProof] = {p.name: p for p in PROOFS.values()}


def get_proof(key: int | str | RegisteredProof) -> RegisteredProof:
    """Look a registered proof up by id (0..19), name ("StackedDrg2KiBV1_1") or pass one through."""
    if isinstance(key, RegisteredProof):
        return key
    found = PROOFS.get(key) if isinstance(key, int) else BY_NAME.get(key)
    if found is None:
        raise InputError(f"unknown registered seal proof {key!r}")
    return found
