"""A GPU worker's witness expansion: the packed witnesses of a batch of items of one circuit expanded
by the circuit's witness program in one run (its time is about that of one partition), on the proving
backend, or on a host backend (pipeline.gpu_witness off) and then copied once to the proving device,
so that the prover's vectors stay there as with the GPU witness; or, where the device's VRAM plan
keeps witnesses in host memory (VramPlan.witness_on_host), copied to host memory once expanded. When
a batch fails, each item is expanded alone, so that only a failing item gets its error."""
from __future__ import annotations

import logging
import time
from typing import Any

from cuzk.backend import Backend
from cuzk.engine.placement import Device, Item, device_fault
from cuzk.errors import SynthesisError
from cuzk.groth16 import CompiledCircuit
from cuzk.porep import program_witness

log = logging.getLogger("cuzk.engine")


def expanded(circuit: CompiledCircuit, packs: list[program_witness.PackedWitness], backend: Backend,
             host: Backend | None = None, to_host: bool = False):
    """The packs' full witnesses by one program_witness.expand on `backend` (the current device: the
    worker's device_scope), or on `host` and then copied to `backend`; in host memory when `to_host`."""
    on = host or backend
    w = program_witness.expand(circuit, packs, on, host=to_host)
    return backend.asarray(w) if on is not backend and not to_host else w


def witness_on_host(dev: Device, key: str) -> bool:
    """Whether `dev`'s VRAM plan for circuit `key` keeps its witnesses in host memory."""
    plan = dev.plans.get(key)
    return bool(getattr(plan, "witness_on_host", False))


def expand_batch(batch: list[Item], dev: Device, host: Backend | None = None) -> list[Any]:
    """The full witnesses of a batch of packed items on `dev` (timings witness.{k}: the run's seconds,
    witness_batch.{k}: its partitions); a failing item gets its error in place of its witness (a
    SynthesisError naming its job and partition); a device fault is raised."""
    to_host = witness_on_host(dev, batch[0].res.key)
    if len(batch) > 1:
        try:
            return _timed(batch, dev.backend, host, to_host)
        except Exception as e:  # noqa: BLE001 - each item alone finds the one at fault
            if device_fault(e):
                raise
            log.warning("engine: a batch of %d witnesses failed (%s); expanding each alone", len(batch), e)
    return [_one(item, dev.backend, host, to_host) for item in batch]


def _one(item: Item, backend: Backend, host: Backend | None, to_host: bool) -> Any:
    try:
        return _timed([item], backend, host, to_host)[0]
    except SynthesisError as e:
        return SynthesisError(f"{item.job.id} partition {item.k}: {e}")
    except Exception as e:  # noqa: BLE001 - the item's job carries it (or its device, when at fault)
        return e


def _timed(batch: list[Item], backend: Backend, host: Backend | None, to_host: bool) -> list[Any]:
    t = time.perf_counter()
    w = expanded(batch[0].res.circuit, [item.witness for item in batch], backend, host, to_host)
    seconds = time.perf_counter() - t
    for item in batch:
        item.job.timings.update({f"witness.{item.k}": seconds, f"witness_batch.{item.k}": len(batch)})
    return list(w)
