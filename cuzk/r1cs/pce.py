"""PCE: the compiled circuit in template form, built from a recorded ConstraintSystem without the flat
expansion (DESIGN "Circuits as batched templates").

Rows (num_constraints of them, bellperson's order) are covered by *blocks* and *plain segments*.
Block b is a top-level batch block: k instances of one template of C rows (blocks recording equal
rows share the template); instance i's row c is row row_base + i*C + c. The plain segments hold the
rows recorded outside any batch, one after the other. Columns are as ConstraintSystem.to_csr lays
them out: inputs (0 = ONE), then aux j at num_inputs + j. Input layout: instance i of block b owns
the inputs in_col + i*in_per .. + in_per; every other input was allocated at top level. A nested
batch is part of its outermost block's template.

A template term is (variable, coefficient id); its variable var = (index << 2) | kind names, in
instance i of block b, the column
    VAR_FIXED 0: index                                 ONE, or a variable outside the block
    VAR_AUX   1: aux_col + i * aux_per + index         the block's own aux (aux_per per instance)
    VAR_INPUT 2: in_col + i * in_per + index           the block's own public inputs
    VAR_WIRE  3: wire_cols[wire_off + index * k + i]   slot `index` of the block's wire() table

Arrays (`to_arrays`; X is a, b or c; int32 / uint16 where the values fit, else int64 / uint32):
    sizes            (3,) int64             num_inputs (ONE included), num_aux, num_constraints
    coeffs           (ncoeff, 4) uint64     distinct coefficients, Montgomery; id 0 = 1, id 1 = -1
    coeff_class      (ncoeff,) uint8        COEFF_ONE, _MINUS_ONE, _POW2 (+-2^e, e >= 1),
                                            _SMALL (+-c, c < 2^64), _FULL
    tpl_rows         (ntpl + 1,) int64      template t's rows: [tpl_rows[t], tpl_rows[t+1]) of all
                                            templates' rows
    blocks           (nblk, 9) int64        BLOCK_FIELDS: template, k, row_base, aux_col, aux_per,
                                            in_col, in_per, wire_off, wires
    wire_cols        (nwire,) int32/64      block b's table: wire_cols[wire_off + w * k + i]
    plain_segs       (nseg, 2) int64        first row, number of rows
    X_tpl_indptr     (tpl_rows[-1] + 1,)    CSR over the template rows; int32/64
    X_tpl_vars       (tnnz,) int32/64       template-local variables
    X_tpl_cids       (tnnz,) uint16/32      coefficient ids
    X_plain_indptr   (nplain + 1,) int64    CSR over the plain rows
    X_plain_cols     (pnnz,) int32/64       columns
    X_plain_cids     (pnnz,) uint16/32
    a_aux_bits       (ceil(num_aux / 8),)   np.packbits(bitorder="little") of a_aux_density
    b_input_bits     (ceil(num_inputs / 8),) ... of b_input_density
    b_aux_bits       (ceil(num_aux / 8),)   ... of b_aux_density
Terms keep their recorded order, repeats included: to_csr sorts and merges them as
ConstraintSystem.to_csr does. The densities are the groth16 prover's (cuzk.groth16.circuit): a
column is dense in A (B) when some row names it with a non-zero coefficient once its repeats in
that row are summed.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import Field, dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np
from numba import njit, prange

from cuzk.errors import InputError
from cuzk.ff import limbs
from cuzk.ff.fields import Fr
from cuzk.r1cs.csr import CSR, Template, finalize
from cuzk.r1cs.lc import AUX, INPUT, KIND_BITS, R, CoeffTable, columns
from cuzk.r1cs.system import ConstraintSystem

VAR_FIXED, VAR_AUX, VAR_INPUT, VAR_WIRE = range(4)
COEFF_ONE, COEFF_MINUS_ONE, COEFF_POW2, COEFF_SMALL, COEFF_FULL = range(5)
BLOCK_FIELDS = ("template", "k", "row_base", "aux_col", "aux_per", "in_col", "in_per", "wire_off", "wires")
MATRICES = ("a", "b", "c")
_INT_TYPES = (np.int32, np.int64)
_ID_TYPES = (np.uint16, np.uint32)


@dataclass(frozen=True)
class PceMatrix:
    """A, B or C in template form: CSR over the template rows and CSR over the plain rows."""

    tpl_indptr: np.ndarray
    tpl_vars: np.ndarray
    tpl_cids: np.ndarray
    plain_indptr: np.ndarray
    plain_cols: np.ndarray
    plain_cids: np.ndarray


def flat_arrays(obj: Any, names: Sequence[Field]) -> dict[str, np.ndarray]:
    """The arrays of a dataclass's fields `names`, a PceMatrix field flattened to <field>_<array>."""
    out = {}
    for f in names:
        value = getattr(obj, f.name)
        if isinstance(value, PceMatrix):
            out.update({f"{f.name}_{g.name}": getattr(value, g.name) for g in fields(PceMatrix)})
        else:
            out[f.name] = value
    return out


@dataclass(frozen=True)
class PCE:
    """A circuit's R1CS in template form (layout: the module doc); a TemplateCircuit for
    Backend.evaluate_pce."""

    num_inputs: int
    num_aux: int
    num_constraints: int
    coeffs: np.ndarray
    coeff_class: np.ndarray
    tpl_rows: np.ndarray
    blocks: np.ndarray
    wire_cols: np.ndarray
    plain_segs: np.ndarray
    a: PceMatrix
    b: PceMatrix
    c: PceMatrix
    a_aux_bits: np.ndarray
    b_input_bits: np.ndarray
    b_aux_bits: np.ndarray

    # ---- derived views
    @property
    def shape(self) -> tuple[int, int]:
        return self.num_constraints, self.num_inputs + self.num_aux

    @cached_property
    def a_aux_density(self) -> np.ndarray:
        """(num_aux,) bool: aux variables that appear in A (unpacked once: a prover reads it every proof,
        and a GPU backend keeps its copy by this array)."""
        return _unpack(self.a_aux_bits, self.num_aux)

    @cached_property
    def b_input_density(self) -> np.ndarray:
        """(num_inputs,) bool: inputs that appear in B."""
        return _unpack(self.b_input_bits, self.num_inputs)

    @cached_property
    def b_aux_density(self) -> np.ndarray:
        """(num_aux,) bool: aux variables that appear in B."""
        return _unpack(self.b_aux_bits, self.num_aux)

    def __getstate__(self) -> dict:
        """Pickled without the unpacked masks (remade at first use)."""
        return {k: v for k, v in self.__dict__.items() if k not in _UNPACKED}

    @property
    def density_bytes(self) -> int:
        """Host bytes of the three unpacked density masks."""
        return 2 * self.num_aux + self.num_inputs

    @property
    def nbytes(self) -> int:
        return sum(arr.nbytes for arr in self.to_arrays().values())

    def digest(self) -> bytes:
        """SHA-256 over `to_arrays` in order (arrays_digest): names the R1CS this PCE holds."""
        return self._digest

    @cached_property
    def _digest(self) -> bytes:
        return arrays_digest(self.to_arrays())

    # ---- arrays in and out
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The named arrays of the module doc (views, not copies)."""
        out = {"sizes": np.array([self.num_inputs, self.num_aux, self.num_constraints], np.int64)}
        out.update(flat_arrays(self, fields(self)[3:]))
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> PCE:
        """A PCE from `to_arrays`' names, checked to be consistent (`check`)."""
        want = set(_array_names())
        if set(arrays) != want:
            raise InputError(f"PCE arrays: missing {sorted(want - set(arrays))}, unknown {sorted(set(arrays) - want)}")
        sizes = np.asarray(arrays["sizes"])
        if sizes.shape != (3,) or sizes.dtype != np.int64 or np.any(sizes < 0) or sizes[0] < 1:
            raise InputError("PCE arrays: sizes must be (3,) int64 num_inputs >= 1, num_aux, num_constraints")
        kw = {}
        for f in fields(cls)[3:]:
            if f.name in MATRICES:
                kw[f.name] = PceMatrix(**{g.name: arrays[f"{f.name}_{g.name}"] for g in fields(PceMatrix)})
            else:
                kw[f.name] = arrays[f.name]
        pce = cls(*(int(x) for x in sizes), **kw)
        pce.check()
        return pce

    def check(self) -> None:
        """InputError unless the arrays are well formed: dtypes and shapes, every column, coefficient id
        and wire slot in range, and the blocks and plain segments covering the rows exactly once."""
        ni, ncols, m = self.num_inputs, self.num_inputs + self.num_aux, self.num_constraints
        _expect(self.coeffs, (np.uint64,), 2, "coeffs")
        if self.coeffs.shape[0] < 2 or self.coeffs.shape[1] != 4:
            raise InputError("PCE coeffs must be (ncoeff >= 2, 4)")
        Fr.check_canonical(self.coeffs, "PCE coefficient")
        values = Fr.to_ints(self.coeffs)
        if values[:2] != [1, R - 1] or len(set(values)) != len(values) or 0 in values:
            raise InputError("PCE coeffs must be distinct non-zero values starting 1, -1")
        _expect(self.coeff_class, (np.uint8,), 1, "coeff_class")
        if not np.array_equal(self.coeff_class, coeff_classes(values)):
            raise InputError("PCE coeff_class does not match coeffs")
        ncoeff = len(values)
        _expect(self.tpl_rows, (np.int64,), 1, "tpl_rows")
        _expect(self.blocks, (np.int64,), 2, "blocks")
        _expect(self.wire_cols, _INT_TYPES, 1, "wire_cols")
        _expect(self.plain_segs, (np.int64,), 2, "plain_segs")
        if self.blocks.shape[1] != len(BLOCK_FIELDS) or self.plain_segs.shape[1] != 2:
            raise InputError("PCE blocks must be (nblk, 9) and plain_segs (nseg, 2)")
        ntpl = self.tpl_rows.shape[0] - 1
        if ntpl < 0 or _bad_offsets(self.tpl_rows, None):
            raise InputError("PCE tpl_rows must be non-decreasing offsets from 0")
        if _out_of(self.wire_cols, ncols):
            raise InputError("PCE wire_cols out of range")
        nplain = int(self.plain_segs[:, 1].sum()) if self.plain_segs.size else 0
        limits = np.zeros((ntpl, 4), np.int64)  # per template and kind: 1 + the largest index used
        for name in MATRICES:
            mat: PceMatrix = getattr(self, name)
            for what, kinds in (("tpl_indptr", _INT_TYPES), ("tpl_vars", _INT_TYPES), ("tpl_cids", _ID_TYPES),
                                ("plain_indptr", (np.int64,)), ("plain_cols", _INT_TYPES), ("plain_cids", _ID_TYPES)):
                _expect(getattr(mat, what), kinds, 1, f"{name}_{what}")
            if mat.tpl_indptr.shape[0] != self.tpl_rows[-1] + 1 or _bad_offsets(mat.tpl_indptr, mat.tpl_vars.shape[0]) \
                    or mat.tpl_cids.shape != mat.tpl_vars.shape:
                raise InputError(f"PCE {name}: template rows do not match tpl_rows / their terms")
            if mat.plain_indptr.shape[0] != nplain + 1 or _bad_offsets(mat.plain_indptr, mat.plain_cols.shape[0]) \
                    or mat.plain_cids.shape != mat.plain_cols.shape:
                raise InputError(f"PCE {name}: plain rows do not match plain_segs / their terms")
            if _out_of(mat.plain_cols, ncols) or _out_of(mat.tpl_cids, ncoeff) or _out_of(mat.plain_cids, ncoeff):
                raise InputError(f"PCE {name}: a plain column or a coefficient id is out of range")
            if np.any(mat.tpl_vars < 0):
                raise InputError(f"PCE {name}: negative template variable")
            _template_limits(self.tpl_rows, mat.tpl_indptr, mat.tpl_vars, limits)
        spans = self.plain_segs.tolist()  # Python ints: no overflow from corrupt fields
        for tpl, k, row_base, aux_col, aux_per, in_col, in_per, wire_off, wires in self.blocks.tolist():
            if not 0 <= tpl < ntpl or k < 1 or min(row_base, aux_col, aux_per, in_col, in_per, wire_off, wires) < 0:
                raise InputError("PCE blocks: template out of range, k < 1 or a negative field")
            fixed, aux, inp, wire = limits[tpl].tolist()
            if fixed > ncols or aux > aux_per or inp > in_per or wire > wires or aux_col < ni \
                    or aux_col + k * aux_per > ncols or in_col + k * in_per > ni \
                    or wire_off + k * wires > self.wire_cols.shape[0]:
                raise InputError("PCE blocks: a template variable maps outside the columns or the wire table")
            spans.append([row_base, k * int(self.tpl_rows[tpl + 1] - self.tpl_rows[tpl])])
        at = 0
        for first, n in sorted(spans):
            if first != at or n < 0:
                raise InputError("PCE blocks and plain segments do not cover the rows exactly once")
            at += n
        if at != m:
            raise InputError("PCE blocks and plain segments do not cover the rows exactly once")
        for arr, n, what in ((self.a_aux_bits, self.num_aux, "a_aux_bits"), (self.b_input_bits, ni, "b_input_bits"),
                             (self.b_aux_bits, self.num_aux, "b_aux_bits")):
            _expect(arr, (np.uint8,), 1, what)
            if arr.shape[0] != -(-n // 8):
                raise InputError(f"PCE {what} must hold {-(-n // 8)} bytes")

    # ---- the flat form
    def to_csr(self) -> tuple[CSR, CSR, CSR]:
        """A, B, C as flat CSR matrices, equal to ConstraintSystem.to_csr of the recorded system (row
        for row; repeated columns of a row merged, new coefficients interned in the same order)."""
        table = CoeffTable()
        for value in Fr.to_ints(self.coeffs)[2:]:
            table.intern(value)
        parts = [self._expanded(getattr(self, name)) for name in MATRICES]
        return tuple(finalize(*p, self.num_inputs, self.num_aux, table, self.coeffs) for p in parts)

    def _expanded(self, mat: PceMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, INPUT / AUX codes, cids) of every row in order, as Rows.arrays gives them."""
        pieces = []  # (first row, counts, columns, cids)
        for b in range(self.blocks.shape[0]):
            tpl, k, row_base, aux_col, aux_per, in_col, in_per, wire_off, _ = (int(x) for x in self.blocks[b])
            r0, r1 = self.tpl_rows[tpl], self.tpl_rows[tpl + 1]
            e0, e1 = mat.tpl_indptr[r0], mat.tpl_indptr[r1]
            var = mat.tpl_vars[e0:e1].astype(np.int64)
            kind, index = var & 3, var >> 2
            first = np.select([kind == VAR_AUX, kind == VAR_INPUT], [aux_col + index, in_col + index], index)
            step = np.select([kind == VAR_AUX, kind == VAR_INPUT], [aux_per, in_per], 0)
            inst = np.arange(k, dtype=np.int64)[:, None]
            cols = first + inst * step
            wired = kind == VAR_WIRE
            cols[:, wired] = self.wire_cols[wire_off + index[wired] * k + inst]
            pieces.append((row_base, np.tile(np.diff(mat.tpl_indptr[r0:r1 + 1]), k), cols.reshape(-1),
                           np.tile(mat.tpl_cids[e0:e1], k)))
        p0 = 0
        for row, n in self.plain_segs.tolist():
            e0, e1 = mat.plain_indptr[p0], mat.plain_indptr[p0 + n]
            pieces.append((row, np.diff(mat.plain_indptr[p0:p0 + n + 1]), mat.plain_cols[e0:e1], mat.plain_cids[e0:e1]))
            p0 += n
        pieces.sort(key=lambda p: p[0])
        counts = np.concatenate([np.zeros(0, np.int64)] + [p[1] for p in pieces])
        cols = np.concatenate([np.zeros(0, np.int64)] + [p[2].astype(np.int64) for p in pieces])
        cids = np.concatenate([np.zeros(0, np.uint32)] + [p[3].astype(np.uint32) for p in pieces])
        codes = np.where(cols < self.num_inputs, (cols << KIND_BITS) | INPUT,
                         ((cols - self.num_inputs) << KIND_BITS) | AUX)
        return counts, codes, cids


def build(cs: ConstraintSystem) -> PCE:
    """The PCE of a system that records constraints ("constraints" or "both" mode), from its
    templates as recorded (no flat expansion)."""
    recorded, table = cs.recording()
    ni, na = cs.num_inputs, cs.num_aux
    col_type = _INT_TYPES[ni + na >= 2**31]
    id_type = _ID_TYPES[len(table) > 1 << 16]
    tpls, plains, blocks, wires, segs = split_chunks([r.chunks for r in recorded], ni, id_type, cs.num_constraints)
    mats = {name: pce_matrix(t, p, col_type, id_type) for name, t, p in zip(MATRICES, tpls, plains)}
    tpl_rows = np.zeros(len(tpls[0]) + 1, np.int64)
    np.cumsum([len(body[0]) for body in tpls[0]], out=tpl_rows[1:])
    blocks = np.array(blocks, np.int64).reshape(-1, len(BLOCK_FIELDS))
    wire_cols = np.concatenate([np.zeros(0, np.int64)] + wires).astype(col_type)
    coeffs = table.montgomery()
    used_a, used_b = (_used(mats[name], blocks, tpl_rows, wire_cols, coeffs, ni + na) for name in ("a", "b"))
    pack = lambda x: np.packbits(x, bitorder="little")  # noqa: E731
    return PCE(ni, na, cs.num_constraints, coeffs, coeff_classes(table.values), tpl_rows, blocks, wire_cols,
               np.array(segs, np.int64).reshape(-1, 2), mats["a"], mats["b"], mats["c"], pack(used_a[ni:]),
               pack(used_b[:ni]), pack(used_b[ni:]))


def arrays_digest(arrays: dict[str, np.ndarray]) -> bytes:
    """SHA-256 over named arrays in order: each name, dtype, shape and C-order bytes."""
    h = hashlib.sha256(b"cuzk-pce-arrays-1")
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        h.update(json.dumps([name, arr.dtype.str, list(arr.shape)]).encode())
        h.update(arr.reshape(-1).view(np.uint8))
    return h.digest()


def coeff_classes(values: list[int]) -> np.ndarray:
    """(n,) uint8 class of each coefficient (integers in [1, r)): COEFF_ONE, COEFF_MINUS_ONE, COEFF_POW2
    (+-2^e, e >= 1), COEFF_SMALL (+-c with c < 2^64), COEFF_FULL."""
    out = np.empty(len(values), np.uint8)
    for i, v in enumerate(values):
        mag = min(v, R - v)
        out[i] = (COEFF_ONE if v == 1 else COEFF_MINUS_ONE if v == R - 1 else COEFF_POW2 if mag & (mag - 1) == 0
                  else COEFF_SMALL if mag < 2**64 else COEFF_FULL)
    return out


# ---------------------------------------------------------------- helpers

def _array_names() -> list[str]:
    names = ["sizes"]
    for f in fields(PCE)[3:]:
        names += [f"{f.name}_{g.name}" for g in fields(PceMatrix)] if f.name in MATRICES else [f.name]
    return names


def split_chunks(chunks: list[list], ni: int, id_type, num_constraints: int):
    """Walk the recorded chunks of A, B, C (templates and plain-row arrays, at the same rows in all
    three) into: per matrix the distinct templates' (counts, vars, cids) and the plain chunks'
    (counts, columns, cids); one BLOCK_FIELDS tuple per block; the wire tables (flat columns); the
    plain segments [first row, rows]."""
    if len({len(c) for c in chunks}) != 1:
        raise InputError("A, B and C were recorded in different chunks")
    tpls: list[list[tuple]] = [[] for _ in chunks]  # A, B, C (or a hint's two sides)
    plains: list[list[tuple]] = [[] for _ in chunks]
    blocks, wires, segs = [], [], []
    row = wire_off = 0
    for triple in zip(*chunks):
        if all(isinstance(t, Template) for t in triple):
            t0 = triple[0]
            if any((t.k, t.serial, t.rows, t.aux_base, t.in_base) != (t0.k, t0.serial, t0.rows, t0.aux_base, t0.in_base)
                   for t in triple) or t0.parent_serial != 0:
                raise InputError("A, B and C disagree on a batch template")
            body = [(t.counts, _template_vars(t, ni), t.cids.astype(id_type)) for t in triple]
            tpl = next((j for j in range(len(tpls[0])) if _same_rows(body, [lst[j] for lst in tpls])), len(tpls[0]))
            if tpl == len(tpls[0]):
                for lst, mat in zip(tpls, body):
                    lst.append(mat)
            table = columns(t0.tables, ni).reshape(-1, t0.k)
            if np.any(table < 0):
                raise InputError("a wire table of a top-level batch names a non-circuit variable")
            blocks.append((tpl, t0.k, row, ni + t0.aux_base, t0.aux_per, t0.in_base, t0.in_per, wire_off,
                           table.shape[0]))
            wires.append(table.reshape(-1))
            wire_off += table.size
            row += t0.rows
        elif not any(isinstance(t, Template) for t in triple):
            n = len(triple[0][0])
            if any(len(t[0]) != n for t in triple):
                raise InputError("A, B and C disagree on a chunk of plain rows")
            for lst, (counts, codes, cids) in zip(plains, triple):
                cols = columns(codes, ni)
                if np.any(cols < 0):
                    raise InputError("template codes left in top-level rows")
                lst.append((counts, cols, cids.astype(id_type)))
            if segs and segs[-1][0] + segs[-1][1] == row:
                segs[-1][1] += n
            elif n:
                segs.append([row, n])
            row += n
        else:
            raise InputError("A, B and C disagree on where a batch template lies")
    if row != num_constraints:
        raise InputError(f"recorded rows ({row}) != num_constraints ({num_constraints})")
    return tpls, plains, blocks, wires, segs


def pce_matrix(tpls: list[tuple], plains: list[tuple], col_type, id_type) -> PceMatrix:
    """One matrix from its templates' (counts, vars, cids) and plain chunks' (counts, cols, cids), as
    split_chunks gives them: CSR over the templates' rows one after the other (indptr int32 unless the
    terms need int64, variables int32 where they fit) and over the plain rows (indptr int64, columns
    col_type); coefficient ids id_type."""
    tnnz = sum(body[1].size for body in tpls)
    cat = lambda parts, dtype: np.concatenate([np.zeros(0, dtype)] + parts)  # noqa: E731
    return PceMatrix(_offsets([b[0] for b in tpls], _INT_TYPES[tnnz >= 2**31]),
                     _narrow(cat([b[1] for b in tpls], np.int64), 2**31), cat([b[2] for b in tpls], id_type),
                     _offsets([p[0] for p in plains], np.int64), cat([p[1] for p in plains], np.int64).astype(col_type),
                     cat([p[2] for p in plains], id_type))


def _used(mat: PceMatrix, blocks: np.ndarray, tpl_rows: np.ndarray, wire_cols: np.ndarray, coeffs: np.ndarray,
          ncols: int) -> np.ndarray:
    """(ncols,) bool: the columns some row of the matrix names with a non-zero (summed) coefficient."""
    ks = blocks[:, 1]
    jobs = np.stack([np.repeat(np.arange(ks.shape[0]), ks), np.arange(ks.sum()) - np.repeat(np.cumsum(ks) - ks, ks)],
                    axis=1).astype(np.int64)
    used = np.zeros(ncols, np.uint8)
    _mark_used(jobs, blocks, tpl_rows, mat.tpl_indptr, mat.tpl_vars, mat.tpl_cids, wire_cols, mat.plain_indptr,
               mat.plain_cols, mat.plain_cids, coeffs, max(_longest(mat.tpl_indptr), _longest(mat.plain_indptr)), used)
    return used.astype(bool)


def _same_rows(x: list[tuple], y: list[tuple]) -> bool:
    """Whether two templates' (counts, vars, cids) of A, B and C are equal."""
    return all(np.array_equal(p, q) for mx, my in zip(x, y) for p, q in zip(mx, my))


_UNPACKED = ("a_aux_density", "b_input_density", "b_aux_density")


def _unpack(bits: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(bits, count=n, bitorder="little").astype(bool)


def _expect(arr, dtypes, ndim: int, what: str) -> None:
    if not isinstance(arr, np.ndarray) or arr.dtype not in dtypes or arr.ndim != ndim:
        raise InputError(f"PCE {what} must be a {ndim}-d array of {'/'.join(np.dtype(d).name for d in dtypes)}, "
                         f"got {getattr(arr, 'dtype', type(arr).__name__)} {getattr(arr, 'shape', '')}")


def _bad_offsets(indptr: np.ndarray, end: int | None) -> bool:
    return (indptr.size == 0 or indptr[0] != 0 or bool(np.any(np.diff(indptr) < 0))
            or (end is not None and indptr[-1] != end))


def _out_of(arr: np.ndarray, n: int) -> bool:
    return arr.size > 0 and (int(arr.min()) < 0 or int(arr.max()) >= n)


def _offsets(counts: list[np.ndarray], dtype) -> np.ndarray:
    flat = np.concatenate([np.zeros(0, np.int64)] + counts)
    out = np.zeros(flat.shape[0] + 1, dtype)
    np.cumsum(flat, out=out[1:])
    return out


def _narrow(arr: np.ndarray, limit: int) -> np.ndarray:
    return arr.astype(np.int32) if arr.size == 0 or int(arr.max()) < limit else arr


def _longest(indptr: np.ndarray) -> int:
    return int(np.diff(indptr).max()) if indptr.shape[0] > 1 else 0


def _template_vars(tpl: Template, num_inputs: int) -> np.ndarray:
    """(nnz,) int64 template-local variables of a top-level template's block-space codes."""
    out = np.empty(tpl.codes.shape[0], np.int64)
    bad = _local_vars(tpl.codes, tpl.serial, num_inputs, out)
    if bad >= 0:
        raise InputError(f"a template row names variable code {int(tpl.codes[bad])}, outside its block and the circuit")
    return out


@njit(cache=True)
def _local_vars(codes, serial, num_inputs, out):
    """out[e] = (index << 2) | kind for block-space codes (kinds of cuzk.r1cs.lc); the first bad e, or -1."""
    for e in range(codes.shape[0]):
        c = codes[e]
        kind, index, s = c & 7, (c >> 3) & 0xFFFFFFFF, c >> 35
        if s == serial and kind == 3:  # LOCAL_AUX
            out[e] = (index << 2) | 1
        elif s == serial and kind == 2:  # LOCAL_INPUT
            out[e] = (index << 2) | 2
        elif s == serial and kind == 4:  # WIRE
            out[e] = (index << 2) | 3
        elif s == 0 and kind <= 1:  # INPUT / AUX: a fixed column
            out[e] = (index + (num_inputs if kind == 1 else 0)) << 2
        else:
            return e
    return -1


@njit(cache=True)
def _template_limits(tpl_rows, indptr, tvars, limits):
    """limits[t, kind] = max(limits[t, kind], 1 + the largest index of that kind in template t)."""
    for t in range(tpl_rows.shape[0] - 1):
        for e in range(indptr[tpl_rows[t]], indptr[tpl_rows[t + 1]]):
            v = np.int64(tvars[e])
            limits[t, v & 3] = max(limits[t, v & 3], (v >> 2) + 1)


@njit(cache=True)
def _mark_row(cols, ids, n, coeffs, used):
    """used[col] = 1 for the columns of one row (cols[:n], ids[:n]) whose summed coefficient is non-zero."""
    repeats = False
    if n <= 32:
        for x in range(1, n):
            for y in range(x):
                repeats |= cols[x] == cols[y]
    else:
        s = np.sort(cols[:n])
        repeats = bool(np.any(s[1:] == s[:-1]))
    if not repeats:
        for x in range(n):
            used[cols[x]] = 1
        return
    for x in range(n):  # sum each column's coefficients at its first term (rare: O(n^2))
        seen = False
        for y in range(x):
            seen |= cols[y] == cols[x]
        if seen:
            continue
        acc = limbs.FR_ZERO
        for y in range(x, n):
            if cols[y] == cols[x]:
                acc = limbs.fr_add(acc, limbs.fr_load(coeffs[ids[y]]))
        if not limbs.fr_is_zero(acc):
            used[cols[x]] = 1


@njit(parallel=True, cache=True)
def _mark_used(jobs, blocks, tpl_rows, indptr, tvars, tcids, wire_cols, pindptr, pcols, pcids, coeffs, longest, used):
    """used[col] = 1 for every column some row names with a non-zero (summed) coefficient; jobs are
    (block, instance) pairs. Parallel writes only ever store 1."""
    for j in prange(jobs.shape[0]):
        b, i = jobs[j, 0], jobs[j, 1]
        tpl, k = blocks[b, 0], blocks[b, 1]
        aux0, in0, wire_off = blocks[b, 3] + i * blocks[b, 4], blocks[b, 5] + i * blocks[b, 6], blocks[b, 7]
        cols = np.empty(longest, np.int64)
        ids = np.empty(longest, np.int64)
        for r in range(tpl_rows[tpl], tpl_rows[tpl + 1]):
            s = indptr[r]
            for e in range(s, indptr[r + 1]):
                v = np.int64(tvars[e])
                kind, index = v & 3, v >> 2
                if kind == 0:
                    cols[e - s] = index
                elif kind == 1:
                    cols[e - s] = aux0 + index
                elif kind == 2:
                    cols[e - s] = in0 + index
                else:
                    cols[e - s] = wire_cols[wire_off + index * k + i]
                ids[e - s] = tcids[e]
            _mark_row(cols, ids, indptr[r + 1] - s, coeffs, used)
    for p in prange(pindptr.shape[0] - 1):
        s, e = pindptr[p], pindptr[p + 1]
        cols = np.empty(e - s, np.int64)
        ids = np.empty(e - s, np.int64)
        for x in range(s, e):
            cols[x - s] = pcols[x]
            ids[x - s] = pcids[x]
        _mark_row(cols, ids, e - s, coeffs, used)
