"""A GPU worker's witness expansion: the packed witnesses of a batch of items of one circuit expanded
by the circuit's witness program in one run (its time is about that of one partition), on the proving
backend, or on a host backend (pipeline.gpu_witness off) and then copied once to the proving device,
so that the prover's vectors stay there as with the GPU witness; or, where the device's VRAM plan
keeps witnesses in host memory (VramPlan.witness_on_host), copied to host memory once expanded. When
a batch fails, each item is expanded alone, so that only a failing item gets its error. And the
rehearsal of a circuit (one throwaway proof from a blank witness)."""
from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from cuzk import groth16
from cuzk.backend import Backend
from cuzk.engine.placement import Device, Item, device_fault
from cuzk.engine.residency import Resident
from cuzk.errors import InputError, SynthesisError
from cuzk.ff.fields import Fr
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
            return timed_expansion(batch, dev.backend, host, to_host)
        except Exception as e:  # noqa: BLE001 - each item alone finds the one at fault
            if device_fault(e):
                raise
            log.warning("engine: a batch of %d witnesses failed (%s); expanding each alone", len(batch), e)
    return [_one(item, dev.backend, host, to_host) for item in batch]


def _one(item: Item, backend: Backend, host: Backend | None, to_host: bool) -> Any:
    try:
        return timed_expansion([item], backend, host, to_host)[0]
    except SynthesisError as e:
        return SynthesisError(f"{item.job.id} partition {item.k}: {e}")
    except Exception as e:  # noqa: BLE001 - the item's job carries it (or its device, when at fault)
        return e


def timed_expansion(batch: list[Item], backend: Backend, host: Backend | None, to_host: bool) -> list[Any]:
    """expanded for a batch of packed items, each item's job timed: witness.{k}, the run's seconds, and
    witness_batch.{k}, its partitions."""
    t = time.perf_counter()
    w = expanded(batch[0].res.circuit, [item.witness for item in batch], backend, host, to_host)
    seconds = time.perf_counter() - t
    for item in batch:
        item.job.timings.update({f"witness.{item.k}": seconds, f"witness_batch.{item.k}": len(batch)})
    return list(w)


def run_rehearsal(dev: Device, res: Resident, host: Backend | None = None) -> None:
    """One throwaway proof of res's circuit on `dev` from a blank witness (program_witness.blank
    expanded as a partition's would be, or ONE alone where the circuit has no witness program or the
    blank does not expand): every kernel and host routine of a proof gets compiled and loaded
    (CuPy builds its own kernels at first use and numba the assembly's, seconds each on a fresh
    machine) and the device's memory pool grows to a proof's size. The proof is dropped."""
    t = time.perf_counter()
    circuit, w = res.circuit, None
    if isinstance(circuit, CompiledCircuit) and circuit.program is not None:
        try:
            w = expanded(circuit, [program_witness.blank(circuit)], dev.backend, host, witness_on_host(dev, res.key))[0]
        except (SynthesisError, InputError) as e:  # a decomposition fails, or no one block of free values
            log.info("engine: no blank witness for %s (%s); rehearsing with ONE alone", res.key, e)
    if w is None:
        w = dev.backend.zeros((circuit.num_columns, 4), np.uint64)
        w[0] = dev.backend.asarray(Fr.ones(1)[0])
    groth16.prove(res.params.params, circuit, w, dev.backend)
    log.info("engine: rehearsed a proof of %s on %s in %.1f s", res.key, dev.name, time.perf_counter() - t)
