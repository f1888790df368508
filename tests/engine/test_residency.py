"""Engine residency on the CPU backend: a circuit loads on a loader thread outside the engine's locks
(a slow load of one circuit stalls neither another circuit's proofs nor stats), one load per circuit
however many jobs wait for it, a failed load fails its jobs, jobs report their admission, and a
circuit idle for memory.eviction_min_idle is evicted when the host budget lacks room."""
from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from cuzk.engine import MemoryBudget
from cuzk.engine.engine import CircuitSpec, Engine
from cuzk.errors import BudgetTimeoutError, ParamsNotFoundError
from engine.test_engine import check_proofs, config, spec, tasks  # tests/ is on the path

pytestmark = pytest.mark.usefixtures("warm_numba_cache")


def slow_spec(key: str, release: threading.Event, loads: list[str]) -> CircuitSpec:
    """spec(key) whose load waits for `release` (a 32GiB circuit takes a minute to become resident)."""
    base = spec(key)

    def load():
        loads.append(key)
        release.wait(60)
        return base.load()
    return dataclasses.replace(base, load=load)


def test_a_slow_load_blocks_no_other_circuit():
    release, loads = threading.Event(), []
    with Engine(config(synthesis=1, gpu_workers=1), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        e.submit(spec("fast"), tasks(1, 1)).result(timeout=120)  # resident, processes started
        t = time.monotonic()
        slow = [e.submit(slow_spec("slow", release, loads), tasks(100 + j, 1)) for j in range(3)]
        submitted = time.monotonic() - t
        stats = e.stats()
        stats_s = time.monotonic() - t - submitted
        fast = e.submit(spec("fast"), tasks(10, 2))
        check_proofs(e, fast, fast.result(timeout=60))  # proved while "slow" still loads
        assert not any(job.done for job in slow) and e.loading == ["slow"]
        release.set()
        for job in slow:
            check_proofs(e, job, job.result(timeout=120))
    assert submitted < 1.0 and stats_s < 1.0, (submitted, stats_s)
    assert stats["queue"]["loading"] == 3 and stats["loading"] == ["slow"]
    assert loads == ["slow"]  # one load for the three jobs that waited for it


def test_a_failed_load_fails_its_jobs_and_the_next_submission_loads_again():
    attempts = []

    def load():
        attempts.append(1)
        raise ParamsNotFoundError("no parameters for the test circuit")
    broken = dataclasses.replace(spec("broken"), load=load)
    with Engine(config(), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        for _ in range(2):
            with pytest.raises(ParamsNotFoundError, match="no parameters"):
                e.submit(broken, tasks(1, 2)).result(timeout=30)
        assert len(attempts) == 2 and not e.resident and not e.loading


def test_a_job_reports_its_admission_before_its_end():
    with Engine(config(synthesis=1), backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        seen = []
        job = e.submit(spec(), tasks(1, 2))
        job.add_admitted_callback(lambda j: seen.append(("admitted", j.done)))
        job.result(timeout=120)
        job.add_admitted_callback(lambda j: seen.append(("late", j.done)))
    assert seen == [("admitted", False), ("late", True)] and job.admitted


@pytest.mark.parametrize("idle_s", [0.0, 3600.0])
def test_an_idle_circuit_is_evicted_when_the_budget_lacks_room(idle_s):
    """A reservation that fits only without a resident circuit evicts it once it has been idle for
    memory.eviction_min_idle (its reservation released, the circuit gone); a circuit not idle that long
    stays, and the reservation fails for want of room when its time is up."""
    cfg = config()
    cfg = dataclasses.replace(cfg, memory=dataclasses.replace(cfg.memory, eviction_min_idle_s=idle_s))
    with Engine(cfg, backend="cpu", budget=MemoryBudget(1 << 34, "test RAM")) as e:
        e.submit(spec("a"), tasks(1, 1)).result(timeout=120)
        circuit = e.preload(spec("a")).reservation.bytes
        want = e.budget.free + circuit // 2
        if idle_s == 0.0:
            with e.budget.reserve(want, "a large item", timeout=10):
                assert e.resident == [] and e.budget.free == circuit - circuit // 2
        else:
            with pytest.raises(BudgetTimeoutError, match="test RAM"):
                e.budget.reserve(want, "a large item", timeout=1.5)
            assert e.resident == ["a"]
