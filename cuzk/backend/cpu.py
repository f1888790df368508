"""The CPU backend: numba Pippenger MSM and radix-2 NTT, the reference for every other backend."""
from __future__ import annotations

import numpy as np

from cuzk.backend import msm_cpu, ntt_cpu


class CpuBackend:
    name = "cpu"

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return msm_cpu.msm_g1(bases, scalars)

    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return msm_cpu.msm_g2(bases, scalars)

    def ntt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.ntt(values)

    def intt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.intt(values)

    def coset_ntt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.coset_ntt(values)

    def coset_intt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.coset_intt(values)
