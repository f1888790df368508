"""A Groth16 proof: A (G1), B (G2), C (G1); on the wire 192 bytes, A || B || C zcash-compressed."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cuzk.ec import encoding
from cuzk.ec.curves import G1, G2
from cuzk.errors import BytesTypeError, CuzkError, ProofFormatError

PROOF_BYTES = 192


@dataclass(frozen=True, eq=False)
class Proof:
    a: np.ndarray  # (2, 6) affine G1
    b: np.ndarray  # (2, 2, 6) affine G2
    c: np.ndarray  # (2, 6) affine G1
    timings: dict[str, float] = field(default_factory=dict, repr=False)  # prover stages, seconds

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proof) and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in ("a", "b", "c"))

    def to_bytes(self) -> bytes:
        return encoding.encode(G1, self.a) + encoding.encode(G2, self.b) + encoding.encode(G1, self.c)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> Proof:
        """Decode and check (canonical, on the curve, in the subgroup, not the identity); any other
        type or length, or a bad point, raises ProofFormatError."""
        try:
            data = encoding.as_bytes(data, "a proof")
        except BytesTypeError as e:
            raise ProofFormatError(str(e)) from e
        if len(data) != PROOF_BYTES:
            raise ProofFormatError(f"a proof is {PROOF_BYTES} bytes, got {len(data)}")
        try:
            a = encoding.decode(G1, data[:48])[0]
            b = encoding.decode(G2, data[48:144])[0]
            c = encoding.decode(G1, data[144:])[0]
        except CuzkError as e:
            raise ProofFormatError(f"invalid proof: {e}") from e
        for name, point in (("A", a), ("B", b), ("C", c)):
            if not point.any():
                raise ProofFormatError(f"invalid proof: {name} is the point at infinity")
        return cls(a, b, c)
