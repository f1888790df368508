"""A PoRep proof as engine work: the CircuitSpec of a seal proof's partition circuit and the Tasks of
a C1 (cuzk.porep.proving does the PoRep part)."""
from __future__ import annotations

from functools import partial

from cuzk.engine.config import EngineConfig
from cuzk.engine.jobs import CircuitSpec, Task
from cuzk.porep.c1 import C1Output
from cuzk.porep.proving import circuit_identity, load_circuit, partition_inputs, partition_witnesses
from cuzk.porep.registry import RegisteredProof


def porep_spec_of(proof: RegisteredProof, progress: bool = False, allow_setup: bool = False) -> CircuitSpec:
    """The resident-circuit spec of a registered seal proof's partition circuit: its PCE with its
    witness program and its parameters, vectors kept: the official ones, or with `allow_setup` cuzk's
    own; saying so on stderr when `progress`."""
    key, calibration, identity = circuit_identity(proof)
    return CircuitSpec(key, partial(load_circuit, proof, allow_setup=allow_setup, progress=progress),
                       calibration, identity)


def porep_tasks(c1: C1Output) -> list[Task]:
    """One Task per partition of a C1's proof: its packed witness and public inputs."""
    inputs = partition_inputs(c1)
    return [Task(w, list(x)) for w, x in zip(partition_witnesses(c1, inputs), inputs)]


def porep_job(c1: C1Output, config: EngineConfig, ids: tuple[bytes, int] | None = None, progress: bool = False,
              allow_setup: bool | None = None) -> tuple[CircuitSpec, list[Task]]:
    """The spec and tasks of a C1's PoRep proof, its vanilla proofs checked first (against `ids`, the
    prover id and sector number, when given); `allow_setup` defaults to config's srs.allow_setup."""
    c1.verify(*(ids or (None, None)))
    allow = config.srs.allow_setup if allow_setup is None else allow_setup
    return porep_spec_of(c1.registered_proof, progress, allow), porep_tasks(c1)
