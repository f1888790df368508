"""Groth16 over BLS12-381 in bellperson's layout: setup, prove (through a compute backend), verify,
and bellperson's .params / .vk files and 192-byte proofs."""
from cuzk.groth16.circuit import AnyCircuit, Circuit, CompiledCircuit, as_circuit
from cuzk.groth16.keys import Parameters, VerifyingKey
from cuzk.groth16.params import (MappedParameters, read_params, read_vk, vk_from_bytes, vk_to_bytes,
                                 write_params, write_vk)
from cuzk.groth16.proof import PROOF_BYTES, Proof
from cuzk.groth16.prover import prove, prove_many
from cuzk.groth16.setup import generate_parameters, setup
from cuzk.groth16.verifier import PreparedVerifyingKey, prepare_verifying_key, verify, verify_batch

__all__ = ["AnyCircuit", "Circuit", "CompiledCircuit", "MappedParameters", "PROOF_BYTES", "Parameters", "PreparedVerifyingKey", "Proof",
           "VerifyingKey", "as_circuit", "generate_parameters", "prepare_verifying_key", "prove", "prove_many",
           "read_params", "read_vk", "setup", "verify", "verify_batch", "vk_from_bytes", "vk_to_bytes",
           "write_params", "write_vk"]
