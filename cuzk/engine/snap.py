"""A SnapDeals update as engine work: the CircuitSpec of a registered update proof's partition circuit
and one Task per partition (cuzk.snap.proving does the SnapDeals part: the vanilla checks, the
witness, the circuit and its parameters). A Task's witness is the partition's snap_witness: packed in a
synthesis process (public inputs and free values), expanded by the circuit's witness program on the
GPU worker (cuzk.engine.expansion), as PoRep's and PoSt's are.

    job = submit_snap(engine, "StackedDrg2KiBV1", comm_r_old, comm_r_new, comm_d_new, vanilla)
    proof = job.result(timeout=600)              # 192 bytes per partition, in partition order, verified
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from cuzk.engine.engine import Engine
from cuzk.engine.jobs import CircuitSpec, Job, Priority, Task
from cuzk.snap.proving import ProofName, VanillaSource, checked_partitions, load_snap_circuit, snap_witness
from cuzk.snap.registry import get_update_proof


def snap_spec_of(proof: ProofName, progress: bool = False, allow_setup: bool = False) -> CircuitSpec:
    """The resident-circuit spec of a registered update proof's partition circuit (its PCE with its
    witness program, and its parameters: the official ones, or with `allow_setup` cuzk's own), keyed by
    its parameter file's stem (one circuit per sector size)."""
    p = get_update_proof(proof)
    return CircuitSpec(p.params_stem, partial(load_snap_circuit, p, allow_setup=allow_setup, progress=progress))


def snap_tasks(proof: ProofName, comm_r_old: bytes, comm_r_new: bytes, comm_d_new: bytes,
               vanilla_proofs: Sequence[VanillaSource] | str | bytes) -> list[Task]:
    """One Task per partition, in order (its packed witness by a picklable call, snap_witness, and its
    public inputs), every partition's vanilla proof checked here first (InputError naming a commitment,
    SnapVanillaFormatError, SnapVanillaProofError)."""
    p = get_update_proof(proof)
    return [Task(snap_witness(p.circuit_shape, w), public.to_ints(p))
            for public, w in checked_partitions(p, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs)]


def submit_snap(engine: Engine, proof: ProofName, comm_r_old: bytes, comm_r_new: bytes, comm_d_new: bytes,
                vanilla_proofs: Sequence[VanillaSource] | str | bytes, priority: Priority = Priority.SNAP_DEALS,
                job_id: str | None = None, allow_setup: bool | None = None) -> Job:
    """Queue a SnapDeals update's proof (snap_tasks checks it first) on `engine`; `allow_setup`
    defaults to the engine's srs.allow_setup."""
    p = get_update_proof(proof)
    tasks = snap_tasks(p, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs)
    allow = engine.config.srs.allow_setup if allow_setup is None else allow_setup
    return engine.submit(snap_spec_of(p, allow_setup=allow), tasks, priority, job_id)
