"""The CUDA backend (CuPy): CudaBackend (backend) over the device's properties (device), its memory
budget, residency and staging (memory), Pippenger MSM in G1/G2 (msm), NTT over Fr (ntt), the R1CS
evaluation from flat CSR (spmv) and from the template form with the a.b = c check (pce), the kernel
loader (loader) and the CUDA sources in kernels/ (package data).
Imports without a GPU."""
from cuzk.backend.cuda.backend import CudaBackend
from cuzk.backend.cuda.device import CudaUnavailableError, cuda_available
from cuzk.backend.cuda.memory import VramBudget
from cuzk.backend.cuda.msm import MsmInputError, MsmPlan, PreparedBases

__all__ = ["CudaBackend", "CudaUnavailableError", "MsmInputError", "MsmPlan", "PreparedBases", "VramBudget",
           "cuda_available"]
