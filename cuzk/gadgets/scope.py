"""What gadgets need from a scope (a ConstraintSystem or a Batch block), in bulk.

A scope stands for `scope.total` instances (1 for a ConstraintSystem, k times the enclosing block's
for a Batch). It records rows when `scope.record`, holds values when `scope.has_values`, and lets
gadgets stamp recorded calls when `scope.replay` (cuzk.gadgets.replay). Gadgets allocate many
variables at once and record many rows at once; in witness mode rows are only counted, so the specs of
the rows are given lazily. Linear combinations of many rows are (codes (m, t), coeffs (m, t)) int64
arrays, or for coefficients beyond int64, CSR (indptr, codes, object coeffs).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuzk.errors import SynthesisError
from cuzk.ff.fields import Fr
from cuzk.r1cs import Batch, ConstraintSystem

ONE_CODE = 0
ONE_SPEC = (np.array([[ONE_CODE]]), np.array([[1]]))  # one row holding the constant 1 (ONE)
CAPACITY = Fr.modulus.bit_length() - 1  # Fr::CAPACITY, bits that always fit in one element: 254
FR_BITS = Fr.from_ints([0, 1])  # Montgomery 0 and 1, indexed by a bit

RowSpecs = Callable[[], tuple]  # () -> (a, b, c) bulk specs, each None for an empty side


def alloc_codes(scope, n: int, values: np.ndarray | None = None, inputs: bool = False,
                trusted: bool = False) -> np.ndarray:
    """n new aux (or input) variables in order; values: (total, n, 4) Montgomery Fr when the scope has
    values (trusted: values built by a gadget, canonical by construction, not re-checked).
    Returns their (n,) int64 codes."""
    if n == 0:
        return np.zeros(0, np.int64)
    if scope.has_values:
        if values is None:
            raise SynthesisError("witness mode needs values for every allocation")
        if values.shape != (scope.total, n, 4):
            raise SynthesisError(f"expected values of shape {(scope.total, n, 4)}, got {values.shape}")
    if isinstance(scope, ConstraintSystem):
        arg = values.reshape(n, 4) if scope.has_values else n
        return scope.alloc_input_many(arg) if inputs else scope.alloc_many(arg)
    if not isinstance(scope, Batch):
        raise SynthesisError(f"not a scope: {type(scope).__name__}")
    if inputs:
        vals = values if scope.has_values else None
        return np.array([scope.alloc_input(None if vals is None else vals[:, j]).code for j in range(n)],
                        dtype=np.int64)
    if trusted:
        return scope.alloc_codes(n, values if scope.has_values else None)
    return np.array([v.code for v in scope.alloc_many(n, values if scope.has_values else None)], dtype=np.int64)


def alloc_bits(scope, vals: np.ndarray | None, n: int) -> np.ndarray:
    """n variables whose values are bits ((total, n) bool); no constraints."""
    return alloc_codes(scope, n, FR_BITS[vals.view(np.uint8)] if scope.has_values else None, trusted=True)


def enforce(scope, n: int, rows: RowSpecs) -> None:
    """n rows A * B = C; rows() gives their (a, b, c) bulk specs (see ConstraintSystem.enforce_many)
    and is called only when the scope records (in witness mode rows are only counted)."""
    if n == 0:
        return
    if scope.record:
        scope.enforce_many(*rows(), n)
    else:
        scope.enforce_many(None, None, None, n)


def merge(codes: np.ndarray, coeffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows (m, t) with repeated codes summed into one term (zeros are dropped when recorded)."""
    if codes.shape[1] < 2:
        return codes, coeffs
    order = np.argsort(codes, axis=1, kind="stable")
    codes = np.take_along_axis(codes, order, 1)
    coeffs = np.take_along_axis(coeffs, order, 1).copy()
    for j in range(codes.shape[1] - 1, 0, -1):
        same = codes[:, j] == codes[:, j - 1]
        if same.any():
            coeffs[same, j - 1] += coeffs[same, j]
            coeffs[same, j] = 0
    return codes, coeffs


def lc_sum(*parts) -> tuple[np.ndarray, np.ndarray]:
    """Sum of LC parts, each (codes (m, t), coeffs (m, t)) or (codes (m,), coeff scalar or (m,))."""
    cs, ks = [], []
    for codes, coeffs in parts:
        codes = np.asarray(codes, dtype=np.int64)
        if codes.ndim == 1:
            codes = codes[:, None]
            coeffs = np.broadcast_to(np.asarray(coeffs, dtype=np.int64).reshape(-1, 1)
                                     if np.ndim(coeffs) else np.int64(coeffs), codes.shape)
        cs.append(codes)
        ks.append(np.broadcast_to(np.asarray(coeffs, dtype=np.int64), codes.shape))
    return merge(np.concatenate(cs, axis=1), np.concatenate(ks, axis=1))


def single_row(terms: dict[int, int]):
    """A one-row CSR spec from a {code: int coefficient} dict (any size of coefficient)."""
    codes = np.fromiter(terms.keys(), dtype=np.int64, count=len(terms))
    coeffs = np.empty(len(terms), dtype=object)
    coeffs[:] = list(terms.values())
    return np.array([0, len(terms)]), codes, coeffs
