"""Groth16 prover with bellperson's structure, all heavy work through one compute backend.

    a, b, c  = A w, B w, C w over the QAP's domain (cuzk.groth16.qap: the input rows, the padding)
    H        = (A(X) B(X) - C(X)) / Z(X), coefficients 0 .. n-2
    A-proof  = alpha + sum a_i [u_i] + r delta                         (G1)
    B-proof  = beta + sum b_i [v_i] + s delta                          (G2)
    C-proof  = sum_aux w_j l_j + sum h_i h-query + s A' + r B1' + rs delta + s alpha + r beta   (G1)
where A' = sum a_i [u_i] and B1' = sum b_i [v_i] in G1 (the last line equals
L + H + s A-proof + r B-proof(G1) - rs delta, the paper's C).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuzk.ff import limbs
from cuzk.backend import Backend, get_backend
from cuzk.ec.curves import G1, G2, Curve
from cuzk.errors import InputError, ParameterMismatchError, UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.groth16.circuit import AnyCircuit, as_circuit
from cuzk.groth16.proof import Proof
from cuzk.groth16.setup import random_scalar
from cuzk.r1cs import ConstraintSystem, fr_array
from cuzk.util.arrays import array_module, on_device, to_host
from cuzk.util.progress import StageTimer

log = logging.getLogger("cuzk.groth16")
R = limbs.FR_MODULUS
_GATHER_ROWS = 1 << 22  # witness rows gathered at once into a query vector's scalars (128 MiB)


def prove(params, r1cs, witness: np.ndarray | None = None, backend: Backend | None = None,
          rng: np.random.Generator | None = None, check: bool = False) -> Proof:
    """A Groth16 proof for `witness` (inputs, ONE first, then aux; (n, 4) Fr Montgomery or ints; or a
    CuPy (n, 4) array on the device of a CUDA backend, which then stays there)
    of `r1cs` (Circuit, CompiledCircuit, PCE, ConstraintSystem or (A, B, C, num_inputs)) under
    `params` (Parameters or MappedParameters; each query vector is read when its MSM runs). Without a
    witness, a ConstraintSystem's own assignment is used. `check`: first confirm a_r b_r = c_r on the
    evaluations the proof is made from (UnsatisfiedConstraintError naming the first failing row).
    `rng` fixes the blinding r, s (tests only). The proof carries `timings` (seconds per stage, and
    "total")."""
    return prove_many(params, r1cs, [r1cs if witness is None else witness], backend, rng, check)[0]


def prove_many(params, r1cs, witnesses: Sequence[Any], backend: Backend | None = None,
               rng: np.random.Generator | None = None, check: bool = False,
               stop: Callable[[], bool] | None = None) -> list[Proof]:
    """The proofs of several witnesses of one circuit under one key, in order (each witness as `prove`
    takes it, or a callable that makes it, called when its turn comes). Each witness's quotient runs in
    turn; with more than one, its MSM scalars (H and the witness) then wait in host memory, so that one
    witness's vectors are on the device at a time; then each key vector's MSMs of every witness run
    together (Backend.msm_sets: bases that stream from host memory cross once for all of them). r and s
    are drawn from `rng` proof by proof (the proofs equal `prove`'s, one after another, from the same
    rng). Every proof carries the batch's timings. `stop`, asked before each witness after the first:
    True ends the batch there, and only the proofs of the witnesses before it are returned."""
    start = time.perf_counter()
    backend = backend or get_backend("auto")
    stage = StageTimer("prove", logger=log)
    with stage("inputs"):  # a ConstraintSystem exports its CSR here: pass a Circuit to reuse one
        circuit = as_circuit(r1cs)
    k, n = circuit.num_inputs, circuit.domain_size
    _check_params(params.vk, params.lengths(), circuit)
    parked: list[tuple[Any, Any]] = []  # (H's coefficients, the witness) of each
    for i, source in enumerate(witnesses):
        if i and stop is not None and stop():
            break
        with stage("inputs"):
            w = _witness(circuit, source() if callable(source) else source)
        h = _quotient_of(circuit, w, backend, check, stage)
        parked.append((to_host(h), to_host(w)) if len(witnesses) > 1 else (h, w))  # stop: 1 proof or more
        del h, w
    with stage("msm_h"):
        h_sums = _msm_sets(backend, G1, params.h, [h for h, _ in parked], sparse=False)
    for i, (_, w) in enumerate(parked):  # H's coefficients go as soon as their MSM is done
        parked[i] = (None, w)
    # witness scalars are mostly 0 and 1: the sparse MSMs let a backend split those off
    with stage("msm_l"):
        l_sums = _msm_sets(backend, G1, params.l, [w[k:] for _, w in parked])
    with stage("msm_a"):
        a_sums = _msm_sets(backend, G1, params.a, [_dense(backend, w, k, circuit.a_aux_density) for _, w in parked])
    b_scalars = [_dense(backend, w, k, circuit.b_aux_density, circuit.b_input_density) for _, w in parked]
    with stage("msm_b_g1"):
        b1_sums = _msm_sets(backend, G1, params.b_g1, b_scalars)
    with stage("msm_b_g2"):
        b2_sums = _msm_sets(backend, G2, params.b_g2, b_scalars)
    with stage("assemble"):
        points = [_assemble(params.vk, *sums, random_scalar(rng), random_scalar(rng))
                  for sums in zip(h_sums, l_sums, a_sums, b1_sums, b2_sums)]

    stage.timings["total"] = time.perf_counter() - start
    log.info("prove: %d proof(s), %d constraints, domain %d, %s backend: %.3f s", len(points),
             circuit.num_constraints, n, backend.name, stage.timings["total"])
    return [Proof(*p, timings=dict(stage.timings)) for p in points]


def _quotient_of(circuit: AnyCircuit, w, backend: Backend, check: bool, stage: StageTimer):
    """H's coefficients of witness w (quotient), after the a.b = c check when `check` and the room allows."""
    k, n = circuit.num_inputs, circuit.domain_size
    # the witness and three domain vectors: A w, B w, C w at once (the check), or the quotient's
    # A B, next vector and transform scratch; the checked evaluations feed the quotient when two more fit
    three = 32 * circuit.num_columns + 3 * 32 * n
    offload = not backend.has_room(three)
    abc: list = [None, None, None]
    if check and not offload:
        with stage("evaluate"):
            abc = list(circuit.evaluate(backend, w))
        with stage("check"):
            bad = backend.first_unsatisfied(*abc)
            if bad is not None:
                raise UnsatisfiedConstraintError(bad)
        if not backend.has_room(three + 2 * 32 * n):
            abc = [None, None, None]
    elif check:
        log.info("prove: no room for the three evaluations at once; the proof's verification is the check")

    def evaluation(j: int):
        v, abc[j] = abc[j], None
        v = circuit.evaluate(backend, w, (j,))[0] if v is None else v
        return circuit.qap.padded(v, w[:k] if j == 0 else None)

    with stage("evaluate"):
        first = [evaluation(0)]  # popped by the quotient: it holds the only reference
    with stage("ntt"):  # H replaces a, b, c (as arkworks and gnark drop them after the quotient)
        return quotient(backend, lambda j: first.pop() if j == 0 else evaluation(j), offload)


def _dense(backend: Backend, w, k: int, aux_density: np.ndarray, input_density: np.ndarray | None = None):
    """The witness values a query vector pairs with: the inputs (those of input_density, else all), then
    the aux values of aux_density; where the witness is, gathered _GATHER_ROWS rows at a time into
    their one array (no second copy of a 4 GB vector on the device)."""
    xp = array_module(w)  # a device witness (CuPy) stays on the device through the MSMs
    inputs, aux = w[:k], w[k:]
    inputs = inputs if input_density is None else inputs[_where(backend, xp, input_density)]
    mask = _where(backend, xp, aux_density)
    out = xp.empty((len(inputs) + int(mask.sum()), 4), np.uint64)
    out[:len(inputs)] = inputs
    at = len(inputs)
    for lo in range(0, len(aux), _GATHER_ROWS):
        part = aux[lo:lo + _GATHER_ROWS][mask[lo:lo + _GATHER_ROWS]]
        out[at:at + len(part)] = part
        at += len(part)
    return out


def quotient(backend: Backend, evaluation: Callable[[int], Any], offload: bool = False):
    """H's coefficients from a, b, c over the domain, evaluation(j) making the j-th when asked:
    H = coset_intt((A B - C) / Z) from the coset values, A B made before c is asked for, so the
    device holds A B, one more vector and a transform's scratch at most. `offload`: A's, then A B's,
    coset values wait in host memory (backend.offload) while the next vector is made, so the device
    holds one vector and the scratch (the witness's room for a smaller card)."""
    ab = backend.to_coset(evaluation(0))
    if offload:
        ab = backend.offload(ab)
    ab = backend.mul_assign(backend.to_coset(evaluation(1)), ab)
    if offload:
        ab = backend.offload(ab)
    return backend.quotient_coefficients(ab, backend.to_coset(evaluation(2)))


def _witness(circuit: AnyCircuit, source) -> np.ndarray:
    if isinstance(source, ConstraintSystem):
        source = source.witness()
    if on_device(source):  # checked for shape and ONE here; its values come from the device's own program
        if source.dtype != np.uint64 or source.shape != (circuit.num_columns, 4):
            raise InputError(f"a device witness must be a ({circuit.num_columns}, 4) uint64 array, got "
                             f"{source.dtype} {source.shape}")
        w = source
    else:
        w = fr_array(source)
    if w.shape[0] != circuit.num_columns:
        raise InputError(f"witness has {w.shape[0]} values, the circuit {circuit.num_columns} variables")
    if not np.array_equal(to_host(w[0]), Fr.ones(1)[0]):
        raise InputError("witness[0] (the constant ONE input) must be 1")
    return w


def _check_params(vk, lengths: dict[str, int], circuit: AnyCircuit) -> None:
    want = circuit.query_lengths
    have = {"ic": len(vk.ic), **lengths}
    wrong = [f"{name}: {have[name]} points, circuit needs {want[name]}" for name in want
             if have[name] != want[name]]
    if wrong:
        raise ParameterMismatchError("parameters do not fit the circuit: " + "; ".join(wrong))


def _where(backend: Backend, xp, mask: np.ndarray):
    """A density mask where the witness is: the host array, or on a GPU the backend's kept copy (a
    32GiB partition's masks are 130 MB each, read every proof)."""
    return mask if xp is np else backend.kept_copy(mask)


def _msm_sets(backend: Backend, curve: Curve, bases: np.ndarray, scalar_sets: list, sparse: bool = True) -> list:
    """Backend.msm_sets of each contiguous scalar set over `bases`; the identity for each over no bases."""
    if len(bases) == 0:
        return [curve.identity(1)[0] for _ in scalar_sets]
    group = "g1" if curve is G1 else "g2"
    return backend.msm_sets(bases, [array_module(s).ascontiguousarray(s) for s in scalar_sets], group, sparse)


def _assemble(vk, h: np.ndarray, l: np.ndarray, a: np.ndarray, b1: np.ndarray, b2: np.ndarray,
              r: int, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    terms = G1.scalar_mul(np.stack([vk.delta_g1, a, b1, vk.delta_g1, vk.alpha_g1, vk.beta_g1]),
                          [r, s, r, r * s % R, s, r])
    g_a = G1.sum([vk.alpha_g1, a, terms[0]])
    g_c = G1.sum([h, l, *terms[1:]])
    g_b = G2.sum([vk.beta_g2, b2, G2.scalar_mul(vk.delta_g2, s)])
    return g_a, g_b, g_c
