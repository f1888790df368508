"""The engine side of the watchdog test (tests/engine/test_watchdog.py): run as a script, it builds
an Engine on the CPU backend under the real host RAM budget (MemoryBudget.for_host(host_limit(cap),
margin): the budget every user gets from memory.host_cap), submits --jobs jobs of --partitions
partitions whose synthesis allocates and touches --alloc-mb MiB (circuits.heavy_witness), waits for
every proof, checks them, prints one JSON line and exits 0.

    python tests/engine/watchdog_engine.py --cap BYTES --synthesis N --gpu-workers M --jobs J --alloc-mb A

--sequential submits each job once the one before is done (the test's calibration: every item is
admitted after the last one ended, so `held` includes the engine's growth over the run).
--unbudgeted gives the engine a budget that lies (1 PiB): the control case, which the test's
watchdog must kill. The summary line: {"proofs": done, "jobs": J, "max_reserved": bytes (the
largest host_reserved of the engine's timeline), "budget_total": bytes, "synthesis_bytes": the
measured growth, "item_bytes": what one item reserves, "held": what the engine holds besides items (its
process, the synthesis processes, the resident circuit), "reservations": [[what, bytes], ...] of the
ledger at the end, "budget_source": ...}.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parents[1])
if TESTS not in sys.path:  # tests/, for `from engine import circuits` (spawned children inherit sys.path)
    sys.path.insert(0, TESTS)

import numpy as np

from cuzk import groth16
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import GpuConfig, MemoryConfig, PipelineConfig
from cuzk.engine.engine import CircuitSpec, Engine, Task
from cuzk.groth16 import as_circuit, setup
from cuzk.porep.params_cache import LoadedParams, ParamsFiles
from engine import circuits

WIDTH = 3
PROOF = groth16.PROOF_BYTES


def spec() -> CircuitSpec:
    def load():
        circuit = as_circuit(circuits.inputs_circuit([1] * WIDTH))
        params = setup(circuit, np.random.default_rng(1))
        return circuit, LoadedParams(params, params.vk, ParamsFiles(Path("/nonexistent"), "test"), True)
    return CircuitSpec("watchdog", load)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cap", type=int, required=True, help="memory.host_cap, bytes")
    p.add_argument("--margin", type=int, default=0, help="memory.host_margin, bytes")
    p.add_argument("--synthesis", type=int, default=1, help="pipeline.max_parallel_synthesis")
    p.add_argument("--gpu-workers", type=int, default=1, help="gpus.gpu_workers_per_device")
    p.add_argument("--queue", type=int, default=None, help="pipeline.gpu_queue_depth (default: --synthesis)")
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--partitions", type=int, default=1, help="partitions per job")
    p.add_argument("--alloc-mb", type=int, default=200, help="MiB each synthesis allocates and touches")
    p.add_argument("--hold", type=float, default=0.3, help="seconds each synthesis holds its memory")
    p.add_argument("--sequential", action="store_true", help="submit each job once the one before is done")
    p.add_argument("--admission-timeout", type=float, default=30, help="memory.admission_timeout_s")
    p.add_argument("--unbudgeted", action="store_true", help="a budget that lies (1 PiB): the control case")
    a = p.parse_args(argv)

    config = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=a.gpu_workers),
                          pipeline=PipelineConfig(max_parallel_synthesis=a.synthesis,
                                                  gpu_queue_depth=a.queue or a.synthesis),
                          memory=MemoryConfig(host_cap=a.cap, host_margin=a.margin,
                                              admission_timeout_s=a.admission_timeout))
    budget = MemoryBudget(1 << 50, "a budget that lies") if a.unbudgeted else None  # None: the host's
    with Engine(config, backend="cpu", budget=budget) as engine:
        s = spec()
        jobs = []
        for j in range(a.jobs):
            values = [[1000 * j + 10 * k + i for i in range(WIDTH)] for k in range(a.partitions)]
            tasks = [Task(functools.partial(circuits.heavy_witness, v, a.alloc_mb, a.hold), v) for v in values]
            jobs.append(engine.submit(s, tasks))
            if a.sequential:
                jobs[-1].result(timeout=300)
        res = engine.preload(s)
        done = 0
        for job in jobs:
            proof = job.result(timeout=300)  # the engine verified every partition
            assert len(proof) == PROOF * a.partitions, (job.id, len(proof))
            for k, task in enumerate(job.tasks):
                assert groth16.verify(res.pvk, list(task.inputs), groth16.Proof.from_bytes(proof[PROOF * k:PROOF * (k + 1)]))
            done += 1
        summary = {"proofs": done, "jobs": a.jobs, "max_reserved": max((e["host_reserved"] for e in engine.timeline), default=0),
                   "budget_total": engine.budget.total, "budget_source": engine.budget.source,
                   "synthesis_bytes": res.synthesis_bytes, "item_bytes": engine._item_bytes(res), "held": engine.held,
                   "reservations": [(r["what"], r["bytes"]) for r in engine.budget.snapshot()["reservations"]]}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
