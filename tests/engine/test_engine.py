"""cuzk.engine.Engine on the CPU backend: partition proofs in order and verified, priorities,
cancellation, the host RAM budget (never more reserved than it, an oversized item failing at once),
errors carried to the job; a 2KiB PoRep proof through the engine (slow)."""
from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path

import numpy as np
import pytest

from cuzk import groth16
from cuzk.groth16 import partition
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import GpuConfig, MemoryConfig, PipelineConfig
from cuzk.engine import accounting, residency
from cuzk.engine import engine as engine_module
from cuzk.engine.processes import synthesis_threads
from cuzk.engine.engine import CircuitSpec, Engine, JobCancelledError, Priority, Task
from cuzk.errors import BudgetExceededError, UnsatisfiedConstraintError
from cuzk.groth16 import as_circuit, setup
from cuzk.porep.params_cache import LoadedParams, ParamsFiles
from engine import circuits  # tests/ is on the path; the synthesis processes inherit it

WIDTH = 3


def spec(key: str = "small") -> CircuitSpec:
    def load():
        circuit = as_circuit(circuits.inputs_circuit([1] * WIDTH))
        params = setup(circuit, np.random.default_rng(1))
        return circuit, LoadedParams(params, params.vk, ParamsFiles(Path("/nonexistent"), "test"), True)
    return CircuitSpec(key, load)


def tasks(first: int, n: int, delay: float = 0.0, **kw) -> list[Task]:
    values = [[first + 10 * k + i for i in range(WIDTH)] for k in range(n)]
    return [Task(functools.partial(circuits.witness, v, delay, **kw), v) for v in values]


def config(synthesis: int = 2, gpu_workers: int = 1, queue: int = 1) -> EngineConfig:
    return EngineConfig(gpus=GpuConfig(gpu_workers_per_device=gpu_workers),
                        pipeline=PipelineConfig(max_parallel_synthesis=synthesis, gpu_queue_depth=queue),
                        memory=MemoryConfig(admission_timeout_s=30))


@pytest.fixture(scope="module")
def engine():
    with Engine(config(), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        yield e


def check_proofs(engine: Engine, job, proof: bytes) -> None:
    res = engine.preload(job.spec)
    parts = [groth16.Proof.from_bytes(proof[i:i + 192]) for i in range(0, len(proof), 192)]
    assert len(parts) == len(job.tasks)
    for task, p in zip(job.tasks, parts):
        assert groth16.verify(res.pvk, list(task.inputs), p)
    if len(parts) > 1:  # in partition order: the first proof does not verify the second's inputs
        assert not groth16.verify(res.pvk, list(job.tasks[1].inputs), parts[0])


def test_partition_proofs_in_order_and_verified(engine):
    job = engine.submit(spec(), tasks(5, 4))
    proof = job.result(timeout=600)
    check_proofs(engine, job, proof)
    assert job.partition_state == ["done"] * 4 and engine.budget.used == engine.held
    events = [e["event"] for e in engine.timeline if e["job"] == job.id and e["partition"] == 0]
    assert events == ["queued", "admitted", "synthesis_start", "synthesis_end", "gpu_start", "gpu_end", "finished"]
    times = [e["t"] for e in engine.timeline if e["job"] == job.id and e["partition"] == 0]
    assert times == sorted(times)  # synthesis start and end are the worker's own clock readings


def test_circuit_is_loaded_once_and_evicted_on_request(engine):
    engine.submit(spec("twice"), tasks(1, 1)).result(timeout=600)
    res = engine.preload(spec("twice"))
    engine.submit(spec("twice"), tasks(2, 1)).result(timeout=600)
    assert engine.preload(spec("twice")) is res and res.synthesis_bytes is not None
    assert engine.evict("twice") and "twice" not in engine.resident and not engine.evict("twice")


def test_higher_priority_overtakes_queued_work():
    with Engine(config(synthesis=1, queue=1), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        e.submit(spec(), tasks(1, 1)).result(timeout=600)  # circuit resident, worker started
        low = e.submit(spec(), tasks(100, 6, delay=0.3), Priority.POREP)
        time.sleep(0.2)
        high = e.submit(spec(), tasks(200, 1), Priority.WINNING_POST)
        high.result(timeout=600)
        assert not low.done  # the high job ran before the rest of the low one
        check_proofs(e, low, low.result(timeout=600))
        order = [ev["job"] for ev in e.timeline if ev["event"] == "admitted" and ev["job"] in (low.id, high.id)]
        assert order.index(high.id) < len(order) - 1


def test_cancel_frees_everything():
    with Engine(config(synthesis=1), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        job = e.submit(spec(), tasks(1, 5, delay=0.3))
        time.sleep(0.5)
        assert job.cancel() and job.cancelled and not job.cancel()
        with pytest.raises(JobCancelledError):
            job.result(timeout=1)
        after = e.submit(spec(), tasks(7, 1))
        after.result(timeout=600)
        deadline = time.monotonic() + 10
        while e.budget.used > e.held and time.monotonic() < deadline:
            time.sleep(0.05)
        assert e.budget.used == e.held
        started = {ev["partition"] for ev in e.timeline if ev["job"] == job.id and ev["event"] == "gpu_start"}
        assert len(started) < 5


def probe_sizes() -> tuple[int, int]:
    """(bytes an idle engine with this circuit holds, bytes of one item, the larger of guessed and measured)."""
    with Engine(config(), backend="cpu", budget=MemoryBudget(1 << 34, "probe")) as probe:
        probe.submit(spec(), tasks(1, 1)).result(timeout=600)
        res = probe.preload(spec())
        item = max(probe._item_bytes(res), probe._item_bytes(dataclasses.replace(res, synthesis_bytes=None)))
        return probe.held, item


def test_reservations_never_exceed_the_budget():
    """A budget that fits two items next to what the engine holds: every event sees at most the
    total reserved, and everything runs."""
    held, item = probe_sizes()
    budget = MemoryBudget(held + 2 * item + item // 2 + (256 << 20), "test RAM")  # + room for a third process
    with Engine(config(synthesis=3, gpu_workers=2, queue=3), backend="cpu", budget=budget) as e:
        jobs = [e.submit(spec(), tasks(10 * j, 3, delay=0.05)) for j in range(3)]
        for job in jobs:
            check_proofs(e, job, job.result(timeout=600))
        assert max(ev["host_reserved"] for ev in e.timeline) <= budget.total
        assert budget.used == e.held
    assert budget.used == 0  # closing the engine gives everything back


def test_an_item_larger_than_the_budget_fails_at_once(monkeypatch):
    """An item whose reservation (here: a first item's guess made huge) exceeds the whole budget
    fails at once with what it needs and what the budget is, instead of waiting."""
    monkeypatch.setattr(engine_module, "SYNTHESIS_GUESS_FACTOR", 10**9)
    with Engine(config(), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM", "the test")) as e:
        t = time.monotonic()
        with pytest.raises(BudgetExceededError, match="test RAM") as err:
            e.submit(spec(), tasks(1, 2)).result(timeout=30)
        assert time.monotonic() - t < 10 and "16.00 GiB" in str(err.value)


def test_a_budget_too_small_for_the_engine_itself_is_refused():
    with pytest.raises(BudgetExceededError, match="the engine process"):
        Engine(config(), backend="cpu", budget=MemoryBudget(1024, "tiny RAM"))


@pytest.mark.parametrize("kind", ["unsatisfied", "synthesis error"])
def test_errors_reach_the_job(engine, kind):
    if kind == "unsatisfied":
        bad = tasks(3, 2)
        bad[1] = tasks(3, 2, wrong=True)[1]
        with pytest.raises(UnsatisfiedConstraintError, match="partition 1"):
            engine.submit(spec(), bad).result(timeout=600)
    else:
        v = [1, 2, 3]
        with pytest.raises(RuntimeError, match="synthesis failed"):
            engine.submit(spec(), [Task(functools.partial(circuits.failing, v), v)]).result(timeout=600)
    deadline = time.monotonic() + 10
    while engine.budget.used > engine.held and time.monotonic() < deadline:
        time.sleep(0.05)
    assert engine.budget.used == engine.held


@pytest.mark.slow
def test_2kib_porep_through_the_engine_verifies(tmp_path, monkeypatch):
    """A 2KiB sector's C2 through the engine (CPU backend): the proof verifies with cuzk.verify, the
    same check the one-shot cuzk.prove path passes; a second proof reuses the resident circuit."""
    import cuzk
    from cuzk import api

    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    rng = np.random.default_rng()
    sector = cuzk.seal("StackedDrg2KiBV1_1", tmp_path / "sector", prover_id=bytes(32), sector_id=1,
                       ticket=bytes(rng.integers(0, 256, 32, np.uint8)),
                       progress=False)
    seed = bytes(rng.integers(0, 256, 32, np.uint8))
    c1, ids = api.as_c1(sector, seed)
    with Engine(config(synthesis=1), backend="cpu") as e:
        first = e.submit_porep(c1, ids=ids, allow_setup=True)  # cuzk's own parameters: no official ones here
        proof = first.result(timeout=3000)
        assert cuzk.verify(sector, proof, seed=seed)
        resident = e.preload(first.spec)
        again = e.submit_porep(c1, ids=ids, allow_setup=True).result(timeout=600)
        assert e.preload(first.spec) is resident and cuzk.verify(sector, again, seed=seed) and again != proof


def test_the_measured_synthesis_size_is_kept_for_the_next_engine(engine, tmp_path, caplog):
    path = tmp_path / "small.calibration.json"
    calibrated = dataclasses.replace(spec("calibrated"), calibration=path, identity="circuit-1")
    with caplog.at_level("INFO", logger="cuzk.engine"):
        assert residency.read_calibration(calibrated) is None  # none yet: said as such, not "unreadable"
    assert "no calibration for calibrated yet" in caplog.text and "unreadable" not in caplog.text
    # a synthesis that grows its process for sure (64 MiB, above glibc's largest mmap threshold: fresh
    # pages), where a 3-input witness may fit in memory the process already holds and measure 0
    heavy = Task(functools.partial(circuits.heavy_witness, [3, 4, 5], 64), [3, 4, 5])
    engine.submit(calibrated, [heavy]).result(timeout=600)
    measured = engine.preload(calibrated).synthesis_bytes
    stored = json.loads(path.read_text())
    assert measured > 32 << 20 and stored["synthesis_bytes"] == measured and stored["identity"] == "circuit-1"
    assert residency.read_calibration(calibrated) == measured  # what a new engine starts from
    assert engine.evict("calibrated")
    assert engine.preload(calibrated).synthesis_bytes == measured  # resident again: measured before any item
    assert residency.read_calibration(dataclasses.replace(calibrated, identity="circuit-2")) is None
    path.write_text("{not json")
    assert residency.read_calibration(calibrated) is None
    assert "unreadable (" in caplog.text
    engine.evict("calibrated")


def test_a_synthesis_measures_its_own_growth_not_the_engine_processes_peak():
    """processes.measured in a synthesis process: the growth of that call, not the engine process's
    peak (getrusage's ru_maxrss carries it into a spawned process: after a test that ran a 2KiB setup
    every item measured some 5 GB, a 100-constraint circuit's too) nor an earlier, larger call's."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from cuzk.engine.processes import measured, reset_peak_rss

    peak = np.ones(512 << 17)  # 512 MiB, every page written: this process's peak is at least that high
    del peak
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        _, large, *_ = pool.submit(measured, functools.partial(circuits.heavy_witness, [1, 2, 3], 256)).result(60)
        _, small, *_ = pool.submit(measured, functools.partial(circuits.witness, [1, 2, 3])).result(60)
    assert 256 << 20 <= large < 384 << 20
    if reset_peak_rss():  # else the peak counts from the process's start: the large call's
        assert small < 64 << 20


def test_host_bytes_of_an_item_follow_where_its_arrays_live():
    """An item's engine-process host bytes: the witness and the prover's vectors on a host backend; on
    GPUs only the witness when a packed one is expanded on the host's cores, nothing when the GPU
    expands it (the 32GiB run reserved 21.4 GB of host RAM per partition for arrays that were in VRAM)."""
    from types import SimpleNamespace

    packed = SimpleNamespace(num_inputs=3, num_aux=997, domain_size=1024, program=object())
    flat = SimpleNamespace(num_inputs=3, num_aux=997, domain_size=1024, program=None)
    witness, vectors = 32 * 1000, 4 * 32 * 1024
    host = accounting.engine_host_bytes
    assert host(packed, False, True) == host(flat, False, False) == witness + vectors
    assert host(packed, True, True) == 0
    assert host(packed, True, False) == host(flat, True, True) == witness


def test_synthesis_processes_share_the_cpus_out():
    """Each synthesis process runs pipeline.synthesis_threads numba threads, or when 0 its share of
    the CPUs (at least 1): processes that each ran a thread per CPU oversubscribed the cores."""
    import os

    import numba

    cpus = len(os.sched_getaffinity(0))
    auto = PipelineConfig(max_parallel_synthesis=2 * cpus)
    assert synthesis_threads(auto) == 1
    assert synthesis_threads(PipelineConfig(max_parallel_synthesis=1)) == cpus
    assert synthesis_threads(PipelineConfig(max_parallel_synthesis=9, synthesis_threads=3)) == 3
    with Engine(EngineConfig(pipeline=auto), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        assert e._pool.submit(numba.get_num_threads).result(timeout=60) == 1


def test_a_gpu_worker_does_not_wait_for_verification(monkeypatch):
    """A proof is verified on a finisher thread: with verification slowed to 2 s, the one GPU worker
    starts the next partition before the first is verified, and every proof still verifies."""
    real = partition.verify

    def slow(*args, **kwargs):
        time.sleep(2.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(partition, "verify", slow)  # what the finisher's verify_partition calls
    with Engine(config(synthesis=2, queue=2), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        job = e.submit(spec("finisher"), tasks(4, 2))
        check_proofs(e, job, job.result(timeout=120))
        at = {(ev["partition"], ev["event"]): ev["t"] for ev in e.timeline if ev["job"] == job.id}
    first, second = sorted(range(2), key=lambda k: at[(k, "gpu_start")])
    assert at[(second, "gpu_start")] < at[(first, "finished")]
