"""Groth16 on the CUDA backend: the GPU quotient equals the CPU one, and GPU proofs verify."""
import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.ff.fields import Fr
from cuzk.groth16 import as_circuit, prove, setup, verify
from cuzk.groth16.prover import quotient
from cuzk.groth16.synthetic import synthetic_circuit
from cuzk.util.arrays import to_host

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("log_n, offload", [(1, False), (5, False), (12, False), (16, False), (12, True), (20, True)])
def test_quotient_matches_cpu(log_n, offload, rng):
    """The GPU quotient (in-place transforms; with offload A's and A B's coset values in host memory,
    brought back in parts: 2^20 rows are two) equals the CPU one, from host and from device inputs."""
    a, b, c = (Fr.random(1 << log_n, rng) for _ in range(3))
    cpu = quotient(get_backend("cpu"), [a.copy(), b.copy(), c.copy()].__getitem__)
    cuda = get_backend("cuda")
    from_host = quotient(cuda, [a.copy(), b.copy(), c.copy()].__getitem__, offload)
    from_device = quotient(cuda, [cuda.asarray(x) for x in (a, b, c)].__getitem__, offload)
    assert np.array_equal(to_host(from_host), cpu) and np.array_equal(to_host(from_device), cpu)


@pytest.mark.parametrize("rows", [50, 3000])
def test_gpu_proofs_verify_and_tampering_fails(rows, rng):
    cs = synthetic_circuit(rows, 2, rng)
    params = setup(cs, rng)
    circuit, witness = as_circuit(cs), cs.witness()
    inputs = Fr.to_ints(witness[1:cs.num_inputs])
    for _ in range(2):  # the second proof reuses the bases kept on the GPU
        proof = prove(params, circuit, witness, backend=get_backend("cuda"))
        assert verify(params.vk, inputs, proof)
    assert not verify(params.vk, [inputs[0] + 1, *inputs[1:]], proof)


def test_a_device_witness_gives_the_same_proof(rng):
    import cupy as cp

    from cuzk.groth16 import CompiledCircuit
    from cuzk.r1cs.pce import build

    cs = synthetic_circuit(3000, 2, rng)
    params = setup(cs, rng)
    circuit, witness = CompiledCircuit(build(cs)), cs.witness()
    cuda = get_backend("cuda")
    host = prove(params, circuit, witness, backend=cuda, rng=np.random.default_rng(3), check=True)
    device = prove(params, circuit, cp.asarray(witness), backend=cuda, rng=np.random.default_rng(3), check=True)
    assert host.to_bytes() == device.to_bytes()
    assert verify(params.vk, Fr.to_ints(witness[1:cs.num_inputs]), device)
