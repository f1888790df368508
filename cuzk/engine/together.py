"""A GPU worker's batch proved together (cuzk.groth16.partition.prove_partitions, prove_many): where the
device's VRAM plan streams part of the key from host memory (VramPlan.prove_batch > 1), the partitions
of a batch share each streamed chunk's crossing. Each item's witness is expanded alone when its turn
comes (its timings witness.{k}), so that one witness is on the device at a time; between the quotients
and the MSMs each waits in host memory with its H coefficients. A batch ends early when an item of a
higher priority comes to wait (a WinningPoSt waits for the quotient in progress and the MSMs of the
partitions before it, not for the whole batch)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuzk.engine.accounting import witness_bytes
from cuzk.engine.expansion import timed_expansion, witness_on_host
from cuzk.engine.placement import Device, Item
from cuzk.groth16 import AnyCircuit, Proof
from cuzk.groth16.partition import prove_partitions


def proves_together(plan: Any) -> bool:
    """Whether a device's VRAM plan (None without a cap) proves several partitions together."""
    return getattr(plan, "prove_batch", 1) > 1


def planned_host_bytes(plan: Any, circuit: AnyCircuit) -> int:
    """Host bytes one item of `circuit` takes under a device's VRAM plan: its witness where the plan
    keeps witnesses in host memory; where partitions are proved together, its witness, its H
    coefficients (32 x domain size) and the scalars of its A and B MSMs gathered from the witness (at
    most another witness), all waiting there for the batch's MSMs; 0 otherwise."""
    if proves_together(plan):
        return 2 * witness_bytes(circuit) + 32 * circuit.domain_size
    return witness_bytes(circuit) if getattr(plan, "witness_on_host", False) else 0


def outranked(queue: list[Item], priority: int) -> bool:
    """Whether an item of a higher priority than `priority` waits in the GPU queue (a heap)."""
    first = min(queue, default=None)  # the queue's lock not held: a snapshot is enough
    return first is not None and first.priority < priority


def prove_items(items: list[Item], dev: Device, host: Any = None,
                stop: Callable[[], bool] | None = None) -> list[Proof]:
    """The proofs of a batch of one circuit's items on `dev`, in order (prove_partitions checks each
    witness's public inputs and a.b = c, naming the partition); `host`: the backend that expands
    witnesses when pipeline.gpu_witness is off; `stop`, asked before each item after the first, ends
    the batch there (the proofs of the items before it only)."""
    res = items[0].res
    to_host = witness_on_host(dev, res.key)

    witnesses = [lambda item=item: timed_expansion([item], dev.backend, host, to_host)[0] for item in items]
    inputs = [list(item.job.tasks[item.k].inputs) for item in items]
    return prove_partitions(res.params.params, res.circuit, witnesses, inputs, dev.backend,
                            [item.k for item in items], "/".join(dict.fromkeys(item.job.id for item in items)), stop)
