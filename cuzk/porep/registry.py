"""Registered SDR PoRep seal proofs (ids, names, API versions, porep_id) and the sector-size table.

Mirrors rust-filecoin-proofs-api `src/registry.rs` and rust-fil-proofs `filecoin-proofs/src/constants.rs`.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from cuzk.errors import InputError
from cuzk.util.jsonio import describe, quote

NODE_SIZE = 32
BASE_DEGREE = 6
EXP_DEGREE = 8
DEGREE = BASE_DEGREE + EXP_DEGREE
T = TypeVar("T")


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


@dataclass(frozen=True)
class SectorSize:
    """What a sector size fixes (filecoin-proofs `constants.rs`): its label, SDR layers, partitions
    (interactive, non-interactive), minimum challenges (interactive, non-interactive) and the
    (base, sub, top) arities of tree_c / tree_r_last."""

    label: str
    size: int
    layers: int
    partitions: int
    ni_partitions: int
    min_challenges: int
    ni_min_challenges: int
    tree_shape: tuple[int, int, int]

    @property
    def nodes(self) -> int:
        return self.size // NODE_SIZE


SECTOR_SIZES: dict[int, SectorSize] = {s.size: s for s in (
    SectorSize("2KiB", 2 * KiB, 2, 1, 13, 2, 26, (8, 0, 0)),
    SectorSize("8MiB", 8 * MiB, 2, 1, 13, 2, 26, (8, 0, 0)),
    SectorSize("512MiB", 512 * MiB, 2, 1, 13, 2, 26, (8, 0, 0)),
    SectorSize("32GiB", 32 * GiB, 11, 10, 126, 176, 2253, (8, 8, 0)),
    SectorSize("64GiB", 64 * GiB, 11, 10, 126, 176, 2253, (8, 8, 2)),
)}


def sector_size(size: int) -> SectorSize:
    """The table entry of a sector size in bytes (InputError for an unsupported size)."""
    found = SECTOR_SIZES.get(size)
    if found is None:
        raise InputError(f"unsupported sector size {size}")
    return found


_FAMILIES = [  # (first id, name suffix, api version, feature)
    (0, "V1", ApiVersion.V1_0_0, None),
    (5, "V1_1", ApiVersion.V1_1_0, None),
    (10, "V1_1_Feat_SyntheticPoRep", ApiVersion.V1_2_0, ApiFeature.SYNTHETIC_POREP),
    (15, "V1_2_Feat_NonInteractivePoRep", ApiVersion.V1_2_0, ApiFeature.NON_INTERACTIVE_POREP),
]


def _registry() -> dict[int, RegisteredProof]:
    proofs = {}
    for first, suffix, version, feature in _FAMILIES:
        ni = feature is ApiFeature.NON_INTERACTIVE_POREP
        for k, size in enumerate(SECTOR_SIZES.values()):
            proofs[first + k] = RegisteredProof(
                id=first + k,
                name=f"StackedDrg{size.label}{suffix}",
                sector_size=size.size,
                layers=size.layers,
                partitions=size.ni_partitions if ni else size.partitions,
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
    if not isinstance(key, (int, str)):
        raise InputError(f"a registered seal proof is an id or a name, got {type(key).__name__}")
    found = PROOFS.get(key) if isinstance(key, int) else BY_NAME.get(key)
    if found is None:
        raise InputError(f"unknown registered seal proof {quote(key)}")
    return found


def lookup(key: object, entry: type[T], by_id: Mapping[int, T], by_name: Mapping[str, T], what: str,
           error: type[InputError]) -> T:
    """The registry entry `key` names: an `entry` passed through, else the one of that id (an int, not
    a bool) or name; `error` naming `what` for a key of another type or an unknown one (PoSt's and
    SnapDeals' registries)."""
    if isinstance(key, entry):
        return key
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise error(f"a {what} is an id or a name, got {type(key).__name__}")
    found = by_id.get(key) if isinstance(key, int) else by_name.get(key)
    if found is None:
        raise error(f"unknown {what} {quote(key)}")
    return found


def proof_of_name(name: object, error: Callable[[str, str], Exception]) -> RegisteredProof:
    """The registered proof a document's "registered_proof" field names; error(field, reason) (the
    reader's typed error) when it is not a string or names no proof."""
    if not isinstance(name, str):
        raise error("registered_proof", f"expected a proof name, got {describe(name)}")
    try:
        return get_proof(name)
    except InputError:
        raise error("registered_proof", f"unknown registered seal proof {quote(name)}") from None
