"""The satisfaction check of an R1CS through a backend's evaluation step:
(A w)_i * (B w)_i == (C w)_i for every row i (Montgomery limbs are canonical, so equal values have equal limbs)."""
from __future__ import annotations

import numpy as np

from cuzk.backend import Backend, get_backend


def evaluate(matrix, witness: np.ndarray, backend: Backend | None = None) -> np.ndarray:
    """(m, 4) Montgomery M w for an (m, n) coefficient-id CSR matrix (CPU backend unless one is given)."""
    return np.asarray((backend or get_backend("cpu")).evaluate(matrix, witness))


def first_unsatisfied(a, b, c, witness: np.ndarray, backend: Backend | None = None) -> int | None:
    """Index of the first row with (A w)(B w) != C w, or None when the witness satisfies every row."""
    backend = backend or get_backend("cpu")
    return backend.first_unsatisfied(*(evaluate(m, witness, backend) for m in (a, b, c)))
