"""Groth16 on the CUDA backend: the GPU quotient equals the CPU one, and GPU proofs verify."""
import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.ff.fields import Fr
from cuzk.groth16 import as_circuit, prove, setup, verify
from cuzk.groth16.synthetic import synthetic_circuit

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("log_n", [1, 5, 12, 16])
def test_quotient_matches_cpu(log_n, rng):
    a, b, c = (Fr.random(1 << log_n, rng) for _ in range(3))
    assert np.array_equal(get_backend("cuda").quotient(a.copy(), b.copy(), c.copy()), get_backend("cpu").quotient(a, b, c))


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
