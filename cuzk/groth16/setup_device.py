"""The Groth16 setup on a backend: a circuit in template form (a PCE, a CompiledCircuit, or a
ConstraintSystem that records constraints, compiled to one) on the CUDA backend is set up on the GPU
(cuzk.backend.cuda.setup: the same key as cuzk.groth16.setup.generate_parameters, point for point);
anything else goes to the CPU's generate_parameters.

On the GPU the query vectors h, l, a, b_g1, b_g2 may stay on the device (keep_on_device: cupy arrays
in the host layout, never through host RAM, as a 32GiB partition's 47 GB of them should); the
verifying key always comes back to the host.
"""
from __future__ import annotations

import numpy as np

from cuzk.backend import Backend, get_backend
from cuzk.errors import InputError
from cuzk.groth16.circuit import Circuit, CompiledCircuit
from cuzk.groth16.keys import PARAMS_VECTORS, Parameters, VerifyingKey
from cuzk.groth16.setup import generate_parameters, random_scalar
from cuzk.r1cs import PCE, ConstraintSystem
from cuzk.r1cs.pce import build


def template_form(r1cs) -> PCE | None:
    """The circuit's PCE: a PCE itself, a CompiledCircuit's, a recording ConstraintSystem compiled
    (cuzk.r1cs.pce.build); None for a flat circuit (Circuit or (A, B, C, num_inputs))."""
    if isinstance(r1cs, PCE):
        return r1cs
    if isinstance(r1cs, CompiledCircuit):
        return r1cs.pce
    if isinstance(r1cs, ConstraintSystem):
        return build(r1cs)
    if isinstance(r1cs, (Circuit, tuple)):
        return None
    raise InputError(f"expected a PCE, a CompiledCircuit, a ConstraintSystem or a flat circuit, got {type(r1cs).__name__}")


def generate_parameters_on(backend: Backend | str, r1cs, tau: int, alpha: int, beta: int, gamma: int, delta: int,
                           *, keep_on_device: bool = False, progress: bool = False) -> Parameters:
    """generate_parameters(r1cs, tau, alpha, beta, gamma, delta) on `backend` (a Backend or a name for
    get_backend): on the GPU for a circuit in template form on the CUDA backend, else on the CPU.
    keep_on_device (GPU only, else InputError): the query vectors are left on the device as cupy
    arrays. progress: stage lines and a bar on stderr (GPU)."""
    backend = get_backend(backend) if isinstance(backend, str) else backend
    pce = template_form(r1cs)
    if not hasattr(backend, "setup_key_points") or pce is None:
        if keep_on_device:
            raise InputError("keep_on_device needs the cuda backend and a circuit in template form")
        return generate_parameters(r1cs, tau, alpha, beta, gamma, delta)
    k = pce.num_inputs
    a_dense = np.concatenate([np.ones(k, bool), pce.a_aux_density])
    b_dense = np.concatenate([pce.b_input_density, pce.b_aux_density])
    kp = backend.setup_key_points(pce, tau, alpha, beta, gamma, delta, a_dense, b_dense,
                                  keep_on_device=keep_on_device, progress=progress)
    return parameters(kp)


def parameters(kp) -> Parameters:
    """Parameters from a backend's KeyPoints (cuzk.backend.cuda.setup: g1 = [alpha, beta, delta] G1,
    g2 = [beta, gamma, delta] G2, ic, the query vectors by name)."""
    (alpha_g1, beta_g1, delta_g1), (beta_g2, gamma_g2, delta_g2) = kp.g1, kp.g2
    vk = VerifyingKey(alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, kp.ic)
    return Parameters(vk, *(kp.queries[name] for name in PARAMS_VECTORS))


def setup_on(backend: Backend | str, r1cs, rng: np.random.Generator | None = None, **kw) -> Parameters:
    """generate_parameters_on with fresh toxic waste (from `rng` when given: tests only)."""
    tau, alpha, beta, gamma, delta = (random_scalar(rng) for _ in range(5))
    return generate_parameters_on(backend, r1cs, tau, alpha, beta, gamma, delta, **kw)
