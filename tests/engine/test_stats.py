"""Engine.stats on the CPU backend: workers configured and busy, the queues (pending, waiting for a
synthesis process, GPU), the host budget, devices without VRAM and the resident circuits, while a
job's partitions hold the synthesis process, once it is done, and after a cancellation. Snapshots are
checked after the engine has drained: Engine.close waits for items still in flight."""
from __future__ import annotations

import time

from cuzk.engine import MemoryBudget
from cuzk.engine.engine import Engine
from engine.test_engine import config, spec, tasks  # tests/ is on the path

IDLE_QUEUE = {"loading": 0, "pending": 0, "synthesis": 0, "gpu": 0}


def wait_for(engine: Engine, ok, timeout: float = 20) -> dict | None:
    """The first snapshot that satisfies ok, or None after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = engine.stats()
        if ok(stats):
            return stats
        time.sleep(0.02)
    return None


def test_stats_while_partitions_are_synthesized_and_after():
    with Engine(config(synthesis=1, gpu_workers=1, queue=2), backend="cpu",
                budget=MemoryBudget(1 << 34, "test RAM")) as engine:
        idle = engine.stats()
        engine.submit(spec(), tasks(1, 1)).result(timeout=60)  # the circuit resident and measured
        job = engine.submit(spec(), tasks(10, 4, delay=0.8))
        # 3 slots (1 synthesis process + a GPU queue of 2): one item synthesizing, two waiting for the
        # process, the fourth held by the dispatcher until a slot frees
        busy = wait_for(engine, lambda s: s["queue"]["synthesis"] == 2)
        job.result(timeout=60)
        done = wait_for(engine, lambda s: s["gpu_workers"]["busy"] == 0)
    assert idle["synthesis_workers"] == {"configured": 1, "busy": 0}
    assert idle["gpu_workers"] == {"configured": 1, "busy": 0} and idle["queue"] == IDLE_QUEUE
    assert idle["devices"] == [{"device": "cpu:0", "workers": 1, "busy": 0, "circuits": [], "fault": None}]  # no VRAM
    assert idle["host"]["total_bytes"] == 1 << 34 and idle["host"]["reserved_bytes"] > 0 and not idle["resident"]
    assert busy is not None and busy["synthesis_workers"]["busy"] == 1 and busy["queue"]["pending"] == 1
    assert busy["resident"] == ["small"] and busy["host"]["reserved_bytes"] > idle["host"]["reserved_bytes"]
    assert done is not None and done["synthesis_workers"]["busy"] == 0 and done["queue"] == IDLE_QUEUE


def test_a_cancelled_jobs_items_leave_the_queues():
    with Engine(config(synthesis=1, gpu_workers=1, queue=1), backend="cpu",
                budget=MemoryBudget(1 << 34, "test RAM")) as engine:
        engine.submit(spec(), tasks(1, 1)).result(timeout=60)
        job = engine.submit(spec(), tasks(10, 5, delay=0.5))
        running = wait_for(engine, lambda s: s["synthesis_workers"]["busy"] == 1)
        job.cancel()
        cancelled = engine.stats()
        drained = wait_for(engine, lambda s: s["synthesis_workers"]["busy"] == 0 and s["queue"]["synthesis"] == 0)
    assert running is not None and running["queue"]["pending"] >= 3
    assert cancelled["queue"]["pending"] == 0  # its items are still in the heap, but not counted
    assert drained is not None and drained["queue"] == IDLE_QUEUE
