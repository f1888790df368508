"""Groth16 trusted setup for one circuit (bellperson's generator), with fresh toxic waste.

For testing and development: a real deployment takes its parameters from a ceremony (read them with
cuzk.groth16.params). The QAP polynomials are evaluated at tau in the Lagrange basis of the domain,
L_r(tau) = Z(tau) w^r / (n (tau - w^r)) (`cuzk.ff.domain.Domain.lagrange_at`), which turns
u_i(tau) = sum_r A[r, i] L_r(tau) into one sparse product with A^T. All group elements come from one
batched fixed-base multiplication per group (8-bit windows over a precomputed table of the generator).

`key_points` is that pipeline for a reduction of cuzk.groth16.qap (its rows, domain, input-row term
and H query): bellperson's for `generate_parameters`, snarkjs's for the .zkey writer
(cuzk.interop.snarkjs).
"""
from __future__ import annotations

import logging
import secrets
import time

import numpy as np

from cuzk.ec.curves import G1, G2
from cuzk.errors import SetupError
from cuzk.ff.fields import Fr
from cuzk.groth16.circuit import AnyCircuit, as_circuit, transpose
from cuzk.groth16.keys import Parameters, VerifyingKey
from cuzk.groth16.qap import BellpersonQap
from cuzk.r1cs import CSR, evaluate

log = logging.getLogger("cuzk.groth16")
R = Fr.modulus


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
    """Parameters for the given toxic waste (non-zero Fr integers), in bellperson's layout: its QAP
    reduction (circuit.qap), A and B queries for the dense variables only."""
    start = time.perf_counter()
    circuit = as_circuit(r1cs)
    matrices = circuit.matrices()
    _check_constrained(matrices, circuit.num_inputs)
    a_dense = np.concatenate([np.ones(circuit.num_inputs, bool), circuit.a_aux_density])
    b_dense = np.concatenate([circuit.b_input_density, circuit.b_aux_density])
    params = key_points(circuit, circuit.qap, tau, alpha, beta, gamma, delta, a_dense, b_dense, matrices)
    if any(_any_identity(p) for p in (params.a, params.b_g1, params.l)):  # [x] G = O iff x = 0
        raise SetupError("tau hit a root of a QAP polynomial (probability ~n/r): run setup again")
    log.info("setup: %d constraints, %d inputs, %d aux, domain %d in %.2f s", circuit.num_constraints,
             circuit.num_inputs, circuit.num_aux, circuit.domain_size, time.perf_counter() - start)
    return params


def key_points(circuit: AnyCircuit, qap: BellpersonQap, tau: int, alpha: int, beta: int, gamma: int, delta: int,
               a_wires: np.ndarray | None = None, b_wires: np.ndarray | None = None,
               matrices: tuple[CSR, CSR, CSR] | None = None) -> Parameters:
    """Every group element of a Groth16 key for `circuit` under the reduction `qap` (of the circuit's
    size), with L_r its domain's Lagrange basis and m constraints:
        u_i(tau) = sum_(r<m) A[r, i] L_r(tau) + the input-row term (qap.add_input_term)
        v_i(tau) = sum_(r<m) B[r, i] L_r(tau),   w_i(tau) = sum_(r<m) C[r, i] L_r(tau)
    then vk, ic and l as in cuzk.groth16.keys, a = [u_i(tau)] G1 and b_g1 / b_g2 = [v_i(tau)] G1 / G2
    for the wires that the bool masks a_wires / b_wires select (every wire when None), and
    h = [s_j / delta] G1 for the reduction's H-query scalars s_j. `matrices`: circuit.matrices() when
    the caller has them already. SetupError when tau is a point of the domain."""
    if qap.domain.vanishing(tau) == 0:
        raise SetupError("tau hit a point of the evaluation domain (probability n/r): run setup again")
    m, k = circuit.num_constraints, circuit.num_inputs
    lagrange = qap.lagrange(tau)
    u, v, w = (evaluate(transpose(mat), np.ascontiguousarray(lagrange[:m]))
               for mat in (matrices or circuit.matrices()))
    qap.add_input_term(u, lagrange)
    ext = Fr.add(Fr.add(Fr.mul(u, Fr.const(beta)), Fr.mul(v, Fr.const(alpha))), w)
    delta_inv = Fr.const(pow(delta, -1, R))
    a_wires = slice(None) if a_wires is None else a_wires
    b_wires = slice(None) if b_wires is None else b_wires

    g1_scalars = [Fr.mul(qap.h_query(tau), delta_inv), Fr.mul(ext[:k], Fr.const(pow(gamma, -1, R))),
                  Fr.mul(ext[k:], delta_inv), u[a_wires], v[b_wires], Fr.from_ints([alpha, beta, delta])]
    g1 = _split(G1.generator_mul(np.concatenate(g1_scalars)), [len(s) for s in g1_scalars])
    g2_scalars = [v[b_wires], Fr.from_ints([beta, gamma, delta])]
    g2 = _split(G2.generator_mul(np.concatenate(g2_scalars)), [len(s) for s in g2_scalars])
    h_pts, ic_pts, l_pts, a_pts, b1_pts, (alpha_g1, beta_g1, delta_g1) = g1
    b2_pts, (beta_g2, gamma_g2, delta_g2) = g2
    vk = VerifyingKey(alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic_pts)
    return Parameters(vk, h_pts, l_pts, a_pts, b1_pts, b2_pts)


def _check_constrained(matrices: tuple[CSR, CSR, CSR], num_inputs: int) -> None:
    """bellperson refuses aux variables that appear in no constraint (their L point would be zero)."""
    used = np.zeros(matrices[0].shape[1], bool)
    for m in matrices:
        used[m.indices] = True
    free = np.flatnonzero(~used[num_inputs:])
    if free.size:
        raise SetupError(f"{free.size} aux variable(s) appear in no constraint (first: aux {free[0]})")


def _any_identity(points: np.ndarray) -> bool:
    """Whether an affine point array (n, 2, *coord) holds the identity (all zeros)."""
    return bool(len(points)) and not points.reshape(len(points), -1).any(axis=1).all()


def _split(points: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    return np.split(points, np.cumsum(sizes)[:-1])
