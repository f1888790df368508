"""Row storage while recording, template expansion, and the exported CSR matrices.

Rows are recorded as three parallel arrays: per-row term counts, variable codes (see lc.py) and
coefficient ids (see CoeffTable). A batch block's rows are kept as a template and expanded to K
instances with numpy (tile + offsets) only when the flat CSR is asked for.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
from numba import njit, prange

from cuzk.errors import InputError
from cuzk.r1cs.lc import (INDEX_MASK, KIND_BITS, KIND_MASK, LOCAL_AUX, LOCAL_INPUT, R,
                          WIRE, CoeffTable)


@dataclass(frozen=True)
class CSR:
    """An R1CS matrix in CSR form.

    indptr: (m + 1,) int64; indices: (nnz,) int32 (int64 when n >= 2^31), column = inputs first
    (0 = ONE) then aux at num_inputs + j, sorted within each row; coeff_ids: (nnz,) uint32 into
    coeffs, the (ncoeff, 4) uint64 Montgomery table shared by A, B and C (id 0 = 1, id 1 = -1).
    """

    indptr: np.ndarray
    indices: np.ndarray
    coeff_ids: np.ndarray
    coeffs: np.ndarray
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    def values(self) -> np.ndarray:
        """(nnz, 4) Montgomery coefficient of every non-zero."""
        return self.coeffs[self.coeff_ids]

    def to_dense_ints(self) -> list[list[int]]:
        """Dense integer matrix (small matrices only: tests and debugging)."""
        from cuzk.ff.fields import Fr

        table = Fr.to_ints(self.coeffs)
        dense = [[0] * self.shape[1] for _ in range(self.shape[0])]
        for r in range(self.shape[0]):
            for e in range(self.indptr[r], self.indptr[r + 1]):
                dense[r][int(self.indices[e])] = table[self.coeff_ids[e]]
        return dense


@njit(parallel=True, cache=True)
def _expand_codes(first, step, wire, tables, out):
    """out[i*t + e] = tables[wire[e], i] for wired terms, else first[e] + i*step[e] (t terms, k instances)."""
    t = first.shape[0]
    if t == 0:
        return
    for i in prange(out.shape[0] // t):
        for e in range(t):
            out[i * t + e] = tables[wire[e], i] if wire[e] >= 0 else first[e] + i * step[e]


@dataclass
class Template:
    """The rows of one batch block, instantiated K times (codes are in the block's own space)."""

    counts: np.ndarray
    codes: np.ndarray
    cids: np.ndarray
    serial: int
    k: int
    aux_base: int      # parent-space index of instance 0's first aux variable
    aux_per: int       # T: aux variables per instance
    in_base: int
    in_per: int
    tables: np.ndarray  # (W, K) int64 parent-space codes of the wired variables
    aux_kind: int       # parent's kind for aux/input: AUX/INPUT at top level, LOCAL_* when nested
    in_kind: int
    parent_serial: int

    @property
    def nnz(self) -> int:
        return self.k * int(self.codes.shape[0])

    @property
    def rows(self) -> int:
        return self.k * int(self.counts.shape[0])

    def expand(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, codes, cids) of the K instances one after the other, in parent-space codes."""
        k, codes = self.k, self.codes
        kind = codes & KIND_MASK
        rest = codes >> KIND_BITS
        index = rest & INDEX_MASK
        mine = (rest >> 32) == self.serial
        first, step = codes.copy(), np.zeros_like(codes)
        for local, base, per, pkind in ((LOCAL_AUX, self.aux_base, self.aux_per, self.aux_kind),
                                        (LOCAL_INPUT, self.in_base, self.in_per, self.in_kind)):
            sel = mine & (kind == local)
            first[sel] = (((self.parent_serial << 32) | (base + index[sel])) << KIND_BITS) | pkind
            step[sel] = per << KIND_BITS
        wire = np.where(mine & (kind == WIRE), index, -1)
        out = np.empty(k * codes.shape[0], dtype=np.int64)
        _expand_codes(first, step, wire, self.tables, out)
        return np.tile(self.counts, k), out, np.tile(self.cids, k)


class Rows:
    """Recorded rows of one matrix: single rows in Python lists, bulk rows and templates as chunks."""

    def __init__(self) -> None:
        self._pending: list[dict[int, int]] = []  # single rows: code -> coefficient
        self.chunks: list = []  # (counts, codes, cids) tuples or Templates
        self._table: CoeffTable | None = None

    def add(self, terms: dict[int, int], table: CoeffTable) -> None:
        self._pending.append(dict(terms))
        self._table = table

    def add_many(self, counts: np.ndarray, codes: np.ndarray, cids: np.ndarray) -> None:
        self.flush()
        self.chunks.append((counts, codes, cids))

    def add_template(self, tpl: Template) -> None:
        self.flush()
        self.chunks.append(tpl)

    def flush(self) -> None:
        """Turn the pending single rows into one array chunk."""
        if self._pending:
            rows, self._pending = self._pending, []
            counts = np.fromiter(map(len, rows), np.int64, len(rows))
            nnz = int(counts.sum())
            codes = np.fromiter(chain.from_iterable(rows), np.int64, nnz)
            coeffs = chain.from_iterable(r.values() for r in rows)
            cids = np.fromiter(map(self._table.intern, coeffs), np.uint32, nnz)
            self.chunks.append((counts, codes, cids))

    @property
    def nnz(self) -> int:
        return sum(map(len, self._pending)) + sum(c.nnz if isinstance(c, Template) else len(c[1]) for c in self.chunks)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, codes, cids) of every row recorded so far, templates expanded."""
        self.flush()
        parts = [c.expand() if isinstance(c, Template) else c for c in self.chunks]
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint32)
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def rows_from_spec(spec, n: int, table: CoeffTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts, codes, cids) of n rows given in bulk form (see ConstraintSystem.enforce_many).

    spec: None (n empty rows); (codes, coeffs) with codes (n, t) and coeffs (t,) or (n, t);
    or (indptr, codes, coeffs) in CSR form. Codes are variable codes; coefficients are integers
    (int64 or Python ints, taken mod r); zero coefficients are dropped.
    """
    if spec is None:
        return np.zeros(n, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint32)
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise InputError("bulk rows are None, (codes, coeffs) or (indptr, codes, coeffs)")
    if len(spec) == 2:
        codes = _codes(spec[0])
        if codes.ndim != 2 or codes.shape[0] != n:
            raise InputError(f"codes must have shape ({n}, t), got {codes.shape}")
        coeffs = np.asarray(spec[1])
        counts = np.full(n, codes.shape[1], dtype=np.int64)
        if coeffs.ndim == 1 and coeffs.shape[0] == codes.shape[1]:  # one coefficient per column
            keep = (coeffs % R != 0) if coeffs.dtype == object else (coeffs != 0)
            ids = table.intern_array(coeffs[keep])
            codes = codes[:, keep]
            counts[:] = codes.shape[1]
            return counts, np.ascontiguousarray(codes).reshape(-1), np.tile(ids, n)
        if coeffs.shape != codes.shape:
            raise InputError(f"coeffs shape {coeffs.shape} does not match codes {codes.shape}")
        codes, coeffs = codes.reshape(-1), coeffs.reshape(-1)
    else:
        indptr = np.asarray(spec[0], dtype=np.int64)
        codes, coeffs = _codes(spec[1]).reshape(-1), np.asarray(spec[2]).reshape(-1)
        if indptr.shape != (n + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0) \
                or indptr[-1] != codes.shape[0] or coeffs.shape != codes.shape:
            raise InputError(f"bad CSR rows: indptr must be ({n + 1},) non-decreasing from 0 to len(codes)")
        counts = np.diff(indptr)
    nonzero = (coeffs % R != 0) if coeffs.dtype == object else (coeffs != 0)
    if not nonzero.all():
        row_of = np.repeat(np.arange(n), counts)
        counts = np.bincount(row_of[nonzero], minlength=n).astype(np.int64)
        codes, coeffs = codes[nonzero], coeffs[nonzero]
    return counts, np.ascontiguousarray(codes), table.intern_array(coeffs)


def _codes(x) -> np.ndarray:
    arr = np.asarray(x)
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"variable codes must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


@njit(parallel=True, cache=True)
def _place_rows(indptr, codes, cids, num_inputs, cols, out_cids, flags):
    """Final column of every term (inputs, then aux), terms sorted by column within each row.

    flags[r]: 1 when row r repeats a column, 2 when it holds a code that is not INPUT / AUX.
    """
    for r in prange(indptr.shape[0] - 1):
        s, e = indptr[r], indptr[r + 1]
        flag = 0
        for i in range(s, e):
            c = codes[i]
            kind = c & 7
            col = c >> 3
            if kind == 1:
                col += num_inputs
            elif kind != 0:
                flag = 2
            cols[i] = col
            out_cids[i] = cids[i]
        if e - s > 32:  # long rows: a real sort
            order = np.argsort(cols[s:e], kind="mergesort")
            cols[s:e] = cols[s:e][order]
            out_cids[s:e] = out_cids[s:e][order]
        else:  # short rows (almost all): insertion sort
            for i in range(s + 1, e):
                col, cid, j = cols[i], out_cids[i], i - 1
                while j >= s and cols[j] > col:
                    cols[j + 1] = cols[j]
                    out_cids[j + 1] = out_cids[j]
                    j -= 1
                cols[j + 1] = col
                out_cids[j + 1] = cid
        for i in range(s + 1, e):
            if cols[i] == cols[i - 1] and flag == 0:
                flag = 1
        flags[r] = flag


def finalize(counts: np.ndarray, codes: np.ndarray, cids: np.ndarray, num_inputs: int, num_aux: int,
             table: CoeffTable, coeffs: np.ndarray) -> CSR:
    """Flat CSR with final columns (inputs, then aux), rows sorted by column, duplicates merged."""
    m, ncols = counts.shape[0], num_inputs + num_aux
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    cols = np.empty(codes.shape[0], dtype=np.int32 if ncols < 2**31 else np.int64)
    out_cids = np.empty(codes.shape[0], dtype=np.uint32)
    flags = np.empty(m, dtype=np.uint8)
    _place_rows(indptr, codes, cids, num_inputs, cols, out_cids, flags)
    if np.any(flags == 2):
        raise InputError("template codes left in top-level rows")
    if np.any(flags == 1):
        counts, cols, out_cids = _merge_duplicates(indptr, cols, out_cids, table)
        coeffs = table.montgomery()
        np.cumsum(counts, out=indptr[1:])
    return CSR(indptr, cols, out_cids, coeffs, (m, ncols))


def _merge_duplicates(indptr, cols, cids, table: CoeffTable):
    """Sum the coefficients of repeated columns within a row (rare: Python over the groups)."""
    rows = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    starts = np.flatnonzero(np.concatenate(([True], (np.diff(cols) != 0) | (np.diff(rows) != 0))))
    ends = np.append(starts[1:], cols.shape[0])
    new = cids[starts].copy()
    drop = np.iinfo(np.uint32).max
    for g in np.flatnonzero(ends - starts > 1):
        total = sum(table.values[c] for c in cids[starts[g]:ends[g]]) % R
        new[g] = table.intern(total) if total else drop
    keep = new != drop
    counts = np.bincount(rows[starts][keep], minlength=indptr.shape[0] - 1).astype(np.int64)
    return counts, cols[starts][keep], new[keep]
