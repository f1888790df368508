"""The R1CS-to-QAP reduction: where the rows of A, B, C sit in the domain, what the prover pads, what
the setup adds to u_i(tau), and what the H query spans.

bellperson's (`BellpersonQap`: cuzk's prover and parameters, Filecoin's): an R1CS of m constraints
over w = (x_0 = ONE, .., x_(k-1), aux) gets k more rows, the input constraints x_i * 0 = 0
(A[m + i, i] = 1, B = C = 0 there). They hold for every w, and they give each u_i, i < k, a row of
its own: the inputs' u_i are linearly independent, as soundness needs (so that no relation among
the IC points lets one proof verify for other public inputs), and every input is dense in A. Row r
sits at w^r of H = <w>, n = 2^ceil(log2(m + k)) points (cuzk.ff.domain.QapRows); rows m + k .. n - 1
are zero. With L_r the Lagrange basis of H and Z(X) = X^n - 1:

    prover  a = (A w, x, 0..), b = (B w, 0..), c = (C w, 0..) over H                    `padded`
            H(X) = (A(X) B(X) - C(X)) / Z(X): AB - C vanishes on H, degree <= 2n - 2, so H has
            n - 1 coefficients
    setup   u_i(tau) = sum_(r<m) A[r, i] L_r(tau) + [i < k] L_(m+i)(tau)                  `add_input_term`
            H query [tau^j Z(tau) / delta] G1, j < n - 1, against H's coefficients          `h_query`

snarkjs's (`SnarkjsQap`, for cuzk.interop.snarkjs's .zkey): the same rows (a .zkey lists A's input
rows), on snarkjs's roots of the same size (Domain.snarkjs). Its prover evaluates P = AB - C on the
odd coset of the 2n-domain, x_j = w_2n w_n^j, and never divides by Z: P (degree < 2n) vanishes on the
even points, so sum_j P(x_j) L'_(2j+1)(tau) = P(tau) = H(tau) Z(tau) for the 2n-domain's Lagrange
basis L', and its H query is [L'_(2j+1)(tau) / delta] G1, j < n.
"""
from __future__ import annotations

import numpy as np

from cuzk.errors import SetupError
from cuzk.ff.domain import Domain, QapRows, powers
from cuzk.ff.fields import Fr
from cuzk.util.arrays import array_module


class BellpersonQap(QapRows):
    """bellperson's reduction for m = `constraints` constraints and k = `inputs` inputs."""

    def padded(self, v: np.ndarray, inputs: np.ndarray | None = None) -> np.ndarray:
        """One of a, b, c over the domain from its evaluation v = A w, B w or C w ((m, 4) Fr, host or
        device): the constraint rows, the input rows (`inputs` x ((k, 4)) for a; zeros for b and c),
        then zeros."""
        out = array_module(v).zeros((self.domain.n, 4), np.uint64)
        out[:self.constraints] = v
        if inputs is not None:
            out[self.input_rows] = inputs
        return out

    def lagrange(self, tau: int) -> np.ndarray:
        """(m + k, 4) L_r(tau) for every row."""
        return self.domain.lagrange_at(tau, self.rows)

    def add_input_term(self, u: np.ndarray, lagrange: np.ndarray) -> None:
        """u_i += L_(m+i)(tau) for i < k, in place: u (num_columns, 4) from sum_(r<m) A[r, i] L_r(tau)
        to u_i(tau); `lagrange` from self.lagrange(tau)."""
        u[:self.inputs] = Fr.add(u[:self.inputs], lagrange[self.input_rows])

    def h_query(self, tau: int) -> np.ndarray:
        """(n - 1, 4) H query scalars tau^j Z(tau) (before 1 / delta)."""
        return Fr.mul(powers(tau, self.h_len), Fr.const(self.domain.vanishing(tau)))


class SnarkjsQap(BellpersonQap):
    """snarkjs's reduction: bellperson's rows on snarkjs's roots, an H query of n points."""

    @property
    def domain(self) -> Domain:
        """Domain.snarkjs of bellperson's size."""
        return Domain.snarkjs(super().domain.log_n)

    @property
    def h_len(self) -> int:
        return self.domain.n

    def h_query(self, tau: int) -> np.ndarray:
        """(n, 4) L'_(2j+1)(tau); SetupError when tau is a point of the 2n-domain."""
        double = Domain.snarkjs(self.domain.log_n + 1)
        if double.vanishing(tau) == 0:
            raise SetupError("tau hit a point of the evaluation domain: run setup again")
        return double.lagrange_at(tau, self.h_len, start=1, step=2)
