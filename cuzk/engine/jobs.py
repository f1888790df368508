"""The engine's job model: a proof request (Job) of partitions (Task) of one circuit (CircuitSpec),
its priority, and the errors a job can end with. The engine drives a job through its engine-side
methods (admit, complete_partition, fail, succeed); callers wait on result() and may cancel()."""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from cuzk.errors import CuzkError
from cuzk.groth16 import AnyCircuit, Proof
from cuzk.porep.params_cache import LoadedParams

class Priority(IntEnum):
    """Lower runs first: WinningPoSt > WindowPoSt > PoRep = SnapDeals; FIFO within a priority."""

    WINNING_POST = 0
    WINDOW_POST = 1
    POREP = 2
    SNAP_DEALS = 2


class JobCancelledError(CuzkError, CancelledError):
    """The job was cancelled before it finished."""


class DeviceFaultError(CuzkError, RuntimeError):
    """No healthy device is left to take a work item: `faults` maps each bad device to its fault."""

    def __init__(self, what: str, faults: dict[str, str]) -> None:
        self.faults = dict(faults)
        super().__init__(f"{what}: " + ("; ".join(f"{name}: {fault}" for name, fault in faults.items())
                                        or "no device serves it"))


@dataclass(frozen=True)
class CircuitSpec:
    """How to load a circuit once (key names it among the resident ones). `calibration`: a JSON file
    where the measured peak growth of a synthesis process is kept for this circuit (beside its PCE),
    read when the circuit becomes resident so that even its first item reserves a measured size;
    `identity` must match the file's for it to count."""

    key: str
    load: Callable[[], tuple[AnyCircuit, LoadedParams]]
    calibration: Path | None = None
    identity: str = ""


@dataclass(frozen=True)
class Task:
    """One partition: `synthesize` (picklable: it runs in a worker process) returns its witness as
    (variables, 4) Montgomery Fr, or a PackedWitness that the GPU worker expands by the circuit's
    witness program on its backend; `inputs` are the public inputs it must carry (without ONE)."""

    synthesize: Callable[[], Any]
    inputs: Sequence[int]


class Job:
    """A submitted proof: result() waits for the concatenated partition proofs (bytes)."""

    def __init__(self, job_id: str, spec: CircuitSpec, tasks: Sequence[Task], priority: Priority) -> None:
        self.id, self.spec, self.tasks, self.priority = job_id, spec, list(tasks), priority
        self.proofs: list[bytes | None] = [None] * len(tasks)  # each partition's 192 bytes, once proved
        self.partition_state = ["queued"] * len(tasks)
        self.timings: dict[str, float] = {}
        self._future: Future = Future()
        self._lock = threading.Lock()
        self._admitted = False
        self._on_admitted: list[Callable[[Job], None]] = []

    @property
    def done(self) -> bool:
        return self._future.done()

    @property
    def cancelled(self) -> bool:
        return self.done and isinstance(self._future.exception(), JobCancelledError)

    def result(self, timeout: float | None = None) -> bytes:
        return self._future.result(timeout)

    def add_done_callback(self, fn: Callable[[Job], None]) -> None:
        """Call fn(job) once the job has finished (at once when it has), in the finishing thread."""
        self._future.add_done_callback(lambda _: fn(self))

    @property
    def admitted(self) -> bool:
        """Whether one of its partitions has been admitted (holds a slot and its host RAM)."""
        return self._admitted

    def add_admitted_callback(self, fn: Callable[[Job], None]) -> None:
        """Call fn(job) once, when its first partition is admitted (at once when it has been), in the
        admitting thread: before that partition is synthesized, so before the job can end by a proof."""
        with self._lock:
            if not self._admitted:
                self._on_admitted.append(fn)
                return
        fn(self)

    # ---- engine-side: the engine reports the job's progress through these
    def admit(self) -> None:
        """Its first partition is admitted: run the admitted callbacks (once)."""
        with self._lock:
            if self._admitted:
                return
            self._admitted, callbacks, self._on_admitted = True, self._on_admitted, []
        for fn in callbacks:
            fn(self)

    def error(self) -> BaseException | None:
        """The job's error once it has finished (None for a proof)."""
        return self._future.exception() if self.done else None

    def cancel(self) -> bool:
        """Cancel the job (queued items are dropped, running ones discarded when they end, their
        memory released); False when it had already finished."""
        return self.fail(JobCancelledError(f"job {self.id} was cancelled"))

    def fail(self, error: BaseException) -> bool:
        """End the job with `error` (False when it had already ended)."""
        return self._finish(error=error)

    def complete_partition(self, k: int, proof: Proof | bytes) -> None:
        """Partition k is proved and verified (`proof`, or its 192 bytes); the job ends with every
        proof once all are."""
        with self._lock:
            self.proofs[k] = proof if isinstance(proof, bytes) else proof.to_bytes()
            self.partition_state[k] = "done"
            complete = all(p is not None for p in self.proofs)
        if complete:
            self._finish(result=b"".join(self.proofs))

    def _finish(self, result: bytes | None = None, error: BaseException | None = None) -> bool:
        with self._lock:
            if self._future.done():
                return False
            if error is not None:
                self._future.set_exception(error)
            else:
                self._future.set_result(result)
            return True
