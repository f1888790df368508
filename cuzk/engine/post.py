"""A PoSt proof as engine work: the CircuitSpec of a registered PoSt proof's partition circuit and the
Task of one WinningPoSt proof or one WindowPoSt partition (cuzk.post.proving does the PoSt part: the
vanilla checks, the witness, the circuit and its parameters).

    job = submit_post(engine, "StackedDrgWinning2KiBV1", randomness, [vanilla_bytes])
    proof = job.result(timeout=60)               # 192 bytes, verified
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from cuzk.engine.engine import Engine
from cuzk.engine.jobs import CircuitSpec, Job, Priority, Task
from cuzk.post.proving import ProofName, SectorSource, load_post_circuit, post_witness
from cuzk.post.registry import PoStKind, get_post_proof

# the engine priority of each PoSt kind when the caller names none
POST_PRIORITY = {PoStKind.WINNING: Priority.WINNING_POST, PoStKind.WINDOW: Priority.WINDOW_POST}


def post_spec_of(proof: ProofName, progress: bool = False, allow_setup: bool = False) -> CircuitSpec:
    """The resident-circuit spec of a registered PoSt proof's partition circuit (its PCE with its witness
    program, and its parameters: the official ones, or with `allow_setup` cuzk's own), keyed by its
    parameter file's stem (one circuit per size and kind)."""
    p = get_post_proof(proof)
    return CircuitSpec(p.params_stem, partial(load_post_circuit, p, allow_setup=allow_setup, progress=progress))


def post_tasks(proof: ProofName, randomness: bytes, sectors: Sequence[SectorSource],
               partition_index: int = 0) -> list[Task]:
    """The one Task of a WinningPoSt proof or a WindowPoSt partition (its packed witness and public
    inputs), its vanilla proofs checked here (PoStInputError, PoStVanillaFormatError, PoStVanillaProofError)."""
    w = post_witness(proof, randomness, sectors, partition_index)
    return [Task(w, w.inputs)]


def submit_post(engine: Engine, proof: ProofName, randomness: bytes, sectors: Sequence[SectorSource],
                partition_index: int = 0, priority: Priority | None = None, job_id: str | None = None,
                allow_setup: bool | None = None) -> Job:
    """Queue one PoSt partition proof (post_tasks checks it first) on `engine`; `priority` defaults to
    its kind's (POST_PRIORITY), `allow_setup` to the engine's srs.allow_setup."""
    p = get_post_proof(proof)
    tasks = post_tasks(p, randomness, sectors, partition_index)
    allow = engine.config.srs.allow_setup if allow_setup is None else allow_setup
    return engine.submit(post_spec_of(p, allow_setup=allow), tasks,
                         POST_PRIORITY[p.kind] if priority is None else priority, job_id)
