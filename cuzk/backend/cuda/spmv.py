"""Sparse matrix times witness over Fr on the GPU (kernels/spmv.cu): the R1CS evaluation a = A w.

The witness and the coefficient table go to the device once per call; the matrix goes in chunks of
at most CHUNK_ROWS rows and CHUNK_NNZ non-zeros (a wider row gets a chunk of its own), so one call
needs at most
    32 cols + 32 ncoeff + max(CHUNK_NNZ, widest row) (index bytes + 4) + (CHUNK_ROWS + 1) 40  bytes
of device memory (witness, coefficients, indices and ids, row pointers and results).
The matrix is the coefficient-id CSR of cuzk.backend.base.SparseMatrix. CuPy is imported lazily.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuzk.backend.base import SparseMatrix, check_witness
from cuzk.backend.cuda import loader
from cuzk.backend.cuda.device import cupy

CHUNK_NNZ = 1 << 25
CHUNK_ROWS = 1 << 22
_THREADS = 256


def chunks(indptr: np.ndarray, chunk_nnz: int = CHUNK_NNZ, chunk_rows: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """Row ranges [r0, r1) covering every row in order, each of at most chunk_rows rows and chunk_nnz
    non-zeros, except a single row with more non-zeros."""
    rows = len(indptr) - 1
    out, r0 = [], 0
    while r0 < rows:
        r1 = int(np.searchsorted(indptr, indptr[r0] + chunk_nnz, side="right")) - 1
        r1 = min(rows, r0 + chunk_rows, max(r1, r0 + 1))
        out.append((r0, r1))
        r0 = r1
    return out


def device_bytes(matrix: SparseMatrix) -> int:
    """Upper bound on the device bytes of one evaluate call (see the module docstring)."""
    rows, cols = matrix.shape
    widest = int(np.diff(matrix.indptr).max()) if rows else 0
    nnz = min(max(CHUNK_NNZ, widest), int(matrix.indptr[-1]))
    return (32 * cols + 32 * len(matrix.coeffs) + nnz * (matrix.indices.dtype.itemsize + 4)
            + (min(rows, CHUNK_ROWS) + 1) * 40)


def evaluate(matrix: SparseMatrix, witness: np.ndarray, reserve: Callable[[int, str], None]) -> np.ndarray:
    """(rows, 4) Fr M w, computed on the current device. reserve(bytes, what) is called first with
    device_bytes(matrix), to make room under the VRAM budget (or raise)."""
    check_witness(matrix, witness)
    rows = matrix.shape[0]
    out = np.empty((rows, 4), dtype=np.uint64)
    if rows == 0:
        return out
    reserve(device_bytes(matrix), f"evaluating a {rows} x {matrix.shape[1]} matrix ({int(matrix.indptr[-1])} "
                                  "non-zeros)")
    cp = cupy()
    indices = np.asarray(matrix.indices)
    kernel = loader.function("fr_spmv_i64" if indices.dtype.itemsize == 8 else "fr_spmv_i32")
    w = cp.asarray(np.ascontiguousarray(witness))
    coeffs = cp.asarray(np.ascontiguousarray(matrix.coeffs))
    indptr = np.asarray(matrix.indptr, dtype=np.int64)
    for r0, r1 in chunks(indptr):
        e0, e1 = int(indptr[r0]), int(indptr[r1])
        ptr = cp.asarray((indptr[r0: r1 + 1] - e0).astype(np.uint64))
        idx = cp.asarray(np.ascontiguousarray(indices[e0:e1]))
        ids = cp.asarray(np.ascontiguousarray(matrix.coeff_ids[e0:e1], dtype=np.uint32))
        part = cp.empty((r1 - r0, 4), dtype=cp.uint64)
        kernel((-(-(r1 - r0) // _THREADS),), (_THREADS,), (ptr, idx, ids, coeffs, w, part, np.uint64(r1 - r0)))
        out[r0:r1] = cp.asnumpy(part)
    return out
