"""ConstraintSystem: records R1CS constraints into arrays, in bellperson's variable and row order.

Modes: "constraints" records A, B, C and counts variables (values are ignored); "witness" keeps
only the assignment (enforce just counts rows); "both" does both (tests, debugging).
Batch blocks (`cs.batch(k)`, cuzk.r1cs.batch) record one template for k instances laid out exactly
as if the instances had been synthesized one after the other; Scope is what the system and its
blocks share. `replay` (constraints mode only) lets gadgets stamp the rows of a call recorded once
instead of running it again (cuzk.gadgets.replay).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from cuzk.errors import InputError, SynthesisError, UnallocatedVariableError, UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.r1cs.csr import CSR, Rows, finalize, rows_from_spec
from cuzk.r1cs.lc import (AUX, INPUT, KIND_BITS, KIND_MASK, LOCAL_AUX, LOCAL_INPUT, ONE, WIRE, R,
                          CoeffTable, Variable, as_lc, fr_int, make_code, split_code)
from cuzk.r1cs.satisfy import first_unsatisfied

if TYPE_CHECKING:
    from cuzk.r1cs.batch import Batch

MODES = ("both", "constraints", "witness")
_SLOT = {INPUT: 0, AUX: 1, LOCAL_INPUT: 0, LOCAL_AUX: 1, WIRE: 2}


def fr_array(values, n: int | None = None) -> np.ndarray:
    """(n, 4) Montgomery Fr array from an (n, 4) uint64 array or a sequence of ints in [0, r)."""
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        arr = values.reshape(-1, 4) if values.ndim == 1 and values.shape == (4,) else values
        if arr.ndim != 2 or arr.shape[1] != 4:
            raise InputError(f"Fr values must have shape (n, 4), got {values.shape}")
        out = np.ascontiguousarray(Fr.check_canonical(arr, "Fr value"))
    elif isinstance(values, np.ndarray) and values.dtype != object and values.ndim == 2:
        raise InputError(f"Fr arrays must be uint64 Montgomery limbs, got dtype {values.dtype}")
    else:
        if isinstance(values, (int, np.integer, str, bytes, float)):
            raise InputError(f"expected a sequence of Fr values, got {type(values).__name__}")
        out = Fr.from_ints([fr_int(v) for v in values])
    if n is not None and out.shape[0] != n:
        raise InputError(f"expected {n} Fr values, got {out.shape[0]}")
    return out


@njit(cache=True)
def _first_bad_code(codes, serials, limits):
    """Index of the first code not allocated in the scopes (serials[i], limits[i] = inputs, aux, wires)."""
    for i in range(codes.shape[0]):
        c = codes[i]
        kind, index, serial = c & 7, (c >> 3) & 0xFFFFFFFF, c >> 35
        ok = False
        for s in range(serials.shape[0]):
            if serials[s] == serial and (kind <= 1) == (serial == 0) and kind <= 4:
                slot = 2 if kind == 4 else (kind & 1) if serial == 0 else kind - 2
                ok = index < limits[s, slot]
        if not ok:
            return i
    return -1


class _Values:
    """The assignment of one kind of variable (inputs or aux), appended in order."""

    def __init__(self) -> None:
        self.segments: list[np.ndarray] = []
        self.starts: list[int] = []
        self.pending: list[int] = []
        self.size = 0

    def add_int(self, v: int) -> None:
        self.pending.append(v)

    def add_array(self, arr: np.ndarray) -> None:
        self._flush()
        self.starts.append(self.size)
        self.segments.append(arr)
        self.size += arr.shape[0]

    def _flush(self) -> None:
        if self.pending:
            arr, self.pending = fr_array(self.pending), []
            self.add_array(arr)

    def all(self) -> np.ndarray:
        self._flush()
        if len(self.segments) > 1:
            self.segments, self.starts = [np.concatenate(self.segments)], [0]
        return self.segments[0] if self.segments else np.zeros((0, 4), np.uint64)

    def gather(self, index: np.ndarray) -> np.ndarray:
        return self.all()[index]


class Scope:
    """What batch blocks and the constraint system share: allocation and row recording."""

    serial: int
    record: bool
    has_values: bool
    replay: bool

    def _limits(self) -> dict[int, tuple[int, int, int]]:
        raise NotImplementedError

    def _check_terms(self, codes) -> None:
        limits = self._limits()
        for code in codes:
            kind, index, serial = split_code(code)
            lim = limits.get(serial)
            ok = lim is not None and kind in _SLOT and (kind <= AUX) == (serial == 0) and index < lim[_SLOT[kind]]
            if not ok:
                raise UnallocatedVariableError(
                    f"constraint uses {Variable(code)!r}, which is not allocated in this scope"
                    + (" (a variable of a closed or foreign batch block: wire it in)" if serial and lim is None else ""))

    def _check_codes(self, codes: np.ndarray) -> None:
        if codes.size == 0:
            return
        limits = self._limits()
        serials = np.array(list(limits), dtype=np.int64)
        table = np.array(list(limits.values()), dtype=np.int64).reshape(-1, 3)
        bad = _first_bad_code(np.ascontiguousarray(codes).reshape(-1), serials, table)
        if bad >= 0:
            code = int(codes.reshape(-1)[bad])
            raise UnallocatedVariableError(f"bulk constraint uses {Variable(code)!r}, which is not allocated in this scope")

    def _record(self, a, b, c) -> None:
        lcs = (as_lc(a), as_lc(b), as_lc(c))
        self._check_lcs(lcs)
        table = self._coeffs
        for rows, lc in zip(self._rows, lcs):
            rows.add(lc.terms, table)

    def _check_lcs(self, lcs) -> None:
        for lc in lcs:
            self._check_terms(lc.terms)

    def _record_many(self, a, b, c, n: int) -> None:
        specs = [rows_from_spec(s, n, self._coeffs) for s in (a, b, c)]
        for counts, codes, cids in specs:
            self._check_codes(codes)
        for rows, spec in zip(self._rows, specs):
            rows.add_many(*spec)

    def enforce(self, a, b, c, name: str | None = None) -> None:
        """Record a * b = c (in a batch block: one template row holding in every instance); a, b, c:
        LinearCombination, Variable, int constant or None (zero)."""
        self._open()
        if self.record:
            self._record(a, b, c)
            if name:
                self._names[self.num_constraints] = name
        self.num_constraints += 1

    def hint(self, lhs: dict[int, int], rhs: dict[int, int]) -> None:
        """Record a hint lhs == rhs ({code: integer coefficient} each; recording scopes only): not a
        constraint, but an equality the gadget knows holds, which the witness program
        (cuzk.r1cs.witness_program) uses to solve rhs's bits, e.g. one of the sums MultiEq packs into
        a single row."""
        self._open()
        if self.record:
            self._check_terms(list(lhs) + list(rhs))
            for rows, terms in zip(self._hint_rows, (lhs, rhs)):
                rows.add({code: c % R for code, c in terms.items() if c % R}, self._coeffs)
        self.num_hints += 1

    def hint_interned(self, lhs, rhs) -> None:
        """Hint rows given as (counts, codes, coefficient ids from `intern`) per side: the hint
        counterpart of enforce_interned (recording scopes only)."""
        self._open()
        n = len(lhs[0])
        if len(rhs[0]) != n:
            raise InputError("hint_interned: both sides need the same number of rows")
        if self.record:
            for rows, (counts, codes, cids) in zip(self._hint_rows, (lhs, rhs)):
                self._check_codes(codes)
                rows.add_many(np.asarray(counts, np.int64), np.asarray(codes, np.int64), np.asarray(cids, np.uint32))
        self.num_hints += n

    def intern(self, coeffs) -> np.ndarray:
        """uint32 ids of integer coefficients (mod r) in this system's coefficient table."""
        return self._coeffs.intern_array(coeffs)

    def enforce_interned(self, a, b, c) -> None:
        """Rows given as (counts, codes, coefficient ids from `intern`) per matrix, all with the same
        number of rows: a fast path to replay rows recorded once elsewhere (only counted when the
        scope does not record)."""
        self._open()
        n = len(a[0])
        if any(len(m[0]) != n for m in (b, c)):
            raise InputError("enforce_interned: A, B and C need the same number of rows")
        if self.record:
            for rows, (counts, codes, cids) in zip(self._rows, (a, b, c)):
                if codes.shape != cids.shape or int(counts.sum()) != codes.shape[0]:
                    raise InputError("enforce_interned: counts, codes and ids do not agree")
                self._check_codes(codes)
                rows.add_many(np.asarray(counts, np.int64), np.asarray(codes, np.int64),
                              np.asarray(cids, np.uint32))
        self.num_constraints += n




class ConstraintSystem(Scope):
    """Records an R1CS circuit as arrays. Input 0 is ONE; columns are inputs, then aux."""

    serial = 0
    total = 1

    def __init__(self, mode: str = "both", replay: bool = False) -> None:
        if mode not in MODES:
            raise InputError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.record, self.has_values = mode != "witness", mode != "constraints"
        self.replay = replay and mode == "constraints"
        self.one = ONE
        self.num_inputs, self.num_aux, self.num_constraints, self.num_hints = 1, 0, 0, 0
        self._coeffs = CoeffTable()
        self._rows = (Rows(), Rows(), Rows())
        self._hint_rows = (Rows(), Rows())
        self._inputs, self._aux = _Values(), _Values()
        if self.has_values:
            self._inputs.add_int(1)
        self._names: dict[int, str] = {}
        self._templates_named: list[tuple[int, int, int, dict[int, str]]] = []
        self._closed: dict[int, Batch] = {}
        self._serials = 0
        self._child: Batch | None = None

    def _new_serial(self) -> int:
        self._serials += 1
        return self._serials

    def _limits(self):
        return {0: (self.num_inputs, self.num_aux, 0)}

    def _check_lcs(self, lcs) -> None:  # the fast path of Scope._check_terms for top-level rows
        ni, na = self.num_inputs, self.num_aux
        for lc in lcs:
            for code in lc.terms:
                kind = code & KIND_MASK
                if not ((kind == AUX and code >> KIND_BITS < na) or (kind == INPUT and code >> KIND_BITS < ni)):
                    self._check_terms([code])

    def _open(self) -> None:
        if self._child is not None:
            raise SynthesisError("a batch block is open: allocate and enforce through it, or close it")

    # -- allocation
    def alloc(self, value=None) -> Variable:
        """A new aux variable (bellperson's alloc); value: an int in [0, r), a (4,) Fr array, or None."""
        self._open()
        if self.has_values:
            self._add_value(self._aux, value)
        self.num_aux += 1
        return Variable(make_code(AUX, self.num_aux - 1), value)

    def alloc_input(self, value=None) -> Variable:
        """A new public input (bellperson's alloc_input)."""
        self._open()
        if self.has_values:
            self._add_value(self._inputs, value)
        self.num_inputs += 1
        return Variable(make_code(INPUT, self.num_inputs - 1), value)

    @staticmethod
    def _add_value(store: _Values, value) -> None:
        if value is None:
            raise SynthesisError("witness mode needs a value for every allocation (got None)")
        if isinstance(value, np.ndarray):
            store.add_array(fr_array(value, 1))
        else:
            store.add_int(fr_int(value))

    def alloc_many(self, n_or_values) -> np.ndarray:
        """Bulk aux allocation: an int n (constraint mode), or values ((n, 4) Fr array or ints).
        Returns the (n,) int64 variable codes for enforce_many."""
        return self._alloc_many(n_or_values, self._aux, AUX, "num_aux")

    def alloc_input_many(self, n_or_values) -> np.ndarray:
        """Bulk public-input allocation, as alloc_many."""
        return self._alloc_many(n_or_values, self._inputs, INPUT, "num_inputs")

    def _alloc_many(self, n_or_values, store: _Values, kind: int, counter: str) -> np.ndarray:
        self._open()
        if isinstance(n_or_values, (int, np.integer)) and not isinstance(n_or_values, bool):
            if self.has_values:
                raise SynthesisError("witness mode needs values, not a count")
            n = int(n_or_values)
        elif self.has_values:
            vals = fr_array(n_or_values)
            store.add_array(vals)
            n = vals.shape[0]
        else:
            n = len(n_or_values)
        first = getattr(self, counter)
        setattr(self, counter, first + n)
        return (np.arange(first, first + n, dtype=np.int64) << KIND_BITS) | kind

    # -- constraints (enforce: Scope's)
    def enforce_many(self, a, b, c, n: int | None = None) -> None:
        """Record n constraints in one call. Each of a, b, c is None (empty rows), (codes, coeffs) with
        codes (n, t) and coeffs (t,) or (n, t), or (indptr, codes, coeffs) in CSR form; codes come
        from alloc_many / Variable.code, coefficients are ints (int64 array or Python ints, mod r)."""
        self._open()
        if n is None:
            spec = next((s for s in (a, b, c) if s is not None), None)
            if spec is None:
                raise InputError("enforce_many needs n when a, b and c are all None")
            n = len(spec[0]) - 1 if len(spec) == 3 else len(spec[0])
        if self.record:
            self._record_many(a, b, c, n)
        self.num_constraints += n

    def batch(self, k: int) -> Batch:
        """Open a batch block of k instances (use as a context manager)."""
        from cuzk.r1cs.batch import Batch  # batch.py builds on this module

        self._open()
        self._child = Batch(self, self, k)
        return self._child

    # -- export
    def values(self, codes) -> np.ndarray:
        """(n, 4) Fr assignment of variables given by codes (INPUT / AUX)."""
        if not self.has_values:
            raise SynthesisError("a constraints-only system holds no values")
        codes = np.asarray(codes, dtype=np.int64).reshape(-1)
        self._check_codes(codes)
        kind, index = codes & KIND_MASK, codes >> KIND_BITS
        out = np.empty((codes.shape[0], 4), np.uint64)
        inp = kind == INPUT
        out[inp] = self._inputs.gather(index[inp])
        out[~inp] = self._aux.gather(index[~inp])
        return out

    def witness(self) -> np.ndarray:
        """The full assignment: (num_inputs + num_aux, 4) Fr Montgomery, inputs (ONE first) then aux."""
        self._open()
        if not self.has_values:
            raise SynthesisError("a constraints-only system holds no witness")
        return np.concatenate([self._inputs.all(), self._aux.all()])

    def to_csr(self) -> tuple[CSR, CSR, CSR]:
        """A, B, C with shape (num_constraints, num_inputs + num_aux)."""
        self._open()
        if not self.record:
            raise SynthesisError("a witness-only system records no matrices")
        parts = [rows.arrays() for rows in self._rows]  # interns every coefficient first
        table = self._coeffs.montgomery()
        return tuple(finalize(*p, self.num_inputs, self.num_aux, self._coeffs, table) for p in parts)

    def recording(self) -> tuple[tuple[Rows, Rows, Rows], CoeffTable]:
        """The recorded rows of A, B, C (single rows flushed, batch templates unexpanded) and the
        coefficient table their ids index: what cuzk.r1cs.pce builds on."""
        self._open()
        if not self.record:
            raise SynthesisError("a witness-only system records no matrices")
        for rows in self._rows + self._hint_rows:  # hints too: every coefficient is in the table now
            rows.flush()
        return self._rows, self._coeffs

    def hint_recording(self) -> tuple[Rows, Rows]:
        """The recorded hint rows (lhs, rhs) as `recording` gives the matrices: one template per
        top-level batch block (empty when the block records no hints), plain rows between."""
        self._open()
        if not self.record:
            raise SynthesisError("a witness-only system records no hints")
        for rows in self._hint_rows:
            rows.flush()
        return self._hint_rows

    def constraint_name(self, row: int) -> str | None:
        """The name given to constraint `row` (template rows: 'name[instance]'), if any."""
        if row in self._names:
            return self._names[row]
        for base, k, per, names in self._templates_named:
            if base <= row < base + k * per and (row - base) % per in names:
                return f"{names[(row - base) % per]}[{(row - base) // per}]"
        return None

    def first_unsatisfied(self, witness: np.ndarray | None = None, csr=None) -> int | None:
        """Index of the first constraint with <A_i, w> * <B_i, w> != <C_i, w>, or None."""
        w = self.witness() if witness is None else witness
        return first_unsatisfied(*(csr or self.to_csr()), w)

    def is_satisfied(self, witness: np.ndarray | None = None) -> bool:
        return self.first_unsatisfied(witness) is None

    def assert_satisfied(self, witness: np.ndarray | None = None) -> None:
        """Raise UnsatisfiedConstraintError naming the first failing constraint."""
        row = self.first_unsatisfied(witness)
        if row is not None:
            raise UnsatisfiedConstraintError(row, self.constraint_name(row))

    def stats(self) -> dict[str, int]:
        """Counts: constraints, inputs, aux, and non-zeros per matrix (before duplicate merging)."""
        nnz = [r.nnz for r in self._rows]
        return {"num_constraints": self.num_constraints, "num_inputs": self.num_inputs,
                "num_aux": self.num_aux, "nnz_a": nnz[0], "nnz_b": nnz[1], "nnz_c": nnz[2]}
