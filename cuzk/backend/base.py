"""The compute interface every backend implements: the prover reaches a backend only through it.

Arrays follow cuzk.ff.fields: Fr scalars (n, 4), G1 affine points (n, 2, 6), G2 affine points
(n, 2, 2, 6), all uint64 Montgomery limbs, the identity stored as zeros. MSMs return one affine point.
NTTs work over the domain <w> of size n = 2^k and its coset g<w>, both `cuzk.ff.domain.Domain(k)`'s
(bellperson's roots w = 7^((r-1)/n), g = 7).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from cuzk.errors import InputError

# An (n, 2, 6) G1 / (n, 2, 2, 6) G2 base array, or the handle prepare_bases_g1 / _g2 returned for one.
Bases = Any


class SparseMatrix(Protocol):
    """A sparse matrix over Fr in CSR form, as cuzk.r1cs.csr.CSR stores it (duck-typed: the backend
    sits below r1cs). Row r holds the non-zeros e in [indptr[r], indptr[r+1]): column indices[e],
    value coeffs[coeff_ids[e]] ((ncoeff, 4) Montgomery table; id 0 is 1 and id 1 is -1)."""

    indptr: np.ndarray     # (rows + 1,) int64
    indices: np.ndarray    # (nnz,) int32 or int64
    coeff_ids: np.ndarray  # (nnz,) uint32
    coeffs: np.ndarray     # (ncoeff, 4) uint64
    shape: tuple[int, int]


class TemplateMatrix(Protocol):
    """A, B or C of a TemplateCircuit: template rows (tpl_*, CSR over the rows of every template,
    terms (template-local variable, coefficient id)) and plain rows (plain_*, CSR, terms (column,
    coefficient id))."""

    tpl_indptr: np.ndarray    # (template rows + 1,) int32 or int64
    tpl_vars: np.ndarray      # (template nnz,) int32 or int64: (index << 2) | kind
    tpl_cids: np.ndarray      # (template nnz,) uint16 or uint32
    plain_indptr: np.ndarray  # (plain rows + 1,) int64
    plain_cols: np.ndarray    # (plain nnz,) int32 or int64
    plain_cids: np.ndarray    # (plain nnz,) uint16 or uint32


class TemplateCircuit(Protocol):
    """An R1CS in template form, as cuzk.r1cs.pce.PCE stores it (duck-typed: the backend sits below
    r1cs). Rows are covered by blocks and plain segments:
    - block b = blocks[b] = (template t, k, row_base, aux_col, aux_per, in_col, in_per, wire_off,
      wires): k instances of template t, whose rows are [tpl_rows[t], tpl_rows[t+1]) (C of them);
      instance i's row c is row_base + i*C + c. A template variable v = (index << 2) | kind names, in
      instance i, column index (kind 0), aux_col + i*aux_per + index (1), in_col + i*in_per + index
      (2) or wire_cols[wire_off + index*k + i] (3).
    - plain_segs[s] = (first row, rows): the plain rows, one after the other across the segments.
    A coefficient id indexes coeffs ((ncoeff, 4) Montgomery; id 0 is 1, id 1 is -1)."""

    num_inputs: int
    num_aux: int
    num_constraints: int
    shape: tuple[int, int]    # (num_constraints, num_inputs + num_aux)
    coeffs: np.ndarray        # (ncoeff, 4) uint64
    blocks: np.ndarray        # (blocks, 9) int64
    tpl_rows: np.ndarray      # (templates + 1,) int64
    wire_cols: np.ndarray     # (wire entries,) int32 or int64
    plain_segs: np.ndarray    # (segments, 2) int64
    a: TemplateMatrix
    b: TemplateMatrix
    c: TemplateMatrix

    def to_csr(self) -> tuple[SparseMatrix, SparseMatrix, SparseMatrix]:
        """The flat coefficient-id CSRs of A, B, C, row for row."""
        ...


# ops of a witness program's steps (cuzk.r1cs.witness_program compiles them; the backends run them)
WITNESS_OPS = ("solve_c", "solve_a", "solve_b", "dec_a", "dec_c", "dec_h")
SOLVE_C, SOLVE_A, SOLVE_B, DEC_A, DEC_C, DEC_H = range(len(WITNESS_OPS))


class WitnessProgram(Protocol):
    """A circuit's witness program, as cuzk.r1cs.witness_program.WitnessProgram stores it (duck-typed):
    steps (op, row, term, inv) sorted by level, levels, prog_levels (per template, then the plain
    program), inv, coeff_log2 and the hint sides hl, hr (TemplateMatrix-like)."""

    steps: np.ndarray
    levels: np.ndarray
    prog_levels: np.ndarray
    inv: np.ndarray
    coeff_log2: np.ndarray
    hl: TemplateMatrix
    hr: TemplateMatrix


class Backend(Protocol):
    name: str

    # ---- R1CS evaluation -------------------------------------------------------------------------
    def evaluate(self, matrix: SparseMatrix, witness: np.ndarray) -> np.ndarray:
        """M w: out[r] = sum_e coeffs[coeff_ids[e]] * witness[indices[e]] over row r's non-zeros,
        (rows, 4) Fr for a (cols, 4) Fr witness. Groth16's a = A w, b = B w, c = C w."""
        ...

    def evaluate_pce(self, pce: TemplateCircuit, witness: np.ndarray,
                     matrices: Sequence[int] = (0, 1, 2)) -> tuple[np.ndarray, ...]:
        """(A w, B w, C w) straight from the template form, each (num_constraints, 4) Fr, for a
        (num_inputs + num_aux, 4) Fr witness: equal to `evaluate` calls on the flat matrices; only
        those of `matrices` (0 = A, 1 = B, 2 = C), in that order. A GPU backend also takes a witness
        on its device (CuPy) and then returns device arrays."""
        ...

    def run_witness_program(self, pce: TemplateCircuit, program: WitnessProgram, w) -> None:
        """Run a circuit's witness program in place on w, (P, num_inputs + num_aux, 4) uint64 Montgomery
        witnesses whose inputs and free values are set (a GPU backend also takes w on its device, and
        it stays there). SynthesisError when a decomposition does not fit its value."""
        ...

    def first_unsatisfied(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> int | None:
        """The smallest row r with a[r] * b[r] != c[r] in Fr, or None: the R1CS satisfaction check on
        evaluations a = A w, b = B w, c = C w ((rows, 4) Fr each; a backend may also take its own
        device arrays)."""
        ...

    # ---- multi-scalar multiplication ---------------------------------------------------------------
    def msm_g1(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        """sum_i [scalars[i]] bases[i] in G1, for n bases and (n, 4) Fr scalars; (2, 6) affine."""
        ...

    def msm_g2(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        """sum_i [scalars[i]] bases[i] in G2; (2, 2, 6) affine."""
        ...

    def msm_g1_sparse(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        """msm_g1 for scalars that are mostly 0 and 1 (a witness): sum_{s_i = 1} P_i plus the MSM over
        the other scalars; a backend may split them off so, or take the dense path. Same result."""
        ...

    def msm_g2_sparse(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        """msm_g2 for scalars that are mostly 0 and 1 (see msm_g1_sparse)."""
        ...

    def msm_sets(self, bases: Bases, scalar_sets: Sequence[np.ndarray], group: str, sparse: bool) -> list[np.ndarray]:
        """[msm_<group>(bases, s) for s in scalar_sets] (msm_<group>_sparse when `sparse`; group "g1" or
        "g2"): the MSMs of several proofs over one key vector. A backend whose bases cross a link to its
        device shares one crossing among the sets."""
        ...

    def prepare_bases_g1(self, bases: np.ndarray) -> Bases:
        """A handle for G1 bases that msm_g1 / msm_g1_sparse accept in place of the array: the bases
        kept where the backend computes (on a GPU: resident, with precomputed multiples) while the
        handle lives. Opaque to the caller; the CPU backend returns the array itself."""
        ...

    def prepare_bases_g2(self, bases: np.ndarray) -> Bases:
        """prepare_bases_g1 for G2 bases."""
        ...

    # ---- NTT over Fr (n = 2^k values, natural order in and out) -----------------------------------
    def ntt(self, values: np.ndarray) -> np.ndarray:
        """out[j] = sum_i a[i] w^(ij): coefficients -> evaluations over <w>."""
        ...

    def intt(self, values: np.ndarray) -> np.ndarray:
        """out[i] = n^-1 sum_j a[j] w^(-ij): evaluations over <w> -> coefficients."""
        ...

    def coset_ntt(self, values: np.ndarray) -> np.ndarray:
        """out[j] = sum_i a[i] g^i w^(ij): coefficients -> evaluations over the coset g<w>."""
        ...

    def coset_intt(self, values: np.ndarray) -> np.ndarray:
        """out[i] = g^-i intt(a)[i]: evaluations over g<w> -> coefficients (inverse of coset_ntt)."""
        ...

    # ---- Groth16's quotient H = (A B - C) / Z, in steps (cuzk.groth16.prover.quotient) ------------
    def to_coset(self, values: np.ndarray) -> np.ndarray:
        """coset_ntt(intt(values)): the values on the coset g<w> of the polynomial that `values`
        interpolates on the domain <w>. In place where the backend can (values are the prover's
        scratch); a GPU backend returns a device array."""
        ...

    def mul_assign(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a *= b elementwise in Fr, in place; returns a. b may be an `offload`ed copy."""
        ...

    def quotient_coefficients(self, ab: np.ndarray, c: np.ndarray) -> np.ndarray:
        """H's coefficients 0 .. n-2 from the coset values ab of A B and c of C: Z(g w^j) = g^n - 1
        is one non-zero constant, so (ab - c) / Z is pointwise, and coset_intt interpolates H
        (deg H <= n - 2). c is overwritten; ab may be an `offload`ed copy."""
        ...

    def offload(self, values: np.ndarray) -> np.ndarray:
        """values in host memory, so that a device copy can be released: a GPU backend copies them into
        one pinned buffer it reuses (valid until the next offload); a host backend returns them."""
        ...

    # ---- device placement: what an engine needs to place work (a host backend: no device) --------
    device: int | None  # the device ordinal (CUDA), None for a host backend

    def device_scope(self) -> AbstractContextManager:
        """The backend's device made the calling thread's current device while the context lasts."""
        ...

    def free_bytes(self) -> int | None:
        """Bytes free on the device now (None: a host backend)."""
        ...

    def memory_stats(self) -> dict:
        """Device memory for status pages: name, vram_total_bytes, vram_used_bytes, vram_reserved_bytes
        (empty for a host backend)."""
        ...

    def has_room(self, nbytes: int) -> bool:
        """Whether the device's memory budget has room for nbytes beside what it holds (always on a host)."""
        ...

    def asarray(self, array):
        """`array` where the backend computes (its device, or host memory)."""
        ...

    def zeros(self, shape, dtype):
        """Zeros where the backend computes."""
        ...

    def keep(self, g1: Sequence, g2: Sequence, pce: TemplateCircuit | None = None,
             program: WitnessProgram | None = None) -> None:
        """Prepare now what a circuit's first proof would: the MSM tables of its base arrays and its
        witness program on the device (nothing on a host backend)."""
        ...

    def plan_vram(self, circuit: Any, vectors: Mapping[str, Any], witness_batch: int) -> Any:
        """Under a VRAM cap, the plan of proving `circuit` (domain_size, num_columns; its pce and
        program when it has them) with the key vectors `vectors` (name -> bases: h, l, a, b_g1,
        b_g2) on this device (cuzk.backend.cuda.vram_plan.VramPlan: which vectors keep a table and
        which stream from host memory, the witness batch), followed by its later MSMs and `keep`;
        VramBudgetError naming the least cap when none fits. None without a cap or a device."""
        ...

    def reserve_beside_tables(self, nbytes: int, msm_points: int = 0) -> None:
        """Keep nbytes (and one MSM of msm_points' working memory) of the device budget free of new
        tables (nothing on a host backend)."""
        ...


def check_triple(a, b, c) -> None:
    """The argument check of Backend.first_unsatisfied: InputError unless a, b, c are (rows, 4) uint64
    arrays of one shape (any array type with shape and dtype)."""
    shapes = {getattr(x, "shape", None) for x in (a, b, c)}
    dtypes = {str(getattr(x, "dtype", None)) for x in (a, b, c)}
    shape = next(iter(shapes))
    if len(shapes) != 1 or dtypes != {"uint64"} or shape is None or len(shape) != 2 or shape[1] != 4:
        raise InputError(f"a, b, c must be (rows, 4) uint64 Fr arrays of one shape, got shapes {sorted(map(str, shapes))} "
                         f"and dtypes {sorted(dtypes)}")


def check_witness(matrix: SparseMatrix | TemplateCircuit, witness: np.ndarray) -> None:
    """The argument check of Backend.evaluate / evaluate_pce: InputError unless witness is a
    (columns, 4) uint64 Fr array for the matrix (or circuit)."""
    if not isinstance(witness, np.ndarray) or witness.dtype != np.uint64 or witness.shape != (matrix.shape[1], 4):
        raise InputError(f"witness must be a ({matrix.shape[1]}, 4) uint64 Fr array, got "
                         f"{getattr(witness, 'dtype', type(witness).__name__)} {getattr(witness, 'shape', '')}")


def check_program_witness(pce: TemplateCircuit, w) -> None:
    """The argument check of Backend.run_witness_program: InputError unless w is a C-contiguous
    (P, columns, 4) uint64 array (numpy or a device array)."""
    ok = getattr(w, "ndim", 0) == 3 and w.shape[1:] == (pce.shape[1], 4) and w.dtype == np.uint64 \
        and w.flags.c_contiguous
    if not ok:
        raise InputError(f"witness program: w must be a C-contiguous (P, {pce.shape[1]}, 4) uint64 array, got "
                         f"{getattr(w, 'dtype', type(w).__name__)} {getattr(w, 'shape', '')}")
