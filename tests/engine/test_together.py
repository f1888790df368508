"""Partitions proved together in cuzk.engine.Engine (cuzk.engine.together) where a device's VRAM plan
streams part of the key (VramPlan.prove_batch > 1): queued partitions of one circuit, up to the plan's
prove batch, are each expanded alone and proved by one prove_many (each key vector's MSMs of all of them
together, Backend.msm_sets); every proof verifies; a bad partition fails only its job. The device is a
CPU backend standing in for a capped GPU: its plan_vram gives the plan a cap would."""
from __future__ import annotations

import threading
import time

import pytest

from cuzk import groth16
from cuzk.backend.cpu import CpuBackend
from cuzk.backend.cuda.vram_plan import VECTORS, VramPlan
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import GpuConfig, MemoryConfig, PipelineConfig
from cuzk.engine.engine import Engine, Priority
from cuzk.engine.together import planned_host_bytes
from engine.test_batch import (bad_and_good, batch_sizes, gated, packed_tasks, program_spec, queue_behind_a_busy_worker,
                               wait_released)

TOGETHER = 3


class Streaming(CpuBackend):
    """A CPU backend whose VRAM plan streams every key vector, as a tight cap's would; its witness
    expansions wait while `expanding` is clear."""

    def __init__(self) -> None:
        self.expanding = threading.Event()
        self.expanding.set()

    def run_witness_program(self, pce, program, w) -> None:
        assert self.expanding.wait(60)
        super().run_witness_program(pce, program, w)

    def plan_vram(self, circuit, vectors, witness_batch):
        return VramPlan(cap=16 << 30, usable=14 << 30, quotient="offload", tables={}, streamed=tuple(VECTORS),
                        chunk=1 << 20, witness_batch=1, prove_batch=witness_batch, peak=0, phases={},
                        reasons=("every vector streams",))


@pytest.fixture(scope="module")
def engine():
    cfg = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1),
                       pipeline=PipelineConfig(max_parallel_synthesis=2, gpu_queue_depth=8, witness_batch=TOGETHER),
                       memory=MemoryConfig(admission_timeout_s=30))
    with Engine(cfg, backend=[Streaming()], budget=MemoryBudget(1 << 34, "test RAM")) as e:
        e.submit(program_spec(), packed_tasks(0, 1)).result(timeout=600)  # resident and calibrated
        yield e


@pytest.fixture
def gate(monkeypatch):
    yield from gated(monkeypatch)


def totals(job) -> list[float]:
    return [job.timings[f"prove.{k}.total"] for k in range(len(job.tasks))]


def test_queued_partitions_are_proved_together_and_verify(engine, gate):
    first, second = queue_behind_a_busy_worker(engine, gate, packed_tasks(11, 2), packed_tasks(12, 3))
    gate.let(None)
    proofs = [job.result(timeout=600) for job in (first, second)]
    res = engine.preload(first.spec)
    for job, proof in zip((first, second), proofs):
        for k, task in enumerate(job.tasks):
            assert groth16.verify(res.pvk, list(task.inputs), groth16.Proof.from_bytes(proof[192 * k:192 * (k + 1)]))
    # five queued: three proved together (one prove_many: the same timings), then two; each expanded alone
    together = totals(first) + totals(second)
    assert together[:3] == [together[0]] * 3 and together[3:] == [together[3]] * 2 and together[0] != together[3]
    assert batch_sizes(first) + batch_sizes(second) == [1] * 5
    wait_released(engine)


def test_a_bad_partition_fails_only_its_job(engine, gate):
    """Proved together, the bad partition's expansion fails the batch; each is then proved alone."""
    good = bad_and_good(engine, gate, 13)
    assert len(set(totals(good))) == 2  # not one prove_many
    assert batch_sizes(good) == [1, 1]


def test_a_higher_priority_item_ends_a_batch_early(engine, gate):
    """A WinningPoSt item queued while a batch of three runs: the batch ends after the partition in
    progress, the WinningPoSt proof is made next, then the other two, together; every proof verifies."""
    device = engine._devices[0].backend
    (porep,) = queue_behind_a_busy_worker(engine, gate, packed_tasks(21, 3))
    device.expanding.clear()  # the batch's first expansion waits
    gate.let(None)
    wait_state(porep, 0, "proving")
    winning = engine.submit(program_spec(), packed_tasks(22, 1), priority=Priority.WINNING_POST)
    wait_state(winning, 0, "gpu_queue")
    device.expanding.set()
    res = engine.preload(porep.spec)
    for job in (porep, winning):
        proof = job.result(timeout=600)
        for k, task in enumerate(job.tasks):
            assert groth16.verify(res.pvk, list(task.inputs), groth16.Proof.from_bytes(proof[192 * k:192 * (k + 1)]))
    ends = {(ev["job"], ev["partition"]): ev["t"] for ev in engine.timeline if ev["event"] == "gpu_end"}
    assert ends[porep.id, 0] < ends[winning.id, 0] < ends[porep.id, 1]
    first, *rest = totals(porep)
    assert rest[0] == rest[1] != first  # the two handed back, proved together
    wait_released(engine)


def wait_state(job, k: int, state: str) -> None:
    deadline = time.monotonic() + 60
    while job.partition_state[k] != state:
        assert time.monotonic() < deadline and not job.done, job.partition_state
        time.sleep(0.01)


def test_parked_partitions_count_in_host_memory():
    circuit = type("C", (), {"num_inputs": 2, "num_aux": 998, "domain_size": 1024})()
    plan = Streaming().plan_vram(circuit, {}, 4)
    assert planned_host_bytes(plan, circuit) == 2 * 32 * 1000 + 32 * 1024  # witness, A and B scalars, H
    assert planned_host_bytes(Streaming().plan_vram(circuit, {}, 1), circuit) == 0
    assert planned_host_bytes(None, circuit) == 0
