"""Typed errors of fallback PoSt, subclasses of cuzk.errors' (every one a CuzkError and a ValueError)."""
from __future__ import annotations

from cuzk.errors import FieldError, InputError, VanillaProofError


class UnknownPoStProofError(InputError):
    """A registered PoSt proof id or name that is not one of the 15 fallback PoSt proofs."""


class PoStInputError(FieldError):
    """A PoSt argument (randomness, sector id, sector set, challenge index) of the wrong type or range;
    `field` names it."""


class PoStVanillaFormatError(InputError):
    """A bincode FallbackPoStSectorProof that is truncated, too long, of a wrong enum variant or of the
    wrong shape for its registered proof; names the sector (its position in the request) and the byte
    offset of the fault within that sector's bytes."""

    def __init__(self, sector: int | None, offset: int, reason: str) -> None:
        self.sector, self.offset, self.reason = sector, offset, reason
        where = f"sector {sector} " if sector is not None else ""
        super().__init__(f"PoSt vanilla proof {where}at byte offset {offset}: {reason}")


class PoStVanillaProofError(VanillaProofError):
    """A PoSt vanilla proof that does not verify; names the sector (its position in the request or
    partition), the challenge (its position in the sector) and the field that is wrong."""

    def __init__(self, sector: int | None, challenge: int | None, field: str, reason: str) -> None:
        super().__init__(None, challenge, field, reason)
        self.sector = sector
        self.args = (f"sector {sector} " + str(self) if sector is not None else str(self),)

    def __str__(self) -> str:
        return self.args[0]
