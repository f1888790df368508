"""The prover of one GPU of a Ray node: an Engine (cuzk.engine) whose circuits stay resident between
partitions. The front (cuzk.cluster.front) creates it as a Ray actor, one per GPU, and calls:

    warm(specs)                       load each circuit (parameters, MSM tables, witness program)
    prove(spec, task, priority, tag)  one partition, verified: ("proof", 192 bytes) or ("error", ...)
    cancel(tag)                       drop a partition whose job ended elsewhere (cancelled, failed)
    evict(key), health()              drop a circuit; what this prover holds and has done

prove answers an engine error as a value (its type name, message, and whether the device failed),
not by raising it: a typed error need not survive pickling, and the front decides what a failure
means (a device fault: prove the partition elsewhere; any other: fail the job)."""
from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import replace
from typing import Any

from cuzk.engine.engine import Engine
from cuzk.engine.config import EngineConfig
from cuzk.engine.jobs import CircuitSpec, DeviceFaultError, Job, Priority, Task
from cuzk.engine.processes import rss


class Prover:
    """One GPU's engine (`backend` "auto" or "cuda": the GPU Ray gave this actor, which it sees as its
    only one; "cpu": a host backend standing in, for tests and CPU fleets)."""

    def __init__(self, config: EngineConfig, backend: str = "auto") -> None:
        self.started = time.time()
        self.engine = Engine(replace(config, gpus=replace(config.gpus, devices=())), backend=backend)
        self.slots = config.pipeline.slots
        self._lock = threading.Lock()
        self._running: dict[str, Job] = {}  # tag -> the engine job of a partition being proved
        self.proofs = self.failures = 0

    def warm(self, specs: list[CircuitSpec]) -> dict[str, Any]:
        """Make each circuit resident and ready to prove (Engine.warm); then health()."""
        for spec in specs:
            self.engine.warm(spec)
        return self.health()

    def prove(self, spec: CircuitSpec, task: Task, priority: int, tag: str) -> tuple:
        """Partition `task` of circuit `spec`, proved and verified by the engine: ("proof", bytes), or
        ("error", type name, message, device_fault)."""
        job = self.engine.submit(spec, [task], Priority(priority), job_id=tag)
        with self._lock:
            self._running[tag] = job
        try:
            proof = job.result()
        except Exception as e:  # noqa: BLE001 - every engine error goes back to the front as a value
            with self._lock:
                self.failures += not job.cancelled
            return "error", type(e).__name__, str(e), isinstance(e, DeviceFaultError)
        finally:
            with self._lock:
                self._running.pop(tag, None)
        with self._lock:
            self.proofs += 1
        return "proof", proof

    def cancel(self, tag: str) -> bool:
        """Cancel partition `tag` (Job.cancel: dropped if queued, discarded when it ends if running);
        False when it is not here."""
        with self._lock:
            job = self._running.get(tag)
        return job is not None and job.cancel()

    def evict(self, key: str) -> bool:
        return self.engine.evict(key)

    def health(self) -> dict[str, Any]:
        """This prover's process, host, slots, proofs and failures, and its engine's stats (resident
        circuits, host budget, devices with their VRAM, queues)."""
        stats = self.engine.stats()
        with self._lock:
            done = {"proofs": self.proofs, "failures": self.failures}
        return {"pid": os.getpid(), "hostname": socket.gethostname(), "started": self.started,
                "slots": self.slots, "rss_bytes": rss(), "resident": stats["resident"],
                "loading": stats["loading"], "host": stats["host"], "devices": stats["devices"],
                "queue": stats["queue"], **done}
