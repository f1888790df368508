"""Groth16 trusted setup for one circuit (bellperson's generator), with fresh toxic waste.

For testing and development: a real deployment takes its parameters from a ceremony (read them with
cuzk.groth16.params). The QAP polynomials are evaluated at tau in the Lagrange basis of the domain
(Lagrange coefficients = inverse NTT of the powers of tau), which turns u_i(tau) = sum_r A[r, i] L_r(tau)
into one sparse product with A^T. All group elements come from one batched fixed-base
multiplication per group (8-bit windows over a precomputed table of the generator).
"""
from __future__ import annotations

import logging
import secrets
import time

import numpy as np

from cuzk.ff import limbs
from cuzk.backend.cpu.ntt import intt
from cuzk.ec.curves import G1, G2
from cuzk.errors import SetupError
from cuzk.ff.fields import Fr
from cuzk.groth16.circuit import Circuit, as_circuit, transpose
from cuzk.groth16.keys import Parameters, VerifyingKey
from cuzk.r1cs import CSR, evaluate

log = logging.getLogger("cuzk.groth16")
R = limbs.FR_MODULUS


def random_scalar(rng: np.random.Generator | None = None) -> int:
    """A uniform non-zero Fr integer: from `rng` when given (reproducible), else from `secrets`."""
    if rng is None:
        return secrets.randbelow(R - 1) + 1
    return int.from_bytes(rng.bytes(64), "little") % (R - 1) + 1


def setup(r1cs, rng: np.random.Generator | None = None) -> Parameters:
    """Parameters for `r1cs` (Circuit, ConstraintSystem or (A, B, C, num_inputs)) from fresh
    tau, alpha, beta, gamma, delta; `rng` makes them reproducible (tests only)."""
    tau, alpha, beta, gamma, delta = (random_scalar(rng) for _ in range(5))
    return generate_parameters(r1cs, tau, alpha, beta, gamma, delta)


def generate_parameters(r1cs, tau: int, alpha: int, beta: int, gamma: int, delta: int) -> Parameters:
    """Parameters for the given toxic waste (non-zero Fr integers), in bellperson's layout."""
    start = time.perf_counter()
    circuit = as_circuit(r1cs)
    _check_constrained(circuit)
    n, k = circuit.domain_size, circuit.num_inputs
    gamma_inv, delta_inv = pow(gamma, -1, R), pow(delta, -1, R)

    powers_of_tau = powers(tau, n)
    lagrange = intt(powers_of_tau)
    u, v, w = (_at_tau(m, lagrange, circuit) for m in (circuit.a, circuit.b, circuit.c))
    u[:k] = Fr.add(u[:k], lagrange[circuit.num_constraints:circuit.rows])  # the input constraints

    ext = Fr.add(Fr.add(Fr.mul(u, _const(beta)), Fr.mul(v, _const(alpha))), w)
    ic = Fr.mul(ext[:k], _const(gamma_inv))
    l = Fr.mul(ext[k:], _const(delta_inv))
    h = Fr.mul(powers_of_tau[: n - 1], _const((pow(tau, n, R) - 1) * delta_inv % R))
    a_dense = np.concatenate([np.ones(k, bool), circuit.a_aux_density])
    b_dense = np.concatenate([circuit.b_input_density, circuit.b_aux_density])
    if _any_zero(u[a_dense]) or _any_zero(v[b_dense]) or _any_zero(l):
        raise SetupError("tau hit a root of a QAP polynomial (probability ~n/r): run setup again")

    g1_scalars = [h, ic, l, u[a_dense], v[b_dense], Fr.from_ints([alpha, beta, delta])]
    g1 = _split(G1.generator_mul(np.concatenate(g1_scalars)), [len(s) for s in g1_scalars])
    g2_scalars = [v[b_dense], Fr.from_ints([beta, gamma, delta])]
    g2 = _split(G2.generator_mul(np.concatenate(g2_scalars)), [len(s) for s in g2_scalars])
    h_pts, ic_pts, l_pts, a_pts, b1_pts, (alpha_g1, beta_g1, delta_g1) = g1
    b2_pts, (beta_g2, gamma_g2, delta_g2) = g2

    vk = VerifyingKey(alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic_pts)
    log.info("setup: %d constraints, %d inputs, %d aux, domain %d in %.2f s", circuit.num_constraints,
             k, circuit.num_aux, n, time.perf_counter() - start)
    return Parameters(vk, h_pts, l_pts, a_pts, b1_pts, b2_pts)


def _check_constrained(circuit: Circuit) -> None:
    """bellperson refuses aux variables that appear in no constraint (their L point would be zero)."""
    used = np.zeros(circuit.a.shape[1], bool)
    for m in (circuit.a, circuit.b, circuit.c):
        used[m.indices] = True
    free = np.flatnonzero(~used[circuit.num_inputs:])
    if free.size:
        raise SetupError(f"{free.size} aux variable(s) appear in no constraint (first: aux {free[0]})")


def _at_tau(m: CSR, lagrange: np.ndarray, circuit: Circuit) -> np.ndarray:
    """(columns, 4): sum over the circuit's rows r of M[r, i] L_r(tau), for every variable i."""
    return evaluate(transpose(m), np.ascontiguousarray(lagrange[: circuit.num_constraints]))


def powers(x: int, n: int) -> np.ndarray:
    """(n, 4) Montgomery x^0 .. x^(n-1), by doubling blocks: p[k:2k] = p[0:k] x^k."""
    out = Fr.zeros(n)
    out[:1] = Fr.ones(1)
    k = 1
    while k < n:
        m = min(k, n - k)
        out[k:k + m] = Fr.mul(out[:m], _const(pow(x, k, R)))
        k *= 2
    return out


def _const(x: int) -> np.ndarray:
    return Fr.from_ints([x])[0]


def _any_zero(a: np.ndarray) -> bool:
    return bool(len(a)) and not a.any(axis=1).all()


def _split(points: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    return np.split(points, np.cumsum(sizes)[:-1])
