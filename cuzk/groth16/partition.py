"""One partition's proof as every proving path makes it (cuzk.api's one-shot path and the engine): the
full witness must carry the expected public inputs, satisfy the circuit (checked on the prover's own
evaluations a.b = c) and its proof must verify before anyone gets it. Errors name the partition and
`label` (a job id, or nothing)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.backend.base import Backend
from cuzk.errors import InputError, ProofVerificationError, UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.groth16.circuit import AnyCircuit
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import prove
from cuzk.groth16.verifier import verify
from cuzk.util.arrays import to_host


def _where(label: str, k: int) -> str:
    return f"{label} partition {k}" if label else f"partition {k}"


def prove_partition(params: Any, circuit: AnyCircuit, w: Any, inputs: Sequence[int], backend: Backend, k: int,
                    label: str = "") -> Proof:
    """The proof of partition k from its full witness w (ONE, inputs, aux; host or device): InputError
    when w's public inputs differ from `inputs`, UnsatisfiedConstraintError naming the partition and
    row when a.b != c."""
    if Fr.to_ints(to_host(w[1:circuit.num_inputs])) != list(inputs):
        raise InputError(f"{_where(label, k)}: the witness's public inputs differ from the expected ones")
    try:
        return prove(params, circuit, w, backend, check=True)
    except UnsatisfiedConstraintError as e:
        raise UnsatisfiedConstraintError(e.index, _where(label, k)) from None


def verify_partition(pvk: Any, inputs: Sequence[int], proof: Proof, k: int, label: str = "") -> None:
    """ProofVerificationError unless `proof` verifies for `inputs` under the prepared key `pvk`."""
    if not verify(pvk, list(inputs), proof):
        raise ProofVerificationError(k, f"{label + ': ' if label else ''}the proof does not verify")
