"""The CUDA backend (CuPy): Pippenger MSM in G1/G2 (msm), NTT over Fr (ntt), the kernel loader
(loader) and the CUDA sources in kernels/ (package data). Imports without a GPU."""
from cuzk.backend.cuda.msm import CudaBackend, CudaUnavailableError, MsmInputError, PreparedBases, cuda_available

__all__ = ["CudaBackend", "CudaUnavailableError", "MsmInputError", "PreparedBases", "cuda_available"]
