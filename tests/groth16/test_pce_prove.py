"""Groth16 from a PCE (CompiledCircuit): the same parameters and the same proof as from the flat
circuit, verified; the prover's own satisfaction check names the first failing row."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.gadgets import num
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.groth16 import CompiledCircuit, as_circuit, prepare_verifying_key, prove, setup, verify
from cuzk.r1cs import ConstraintSystem, first_unsatisfied
from cuzk.r1cs.pce import build


def poseidon_circuit(rng: np.random.Generator) -> ConstraintSystem:
    """A public input, a Poseidon arity-2 hash at top level, then a batch of 3 arity-11 hashes (a template)."""
    cs = ConstraintSystem("both")
    cs.alloc_input(int(rng.integers(1, 2**62)))  # a public input besides ONE (in no constraint but its own row)
    poseidon_hash(cs, num.alloc_many(cs, 2, Fr.random(2, rng).reshape(1, 2, 4)))
    with cs.batch(3) as blk:
        poseidon_hash(blk, num.alloc_many(blk, 11, Fr.random(33, rng).reshape(3, 11, 4)))
    return cs


@pytest.fixture(scope="module")
def circuits(module_rng):
    cs = poseidon_circuit(module_rng)
    return cs, as_circuit(cs), CompiledCircuit(build(cs)), cs.witness()


def test_setup_from_the_pce_equals_setup_from_the_flat_circuit(circuits):
    _, flat, compiled, _ = circuits
    assert compiled.pce.blocks.shape[0] == 1
    assert (compiled.num_inputs, compiled.num_aux, compiled.domain_size) == (flat.num_inputs, flat.num_aux,
                                                                            flat.domain_size)
    assert setup(compiled, np.random.default_rng(7)) == setup(flat, np.random.default_rng(7))


def test_proof_from_the_pce_equals_the_flat_proof_and_verifies(circuits, cpu):
    _, flat, compiled, w = circuits
    params = setup(compiled, np.random.default_rng(8))
    from_pce = prove(params, compiled, w, cpu, rng=np.random.default_rng(9), check=True)
    from_flat = prove(params, flat, w, cpu, rng=np.random.default_rng(9), check=True)
    assert from_pce.to_bytes() == from_flat.to_bytes()
    inputs = Fr.to_ints(w[1:compiled.num_inputs])
    assert verify(prepare_verifying_key(params.vk), inputs, from_pce)
    assert {"evaluate", "check", "ntt", "msm_h"} <= set(from_pce.timings)


@pytest.mark.parametrize("which", ["first aux", "last aux", "middle aux"])
def test_check_names_the_first_failing_row(circuits, cpu, which):
    cs, flat, compiled, w = circuits
    params = setup(compiled, np.random.default_rng(10))
    bad = w.copy()
    col = {"first aux": compiled.num_inputs, "last aux": len(w) - 1, "middle aux": (compiled.num_inputs + len(w)) // 2}[which]
    bad[col] = Fr.add(bad[col:col + 1], Fr.ones(1))[0]
    want = first_unsatisfied(flat.a, flat.b, flat.c, bad, cpu)
    assert want is not None
    with pytest.raises(UnsatisfiedConstraintError) as e:
        prove(params, compiled, bad, cpu, check=True)
    assert e.value.index == want
    # without the check the prover makes a proof that does not verify
    proof = prove(params, compiled, bad, cpu)
    assert not verify(prepare_verifying_key(params.vk), Fr.to_ints(bad[1:compiled.num_inputs]), proof)


def test_digest_names_the_r1cs(circuits, module_rng):
    _, flat, compiled, _ = circuits
    other = CompiledCircuit(build(poseidon_circuit(module_rng)))
    assert compiled.digest() == CompiledCircuit(build(circuits[0])).digest()  # same arrays, same digest
    assert other.digest() == compiled.digest()  # values differ, constraints do not
    assert flat.digest() != compiled.digest()  # the two forms are named apart (parameters are per form)
