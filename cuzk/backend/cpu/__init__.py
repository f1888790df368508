"""The CPU backend: numba SpMV (flat and template form), Pippenger MSM and radix-2 NTT, the reference
for every other backend."""
from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np

from cuzk.backend.base import Bases, SparseMatrix, TemplateCircuit, WitnessProgram
from cuzk.backend.cpu import msm as msm_cpu
from cuzk.backend.cpu import ntt as ntt_cpu
from cuzk.backend.cpu import pce as pce_cpu
from cuzk.backend.cpu import spmv
from cuzk.backend.cpu import witness as witness_cpu
from cuzk.ff import limbs
from cuzk.ff.domain import Domain
from cuzk.ff.fields import Fr


class CpuBackend:
    """cuzk.backend.base.Backend on the CPU. Bases need no preparation (prepare returns the array)
    and the sparse MSMs take the dense path."""

    name = "cpu"
    device = None  # no device ordinal: arrays live in host memory

    # ---- device placement: nothing to place on a host backend --------------------------------------
    def device_scope(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def free_bytes(self) -> None:
        return None

    def memory_stats(self) -> dict:
        return {}

    def has_room(self, nbytes: int) -> bool:
        return True

    def asarray(self, array) -> np.ndarray:
        return np.asarray(array)

    def zeros(self, shape, dtype) -> np.ndarray:
        return np.zeros(shape, dtype)

    def keep(self, g1, g2, pce=None, program=None) -> None:
        """Nothing to prepare ahead: the CPU MSMs read the bases as they are."""

    def plan_vram(self, circuit, vectors, witness_batch: int) -> None:
        """No device, no plan."""

    def reserve_beside_tables(self, nbytes: int, msm_points: int = 0) -> None:
        """No tables, no budget to keep room in."""

    def evaluate(self, matrix: SparseMatrix, witness: np.ndarray) -> np.ndarray:
        return spmv.evaluate(matrix, witness)

    def evaluate_pce(self, pce: TemplateCircuit, witness: np.ndarray,
                     matrices: Sequence[int] = (0, 1, 2)) -> tuple[np.ndarray, ...]:
        return pce_cpu.evaluate_pce(pce, witness, matrices)

    def run_witness_program(self, pce: TemplateCircuit, program: WitnessProgram, w: np.ndarray) -> None:
        witness_cpu.run_program(pce, program, w)

    def first_unsatisfied(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> int | None:
        return spmv.first_unsatisfied(a, b, c)

    def msm_g1(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        return msm_cpu.msm_g1(bases, scalars)

    def msm_g2(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        return msm_cpu.msm_g2(bases, scalars)

    def msm_g1_sparse(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        return msm_cpu.msm_g1(bases, scalars)

    def msm_g2_sparse(self, bases: Bases, scalars: np.ndarray) -> np.ndarray:
        return msm_cpu.msm_g2(bases, scalars)

    def msm_sets(self, bases: Bases, scalar_sets: Sequence[np.ndarray], group: str, sparse: bool) -> list[np.ndarray]:
        msm = getattr(self, f"msm_{group}_sparse" if sparse else f"msm_{group}")
        return [msm(bases, scalars) for scalars in scalar_sets]

    def prepare_bases_g1(self, bases: np.ndarray) -> Bases:
        return bases

    def prepare_bases_g2(self, bases: np.ndarray) -> Bases:
        return bases

    def ntt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.ntt(values)

    def intt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.intt(values)

    def coset_ntt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.coset_ntt(values)

    def coset_intt(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.coset_intt(values)

    def to_coset(self, values: np.ndarray) -> np.ndarray:
        return ntt_cpu.coset_ntt(ntt_cpu.intt(values, out=values), out=values)

    def mul_assign(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        limbs.fr_mul_arr(a, b, a)
        return a

    def quotient_coefficients(self, ab: np.ndarray, c: np.ndarray) -> np.ndarray:
        n = len(ab)
        limbs.fr_sub_arr(ab, c, c)
        c[...] = Fr.mul(c, Fr.const(Domain(n.bit_length() - 1).coset_vanishing_inv))
        return ntt_cpu.coset_intt(c, out=c)[: n - 1]

    def offload(self, values: np.ndarray) -> np.ndarray:
        return values
