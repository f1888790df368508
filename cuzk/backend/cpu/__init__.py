"""The CPU backend: numba Pippenger MSM and radix-2 NTT, the reference for every other backend."""
from __future__ import annotations

import numpy as np

from cuzk.ff import limbs
from cuzk.backend.cpu import msm as msm_cpu
from cuzk.backend.cpu import ntt as ntt_cpu
from cuzk.ff.fields import Fr


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

    def quotient(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        n, r = len(a), limbs.FR_MODULUS
        a, b, c = (ntt_cpu.coset_ntt(ntt_cpu.intt(x)) for x in (a, b, c))
        z_inv = Fr.from_ints([pow(pow(ntt_cpu.MULTIPLICATIVE_GENERATOR, n, r) - 1, -1, r)])[0]
        h = ntt_cpu.coset_intt(Fr.mul(Fr.sub(Fr.mul(a, b), c), z_inv))
        return np.ascontiguousarray(h[: n - 1])
