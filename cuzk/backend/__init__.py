"""One compute interface, two implementations: `cpu` (numba, the reference) and `cuda` (CuPy).

Arrays follow cuzk.ff.fields: Fr scalars (n, 4), G1 affine points (n, 2, 6), G2 affine (n, 2, 2, 6),
all uint64 Montgomery limbs, the identity stored as zeros. MSMs return one affine point.
"""
from __future__ import annotations

import functools
from typing import Protocol

import numpy as np

from cuzk.errors import BackendUnavailableError, InputError


class Backend(Protocol):
    name: str

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...
    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...
    def ntt(self, values: np.ndarray) -> np.ndarray: ...
    def intt(self, values: np.ndarray) -> np.ndarray: ...
    def coset_ntt(self, values: np.ndarray) -> np.ndarray: ...
    def coset_intt(self, values: np.ndarray) -> np.ndarray: ...

    def quotient(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Groth16's H = (A B - C) / Z, coefficients 0 .. n-2, from evaluations over the domain.

        A, B, C interpolate a, b, c over the domain <w> (inverse NTT). On the coset g<w> they are
        evaluated by a coset NTT and Z(g w^j) = g^n - 1 is one non-zero constant, so the division
        is pointwise; an inverse coset NTT returns H's coefficients (deg H <= n - 2).
        """
        ...


def get_backend(name: str = "auto") -> Backend:
    """The backend called `name`: "cpu", "cuda", or "auto" (CUDA when a GPU is usable, else CPU)."""
    if name == "cpu":
        from cuzk.backend.cpu import CpuBackend

        return CpuBackend()
    if name in ("cuda", "auto"):
        from cuzk.backend import cuda

        if cuda.cuda_available():
            return _cuda_backend()
        if name == "cuda":
            raise BackendUnavailableError("the cuda backend needs cupy and a CUDA GPU; neither was found")
        return get_backend("cpu")
    raise InputError(f"unknown backend {name!r}: choose cpu, cuda or auto")


@functools.cache
def _cuda_backend() -> Backend:
    """One CUDA backend per process, so bases it keeps on the GPU are shared by every caller."""
    from cuzk.backend.cuda import CudaBackend

    return CudaBackend()
