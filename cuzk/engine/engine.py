"""The proving engine: a proof becomes partition work items; synthesis processes make their witnesses,
GPU workers (`gpus.gpu_workers_per_device` per device) prove them, a finisher thread verifies each
proof, and the job assembles the partition proofs in partition order.

    with Engine(EngineConfig.default(), backend="cuda") as engine:
        job = engine.submit_porep(c1, priority=Priority.POREP)
        proof = job.result(timeout=600)          # bytes, every partition verified

This module holds the threads and queues; docs/ENGINE.md draws an item's states, the threads and the
rooms of cuzk/engine/ (jobs, residency, accounting, processes, placement, expansion, porep)."""
from __future__ import annotations

import heapq
import itertools
import json
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.backend import Backend, device_backends, get_backend
from cuzk.engine.accounting import SYNTHESIS_GUESS_FACTOR, engine_host_bytes, witness_bytes
from cuzk.engine.budget import MemoryBudget, host_limit
from cuzk.engine.config import EngineConfig
from cuzk.engine.expansion import expand_batch, run_rehearsal
from cuzk.engine.together import outranked, planned_host_bytes, proves_together, prove_items
from cuzk.engine.jobs import (CircuitSpec, DeviceFaultError, Job, JobCancelledError, Priority, Task)
from cuzk.engine.placement import (Device, Item, batch, batch_cap, device_fault, device_faults, packed, place,
                                   reserve_for, serves, share, take_stranded)
from cuzk.engine.porep import porep_job
from cuzk.engine.processes import (measured, numba_threads, process_sizes, rss, start_synthesis_process,
                                   synthesis_threads, use_param_cache)
from cuzk.engine.residency import Resident, Residency, write_calibration
from cuzk.errors import CuzkError, InputError
from cuzk.groth16 import Proof
from cuzk.groth16.keys import PARAMS_VECTORS
from cuzk.groth16.partition import prove_partition, verify_partition
from cuzk.porep.c1 import C1Output

log = logging.getLogger("cuzk.engine")
SETTLE_MIN_BYTES = 1 << 20  # engine process growth below this is not worth a reservation


class Engine:
    """Synthesis workers feeding GPU workers under one host RAM budget (see the module docstring).

    backend: "cpu", "cuda" or "auto" (the CPU engine works the same way, with
    gpus.gpu_workers_per_device workers on the CPU backend; CUDA: a backend per device of gpus.devices),
    or the backends themselves, one per device (tests use CPU backends standing in for GPUs).
    timeline: a JSONL file of per-item events. budget: a MemoryBudget to use instead of the host's (tests)."""

    def __init__(self, config: EngineConfig | None = None, *, backend: str | Sequence[Backend] = "auto",
                 timeline: str | Path | None = None, budget: MemoryBudget | None = None) -> None:
        self.config = config or EngineConfig.default()
        pipe, mem = self.config.pipeline, self.config.memory
        use_param_cache(self.config.srs.param_cache)
        self.budget = budget or MemoryBudget.for_host(host_limit(mem.host_cap), mem.host_margin)
        self._baselines = [self.budget.reserve(rss(), "the engine process", mem.admission_timeout_s)]
        self._engine_bytes = self._baselines[0].bytes  # reserved for the engine process itself
        self._cond = threading.Condition()
        self._circuits = Residency(self.budget, mem.admission_timeout_s, mem.eviction_min_idle_s, self._forget)
        self.budget.set_evictor(self._circuits.evict_idle)
        self._held_items = 0  # items holding reservations
        self._held_local = 0  # of their reservations, the bytes in the engine process (Item.local)
        self._synthesizing = 0  # items handed to the synthesis pool and not yet back (stats)
        self._admitting: Item | None = None  # the item the dispatcher took, until it is synthesizing (stats)
        self._workers_counted = False
        self._devices = self._make_devices(backend)
        self._on_gpus = all(d.backend.device is not None for d in self._devices)
        # expands witnesses with pipeline.gpu_witness off
        self._witness_host = None if self.config.pipeline.gpu_witness else get_backend("cpu")
        self._awaiting_load = 0  # items of submitted jobs whose circuit is still loading (stats)
        self._pending: list[Item] = []
        self._gpu_queue: list[Item] = []
        self._slots = threading.Semaphore(pipe.slots)
        self._seq = itertools.count()
        self._job_ids = itertools.count(1)
        self._closed = False
        self._timeline_path = Path(timeline) if timeline is not None else None
        self.timeline: list[dict] = []
        self._pool = ProcessPoolExecutor(pipe.max_parallel_synthesis, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=start_synthesis_process,
                                         initargs=(os.getpid(), synthesis_threads(pipe)))
        # a proof's verification and hand-over (finish) run here, so a GPU worker's next item starts
        self._finisher = ThreadPoolExecutor(sum(dev.workers for dev in self._devices), thread_name_prefix="cuzk-finish",
                                            initializer=self._host_threads)
        self._threads = [threading.Thread(target=self._dispatch, name="cuzk-dispatch", daemon=True)]
        self._threads += [threading.Thread(target=self._gpu_worker, args=(dev,), name=f"cuzk-gpu-{dev.name}-{j}",
                                           daemon=True) for dev in self._devices for j in range(dev.workers)]
        for t in self._threads:
            t.start()

    def _make_devices(self, backend: str | Sequence[Backend]) -> list[Device]:
        """A device per backend (named cuda:<ordinal>, or <backend name>:<position> for a host backend),
        gpus.gpu_workers_per_device workers each (its backend shared by them); backends made here
        take memory.vram_fraction and memory.vram_budget."""
        memory = self.config.memory
        backends = device_backends(backend, self.config.gpus.devices, memory.vram_fraction, memory.vram_budget) \
            if isinstance(backend, str) else list(backend)
        names = [f"{be.name}:{i if be.device is None else be.device}" for i, be in enumerate(backends)]
        if not backends or len(set(names)) < len(names) or len({id(be) for be in backends}) < len(backends):
            raise InputError(f"an engine needs one backend of its own per device, got {names}")
        return [Device(name, be, self.config.gpus.gpu_workers_per_device) for name, be in zip(names, backends)]

    # ---- circuits ------------------------------------------------------------------------------
    def preload(self, spec: CircuitSpec) -> Resident:
        """The circuit of `spec`, loaded (PCE, parameters) unless resident already; waits for the load."""
        return self._circuits.preload(spec)

    def warm(self, spec: CircuitSpec, rehearse: bool | None = None) -> Resident:
        """preload(spec), then on each GPU that proves it what its first proof would make: the MSM
        tables of its parameters (sized beside its items' work, as reserve_for keeps it) and its
        witness program; then a rehearsal (expansion.run_rehearsal: one throwaway proof) so that the first proof
        compiles and builds nothing. `rehearse` defaults to GPUs only: on a host backend warm only
        loads (a rehearsal there is a whole CPU proof)."""
        res = self.preload(spec)
        vectors = {name: getattr(res.params.params, name) for name in PARAMS_VECTORS}
        g2 = [vectors.pop("b_g2")]
        program = getattr(res.circuit, "program", None) if self.config.pipeline.gpu_witness else None
        for dev in self._devices:
            if not serves(dev, res):
                continue
            with dev.backend.device_scope():
                reserve_for(self.config, dev, res)
                dev.backend.keep(list(vectors.values()), g2, getattr(res.circuit, "pce", None), program)
                if dev.backend.device is not None if rehearse is None else rehearse:
                    run_rehearsal(dev, res, self._witness_host)
        return res

    def evict(self, key: str) -> bool:
        """Drop a resident circuit (its parameters and their GPU tables go with it, once the items that
        hold it have ended)."""
        return self._circuits.evict(key)

    def _forget(self, key: str) -> None:
        """A circuit was dropped: no device holds its GPU state any more."""
        with self._cond:
            for dev in self._devices:
                dev.circuits.discard(key)

    @property
    def held(self) -> int:
        """Bytes reserved for the engine and synthesis processes and the resident circuits (not items)."""
        return self._circuits.held + sum(r.bytes for r in self._baselines)

    @property
    def resident(self) -> list[str]:
        return self._circuits.keys

    @property
    def loading(self) -> list[str]:
        """The circuits loading now."""
        return self._circuits.loading

    # ---- devices -------------------------------------------------------------------------------
    @property
    def devices(self) -> list[dict[str, Any]]:
        """Each device: its name, workers, busy (those holding an item), the circuits whose GPU state it
        holds and its fault (None while healthy)."""
        with self._cond:
            return [{"device": d.name, "workers": d.workers, "busy": d.busy, "circuits": sorted(d.circuits),
                     "fault": d.fault} for d in self._devices]

    def mark_bad(self, device: str, reason: str = "marked bad by an operator") -> None:
        """Take `device` (a name in `devices`) out of service: it takes no more items (those it runs
        finish there); the queued items go to the other devices, or fail when none can take them."""
        with self._cond:
            dev = next((d for d in self._devices if d.name == device), None)
            if dev is None:
                raise InputError(f"no device {device!r}: the engine has {', '.join(d.name for d in self._devices)}")
            if dev.fault is not None:
                return
            dev.fault = reason
            log.error("engine: device %s is bad (%s); its work goes to the other devices", device, reason)
            stranded = take_stranded(self._gpu_queue, self._devices)
            self._cond.notify_all()
        self._fail(stranded)

    def _fail(self, stranded: list[Item]) -> None:
        """Fail the jobs of items no healthy device can take (DeviceFaultError) and release them."""
        for item in stranded:
            pinned = "" if item.res is None or item.res.device is None else \
                f" (its parameters live on cuda:{item.res.device})"
            with self._cond:
                faults = device_faults(self._devices)
            item.job.fail(DeviceFaultError(f"{item.job.id} partition {item.k}: no healthy device "
                                                    f"can take it{pinned}", faults))
            self._release(item)

    # ---- jobs ----------------------------------------------------------------------------------
    def submit(self, spec: CircuitSpec, tasks: Sequence[Task], priority: Priority = Priority.POREP,
               job_id: str | None = None) -> Job:
        """Queue a proof of len(tasks) partitions of the circuit `spec`, at once: the circuit loads in
        the background unless resident (Residency.load), its items enter the queue when it is, and a failed
        load fails the job."""
        if self._closed:
            raise InputError("the engine is closed")
        if not tasks:
            raise InputError("a job needs at least one partition")
        with self._cond:
            if all(d.fault is not None for d in self._devices):
                raise DeviceFaultError("no healthy device is left", device_faults(self._devices))
        job = Job(job_id or f"job-{next(self._job_ids)}", spec, tasks, Priority(priority))
        with self._cond:
            self._awaiting_load += len(tasks)
        self._circuits.load(spec).add_done_callback(lambda loaded: self._queue(job, loaded))
        return job

    def _queue(self, job: Job, loaded: Future) -> None:
        """Put a submitted job's items in the pending heap once its circuit is resident (`loaded`, on
        the loader thread or at once), or fail the job with the load's error."""
        with self._cond:
            self._awaiting_load -= len(job.tasks)
        if loaded.cancelled() or self._closed:
            job.fail(JobCancelledError(f"job {job.id} was cancelled: the engine closed"))
            return
        if loaded.exception() is not None:
            job.fail(loaded.exception())
            return
        res: Resident = loaded.result()
        self._circuits.job_started(res)
        job.add_done_callback(lambda _: self._circuits.job_ended(res))
        with self._cond:
            for k in range(len(job.tasks)):
                heapq.heappush(self._pending, Item(int(job.priority), next(self._seq), job, k, res=res))
                self._event(job, k, "queued")
            self._cond.notify_all()

    def submit_porep(self, c1: C1Output, priority: Priority = Priority.POREP, job_id: str | None = None,
                     ids: tuple[bytes, int] | None = None, progress: bool = False,
                     allow_setup: bool | None = None) -> Job:
        """Queue the PoRep (C2) proof of a C1 output; its vanilla proofs are checked first. `progress`:
        say on stderr when the circuit's PCE or parameters are built (once per circuit shape).
        `allow_setup`: whether cuzk's own parameters may stand in for missing official ones (None:
        srs.allow_setup); without, such a job fails with OfficialParamsMissingError."""
        spec, tasks = porep_job(c1, self.config, ids, progress, allow_setup)
        return self.submit(spec, tasks, priority, job_id)

    def close(self) -> None:
        """Stop taking jobs, cancel what is queued, wait for the workers (items already synthesizing
        are proven: the GPU workers stay until none is left)."""
        with self._cond:
            self._closed = True
            for item in self._pending + self._gpu_queue + [self._admitting]:
                if item is not None:
                    item.job.cancel()
            self._cond.notify_all()
        for t in self._threads:
            t.join()
        self._finisher.shutdown(wait=True)
        self._pool.shutdown(cancel_futures=True)
        self._circuits.close()
        for r in self._baselines:
            r.release()
        self.budget.set_evictor(None)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the pipeline --------------------------------------------------------------------------
    def _item_bytes(self, res: Resident) -> int:
        synthesis = res.synthesis_bytes
        if synthesis is None:
            synthesis = SYNTHESIS_GUESS_FACTOR * witness_bytes(res.circuit)
        return self._local_bytes(res) + synthesis

    def _local_bytes(self, res: Resident) -> int:
        """Of an item's bytes, those in the engine process's host memory: engine_host_bytes, or what a
        device's VRAM plan keeps there (planned_host_bytes) where that is more."""
        planned = max((planned_host_bytes(d.plans.get(res.key), res.circuit) for d in self._devices), default=0)
        return max(planned, engine_host_bytes(res.circuit, self._on_gpus, self.config.pipeline.gpu_witness))

    def _next_pending(self) -> Item | None:
        with self._cond:
            while not self._closed:
                while self._pending and self._pending[0].job.done:
                    heapq.heappop(self._pending)
                if self._pending:
                    self._admitting = heapq.heappop(self._pending)
                    return self._admitting
                self._cond.wait()
            return None

    def _dispatch(self) -> None:
        """Admit pending items to synthesis in priority order, each with a slot and its host RAM."""
        while (item := self._next_pending()) is not None:
            if not self._workers_counted:
                self._count_workers()
            self._slots.acquire()
            res = item.res
            first = res.synthesis_bytes is None
            self._settle()
            try:
                item.reservation = self.budget.reserve(self._item_bytes(res), f"{item.job.id} partition {item.k}",
                                                       self.config.memory.admission_timeout_s)
            except CuzkError as e:
                self._slots.release()
                item.job.fail(e)
                continue
            item.local = self._local_bytes(res)
            with self._cond:
                self._held_items += 1
                self._held_local += item.local
            if item.job.done:
                self._release(item)
                continue
            item.job.partition_state[item.k] = "synthesis"
            item.job.admit()
            self._event(item.job, item.k, "admitted")
            with self._cond:
                self._admitting = None
                self._synthesizing += 1
            future = self._pool.submit(measured, item.job.tasks[item.k].synthesize)
            future.add_done_callback(lambda f, item=item: self._synthesized(item, f))
            if first:  # the circuit's first item runs alone, through its proof: its measurements
                item.ended.wait()  # (synthesis growth here, engine growth by _settle) size the next ones

    def _settle(self) -> None:
        """Reserve the engine process's growth that no reservation covers yet: code loaded on first
        use (numba kernels, a GPU context and modules), threads, a circuit's load beyond its arrays,
        allocator caches. It is the process's RSS beyond its own reservations, its resident circuits
        and the engine-process part of the items in flight (a lower bound while items run, exact
        between them; the first item of a circuit runs alone, so the next one sees its growth). The
        dispatcher calls it before each admission; the growth stays reserved until close(). It waits
        for room only while items run (nothing else would make room)."""
        with self._cond:
            running, local = self._held_items, self._held_local
        extra = rss() - self._engine_bytes - self._circuits.held - local
        if extra < SETTLE_MIN_BYTES:
            return
        try:
            self._baselines.append(self.budget.reserve(extra, "the engine process's growth",
                                                       self.config.memory.admission_timeout_s if running else 0))
        except CuzkError as e:  # the memory is in use all the same; the items still get their turn
            log.warning("engine: cannot reserve the engine process's growth: %s", e)
            return
        self._engine_bytes += extra

    def _count_workers(self) -> None:
        """Start every synthesis process and reserve its resident size (before any item runs), and
        that of multiprocessing's resource tracker (a process the spawn context started; a host
        watchdog sees it too)."""
        timeout = self.config.memory.admission_timeout_s
        sizes = process_sizes(self._pool, self.config.pipeline.max_parallel_synthesis)
        self._baselines += [self.budget.reserve(size, what, timeout) for what, size in sizes]
        self._workers_counted = True

    def _synthesized(self, item: Item, future: Future) -> None:
        try:
            self._take_synthesized(item, future)
        finally:  # after the item is queued or released: a closing engine's GPU workers wait for it
            with self._cond:
                self._synthesizing -= 1
                self._cond.notify_all()

    def _take_synthesized(self, item: Item, future: Future) -> None:
        if item.job.done:
            return self._release(item)
        try:
            item.witness, grown, start, end = future.result()
        except BaseException as e:  # noqa: BLE001 - the job carries the worker's error
            self._event(item.job, item.k, "synthesis_end")
            item.job.fail(e)
            return self._release(item)
        self._event(item.job, item.k, "synthesis_start", start)
        self._event(item.job, item.k, "synthesis_end", end)
        res = item.res
        if res.synthesis_bytes is None or grown > res.synthesis_bytes:
            res.synthesis_bytes = grown
            write_calibration(item.job.spec, grown)
        self._enqueue(item)

    def _enqueue(self, item: Item) -> None:
        """Put an item in the GPU queue (its job failed at once when no healthy device can take it)."""
        item.job.partition_state[item.k] = "gpu_queue"
        with self._cond:
            heapq.heappush(self._gpu_queue, item)
            stranded = take_stranded(self._gpu_queue, self._devices)
            self._cond.notify_all()
        self._fail(stranded)

    def _next_gpu(self, dev: Device) -> Item | None:
        """The next item for a worker of `dev`: the first of the GPU queue, in priority order, that
        placement gives to it (a finished job's item to any device, which releases it); None once
        the device is bad, or the engine closed and the queue empty."""
        with self._cond:
            while dev.fault is None:
                for item in sorted(self._gpu_queue):
                    if item.job.done or place(self._devices, item.res) is dev:
                        self._gpu_queue.remove(item)
                        heapq.heapify(self._gpu_queue)
                        dev.busy += 1
                        if not item.job.done:
                            dev.circuits.add(item.job.spec.key)
                        return item
                if self._closed and not self._gpu_queue and not self._synthesizing:
                    return None
                self._cond.wait()
            return None

    def _batchmates(self, head: Item, dev: Device) -> list[Item]:
        """The items of the GPU queue to expand with `head` (see batch): none unless its witness is
        packed; at most its share of its circuit's waiting items (share)."""
        if head.job.done or not packed(head):
            return []
        free = dev.backend.free_bytes()  # a device query: outside the lock
        cap = batch_cap(self.config, head.res.circuit, free)
        plan = dev.plans.get(head.res.key)
        cap = cap if plan is None else plan.prove_batch if proves_together(plan) else min(cap, plan.witness_batch)
        with self._cond:
            return batch(self._gpu_queue, head, min(cap, share(self._devices, dev, head, self._gpu_queue)) - 1)

    def _host_threads(self) -> None:
        """A GPU worker's or finisher's thread: numba's parallel loops there (the host witness, the proof's
        assembly, verification) use gpus.gpu_threads threads (0: numba's default; it is per thread)."""
        if self.config.gpus.gpu_threads:
            numba_threads(self.config.gpus.gpu_threads)

    def _gpu_worker(self, dev: Device) -> None:
        self._host_threads()
        while (head := self._next_gpu(dev)) is not None:
            batch, back = [head], []  # back: items handed back to the queue, no longer this worker's
            try:
                with dev.backend.device_scope():
                    if not head.job.done:
                        reserve_for(self.config, dev, head.res)
                    batch += self._batchmates(head, dev)
                    self._run(batch, dev, back)
            except BaseException as e:  # noqa: BLE001 - outside any one item's proof: the batch's jobs carry it
                if device_fault(e):
                    self._fault(dev, e)
                    for item in batch:
                        if not item.job.done and item.job.partition_state[item.k] != "done" \
                                and all(item is not b for b in back):
                            self._hand_back(item, dev, back)
                else:
                    for item in batch:
                        if all(item is not b for b in back):
                            item.job.fail(e)
            finally:
                for item in batch:
                    if all(item is not b for b in back):
                        self._release(item)
                with self._cond:
                    dev.busy -= 1
                    self._cond.notify_all()

    def _run(self, batch: list[Item], dev: Device, back: list[Item]) -> None:
        """Prove a batch's items on `dev` one after the other, their packed witnesses expanded together
        first. Each item's error goes to its job; a job finished meanwhile (cancelled, failed) has its
        items skipped. A device fault marks `dev` bad and hands the item back to the queue (appended to
        `back`), and with it every later item of the batch. Each item is released as it ends, except
        that witnesses in host memory (a host backend's: maybe rows of one array) stay reserved until
        the batch ends, while they live."""
        live = [item for item in batch if not item.job.done]
        if not live:
            return
        for item in live:
            item.job.partition_state[item.k] = "proving"
            self._event(item.job, item.k, "gpu_start", device=dev.name)
        if len(live) > 1 and proves_together(dev.plans.get(live[0].res.key)) and self._prove_together(live, dev, back):
            return
        try:
            witnesses = expand_batch(live, dev, self._witness_host) if packed(live[0]) else [live[0].witness]
        except Exception as e:  # noqa: BLE001 - a device fault hands every item back; another goes to the batch's jobs
            if not device_fault(e):
                raise
            witnesses = [e] * len(live)
        for item, w in zip(live, witnesses):
            if isinstance(w, BaseException) and device_fault(w):
                self._fault(dev, w)
            if dev.fault is not None and not item.job.done:
                self._hand_back(item, dev, back)
                continue
            if isinstance(w, BaseException):
                item.job.fail(w)
            elif not item.job.done:
                try:
                    self._prove(item, w, dev)
                except BaseException as e:  # noqa: BLE001 - the job carries the error, or the device's fault hands it back
                    if not device_fault(e):
                        item.job.fail(e)
                    else:
                        self._fault(dev, e)
                        self._hand_back(item, dev, back)
                        continue
            if not isinstance(w, np.ndarray):  # a host witness (maybe a row of the batch's) goes with the batch
                self._release(item)

    def _fault(self, dev: Device, error: BaseException) -> None:
        """Mark `dev` bad for a fault it raised (once: later faults of its other workers are only logged)."""
        log.error("engine: device %s faulted", dev.name, exc_info=error)
        self.mark_bad(dev.name, f"{type(error).__name__}: {error}")

    def _hand_back(self, item: Item, dev: Device, back: list[Item]) -> None:
        """Return an item that `dev` did not prove to the GPU queue (for any device) and add it to `back`
        (its worker's items handed back, which it no longer releases)."""
        back.append(item)
        self._event(item.job, item.k, "synthesis_end", device=dev.name, fault=dev.fault)
        self._enqueue(item)

    def _prove(self, item: Item, w: Any, dev: Device) -> None:
        """Check the full witness `w`'s public inputs and prove on `dev` (checking a.b = c)."""
        x = list(item.job.tasks[item.k].inputs)
        self._proved(item, prove_partition(item.res.params.params, item.res.circuit, w, x, dev.backend, item.k,
                                           item.job.id), dev)

    def _prove_together(self, live: list[Item], dev: Device, back: list[Item]) -> bool:
        """Prove a batch's items together (cuzk.engine.together; those after a higher-priority item came go
        back to the queue, and to `back`); False when that fails for a reason other than the device."""
        try:
            proofs = prove_items(live, dev, self._witness_host, lambda: outranked(self._gpu_queue, live[0].priority))
        except Exception as e:  # noqa: BLE001 - a device fault goes to the worker; else each alone finds the bad one
            if device_fault(e):
                raise
            log.warning("engine: %d partitions proved together failed (%s); proving each alone", len(live), e)
            return False
        for item, proof in zip(live, proofs):
            self._proved(item, proof, dev)
            self._release(item)
        for item in live[len(proofs):]:
            self._hand_back(item, dev, back)
        return True

    def _proved(self, item: Item, proof: Proof, dev: Device) -> None:
        """An item's proof made on `dev`: its event and timings, then to the finisher (_verified)."""
        job, k, res = item.job, item.k, item.res
        x = list(job.tasks[k].inputs)
        self._event(job, k, "gpu_end", device=dev.name)
        job.timings.update({f"prove.{k}.{s}": v for s, v in proof.timings.items()})
        self._finisher.submit(self._verified, job, k, proof, res.pvk, x)

    def _verified(self, job: Job, k: int, proof: Proof, pvk, inputs: list[int]) -> None:
        """Finish a proven partition on the finisher (the GPU worker has gone on): verify its proof
        against the circuit's key `pvk` and its public inputs, then hand it to its job (or the failure)."""
        try:
            verify_partition(pvk, inputs, proof, k, job.id)
        except BaseException as e:  # noqa: BLE001 - the job carries it
            job.fail(e)
            return
        self._event(job, k, "finished")
        job.complete_partition(k, proof)

    def _release(self, item: Item) -> None:
        item.witness = None
        if item.reservation is not None:
            item.reservation.release()
            item.reservation = None
            with self._cond:
                self._held_items -= 1
                self._held_local -= item.local
            self._slots.release()
        item.ended.set()

    def _event(self, job: Job, k: int, what: str, at: float | None = None, **extra: str | None) -> None:
        event = {"t": time.time() if at is None else at, "job": job.id, "partition": k, "event": what,
                 "host_reserved": self.budget.used, **extra}
        self.timeline.append(event)
        if self._timeline_path is not None:
            with self._timeline_path.open("a") as f:
                f.write(json.dumps(event) + "\n")

    def stats(self) -> dict[str, Any]:
        """A snapshot for status pages, read in one hold of the engine's lock (memory after it):
        synthesis_workers and gpu_workers ({"configured", "busy"}); queue: unfinished jobs' items
        "loading" (their circuit still loading), "pending" (waiting for a slot and their RAM),
        "synthesis" (admitted, waiting for a process), "gpu" (waiting for a GPU worker); host
        ({"total_bytes", "reserved_bytes"}); devices (`devices`, with the backend's memory_stats: on
        CUDA its VRAM total, used, reserved, budget, cap and pool); resident and loading (circuit keys)."""
        configured = self.config.pipeline.max_parallel_synthesis
        with self._cond:
            synthesizing = self._synthesizing
            pending = sum(not item.job.done for item in self._pending + [self._admitting] if item is not None)
            gpu = sum(not item.job.done for item in self._gpu_queue)
            loading = self._awaiting_load
            devices = self.devices
        for dev, out in zip(self._devices, devices):
            out.update(dev.backend.memory_stats())
        return {"synthesis_workers": {"configured": configured, "busy": min(synthesizing, configured)},
                "gpu_workers": {"configured": sum(d["workers"] for d in devices),
                                "busy": sum(d["busy"] for d in devices)},
                "queue": {"loading": loading, "pending": pending, "synthesis": max(synthesizing - configured, 0),
                          "gpu": gpu},
                "host": {"total_bytes": self.budget.total, "reserved_bytes": self.budget.used},
                "devices": devices, "resident": self.resident, "loading": self.loading}
