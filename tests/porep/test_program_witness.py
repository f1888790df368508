"""PoRep witnesses from the witness program (cuzk.porep.program_witness): for a 2KiB partition the
program's witness equals the gadgets' witness value for value; the free values are exactly the
partition's external data; the program comes with the cached PCE; a tampered vanilla input gives a
witness that fails the R1CS check (so no proof is made from it)."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk import api
from cuzk.backend import get_backend
from cuzk.backend.cpu import CpuBackend
from cuzk.errors import InputError
from cuzk.porep import program_witness as pw
from cuzk.porep.circuit import StackedShape, partition_witnesses
from cuzk.porep.circuit import circuit as stacked_circuit
from cuzk.porep.synthetic import synthetic_c1

PROOF = "StackedDrg2KiBV1_1"


@pytest.fixture(scope="module")
def setting():
    circuit = pw.compiled(PROOF)
    c1 = synthetic_c1(PROOF, prover_id=bytes(range(32)), sector_id=3, ticket=b"\x07" * 32, seed=b"\x09" * 32,
                      rng=np.random.default_rng(11), progress=False)
    return circuit, c1, StackedShape.from_config(c1.config)


def packs(shape, ws, ins):
    return [pw.pack(shape, w, x) for w, x in zip(ws, ins)]


def test_program_witness_equals_the_gadget_witness(setting) -> None:
    circuit, c1, shape = setting
    ws, ins = partition_witnesses(c1), api.public_inputs(c1)
    plain, per = pw.free_values(ws[0])
    assert circuit.program.num_free == (plain.shape[0], per.shape[1])
    got = pw.expand(circuit, packs(shape, ws, ins), CpuBackend())
    want = stacked_circuit(shape, ws[0], mode="witness").witness()
    assert got.shape == (len(ws), *want.shape)
    assert np.array_equal(got[0], want)


def test_a_tampered_sibling_fails_the_check(setting) -> None:
    circuit, c1, shape = setting
    w = partition_witnesses(c1)[0]
    w.parent_paths[3][0].siblings[1, 2] = w.parent_paths[3][0].siblings[0, 2]  # challenge 1, parent 3, level 0
    cpu = CpuBackend()
    got = pw.expand(circuit, packs(shape, [w], api.public_inputs(c1)[:1]), cpu)[0]
    assert cpu.first_unsatisfied(*cpu.evaluate_pce(circuit.pce, got)) is not None


def test_free_values_refuse_another_shape(setting) -> None:
    circuit, c1, shape = setting
    w = partition_witnesses(c1)[0]
    with pytest.raises(InputError, match="challenges"):
        pw.pack(StackedShape(shape.nodes, shape.layers, shape.challenges + 1, shape.tree_r), w, api.public_inputs(c1)[0])
    with pytest.raises(InputError, match="public inputs"):
        pw.pack(shape, w, api.public_inputs(c1)[0][:-1])


@pytest.mark.gpu
def test_gpu_witness_equals_the_cpu_witness(setting) -> None:
    circuit, c1, shape = setting
    ws, ins = partition_witnesses(c1), api.public_inputs(c1)
    cpu, cuda = CpuBackend(), get_backend("cuda")
    assert np.array_equal(pw.expand(circuit, packs(shape, ws, ins), cuda), pw.expand(circuit, packs(shape, ws, ins), cpu))
    bad = partition_witnesses(c1)
    bad[0].parent_paths[3][0].siblings[1, 2] = bad[0].parent_paths[3][0].siblings[0, 2]
    got = pw.expand(circuit, packs(shape, bad, ins), cuda)
    assert np.array_equal(got, pw.expand(circuit, packs(shape, bad, ins), cpu))
    assert cpu.first_unsatisfied(*cpu.evaluate_pce(circuit.pce, got[0])) is not None


@pytest.mark.gpu
@pytest.mark.slow
def test_a_proof_from_the_gpu_witness_verifies(setting) -> None:
    c1 = setting[1]
    result = api.prove_c1(c1, backend="cuda", progress=False)
    assert api.verify(c1, result.proof)
