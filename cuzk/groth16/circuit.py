"""The circuit as Groth16 sees it: A, B, C plus the number of public inputs, in one of two forms:
`Circuit` (flat CSR matrices) or `CompiledCircuit` (a PCE: the template form cuzk.r1cs.pce stores on
disk). Both give the prover and the setup what they need: the sizes, the densities, the
evaluation (A w, B w, C w) through a backend, the flat matrices (setup only) and a digest that
names the R1CS (what parameters fit).

The matrices hold the circuit's own constraints only; `qap` (cuzk.groth16.qap.BellpersonQap) adds
bellperson's input rows x_i * 0 = 0 and gives the domain.
Densities follow bellperson's prover: a variable is "dense" in A (or B) when some row of A (or B)
names it with a non-zero coefficient; the query vectors `a`, `b_g1`, `b_g2` hold points only for
dense variables, inputs first.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from cuzk.backend import Backend
from cuzk.errors import InputError
from cuzk.groth16.qap import BellpersonQap
from cuzk.r1cs import CSR, PCE, ConstraintSystem
from cuzk.r1cs.witness_program import WitnessProgram


class _Sizes:
    """Sizes shared by both forms (num_constraints and num_inputs come from the subclass)."""

    num_constraints: int
    num_inputs: int

    @cached_property
    def qap(self) -> BellpersonQap:
        """The QAP reduction of this circuit's size."""
        return BellpersonQap(self.num_constraints, self.num_inputs)

    @property
    def domain_size(self) -> int:
        return self.qap.domain.n

    @cached_property
    def query_lengths(self) -> dict[str, int]:
        """Points each parameter query has for this circuit (ic, h, l, a, b_g1, b_g2), counted once."""
        b = int(self.b_input_density.sum() + self.b_aux_density.sum())
        return {"ic": self.num_inputs, "h": self.qap.h_len, "l": self.num_aux,
                "a": self.num_inputs + int(self.a_aux_density.sum()), "b_g1": b, "b_g2": b}


@dataclass(frozen=True)
class Circuit(_Sizes):
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
    def num_columns(self) -> int:
        return self.a.shape[1]

    def matrices(self) -> tuple[CSR, CSR, CSR]:
        return self.a, self.b, self.c

    def evaluate(self, backend: Backend, witness: np.ndarray, matrices: Sequence[int] = (0, 1, 2)) -> tuple[np.ndarray, ...]:
        """(A w, B w, C w), each (num_constraints, 4) Fr; those of `matrices` (0 = A, 1 = B, 2 = C)."""
        return tuple(backend.evaluate(self.matrices()[j], witness) for j in matrices)

    def digest(self) -> str:
        """SHA-256 of the R1CS (the CSRs, coefficients and the input count)."""
        h = hashlib.sha256(f"cuzk-r1cs-1 {self.num_inputs} {self.a.shape}".encode())
        for m in self.matrices():
            for arr in (m.indptr, m.indices, m.coeff_ids, m.coeffs):
                arr = np.ascontiguousarray(arr)
                h.update(arr.dtype.str.encode())
                h.update(arr.view(np.uint8))
        return h.hexdigest()

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


@dataclass(frozen=True)
class CompiledCircuit(_Sizes):
    """A circuit in template form (cuzk.r1cs.pce.PCE): evaluated by the backend straight from the
    templates; the flat matrices are expanded only when asked for (setup). `program`: its witness
    program (cuzk.r1cs.witness_program), when the witness is computed from packed inputs."""

    pce: PCE
    program: WitnessProgram | None = field(default=None, compare=False)

    @property
    def num_constraints(self) -> int:
        return self.pce.num_constraints

    @property
    def num_inputs(self) -> int:
        return self.pce.num_inputs

    @property
    def num_aux(self) -> int:
        return self.pce.num_aux

    @property
    def num_columns(self) -> int:
        return self.pce.num_inputs + self.pce.num_aux

    def matrices(self) -> tuple[CSR, CSR, CSR]:
        """The flat CSRs (expanded on each call: setup needs them once)."""
        return self.pce.to_csr()

    def evaluate(self, backend: Backend, witness: np.ndarray, matrices: Sequence[int] = (0, 1, 2)) -> tuple[np.ndarray, ...]:
        """(A w, B w, C w), each (num_constraints, 4) Fr, those of `matrices`, from the template form
        (Backend.evaluate_pce)."""
        return backend.evaluate_pce(self.pce, witness, matrices)

    def digest(self) -> str:
        """SHA-256 of the PCE's arrays (PCE.digest)."""
        return self.pce.digest().hex()

    @cached_property
    def a_aux_density(self) -> np.ndarray:
        return self.pce.a_aux_density

    @cached_property
    def b_input_density(self) -> np.ndarray:
        return self.pce.b_input_density

    @cached_property
    def b_aux_density(self) -> np.ndarray:
        return self.pce.b_aux_density


AnyCircuit = Circuit | CompiledCircuit


def flat(r1cs) -> Circuit:
    """as_circuit(r1cs) in the flat form (a CompiledCircuit's templates expanded)."""
    c = as_circuit(r1cs)
    return c if isinstance(c, Circuit) else Circuit(*c.matrices(), c.num_inputs)


def _used_columns(m: CSR) -> np.ndarray:
    nonzero = m.coeffs.any(axis=1)[m.coeff_ids]
    return np.bincount(m.indices[nonzero], minlength=m.shape[1]) > 0


def as_circuit(r1cs) -> AnyCircuit:
    """A Circuit from a Circuit, a ConstraintSystem that records constraints, or (A, B, C, num_inputs);
    a CompiledCircuit from a PCE (or itself)."""
    if isinstance(r1cs, (Circuit, CompiledCircuit)):
        return r1cs
    if isinstance(r1cs, PCE):
        return CompiledCircuit(r1cs)
    if isinstance(r1cs, ConstraintSystem):
        return Circuit(*r1cs.to_csr(), r1cs.num_inputs)
    if isinstance(r1cs, tuple) and len(r1cs) == 4 and all(isinstance(m, CSR) for m in r1cs[:3]):
        return Circuit(*r1cs)
    raise InputError("expected a Circuit, a PCE, a ConstraintSystem or a tuple (A, B, C, num_inputs) of CSR "
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
