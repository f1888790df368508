"""The circuit as Groth16 sees it: A, B, C in CSR form plus the number of public inputs.

bellperson appends one constraint `input_i * 0 = 0` per public input (ONE included) after the
circuit's own constraints, so that the A polynomials of the inputs are linearly independent. Those
rows are not stored in the matrices here: `Circuit.rows` counts them and setup / prover add them.
Densities follow bellperson's prover: a variable is "dense" in A (or B) when some row of A (or B)
names it with a non-zero coefficient; the query vectors `a`, `b_g1`, `b_g2` hold points only for
dense variables, inputs first.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.domain import Domain
from cuzk.r1cs import CSR, ConstraintSystem


@dataclass(frozen=True)
class Circuit:
    """A, B, C with columns (inputs, ONE first, then aux) and `num_inputs` (ONE included)."""

    a: CSR
    b: CSR
    c: CSR
    num_inputs: int

    def __post_init__(self) -> None:
        shapes = {m.shape for m in (self.a, self.b, self.c)}
        if len(shapes) != 1:
            raise InputError(f"A, B and C must have one shape, got {sorted(shapes)}")
        if not 1 <= self.num_inputs <= self.a.shape[1]:
            raise InputError(f"num_inputs must be in [1, {self.a.shape[1]}], got {self.num_inputs}")

    @property
    def num_constraints(self) -> int:
        """The circuit's own constraints (without the input constraints)."""
        return self.a.shape[0]

    @property
    def num_aux(self) -> int:
        return self.a.shape[1] - self.num_inputs

    @property
    def rows(self) -> int:
        """Constraints including bellperson's input constraints."""
        return self.num_constraints + self.num_inputs

    @property
    def domain_size(self) -> int:
        return Domain.for_size(self.rows).n

    @cached_property
    def a_aux_density(self) -> np.ndarray:
        """(num_aux,) bool: aux variables that appear in A."""
        return _used_columns(self.a)[self.num_inputs:]

    @cached_property
    def b_input_density(self) -> np.ndarray:
        """(num_inputs,) bool: inputs that appear in B."""
        return _used_columns(self.b)[: self.num_inputs]

    @cached_property
    def b_aux_density(self) -> np.ndarray:
        """(num_aux,) bool: aux variables that appear in B."""
        return _used_columns(self.b)[self.num_inputs:]


def _used_columns(m: CSR) -> np.ndarray:
    nonzero = m.coeffs.any(axis=1)[m.coeff_ids]
    return np.bincount(m.indices[nonzero], minlength=m.shape[1]) > 0


def as_circuit(r1cs) -> Circuit:
    """A Circuit from a Circuit, a ConstraintSystem that records constraints, or (A, B, C, num_inputs)."""
    if isinstance(r1cs, Circuit):
        return r1cs
    if isinstance(r1cs, ConstraintSystem):
        return Circuit(*r1cs.to_csr(), r1cs.num_inputs)
    if isinstance(r1cs, tuple) and len(r1cs) == 4 and all(isinstance(m, CSR) for m in r1cs[:3]):
        return Circuit(*r1cs)
    raise InputError("expected a Circuit, a ConstraintSystem or a tuple (A, B, C, num_inputs) of CSR "
                     f"matrices, got {type(r1cs).__name__}")


def transpose(m: CSR) -> CSR:
    """M^T in CSR form (the columns of M as rows), sharing M's coefficient table."""
    rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
    order = np.argsort(m.indices, kind="stable")
    indptr = np.zeros(m.shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(m.indices, minlength=m.shape[1]), out=indptr[1:])
    itype = np.int32 if m.shape[0] < 2**31 else np.int64
    return CSR(indptr, rows[order].astype(itype), np.ascontiguousarray(m.coeff_ids[order]), m.coeffs,
               (m.shape[1], m.shape[0]))
