"""Run as a script by tests/engine/test_orphans.py: an Engine on the CPU backend with two synthesis
processes busy in long syntheses (slow_packed); prints their pids as one JSON line, then waits to be
killed."""
from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

TESTS = str(Path(__file__).resolve().parents[1])
if TESTS not in sys.path:  # tests/, for `from engine import circuits` (spawned children inherit sys.path)
    sys.path.insert(0, TESTS)

import multiprocessing  # noqa: E402

from cuzk.engine import EngineConfig, MemoryBudget  # noqa: E402
from cuzk.engine.config import GpuConfig, PipelineConfig  # noqa: E402
from cuzk.engine.engine import Engine, Task  # noqa: E402
from engine import circuits  # noqa: E402
from engine.test_batch import packed_tasks, program_spec  # noqa: E402


def slow_packed(values: list[int], delay: float):
    """circuits.packed after `delay` seconds (holds a synthesis process)."""
    time.sleep(delay)
    return circuits.packed(values)



def main() -> None:
    config = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1), pipeline=PipelineConfig(max_parallel_synthesis=2))
    engine = Engine(config, backend="cpu", budget=MemoryBudget(1 << 34, "test RAM"))
    spec = program_spec("orphans")
    engine.submit(spec, packed_tasks(0, 1)).result(timeout=600)  # resident and calibrated
    slow = packed_tasks(10, 2)
    engine.submit(spec, [Task(functools.partial(slow_packed, t.inputs, 600.0), t.inputs) for t in slow])
    deadline = time.monotonic() + 120
    while len(multiprocessing.active_children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    print(json.dumps([p.pid for p in multiprocessing.active_children()]), flush=True)
    time.sleep(600)


if __name__ == "__main__":  # spawned synthesis processes import this module too
    main()
