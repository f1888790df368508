"""Evaluation domains of Fr: a subgroup of 2^k-th roots of unity and a coset of it.

r - 1 = 2^32 t with t odd (TWO_ADICITY = 32). For a quadratic non-residue g, w_n = g^((r-1)/n) has
order exactly n = 2^k <= 2^32 (as g^((r-1)/2) = -1), and w_n^2 = w_(n/2): one generator fixes the
whole tower of roots. A `Domain` is
    H = {w^j : j < n},  w = w_n,  Z(X) = prod_j (X - w^j) = X^n - 1,
and the coset sH = {s w^j} for a shift s with s^n != 1, so that sH misses H and Z is the non-zero
constant s^n - 1 on it (the quotient H = (AB - C) / Z is computed there).

Two conventions are in use:
- bellperson / ff (Filecoin's parameters, cuzk's prover and both NTT backends): g = 7, ff's
  `Fr::MULTIPLICATIVE_GENERATOR`, and the coset shift s = 7 (`Domain.for_size`, `Domain(log_n)`);
- snarkjs / ffjavascript: g = 5, Fr's smallest quadratic non-residue, and the odd coset
  s = w_2n: sH holds the points of the 2n-domain that H lacks, s^n = -1 (`Domain.snarkjs`).
The same k puts constraint j at w^j in both, but the two w differ, so keys are not interchangeable.

`QapRows` is the row arithmetic of bellperson's R1CS-to-QAP reduction (m constraint rows, then k
input rows, on Domain.for_size(m + k)), kept here, below the backends, so that the GPU setup shares
it with cuzk.groth16.qap, which states the reduction's math.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr

TWO_ADICITY = 32
MULTIPLICATIVE_GENERATOR = 7
SNARKJS_GENERATOR = 5
_R = Fr.modulus


@dataclass(frozen=True)
class Domain:
    """H = <w_n>, n = 2^log_n, w_n = generator^((r-1)/n), with the coset shift * H."""

    log_n: int
    generator: int = MULTIPLICATIVE_GENERATOR
    shift: int = MULTIPLICATIVE_GENERATOR
    n: int = field(init=False, repr=False)
    root: int = field(init=False, repr=False)  # w_n
    root_inv: int = field(init=False, repr=False)
    n_inv: int = field(init=False, repr=False)
    shift_inv: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.log_n <= TWO_ADICITY:
            raise InputError(f"log_n must be in [0, {TWO_ADICITY}], got {self.log_n}")
        if pow(self.generator, (_R - 1) // 2, _R) != _R - 1:
            raise InputError(f"{self.generator} is a square in Fr: its powers miss the primitive roots")
        n = 1 << self.log_n
        if self.shift % _R == 0 or pow(self.shift, n, _R) == 1:
            raise InputError(f"coset shift {self.shift} is zero or a point of the 2^{self.log_n} domain")
        root = pow(self.generator, (_R - 1) >> self.log_n, _R)
        for name, value in (("n", n), ("root", root), ("root_inv", pow(root, -1, _R)),
                            ("n_inv", pow(n, -1, _R)), ("shift_inv", pow(self.shift, -1, _R))):
            object.__setattr__(self, name, value)

    @classmethod
    def for_size(cls, m: int) -> Domain:
        """bellperson's domain for m points: the smallest n = 2^k >= m (1 for m <= 1); InputError
        beyond 2^32."""
        if m < 0:
            raise InputError(f"domain size for a negative length {m}")
        log_n = max(0, m - 1).bit_length()
        if log_n > TWO_ADICITY:
            raise InputError(f"{m} elements exceed the largest Fr domain, 2^{TWO_ADICITY}")
        return cls(log_n)

    @classmethod
    def snarkjs(cls, log_n: int) -> Domain:
        """snarkjs's 2^log_n domain: roots of 5, coset shift w_2n (the odd points of the 2n-domain)."""
        if not 0 <= log_n < TWO_ADICITY:
            raise InputError(f"a domain of 2^{log_n} has no odd coset in snarkjs's 2^{TWO_ADICITY} "
                             "root tower")
        return cls(log_n, SNARKJS_GENERATOR, pow(SNARKJS_GENERATOR, (_R - 1) >> (log_n + 1), _R))

    def vanishing(self, x: int) -> int:
        """Z(x) = x^n - 1, zero exactly on H."""
        return (pow(x, self.n, _R) - 1) % _R

    @property
    def coset_vanishing_inv(self) -> int:
        """1 / Z(s) = 1 / (s^n - 1): Z takes the one value s^n - 1 on all of sH."""
        return pow(self.vanishing(self.shift), -1, _R)

    def points(self, count: int | None = None, start: int = 0, step: int = 1) -> np.ndarray:
        """(count, 4) Montgomery w^(start + step j), j < count (default: all of H in order)."""
        count = self.n if count is None else count
        return Fr.mul(powers(pow(self.root, step, _R), count), Fr.const(pow(self.root, start, _R)))

    def lagrange_at(self, tau: int, count: int | None = None, start: int = 0, step: int = 1) -> np.ndarray:
        """(count, 4) Montgomery L_i(tau) for i = start + step j, j < count (default: every i < n),
        the Lagrange basis of H: L_i(X) = Z(X) / (Z'(w^i) (X - w^i)) = Z(X) w^i / (n (X - w^i)),
        as Z'(w^i) = n w^(-i). For tau in H this is the indicator [tau = w^i]."""
        x = self.points(count, start, step)
        tau %= _R
        z = self.vanishing(tau)
        if z == 0:
            return np.where((x == Fr.const(tau)).all(axis=1)[:, None], Fr.const(1), Fr.const(0))
        diff = Fr.sub(np.broadcast_to(Fr.const(tau), x.shape), x)
        return Fr.mul(Fr.mul(x, Fr.batch_inv(diff)), Fr.const(z * self.n_inv))


@dataclass(frozen=True)
class QapRows:
    """bellperson's rows for an R1CS of m = `constraints` constraints and k = `inputs` public inputs
    (ONE included): rows r < m are the constraints, row m + i the input constraint x_i * 0 = 0; row r
    sits at w^r of the smallest domain that holds the m + k rows, and the quotient (AB - C) / Z has
    n - 1 coefficients (cuzk.groth16.qap.BellpersonQap: the math)."""

    constraints: int
    inputs: int

    @property
    def rows(self) -> int:
        """m + k."""
        return self.constraints + self.inputs

    @property
    def input_rows(self) -> slice:
        """Rows m .. m + k - 1: input i's row is m + i."""
        return slice(self.constraints, self.rows)

    @property
    def domain(self) -> Domain:
        """Domain.for_size(m + k)."""
        return Domain.for_size(self.rows)

    @property
    def h_len(self) -> int:
        """Points of the H query: the n - 1 coefficients of H."""
        return self.domain.n - 1


def powers(x: int, count: int) -> np.ndarray:
    """(count, 4) Montgomery x^0 .. x^(count-1), by doubling blocks: p[k:2k] = p[0:k] x^k."""
    out = Fr.zeros(count)
    out[:1] = Fr.const(1)
    k = 1
    while k < count:
        m = min(k, count - k)
        out[k:k + m] = Fr.mul(out[:m], Fr.const(pow(x, k, _R)))
        k *= 2
    return out
