"""One partition's proof as every proving path makes it (cuzk.api's one-shot path and the engine): the
full witness must carry the expected public inputs, satisfy the circuit (checked on the prover's own
evaluations a.b = c) and its proof must verify before anyone gets it. Errors name the partition and
`label` (a job id, or nothing)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cuzk.backend.base import Backend
from cuzk.errors import InputError, ProofVerificationError, UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.groth16.circuit import AnyCircuit
from cuzk.groth16.proof import Proof
from cuzk.groth16.prover import prove, prove_many
from cuzk.groth16.verifier import verify
from cuzk.util.arrays import to_host


def _where(label: str, k: int) -> str:
    return f"{label} partition {k}" if label else f"partition {k}"


def prove_partition(params: Any, circuit: AnyCircuit, w: Any, inputs: Sequence[int], backend: Backend, k: int,
                    label: str = "") -> Proof:
    """The proof of partition k from its full witness w (ONE, inputs, aux; host or device): InputError
    when w's public inputs differ from `inputs`, UnsatisfiedConstraintError naming the partition and
    row when a.b != c."""
    _check_inputs(circuit, w, inputs, label, k)
    try:
        return prove(params, circuit, w, backend, check=True)
    except UnsatisfiedConstraintError as e:
        raise UnsatisfiedConstraintError(e.index, _where(label, k)) from None


def prove_partitions(params: Any, circuit: AnyCircuit, witnesses: Sequence[Any], inputs: Sequence[Sequence[int]],
                     backend: Backend, ks: Sequence[int], label: str = "",
                     stop: Callable[[], bool] | None = None) -> list[Proof]:
    """prove_partition for several partitions of one circuit at once (prove_many: each key vector's
    MSMs of all of them together); a witness may be a callable that makes it when its turn comes;
    `stop` may end the batch early (prove_many): the proofs of the first partitions only."""
    current = [ks[0]]

    def checked(w: Any, x: Sequence[int], k: int):
        def make():
            current[0] = k
            full = w() if callable(w) else w
            _check_inputs(circuit, full, x, label, k)
            return full
        return make

    try:
        return prove_many(params, circuit, [checked(*args) for args in zip(witnesses, inputs, ks)], backend, check=True,
                          stop=stop)
    except UnsatisfiedConstraintError as e:
        raise UnsatisfiedConstraintError(e.index, _where(label, current[0])) from None


def _check_inputs(circuit: AnyCircuit, w: Any, inputs: Sequence[int], label: str, k: int) -> None:
    if Fr.to_ints(to_host(w[1:circuit.num_inputs])) != list(inputs):
        raise InputError(f"{_where(label, k)}: the witness's public inputs differ from the expected ones")


def verify_partition(pvk: Any, inputs: Sequence[int], proof: Proof, k: int, label: str = "") -> None:
    """ProofVerificationError unless `proof` verifies for `inputs` under the prepared key `pvk`."""
    if not verify(pvk, list(inputs), proof):
        raise ProofVerificationError(k, f"{label + ': ' if label else ''}the proof does not verify")
