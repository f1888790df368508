"""Groth16 keys in bellperson's layout: the verifying key and the prover's parameters.

Points are affine uint64 Montgomery arrays (cuzk.ec.curves): G1 (2, 6), G2 (2, 2, 6); vectors of them
(n, 2, 6) / (n, 2, 2, 6). For a circuit with inputs x_0 = 1, ..., x_{k-1}, aux w_j, QAP polynomials
u_i, v_i, w_i, domain size n and Z(X) = X^n - 1:
    ic_i  = [(beta u_i(tau) + alpha v_i(tau) + w_i(tau)) / gamma] G1        for every input
    l_j   = [(beta u_j(tau) + alpha v_j(tau) + w_j(tau)) / delta] G1        for every aux
    h_i   = [tau^i Z(tau) / delta] G1                                        for i < n - 1
    a     = [u_i(tau)] G1,  b_g1 = [v_i(tau)] G1,  b_g2 = [v_i(tau)] G2     dense variables only
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_VK_FIELDS = ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2", "ic")
PARAMS_VECTORS = ("h", "l", "a", "b_g1", "b_g2")


@dataclass(frozen=True, eq=False)
class VerifyingKey:
    alpha_g1: np.ndarray
    beta_g1: np.ndarray
    beta_g2: np.ndarray
    gamma_g2: np.ndarray
    delta_g1: np.ndarray
    delta_g2: np.ndarray
    ic: np.ndarray

    @property
    def num_inputs(self) -> int:
        """Public inputs including ONE (so a proof takes num_inputs - 1 public values)."""
        return len(self.ic)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VerifyingKey) and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in _VK_FIELDS)


class Parameters:
    """The proving key: vk plus the query vectors h, l, a, b_g1, b_g2 (see the module docstring).

    Vectors are numpy arrays here; `cuzk.groth16.params.MappedParameters` offers the same attributes,
    each read from a bellperson .params file on first use.
    """

    def __init__(self, vk: VerifyingKey, h: np.ndarray, l: np.ndarray, a: np.ndarray,
                 b_g1: np.ndarray, b_g2: np.ndarray) -> None:
        self.vk, self.h, self.l, self.a, self.b_g1, self.b_g2 = vk, h, l, a, b_g1, b_g2

    def lengths(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in PARAMS_VECTORS}

    def __eq__(self, other: object) -> bool:
        return (hasattr(other, "vk") and self.vk == other.vk
                and all(np.array_equal(getattr(self, f), getattr(other, f)) for f in PARAMS_VECTORS))
