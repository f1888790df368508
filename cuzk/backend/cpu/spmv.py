"""Sparse matrix times witness over Fr (the CPU backend's evaluate) and the row check a_r b_r = c_r
that follows it (first_unsatisfied).

Matrices are duck-typed CSRs (cuzk.backend.base.SparseMatrix; cuzk.r1cs.csr.CSR is one)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.backend.base import check_triple, check_witness
from cuzk.ff import limbs


@njit(parallel=True, cache=True)
def _spmv(indptr, indices, coeff_ids, coeffs, w, out):
    """out[r] = sum_e coeffs[coeff_ids[e]] * w[indices[e]] over row r; ids 0 / 1 are +1 / -1."""
    for r in prange(out.shape[0]):
        acc = limbs.FR_ZERO
        for e in range(indptr[r], indptr[r + 1]):
            x = limbs.fr_load(w[indices[e]])
            cid = coeff_ids[e]
            if cid == 0:
                acc = limbs.fr_add(acc, x)
            elif cid == 1:
                acc = limbs.fr_sub(acc, x)
            else:
                acc = limbs.fr_add(acc, limbs.fr_mul(limbs.fr_load(coeffs[cid]), x))
        limbs.fr_store(out[r], acc)


@njit(parallel=True, cache=True)
def _mismatches(a, b, c, bad):
    """bad[r] = (a[r] * b[r] != c[r]): Montgomery limbs are canonical, so equal values have equal limbs."""
    for r in prange(a.shape[0]):
        p = limbs.fr_mul(limbs.fr_load(a[r]), limbs.fr_load(b[r]))
        q = limbs.fr_load(c[r])
        bad[r] = p[0] != q[0] or p[1] != q[1] or p[2] != q[2] or p[3] != q[3]


def first_unsatisfied(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> int | None:
    """The smallest row r with a[r] b[r] != c[r] in Fr, or None."""
    check_triple(a, b, c)
    bad = np.empty(a.shape[0], dtype=np.bool_)
    _mismatches(*(np.ascontiguousarray(x) for x in (a, b, c)), bad)
    hits = np.flatnonzero(bad)
    return int(hits[0]) if hits.size else None


def evaluate(csr, witness: np.ndarray) -> np.ndarray:
    """(m, 4) Fr Montgomery M.w for an (m, n) R1CS matrix M and a (n, 4) Montgomery witness."""
    check_witness(csr, witness)
    out = np.empty((csr.shape[0], 4), dtype=np.uint64)
    _spmv(csr.indptr, csr.indices, csr.coeff_ids, csr.coeffs, np.ascontiguousarray(witness), out)
    return out
