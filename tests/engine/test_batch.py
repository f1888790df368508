"""Witness batching in cuzk.engine.Engine (CPU backend, a small circuit with a witness program): a GPU
worker expands the packed witnesses of one circuit waiting in its queue in one run, up to
pipeline.witness_batch, never past a higher-priority item of another circuit; the proofs equal those
made one at a time; a partition whose expansion fails fails only its job; cancelled jobs' items,
queued or in a batch, are skipped and released."""
from __future__ import annotations

import functools
import hashlib
import heapq
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cuzk import groth16
from cuzk.groth16 import partition
from cuzk.backend import get_backend
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import GpuConfig, MemoryConfig, PipelineConfig
from cuzk.engine.engine import CircuitSpec, Engine, Job, JobCancelledError, Priority, Task
from cuzk.engine.placement import Item, batch, batch_cap
from cuzk.errors import SynthesisError
from cuzk.groth16.proof import PROOF_BYTES
from cuzk.porep import program_witness
from cuzk.porep.params_cache import LoadedParams, ParamsFiles
from engine import circuits  # tests/ is on the path; the synthesis processes inherit it

CAP = 4
PROVE = groth16.prove  # the real one: the tests' Gate stands in for it in the engine


def program_spec(key: str = "program") -> CircuitSpec:
    def load():
        circuit = circuits.program_compiled()
        params = groth16.setup(circuit, np.random.default_rng(1))
        return circuit, LoadedParams(params, params.vk, ParamsFiles(Path("/nonexistent"), "test"), True)
    return CircuitSpec(key, load)


def packed_tasks(first: int, n: int, bad: int | None = None) -> list[Task]:
    """n partitions of the program circuit; partition `bad` has an input too large for its bits."""
    values = [[(first + 10 * k + i) % 256 for i in range(circuits.PROGRAM_WIDTH)] for k in range(n)]
    if bad is not None:
        values[bad][0] = 300
    return [Task(functools.partial(circuits.packed, v), v) for v in values]


class Gate:
    """Stands in for groth16.prove: proves with a blinding fixed by the witness (so a proof depends on
    its partition alone) once a permit lets the call through; `permits` None lets every call through."""

    def __init__(self, prove) -> None:
        self._prove, self.permits, self.entered, self.waiting = prove, None, 0, 0
        self._cond = threading.Condition()

    def __call__(self, params, circuit, w, backend, **kw):
        with self._cond:
            self.entered += 1
            self.waiting += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.permits is None or self.permits > 0)
            self.waiting -= 1
            if self.permits is not None:
                self.permits -= 1
        return self._prove(params, circuit, w, backend, rng=rng_of(w), **kw)

    def let(self, n: int | None) -> None:
        """Let n more calls through (None: all from now on; 0: close)."""
        with self._cond:
            self.permits = None if n is None else (self.permits or 0) + n
            self._cond.notify_all()

    def wait_blocked(self, entered: int) -> None:
        """Until `entered` calls have come in and one of them waits for a permit."""
        with self._cond:
            assert self._cond.wait_for(lambda: self.entered >= entered and self.waiting > 0, 60)


def rng_of(w) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(np.ascontiguousarray(w).tobytes()).digest()[:8]))


@pytest.fixture(scope="module")
def engine():
    cfg = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1),
                       pipeline=PipelineConfig(max_parallel_synthesis=2, gpu_queue_depth=8, witness_batch=CAP),
                       memory=MemoryConfig(admission_timeout_s=30))
    with Engine(cfg, backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        e.submit(program_spec(), packed_tasks(0, 1)).result(timeout=600)  # resident and calibrated
        yield e


def gated(monkeypatch):
    """A Gate in place of the prover's single proofs, opened for good at the end."""
    gate = Gate(PROVE)
    monkeypatch.setattr(partition, "prove", gate)
    yield gate
    gate.let(None)  # a test that failed with the gate closed: the engine's workers must not wait in it forever


@pytest.fixture
def gate(monkeypatch):
    yield from gated(monkeypatch)


def hold_the_worker(engine: Engine, gate: Gate) -> None:
    """Close the gate and hold the GPU worker in one partition's proof."""
    gate.let(0)
    entered = gate.entered
    engine.submit(program_spec(), packed_tasks(100, 1))
    gate.wait_blocked(entered + 1)


def wait_queued(jobs: list[Job]) -> None:
    """Until every partition of `jobs` waits in the GPU queue."""
    deadline = time.monotonic() + 600
    while any(s != "gpu_queue" for job in jobs for s in job.partition_state):
        ended = [job.error() for job in jobs if job.done]
        assert not ended, f"a job ended before its partitions were queued: {ended}"
        assert time.monotonic() < deadline
        time.sleep(0.02)


def queue_behind_a_busy_worker(engine: Engine, gate: Gate, *jobs: list[Task]) -> list[Job]:
    """Hold the GPU worker, submit `jobs` (of the program circuit) and wait until all their partitions
    wait in the GPU queue; the gate is left closed."""
    hold_the_worker(engine, gate)
    out = [engine.submit(program_spec(), tasks) for tasks in jobs]
    wait_queued(out)
    return out


def batch_sizes(job: Job) -> list[int]:
    return [job.timings[f"witness_batch.{k}"] for k in range(len(job.tasks))]


def wait_released(engine: Engine) -> None:
    deadline = time.monotonic() + 10
    while engine.budget.used > engine.held and time.monotonic() < deadline:
        time.sleep(0.02)
    assert engine.budget.used == engine.held


def test_a_batch_proves_as_one_at_a_time_within_the_cap(engine, gate):
    first, second = queue_behind_a_busy_worker(engine, gate, packed_tasks(1, 3), packed_tasks(2, 3))
    gate.let(None)
    proofs = [job.result(timeout=600) for job in (first, second)]
    assert batch_sizes(first) + batch_sizes(second) == [CAP] * CAP + [2] * 2  # 6 queued: 4, then 2
    assert first.timings["witness.0"] == second.timings["witness.0"]  # one run for both jobs
    res = engine.preload(first.spec)
    backend = get_backend("cpu")
    for job, proof in zip((first, second), proofs):
        alone = []
        for task in job.tasks:
            w = program_witness.expand(res.circuit, [task.synthesize()], backend)[0]
            alone.append(PROVE(res.params.params, res.circuit, w, backend, rng=rng_of(w)).to_bytes())
            assert groth16.verify(res.pvk, list(task.inputs), groth16.Proof.from_bytes(alone[-1]))
        assert proof == b"".join(alone)
    wait_released(engine)


def bad_and_good(engine: Engine, gate: Gate, first: int) -> Job:
    """A job whose partition 1 does not expand queued with a good one: the bad job fails naming its
    partition, the good one's proofs verify, every reservation is released. Returns the good job."""
    bad, good = queue_behind_a_busy_worker(engine, gate, packed_tasks(first, 2, bad=1), packed_tasks(first + 1, 2))
    gate.let(None)
    with pytest.raises(SynthesisError, match=rf"{bad.id} partition 1: .*do not fit"):
        bad.result(timeout=600)
    proof = good.result(timeout=600)
    res = engine.preload(good.spec)
    for k, task in enumerate(good.tasks):
        assert groth16.verify(res.pvk, list(task.inputs), groth16.Proof.from_bytes(proof[192 * k:192 * (k + 1)]))
    wait_released(engine)
    return good


def test_a_bad_partition_fails_only_its_job(engine, gate):
    good = bad_and_good(engine, gate, 3)
    assert batch_sizes(good) == [1, 1]  # the batch of four failed: each expanded alone


def test_cancelled_jobs_are_skipped_in_the_queue_and_in_a_batch(engine, gate):
    queued, batched, kept = queue_behind_a_busy_worker(engine, gate, packed_tasks(5, 2), packed_tasks(6, 2),
                                                       packed_tasks(7, 2))
    assert queued.cancel()  # its items wait in the GPU queue
    entered = gate.entered
    gate.let(1)  # the busy worker's proof; then a batch of four, its first proof held
    gate.wait_blocked(entered + 1)
    assert [s for job in (batched, kept) for s in job.partition_state] == ["proving"] * 4
    assert batched.cancel()  # both its items are in the running batch
    gate.let(None)
    kept.result(timeout=600)
    for job in (queued, batched):
        with pytest.raises(JobCancelledError):
            job.result(timeout=1)
    events = {(ev["job"], ev["partition"], ev["event"]) for ev in engine.timeline}
    assert not {(queued.id, k, "gpu_start") for k in (0, 1)} & events
    assert (batched.id, 0, "gpu_end") in events and (batched.id, 1, "gpu_end") not in events  # 0 was running
    assert batch_sizes(kept) == [CAP] * 2
    wait_released(engine)


def fake_item(seq: int, key: str, priority: Priority, packed: bool = True, done: bool = False) -> Item:
    job = Job(f"job-{seq}", CircuitSpec(key, lambda: None), [], priority)
    if done:
        job.cancel()
    witness = program_witness.PackedWitness(*(np.zeros((1, 4), np.uint64),) * 3) if packed else np.zeros((1, 4))
    return Item(int(priority), seq, job, 0, witness=witness)


def test_with_gpu_witness_off_the_host_expands_the_witnesses(monkeypatch):
    """pipeline.gpu_witness = false: the engine's host (CPU) backend runs the witness program, whatever
    backend proves; the proofs verify (the engine checks each)."""
    seen = []
    real = program_witness.expand

    def expand(circuit, packs, backend, host=True):
        seen.append(backend)
        return real(circuit, packs, backend, host)

    monkeypatch.setattr(program_witness, "expand", expand)
    cfg = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1),
                       pipeline=PipelineConfig(max_parallel_synthesis=1, gpu_queue_depth=4, gpu_witness=False))
    with Engine(cfg, backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        job = e.submit(program_spec("program-host"), packed_tasks(7, 2))
        assert len(job.result(timeout=600)) == 2 * PROOF_BYTES
        assert seen and all(b is e._witness_host for b in seen)


def test_a_batch_never_overtakes_a_higher_priority_item():
    head = fake_item(0, "a", Priority.WINNING_POST)
    items = [fake_item(1, "a", Priority.WINNING_POST), fake_item(2, "b", Priority.WINDOW_POST),
             fake_item(3, "a", Priority.WINDOW_POST, done=True), fake_item(4, "a", Priority.WINDOW_POST),
             fake_item(5, "a", Priority.POREP), fake_item(6, "a", Priority.POREP)]
    queue = list(reversed(items))
    heapq.heapify(queue)
    taken = batch(queue, head, 10)
    assert [i.seq for i in taken] == [1, 4]  # 5 and 6 would overtake 2 (another circuit's, higher priority)
    assert sorted(i.seq for i in queue) == [2, 3, 5, 6] and queue[0].seq == 2
    queue = [fake_item(1, "a", Priority.POREP, packed=False), fake_item(2, "a", Priority.POREP),
             fake_item(3, "a", Priority.POREP), fake_item(4, "a", Priority.POREP)]
    assert [i.seq for i in batch(queue, head, 2)] == [2, 3]  # a full witness waits; the cap


def test_the_batch_cap_keeps_the_witnesses_within_the_gpu_memory():
    config = EngineConfig(pipeline=PipelineConfig(witness_batch=10), memory=MemoryConfig(vram_fraction=0.5))
    circuit = SimpleNamespace(num_inputs=1, num_aux=999, domain_size=1000)  # 32 000 bytes a witness
    assert batch_cap(config, circuit, None) == 10  # a host backend
    assert batch_cap(config, circuit, 2 * (128_000 + 3 * 32_000 + 100)) == 3
    assert batch_cap(config, circuit, 10**9) == 10
    assert batch_cap(config, circuit, 1000) == 1  # one at least, as without batching


@pytest.mark.slow
def test_2kib_porep_proofs_expand_in_one_batch(engine, gate):
    """Two 2KiB PoRep proofs (one partition each) queued together expand in one witness-program run
    through cuzk.porep.program_witness, and both verify."""
    from cuzk import api
    from cuzk.porep.synthetic import synthetic_c1

    c1s = [synthetic_c1("StackedDrg2KiBV1_1", prover_id=bytes(32), sector_id=i, ticket=bytes([i]) * 32,
                        seed=b"\x02" * 32, rng=np.random.default_rng(i), progress=False) for i in (1, 2)]
    engine.submit_porep(c1s[0], allow_setup=True).result(timeout=3000)  # the circuit resident and calibrated
    hold_the_worker(engine, gate)
    jobs = [engine.submit_porep(c1, allow_setup=True) for c1 in c1s]
    wait_queued(jobs)
    gate.let(None)
    for c1, job in zip(c1s, jobs):
        assert api.verify(c1, job.result(timeout=600))
        assert job.timings["witness_batch.0"] == 2
    assert jobs[0].timings["witness.0"] == jobs[1].timings["witness.0"]
    wait_released(engine)
