"""The engine's placement policy: the work items and devices it places, which device takes an item
(place), how many waiting items of one circuit a batch takes (batch, batch_cap, share), and which
errors are a device's fault (device_fault). The policy:

  A worker takes, in priority order, the first item of the GPU queue that placement gives to its
  device: among the healthy devices with an idle worker that may serve the item's circuit (any, unless
  its parameters live on one GPU: then only that one), first those holding the circuit's GPU state
  (they took one of its items since it became resident), else those whose VRAM budget has room for it,
  of those the least loaded (busy workers / workers, then fewer circuits held, then device order).
  Otherwise the item waits for a holder, except that a circuit no healthy device holds goes to the
  least loaded idle one. A batch takes at most its share of the circuit's waiting items: split with the
  other idle devices that could take them."""
from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk.backend import Backend, is_device_error
from cuzk.engine.accounting import vectors_bytes, witness_bytes, work_bytes
from cuzk.engine.budget import Reservation
from cuzk.engine.config import EngineConfig
from cuzk.engine.jobs import Job
from cuzk.engine.residency import Resident
from cuzk.errors import (BudgetError, InputError, ProofVerificationError, SynthesisError,
                         UnsatisfiedConstraintError)
from cuzk.groth16 import AnyCircuit
from cuzk.groth16.keys import PARAMS_VECTORS
from cuzk.porep import program_witness


@dataclass(order=True)
class Item:
    """One partition of a job as the engine moves it: ordered by (priority, submission order); its
    host reservation (and of it the bytes in the engine process, `local`), its witness once
    synthesized, its circuit (resident when the item is queued), and `ended` once it is released."""

    priority: int
    seq: int
    job: Job = field(compare=False)
    k: int = field(compare=False)
    reservation: Reservation | None = field(default=None, compare=False)
    witness: np.ndarray | None = field(default=None, compare=False)
    local: int = field(default=0, compare=False)  # of its reservation, the bytes in the engine process
    ended: threading.Event = field(default_factory=threading.Event, compare=False)
    res: Resident | None = field(default=None, compare=False)  # its circuit, resident when the item is queued


@dataclass(eq=False)
class Device:
    """One device of the engine: its backend (shared by its `workers` threads), how many of those hold
    an item (busy), the circuits whose GPU state it holds (it took one of their items since they became
    resident; under VRAM pressure its backend may evict their tables, and rebuilds them on use), and its
    fault once it is bad (then it takes no more items)."""

    name: str
    backend: Backend
    workers: int
    busy: int = 0
    circuits: set[str] = field(default_factory=set)
    fault: str | None = None
    plans: dict[str, Any] = field(default_factory=dict)  # circuit key -> its VRAM plan here (None: no cap)

    def load(self) -> tuple[float, int]:
        return self.busy / self.workers, len(self.circuits)


def packed(item: Item) -> bool:
    return isinstance(item.witness, program_witness.PackedWitness)


def batch(queue: list[Item], head: Item, n: int) -> list[Item]:
    """Up to n items of the heap `queue` to expand with `head`: of its circuit, with packed witnesses,
    in priority order, removed from the heap. An item left waiting (another circuit's, or a full
    witness) is never overtaken by one of lower priority: the scan stops there. Finished jobs' items
    are left for the worker that pops them."""
    taken: list[Item] = []
    waiting: int | None = None  # the priority of the first item left waiting
    for item in sorted(queue):
        if len(taken) == n or (waiting is not None and item.priority > waiting):
            break
        if item.job.done:
            continue
        if item.job.spec.key == head.job.spec.key and packed(item):
            taken.append(item)
        elif waiting is None:
            waiting = item.priority
    if taken:
        ids = {id(item) for item in taken}
        queue[:] = [item for item in queue if id(item) not in ids]
        heapq.heapify(queue)
    return taken


def batch_cap(config: EngineConfig, circuit: AnyCircuit, free: int | None) -> int:
    """How many partitions of `circuit` to expand at once: pipeline.witness_batch, and with `free`
    bytes free on the GPU (None: a host backend) no more than fit there (32 bytes per variable each)
    in memory.vram_fraction of them, less one partition's prover vectors (4 x 32 x domain size); at
    least one. The engine keeps no VRAM ledger for items: the CUDA backend keeps their work's room free
    of new tables (reserve_for), and this is the memory free when the batch forms: two workers
    of one device forming batches at the same moment may both count the same bytes. The batch's
    witnesses stay on the device until its last item is proved."""
    cap = config.pipeline.witness_batch
    if free is None:
        return cap
    spare = config.memory.vram_fraction * free - vectors_bytes(circuit)
    return max(1, min(cap, int(spare // witness_bytes(circuit))))


ITEM_ERRORS = (InputError, SynthesisError, UnsatisfiedConstraintError, ProofVerificationError, BudgetError)


def device_fault(error: BaseException) -> bool:
    """Whether an error is its device's fault (cuzk.backend.is_device_error: a CUDA error, the device's
    memory exhausted), so the device is marked bad; any other error is the item's own and fails its job."""
    return is_device_error(error) and not isinstance(error, ITEM_ERRORS)


def serves(dev: Device, res: Resident) -> bool:
    """Whether `dev` may prove items of `res`'s circuit: any device, unless its parameters live on one GPU."""
    return res.device is None or dev.backend.device == res.device


def room(dev: Device, res: Resident) -> bool:
    """Whether dev's memory budget has room for res's circuit beside what it holds (always on a host
    backend; a circuit whose parameters live on a device needs none)."""
    return res.device is not None or dev.backend.has_room(res.gpu_bytes)


def device_faults(devices: list[Device]) -> dict[str, str]:
    """Each bad device's name and fault."""
    return {d.name: d.fault for d in devices if d.fault is not None}


def take_stranded(queue: list[Item], devices: list[Device]) -> list[Item]:
    """The items of the heap `queue` that no healthy device can take, taken out of it (under the
    engine's lock)."""
    stranded = [item for item in queue if not item.job.done
                and not any(d.fault is None and serves(d, item.res) for d in devices)]
    if stranded:
        queue[:] = [item for item in queue if all(item is not s for s in stranded)]
        heapq.heapify(queue)
    return stranded


def place(devices: list[Device], res: Resident) -> Device | None:
    """The device to give an item of `res`'s circuit now, or None for it to wait (the policy: the
    module docstring)."""
    able = [d for d in devices if d.fault is None and serves(d, res)]
    idle = [d for d in able if d.busy < d.workers]
    for pool in ([d for d in idle if res.key in d.circuits], [d for d in idle if room(d, res)]):
        if pool:
            return min(pool, key=Device.load)
    if idle and not any(res.key in d.circuits for d in able):
        return min(idle, key=Device.load)
    return None


def share(devices: list[Device], dev: Device, head: Item, queue: list[Item]) -> int:
    """How many of head's circuit's waiting items (head among them) a batch on `dev` takes at most: an
    even split with the other healthy devices that have an idle worker and could take them."""
    res = head.res
    waiting = 1 + sum(1 for item in queue if item.job.spec.key == res.key and packed(item) and not item.job.done)
    others = sum(1 for d in devices if d is not dev and d.fault is None and d.busy < d.workers and serves(d, res)
                 and (res.key in d.circuits or room(d, res)))
    return -(-waiting // (1 + others))


def reserve_for(config: EngineConfig, dev: Device, res: Resident) -> None:
    """On a device, first (once per circuit) its VRAM plan for res's circuit under a cap
    (Backend.plan_vram: which key vectors keep tables, which stream; VramBudgetError naming the
    least cap when none fits), then keep what its workers' items use beside the MSM tables
    (work_bytes, and one MSM's working memory) free of new tables (nothing on a host backend)."""
    circuit = res.circuit
    if res.key not in dev.plans:
        vectors = {name: getattr(res.params.params, name) for name in PARAMS_VECTORS}
        dev.plans[res.key] = dev.backend.plan_vram(circuit, vectors, config.pipeline.witness_batch)
    dev.backend.reserve_beside_tables(work_bytes(config, circuit), msm_points=max(circuit.domain_size, circuit.num_aux))
