"""Registered fallback PoSt proofs (WinningPoSt, WindowPoSt) and their shapes.

Sources (../shared/POST_SNAP.md §A1, §A5, §A7):
- ids are the Go/FFI numbering curio sends as `registered_proof`: 0-4 Winning V1, 5-9 Window V1,
  10-14 Window "V1_1", which is the Rust API's `…V1_2` (filecoin-ffi `rust/src/proofs/types.rs`;
  rust-filecoin-proofs-api `src/registry.rs:497-519`); sizes 2KiB, 8MiB, 512MiB, 32GiB, 64GiB.
- challenge derivation version (API `src/registry.rs:521-541`): every Winning proof and Window V1
  use V1_0_0, Window V1_2 uses V1_2_0 (FIP-0061).
- counts (rust-fil-proofs `filecoin-proofs/src/constants.rs:29-32,102-117`, `parameters.rs:29-53`):
  WinningPoSt proves 1 sector with 66 challenges, and its circuit has 66 "sectors" of 1 challenge;
  WindowPoSt proves 10 challenges per sector, 2 / 2349 / 2300 sectors per partition.
- parameter file stem (`storage-proofs-post/src/fallback/vanilla.rs:55-63`, parameter_cache.rs):
  v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-{base}-{sub}-{top}-{sha256(identifier)}
  with identifier "FallbackPoSt::PublicParams{sector_size: S, challenge_count: C, sector_count: N}"
  of the circuit's C and N (the api version is not in it: Window V1 and V1_2 share parameters).
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

from cuzk.porep.registry import NODE_SIZE, SECTOR_SIZES, ApiVersion, lookup
from cuzk.post.errors import UnknownPoStProofError
from cuzk.post.witness import PostShape

WINNING_POST_CHALLENGE_COUNT = 66
WINNING_POST_SECTOR_COUNT = 1
WINDOW_POST_CHALLENGE_COUNT = 10
PARAMS_VERSION = 28
# sector size -> WindowPoSt sectors per partition (filecoin-proofs constants.rs:102-117)
WINDOW_POST_SECTOR_COUNT = {2 << 10: 2, 8 << 20: 2, 512 << 20: 2, 32 << 30: 2349, 64 << 30: 2300}


class PoStKind(enum.Enum):
    WINNING = "Winning"
    WINDOW = "Window"


@dataclass(frozen=True)
class RegisteredPoStProof:
    """One registered PoSt proof. `sector_count` x `challenge_count` is the circuit's shape (per
    partition); `vanilla_sectors` x `vanilla_challenges` what the vanilla proofs carry per request /
    per sector (Winning: 1 sector x 66 challenges, unrolled to the circuit's 66 x 1)."""

    id: int
    name: str  # the Rust API's name (…V1 / …V1_2)
    go_name: str  # the Go/FFI name (…V1 / …V1_1)
    kind: PoStKind
    sector_size: int
    api_version: ApiVersion
    tree_shape: tuple[int, int, int]
    sector_count: int
    challenge_count: int

    @property
    def circuit_shape(self) -> PostShape:
        """The partition circuit's shape (cuzk.post.witness.PostShape)."""
        return PostShape(self.leaves, self.tree_shape, self.sector_count, self.challenge_count)

    @property
    def leaves(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def vanilla_challenges(self) -> int:
        """Challenges in one sector's vanilla proof: 66 (Winning) or 10 (Window)."""
        return WINNING_POST_CHALLENGE_COUNT if self.kind is PoStKind.WINNING else self.challenge_count

    @property
    def identifier(self) -> str:
        return (f"FallbackPoSt::PublicParams{{sector_size: {self.sector_size}, "
                f"challenge_count: {self.challenge_count}, sector_count: {self.sector_count}}}")

    @property
    def params_stem(self) -> str:
        """The official parameter / verifying-key file name without .params / .vk."""
        base, sub, top = self.tree_shape
        digest = hashlib.sha256(self.identifier.encode()).hexdigest()
        return (f"v{PARAMS_VERSION}-proof-of-spacetime-fallback-merkletree-poseidon_hasher-"
                f"{base}-{sub}-{top}-{digest}")


_FAMILIES = [  # (first id, kind, Rust suffix, Go suffix, api version)
    (0, PoStKind.WINNING, "V1", "V1", ApiVersion.V1_0_0),
    (5, PoStKind.WINDOW, "V1", "V1", ApiVersion.V1_0_0),
    (10, PoStKind.WINDOW, "V1_2", "V1_1", ApiVersion.V1_2_0),
]


def _registry() -> dict[int, RegisteredPoStProof]:
    proofs = {}
    for first, kind, suffix, go_suffix, version in _FAMILIES:
        for k, size in enumerate(SECTOR_SIZES.values()):
            winning = kind is PoStKind.WINNING
            stem = f"StackedDrg{kind.value}{size.label}"
            proofs[first + k] = RegisteredPoStProof(
                id=first + k, name=stem + suffix, go_name=stem + go_suffix, kind=kind,
                sector_size=size.size, api_version=version, tree_shape=size.tree_shape,
                sector_count=WINNING_POST_CHALLENGE_COUNT if winning else WINDOW_POST_SECTOR_COUNT[size.size],
                challenge_count=1 if winning else WINDOW_POST_CHALLENGE_COUNT)
    return proofs


POST_PROOFS: dict[int, RegisteredPoStProof] = _registry()
BY_NAME: dict[str, RegisteredPoStProof] = ({p.go_name: p for p in POST_PROOFS.values()}
                                           | {p.name: p for p in POST_PROOFS.values()})


def get_post_proof(key: int | str | RegisteredPoStProof) -> RegisteredPoStProof:
    """A registered PoSt proof by curio's id (0..14), by Rust or Go name, or passed through."""
    return lookup(key, RegisteredPoStProof, POST_PROOFS, BY_NAME, "registered PoSt proof", UnknownPoStProofError)
