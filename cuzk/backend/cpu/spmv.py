"""Sparse matrix times witness over Fr (the CPU backend's evaluate).

Matrices are duck-typed CSRs (cuzk.backend.base.SparseMatrix; cuzk.r1cs.csr.CSR is one)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.backend.base import check_witness
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



def evaluate(csr, witness: np.ndarray) -> np.ndarray:
    """(m, 4) Fr Montgomery M.w for an (m, n) R1CS matrix M and a (n, 4) Montgomery witness."""
    check_witness(csr, witness)
    out = np.empty((csr.shape[0], 4), dtype=np.uint64)
    _spmv(csr.indptr, csr.indices, csr.coeff_ids, csr.coeffs, np.ascontiguousarray(witness), out)
    return out
