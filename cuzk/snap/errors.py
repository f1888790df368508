"""Typed errors of SnapDeals (EmptySectorUpdate), subclasses of cuzk.errors' (each a CuzkError and a ValueError)."""
from __future__ import annotations

from cuzk.errors import InputError, VanillaProofError


class UnknownUpdateProofError(InputError):
    """A registered update proof id or name that is not one of the five EmptySectorUpdate V1 proofs."""


class SnapVanillaFormatError(InputError):
    """A bincode PartitionProof (or curio's snap-vproof.json holding them) that is truncated, too long,
    of a wrong enum variant, length or shape; names the partition (its position in the array) and the
    byte offset of the fault within that partition's bytes (or within the JSON text, partition None)."""

    def __init__(self, partition: int | None, offset: int, reason: str) -> None:
        self.partition, self.offset, self.reason = partition, offset, reason
        where = f"partition {partition} " if partition is not None else ""
        super().__init__(f"snap vanilla proof {where}at byte offset {offset}: {reason}")


class SnapVanillaProofError(VanillaProofError):
    """A SnapDeals partition proof that does not verify; names the partition, the challenge (its
    position in the partition) and the field that is wrong."""
