"""A GPU worker's witness expansion: the packed witnesses of a batch of items of one circuit expanded
by the circuit's witness program in one run (its time is about that of one partition), on the proving
backend, or on a host backend (pipeline.gpu_witness off) and then copied once to the proving device,
so that the prover's vectors stay there as with the GPU witness. When a batch fails, each item is
expanded alone, so that only a failing item gets its error."""
from __future__ import annotations

import logging
import time
from typing import Any

from cuzk.backend import Backend
from cuzk.engine.placement import Item, device_fault
from cuzk.errors import SynthesisError
from cuzk.groth16 import CompiledCircuit
from cuzk.porep import program_witness

log = logging.getLogger("cuzk.engine")


def expanded(circuit: CompiledCircuit, packs: list[program_witness.PackedWitness], backend: Backend,
             host: Backend | None = None):
    """The packs' full witnesses by one program_witness.expand on `backend` (the current device: the
    worker's device_scope), or on `host` and then copied to `backend`."""
    on = host or backend
    w = program_witness.expand(circuit, packs, on, host=False)
    return backend.asarray(w) if on is not backend else w


def expand_batch(batch: list[Item], backend: Backend, host: Backend | None = None) -> list[Any]:
    """The full witnesses of a batch of packed items (timings witness.{k}: the run's seconds,
    witness_batch.{k}: its partitions); a failing item gets its error in place of its witness (a
    SynthesisError naming its job and partition); a device fault is raised."""
    if len(batch) > 1:
        try:
            return _timed(batch, backend, host)
        except Exception as e:  # noqa: BLE001 - each item alone finds the one at fault
            if device_fault(e):
                raise
            log.warning("engine: a batch of %d witnesses failed (%s); expanding each alone", len(batch), e)
    return [_one(item, backend, host) for item in batch]


def _one(item: Item, backend: Backend, host: Backend | None) -> Any:
    try:
        return _timed([item], backend, host)[0]
    except SynthesisError as e:
        return SynthesisError(f"{item.job.id} partition {item.k}: {e}")
    except Exception as e:  # noqa: BLE001 - the item's job carries it (or its device, when at fault)
        return e


def _timed(batch: list[Item], backend: Backend, host: Backend | None) -> list[Any]:
    t = time.perf_counter()
    w = expanded(batch[0].res.circuit, [item.witness for item in batch], backend, host)
    seconds = time.perf_counter() - t
    for item in batch:
        item.job.timings.update({f"witness.{item.k}": seconds, f"witness_batch.{item.k}": len(batch)})
    return list(w)
