"""The proving engine: a proof becomes partition work items; synthesis workers (processes) make their
witnesses, GPU workers (threads, `gpus.gpu_workers_per_device` per device) prove and verify them, and
the job assembles the partition proofs in partition order.

    with Engine(EngineConfig.default(), backend="cuda") as engine:
        job = engine.submit_porep(c1, priority=Priority.POREP)
        proof = job.result(timeout=600)          # bytes, every partition verified

Flow of one item: pending (a heap by (priority, submission order)) -> admitted by the dispatcher
once one of max_parallel_synthesis + gpu_queue_depth in-flight slots is free and its host RAM is
reserved (MemoryBudget, admission timeout memory.admission_timeout_s) -> synthesized in a worker
process -> GPU queue (a heap by priority) -> proved (check a.b = c, prove) on a GPU worker -> its
slot and reservation released, and its proof verified and handed to its job by a finisher thread
while the worker takes its next item. A circuit (its PCE and parameters, the query vectors kept so
the GPU keeps their prepared tables) is loaded once and stays resident until `evict`.

Host RAM, all of it reserved from one budget: the engine process as it starts, and its growth
since (see _settle); each synthesis process's resident size once it is up, and multiprocessing's
resource tracker process; each resident circuit (its PCE arrays and its decoded query vectors: 96
bytes per G1 point, 192 per G2, unless they are kept on its GPU); and per item the synthesis
process's peak growth (measured on each circuit's first item and kept in the circuit's calibration
file beside its PCE, so a later engine starts from the measured size; with neither, the item reserves
SYNTHESIS_GUESS_FACTOR witnesses for it) and, where they are in host memory (engine_host_bytes), the
witness (32 bytes per variable) in the engine process and the prover's vectors (a, b, c, h over the
domain: 4 x 32 x domain size): on GPUs the vectors are in VRAM, and so is a packed witness the GPU
expands. A circuit's first item without a calibration runs alone,
through its proof: what it measures (the synthesis growth, the engine process's growth on first use)
sizes the next ones. A PoRep item's synthesis only packs its inputs (cuzk.porep.program_witness); the
GPU worker computes the witness by the circuit's witness program on its backend. Its run takes about
as long for many partitions as for one (thousands of dependent levels), so a worker that takes such
an item also takes the packed items of the same circuit waiting in the GPU queue, in priority order
and never past a higher-priority item of another circuit, up to pipeline.witness_batch (and on a GPU
what fits in its free memory: _batch_cap); it expands them in one run, then proves them one by one.
tests/engine/test_watchdog.py runs the engine under a watchdog that SIGKILLs it past the cap.

Devices: one backend per device (gpus.devices, or the backends passed as `backend`), shared by its
gpus.gpu_workers_per_device workers; each has its own VRAM budget and tables (CudaBackend). A worker
takes, in priority order, the first item of the GPU queue that placement gives to its device (_place):
among the healthy devices with an idle worker that may serve the item's circuit (any, unless its
parameters live on one GPU: then only that one), first those holding the circuit's GPU state (they took
one of its items since it became resident), else those whose VRAM budget has room for it (its
parameters' points and PCE beside the tables they hold; no limit on a host backend); of those the least
loaded (busy workers / workers, then fewer circuits held, then device order). Otherwise the item waits
for a holder, except that a circuit no healthy device holds goes to the least loaded idle one, whose
backend evicts its least recently used tables as one GPU does. A batch takes at most its share of the
circuit's waiting items: split with the other idle devices that could take them. An item's work runs
with its device current on the worker's thread (the prover's own CuPy arrays are made there) and the
CUDA backend scopes each call to its device: no process-wide device switch.

Failover: a device fault (a RuntimeError or MemoryError, e.g. a CUDA error, that is not the item's own:
an InputError, SynthesisError, UnsatisfiedConstraintError, ProofVerificationError or BudgetError) marks
the device bad (logged; `mark_bad` does it by hand): it takes no more items, and the faulting item and
the rest of its batch go back to the GPU queue for the others (a synthesis_end event in the timeline,
naming the device and its fault), so an item runs at most once per device. An item that no healthy
device can take fails its job with DeviceFaultError, naming each bad device and its fault. Other
errors fail the item's job, as on one device.
"""
from __future__ import annotations

import atexit
import contextlib
import heapq
import itertools
import json
import logging
import multiprocessing
import os
import resource
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import IntEnum
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

import numpy as np

from cuzk import groth16
from cuzk.backend import Backend, device_backends, get_backend
from cuzk.engine.budget import MemoryBudget, Reservation, host_limit
from cuzk.engine.config import CONFIG_ENV, EngineConfig, PipelineConfig, resolve
from cuzk.errors import (BudgetError, CuzkError, InputError, ProofVerificationError, SynthesisError,
                         UnsatisfiedConstraintError, format_size)
from cuzk.ff.fields import Fr
from cuzk.groth16 import AnyCircuit, CompiledCircuit, Proof
from cuzk.groth16.keys import PARAMS_VECTORS, Parameters
from cuzk.porep import pce_cache, program_witness
from cuzk.porep.c1 import C1Output
from cuzk.porep.registry import RegisteredProof
from cuzk.porep.graph import SdrGraph
from cuzk.porep.params_cache import LoadedParams, find_params, load_or_generate, porep_stem
from cuzk.porep.public_inputs import partition_public_inputs
from cuzk.util.arrays import on_device, to_host
from cuzk.util.atomic import atomic_write

log = logging.getLogger("cuzk.engine")
SYNTHESIS_GUESS_FACTOR = 8
SETTLE_MIN_BYTES = 1 << 20  # engine process growth below this is not worth a reservation
LOADER_THREADS = 2  # circuits loading at once
PARAMS_ENV = "FIL_PROOFS_PARAMETER_CACHE"


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


@dataclass
class Resident:
    """A circuit kept for proving: the circuit, its parameters (vectors kept), the prepared vk;
    gpu_bytes: what a device needs for it at least (device_bytes); device: the CUDA ordinal its
    parameters' vectors live on (None: on the host, any device may serve it)."""

    key: str
    circuit: AnyCircuit
    params: LoadedParams
    pvk: Any
    reservation: Reservation
    synthesis_bytes: int | None = None  # measured peak growth of a synthesis process
    last_used: float = field(default_factory=time.monotonic)
    gpu_bytes: int = 0
    device: int | None = None
    jobs: int = 0  # unfinished jobs of this circuit (an idle circuit, 0, may be evicted for room)


def resident_bytes(circuit: AnyCircuit, params: LoadedParams) -> int:
    """Host bytes a resident circuit holds: PCE arrays and witness program (a flat circuit's CSRs) and
    decoded vectors (none when they live on the GPU)."""
    vectors = 0 if params_device(params) is not None else _vector_bytes(params)
    return vectors + _circuit_bytes(circuit)


def device_bytes(circuit: AnyCircuit, params: LoadedParams) -> int:
    """Device bytes a circuit needs at least on a device that serves it: its parameters' points (the
    smallest tables, one multiple each) and its PCE arrays and witness program (a flat circuit's CSRs)."""
    return _vector_bytes(params) + _circuit_bytes(circuit)


def params_device(params: LoadedParams) -> int | None:
    """The CUDA ordinal that parameters' vectors live on (cuzk.groth16.setup_device keeps them there:
    a 32GiB partition's 47 GB), or None when they are on the host."""
    if isinstance(params.params, Parameters) and on_device(params.params.h):
        return int(params.params.h.device.id)
    return None


def _vector_bytes(params: LoadedParams) -> int:
    lengths = params.params.lengths()
    return 96 * (sum(lengths.values()) - lengths["b_g2"]) + 192 * lengths["b_g2"]


def _circuit_bytes(circuit: AnyCircuit) -> int:
    if isinstance(circuit, CompiledCircuit):
        program = 0 if circuit.program is None else sum(a.nbytes for a in circuit.program.to_arrays().values())
        return circuit.pce.nbytes + circuit.pce.density_bytes + program
    return sum(a.nbytes for m in circuit.matrices() for a in (m.indptr, m.indices, m.coeff_ids))


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

    synthesize: Callable[[], np.ndarray | program_witness.PackedWitness]
    inputs: Sequence[int]


class Job:
    """A submitted proof: result() waits for the concatenated partition proofs (bytes)."""

    def __init__(self, job_id: str, spec: CircuitSpec, tasks: Sequence[Task], priority: Priority) -> None:
        self.id, self.spec, self.tasks, self.priority = job_id, spec, list(tasks), priority
        self.proofs: list[Proof | None] = [None] * len(tasks)
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

    def _admit(self) -> None:
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
        return self._finish(error=JobCancelledError(f"job {self.id} was cancelled"))

    def _partition_done(self, k: int, proof: Proof) -> None:
        with self._lock:
            self.proofs[k], self.partition_state[k] = proof, "done"
            complete = all(p is not None for p in self.proofs)
        if complete:
            self._finish(result=b"".join(p.to_bytes() for p in self.proofs))

    def _finish(self, result: bytes | None = None, error: BaseException | None = None) -> bool:
        with self._lock:
            if self._future.done():
                return False
            if error is not None:
                self._future.set_exception(error)
            else:
                self._future.set_result(result)
            return True


@dataclass(order=True)
class _Item:
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
class _Device:
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

    def load(self) -> tuple[float, int]:
        return self.busy / self.workers, len(self.circuits)


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
        _use_param_cache(self.config.srs.param_cache)
        self.budget = budget or MemoryBudget.for_host(host_limit(mem.host_cap), mem.host_margin)
        self._baselines = [self.budget.reserve(_rss(), "the engine process", mem.admission_timeout_s)]
        self._engine_bytes = self._baselines[0].bytes  # reserved for the engine process itself
        self.budget.set_evictor(self._evict_idle)
        self._in_flight = [0, 0]  # items holding reservations, and their engine-process bytes (Item.local)
        self._synthesizing = 0  # items handed to the synthesis pool and not yet back (stats)
        self._admitting: _Item | None = None  # the item the dispatcher took, until it is synthesizing (stats)
        self._workers_counted = False
        self._devices = self._make_devices(backend)
        self._on_gpus = all(d.backend.name == "cuda" for d in self._devices)
        self._host_backend = get_backend("cpu")  # expands witnesses with pipeline.gpu_witness off
        self._resident: dict[str, Resident] = {}
        self._loading: dict[str, Future] = {}  # circuit key -> its load in progress (a Future of its Resident)
        self._resident_lock = threading.Lock()  # guards both; never held while loading or reserving
        self._loader = ThreadPoolExecutor(LOADER_THREADS, thread_name_prefix="cuzk-load")
        self._awaiting_load = 0  # items of submitted jobs whose circuit is still loading (stats)
        self._pending: list[_Item] = []
        self._gpu_queue: list[_Item] = []
        self._cond = threading.Condition()
        self._slots = threading.Semaphore(pipe.max_parallel_synthesis + pipe.gpu_queue_depth if pipe.enabled else 1)
        self._seq = itertools.count()
        self._job_ids = itertools.count(1)
        self._closed = False
        self._timeline_path = Path(timeline) if timeline is not None else None
        self.timeline: list[dict] = []
        self._pool = ProcessPoolExecutor(pipe.max_parallel_synthesis, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start_synthesis_process,
                                         initargs=(os.getpid(), synthesis_threads(pipe)))
        # a proof's verification and hand-over (finish) run here, so a GPU worker's next item starts
        self._finisher = ThreadPoolExecutor(sum(dev.workers for dev in self._devices), thread_name_prefix="cuzk-finish",
                                            initializer=self._host_threads)
        self._threads = [threading.Thread(target=self._dispatch, name="cuzk-dispatch", daemon=True)]
        self._threads += [threading.Thread(target=self._gpu_worker, args=(dev,), name=f"cuzk-gpu-{dev.name}-{j}",
                                           daemon=True) for dev in self._devices for j in range(dev.workers)]
        for t in self._threads:
            t.start()

    def _make_devices(self, backend: str | Sequence[Backend]) -> list[_Device]:
        """A device per backend (named cuda:<ordinal>, or <backend name>:<position> for a host backend),
        gpus.gpu_workers_per_device workers each (its backend shared by them)."""
        backends = device_backends(backend, self.config.gpus.devices, self.config.memory.vram_fraction) \
            if isinstance(backend, str) else list(backend)
        names = [f"cuda:{be.device}" if be.name == "cuda" else f"{be.name}:{i}" for i, be in enumerate(backends)]
        if not backends or len(set(names)) < len(names) or len({id(be) for be in backends}) < len(backends):
            raise InputError(f"an engine needs one backend of its own per device, got {names}")
        return [_Device(name, be, self.config.gpus.gpu_workers_per_device) for name, be in zip(names, backends)]

    # ---- circuits ------------------------------------------------------------------------------
    def preload(self, spec: CircuitSpec) -> Resident:
        """The circuit of `spec`, loaded (PCE, parameters) unless resident already; waits for the load."""
        return self._load(spec).result()

    def _load(self, spec: CircuitSpec) -> Future:
        """A Future of spec's Resident: done at once when resident, else the one load in progress for
        its key (started here when none is). The load runs on a loader thread, outside every lock of the
        engine, so a circuit that takes a minute to become resident stalls no other work."""
        with self._resident_lock:
            res = self._resident.get(spec.key)
            if res is not None:
                res.last_used = time.monotonic()
                done: Future = Future()
                done.set_result(res)
                return done
            loading = self._loading.get(spec.key)
            if loading is None:
                loading = self._loading[spec.key] = self._loader.submit(self._make_resident, spec)
            return loading

    def _make_resident(self, spec: CircuitSpec) -> Resident:
        """Load spec's circuit and reserve its host bytes (on a loader thread; see _load)."""
        try:
            t = time.perf_counter()
            circuit, params = spec.load()
            held = self.budget.reserve(resident_bytes(circuit, params), f"circuit {spec.key} resident",
                                       self.config.memory.admission_timeout_s)
            res = Resident(spec.key, circuit, params, groth16.prepare_verifying_key(params.vk), held,
                           read_calibration(spec), gpu_bytes=device_bytes(circuit, params),
                           device=params_device(params))
            with self._resident_lock:
                if not self._closed:
                    self._resident[spec.key] = res
            if self._closed:
                held.release()
                raise InputError("the engine is closed")
            log.info("engine: circuit %s resident in %.1f s", spec.key, time.perf_counter() - t)
            return res
        finally:
            with self._resident_lock:
                self._loading.pop(spec.key, None)

    def warm(self, spec: CircuitSpec, rehearse: bool | None = None) -> Resident:
        """preload(spec), then on each GPU that proves it what its first proof would make: the MSM
        tables of its parameters (sized beside its items' work, as _reserve_for keeps it) and its
        witness program; then a rehearsal (_rehearse: one throwaway proof) so that the first proof
        compiles and builds nothing. `rehearse` defaults to GPUs only: on a host backend warm only
        loads (a rehearsal there is a whole CPU proof)."""
        res = self.preload(spec)
        vectors = {name: getattr(res.params.params, name) for name in PARAMS_VECTORS}
        g2 = [vectors.pop("b_g2")]
        program = getattr(res.circuit, "program", None) if self.config.pipeline.gpu_witness else None
        for dev in self._devices:
            gpu = dev.backend.name == "cuda"
            if gpu and res.device not in (None, dev.backend.device):
                continue
            with _current(dev.backend):
                if gpu:
                    self._reserve_for(dev, res.circuit)
                    dev.backend.keep(list(vectors.values()), g2, getattr(res.circuit, "pce", None), program)
                if gpu if rehearse is None else rehearse:
                    self._rehearse(dev, res)
        return res

    def _rehearse(self, dev: _Device, res: Resident) -> None:
        """One throwaway proof of res's circuit on `dev` from a blank witness (program_witness.blank
        expanded as a partition's would be, or ONE alone where the circuit has no witness program or the
        blank does not expand): every kernel and host routine of a proof gets compiled and loaded
        (CuPy builds its own kernels at first use and numba the assembly's, seconds each on a fresh
        machine) and the device's memory pool grows to a proof's size. The proof is dropped."""
        t = time.perf_counter()
        circuit, w = res.circuit, None
        if isinstance(circuit, CompiledCircuit) and circuit.program is not None:
            try:
                w = self._expanded(circuit, [program_witness.blank(circuit)], dev.backend)[0]
            except (SynthesisError, InputError) as e:  # a decomposition fails, or not a one-block (PoRep) program
                log.info("engine: no blank witness for %s (%s); rehearsing with ONE alone", res.key, e)
        if w is None:
            if dev.backend.name == "cuda":  # made on the device (the current one: _current)
                import cupy as xp
            else:
                xp = np
            w = xp.zeros((circuit.num_columns, 4), np.uint64)
            w[0] = xp.asarray(Fr.ones(1)[0])
        groth16.prove(res.params.params, circuit, w, dev.backend)
        log.info("engine: rehearsed a proof of %s on %s in %.1f s", res.key, dev.name, time.perf_counter() - t)

    def evict(self, key: str) -> bool:
        """Drop a resident circuit (its parameters and their GPU tables go with it, once the items that
        hold it have ended)."""
        with self._resident_lock:
            res = self._resident.pop(key, None)
        if res is not None:
            self._dropped(res)
        return res is not None

    def _dropped(self, res: Resident) -> None:
        with self._cond:
            for dev in self._devices:
                dev.circuits.discard(res.key)
        res.reservation.release()

    def _evict_idle(self, short: int) -> int:
        """The host budget's evictor: evict resident circuits idle at least memory.eviction_min_idle (no
        unfinished job, unused that long), least recently used first, until `short` bytes are free;
        the bytes freed."""
        cutoff = time.monotonic() - self.config.memory.eviction_min_idle_s
        freed = 0
        while freed < short:
            with self._resident_lock:
                idle = [r for r in self._resident.values() if r.jobs == 0 and r.last_used <= cutoff]
                res = min(idle, key=lambda r: r.last_used, default=None)
                if res is None:
                    break
                del self._resident[res.key]
            freed += res.reservation.bytes
            log.info("engine: evicted circuit %s, unused for %.0f s, to free %s of host RAM", res.key,
                     time.monotonic() - res.last_used, format_size(res.reservation.bytes))
            self._dropped(res)
        return freed

    @property
    def held(self) -> int:
        """Bytes reserved for the engine and synthesis processes and the resident circuits (not items)."""
        with self._resident_lock:
            circuits = sum(r.reservation.bytes for r in self._resident.values())
        return circuits + sum(r.bytes for r in self._baselines)

    @property
    def resident(self) -> list[str]:
        with self._resident_lock:
            return list(self._resident)

    @property
    def loading(self) -> list[str]:
        """The circuits loading now."""
        with self._resident_lock:
            return list(self._loading)

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
            stranded = self._stranded()
            self._cond.notify_all()
        self._fail(stranded)

    def _faults(self) -> dict[str, str]:
        return {d.name: d.fault for d in self._devices if d.fault is not None}

    def _stranded(self) -> list[_Item]:
        """Under the lock: the queued items that no healthy device can take, taken out of the queue."""
        stranded = [item for item in self._gpu_queue if not item.job.done
                    and not any(d.fault is None and _serves(d, item.res) for d in self._devices)]
        if stranded:
            self._gpu_queue[:] = [item for item in self._gpu_queue if all(item is not s for s in stranded)]
            heapq.heapify(self._gpu_queue)
        return stranded

    def _fail(self, stranded: list[_Item]) -> None:
        """Fail the jobs of items no healthy device can take (DeviceFaultError) and release them."""
        for item in stranded:
            pinned = "" if item.res is None or item.res.device is None else \
                f" (its parameters live on cuda:{item.res.device})"
            with self._cond:
                faults = self._faults()
            item.job._finish(error=DeviceFaultError(f"{item.job.id} partition {item.k}: no healthy device "
                                                    f"can take it{pinned}", faults))
            self._release(item)

    # ---- jobs ----------------------------------------------------------------------------------
    def submit(self, spec: CircuitSpec, tasks: Sequence[Task], priority: Priority = Priority.POREP,
               job_id: str | None = None) -> Job:
        """Queue a proof of len(tasks) partitions of the circuit `spec`, at once: the circuit loads in
        the background unless resident (_load), its items enter the queue when it is, and a failed
        load fails the job."""
        if self._closed:
            raise InputError("the engine is closed")
        if not tasks:
            raise InputError("a job needs at least one partition")
        with self._cond:
            if all(d.fault is not None for d in self._devices):
                raise DeviceFaultError("no healthy device is left", self._faults())
        job = Job(job_id or f"job-{next(self._job_ids)}", spec, tasks, Priority(priority))
        with self._cond:
            self._awaiting_load += len(tasks)
        self._load(spec).add_done_callback(lambda loaded: self._queue(job, loaded))
        return job

    def _queue(self, job: Job, loaded: Future) -> None:
        """Put a submitted job's items in the pending heap once its circuit is resident (`loaded`, on
        the loader thread or at once), or fail the job with the load's error."""
        with self._cond:
            self._awaiting_load -= len(job.tasks)
        error = None if loaded.cancelled() else loaded.exception()
        if error is not None or self._closed or loaded.cancelled():
            job._finish(error=error or JobCancelledError(f"job {job.id} was cancelled: the engine closed"))
            return
        res: Resident = loaded.result()
        with self._resident_lock:
            res.jobs += 1
        job.add_done_callback(lambda _: self._job_ended(res))
        with self._cond:
            for k in range(len(job.tasks)):
                heapq.heappush(self._pending, _Item(int(job.priority), next(self._seq), job, k, res=res))
                self._event(job, k, "queued")
            self._cond.notify_all()

    def _job_ended(self, res: Resident) -> None:
        with self._resident_lock:
            res.jobs -= 1
            res.last_used = time.monotonic()

    def submit_porep(self, c1: C1Output, priority: Priority = Priority.POREP, job_id: str | None = None,
                     ids: tuple[bytes, int] | None = None, progress: bool = False,
                     allow_setup: bool | None = None) -> Job:
        """Queue the PoRep (C2) proof of a C1 output; its vanilla proofs are checked first. `progress`:
        say on stderr when the circuit's PCE or parameters are built (once per circuit shape).
        `allow_setup`: whether cuzk's own parameters may stand in for missing official ones (None:
        srs.allow_setup); without, such a job fails with OfficialParamsMissingError."""
        c1.verify(*(ids or (None, None)))
        config, graph = c1.config, SdrGraph.for_config(c1.config)
        inputs = [tuple(partition_public_inputs(config, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed, k, graph))
                  for k in range(config.partitions)]
        tasks = [Task(_PorepWitness(c1.registered_proof.name, c1.replica_id, c1.comm_d, c1.comm_r, c1.vanilla_proofs[k],
                                    inputs[k]), list(inputs[k])) for k in range(config.partitions)]
        allow = self.config.srs.allow_setup if allow_setup is None else allow_setup
        return self.submit(porep_spec_of(c1.registered_proof, progress, allow), tasks, priority, job_id)

    def close(self) -> None:
        """Stop taking jobs, cancel what is queued, wait for the workers (items already synthesizing
        are proven: the GPU workers stay until none is left)."""
        with self._cond:
            self._closed = True
            for item in self._pending + self._gpu_queue + [self._admitting]:
                if item is not None:
                    item.job.cancel()
            self._cond.notify_all()
        self._loader.shutdown(wait=False, cancel_futures=True)  # a load under way finds the engine closed
        for t in self._threads:
            t.join()
        self._finisher.shutdown(wait=True)
        self._pool.shutdown(cancel_futures=True)
        for key in self.resident:
            self.evict(key)
        for r in self._baselines:
            r.release()
        self.budget.set_evictor(None)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the pipeline --------------------------------------------------------------------------
    def _item_bytes(self, res: Resident) -> int:
        synthesis = res.synthesis_bytes
        if synthesis is None:
            synthesis = SYNTHESIS_GUESS_FACTOR * _witness_bytes(res.circuit)
        return self._local_bytes(res) + synthesis

    def _local_bytes(self, res: Resident) -> int:
        """Of an item's bytes, those in the engine process's host memory (engine_host_bytes)."""
        return engine_host_bytes(res.circuit, self._on_gpus, self.config.pipeline.gpu_witness)

    def _next_pending(self) -> _Item | None:
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
                item.job._finish(error=e)
                continue
            item.local = self._local_bytes(res)
            with self._cond:
                self._in_flight[0] += 1
                self._in_flight[1] += item.local
            if item.job.done:
                self._release(item)
                continue
            item.job.partition_state[item.k] = "synthesis"
            item.job._admit()
            self._event(item.job, item.k, "admitted")
            with self._cond:
                self._admitting = None
                self._synthesizing += 1
            future = self._pool.submit(_measured, item.job.tasks[item.k].synthesize)
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
        with self._resident_lock:
            resident = sum(r.reservation.bytes for r in self._resident.values())
        with self._cond:
            running, local = self._in_flight
        extra = _rss() - self._engine_bytes - resident - local
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
        futures = [self._pool.submit(_worker_rss) for _ in range(self.config.pipeline.max_parallel_synthesis)]
        pids = dict(f.result() for f in futures)
        timeout = self.config.memory.admission_timeout_s
        self._baselines += [self.budget.reserve(rss, f"synthesis process {pid}", timeout) for pid, rss in pids.items()]
        tracker = getattr(resource_tracker._resource_tracker, "_pid", None)  # None: not running, or not ours
        if tracker is not None and tracker not in pids and (rss := _rss(tracker)) > 0:
            self._baselines.append(self.budget.reserve(rss, f"resource tracker process {tracker}", timeout))
        self._workers_counted = True

    def _synthesized(self, item: _Item, future: Future) -> None:
        try:
            self._take_synthesized(item, future)
        finally:  # after the item is queued or released: a closing engine's GPU workers wait for it
            with self._cond:
                self._synthesizing -= 1
                self._cond.notify_all()

    def _take_synthesized(self, item: _Item, future: Future) -> None:
        if item.job.done:
            return self._release(item)
        try:
            item.witness, grown, start, end = future.result()
        except BaseException as e:  # noqa: BLE001 - the job carries the worker's error
            self._event(item.job, item.k, "synthesis_end")
            item.job._finish(error=e)
            return self._release(item)
        self._event(item.job, item.k, "synthesis_start", start)
        self._event(item.job, item.k, "synthesis_end", end)
        res = item.res
        if res.synthesis_bytes is None or grown > res.synthesis_bytes:
            res.synthesis_bytes = grown
            write_calibration(item.job.spec, grown)
        self._enqueue(item)

    def _enqueue(self, item: _Item) -> None:
        """Put an item in the GPU queue (its job failed at once when no healthy device can take it)."""
        item.job.partition_state[item.k] = "gpu_queue"
        with self._cond:
            heapq.heappush(self._gpu_queue, item)
            stranded = self._stranded()
            self._cond.notify_all()
        self._fail(stranded)

    def _next_gpu(self, dev: _Device) -> _Item | None:
        """The next item for a worker of `dev`: the first of the GPU queue, in priority order, that
        placement gives to it (a finished job's item to any device, which releases it); None once
        the device is bad, or the engine closed and the queue empty."""
        with self._cond:
            while dev.fault is None:
                for item in sorted(self._gpu_queue):
                    if item.job.done or _place(self._devices, item.res) is dev:
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

    def _batchmates(self, head: _Item, dev: _Device) -> list[_Item]:
        """The items of the GPU queue to expand with `head` (see _batch): none unless its witness is
        packed; at most its share of its circuit's waiting items (_share)."""
        if head.job.done or not _packed(head):
            return []
        free = _device_free(dev.backend)  # a device query and maybe a circuit's load: outside the lock
        cap = _batch_cap(self.config, head.res.circuit, free)
        with self._cond:
            return _batch(self._gpu_queue, head, min(cap, _share(self._devices, dev, head, self._gpu_queue)) - 1)

    def _reserve_for(self, dev: _Device, circuit: AnyCircuit) -> None:
        """On a CUDA device, keep what its workers' items of `circuit` use beside the MSM tables
        (_work_bytes, and one MSM's working memory) free of new tables."""
        if dev.backend.name == "cuda":
            dev.backend.reserve_beside_tables(_work_bytes(self.config, circuit),
                                              msm_points=max(circuit.domain_size, circuit.num_aux))

    def _host_threads(self) -> None:
        """A GPU worker's or finisher's thread: numba's parallel loops there (the host witness, the
        proof's assembly, verification) use gpus.gpu_threads threads (0: numba's default). numba's
        thread count belongs to each thread."""
        if self.config.gpus.gpu_threads:
            _numba_threads(self.config.gpus.gpu_threads)

    def _gpu_worker(self, dev: _Device) -> None:
        self._host_threads()
        while (head := self._next_gpu(dev)) is not None:
            batch, back = [head], []  # back: items handed back to the queue, no longer this worker's
            try:
                with _current(dev.backend):
                    if not head.job.done:
                        self._reserve_for(dev, head.res.circuit)
                    batch += self._batchmates(head, dev)
                    self._run(batch, dev, back)
            except BaseException as e:  # noqa: BLE001 - outside any one item's proof: the batch's jobs carry it
                if _device_fault(e):
                    self._fault(dev, e)
                    for item in batch:
                        if not item.job.done and item.job.partition_state[item.k] != "done" \
                                and all(item is not b for b in back):
                            back.append(item)
                            self._hand_back(item, dev)
                else:
                    for item in batch:
                        if all(item is not b for b in back):
                            item.job._finish(error=e)
            finally:
                for item in batch:
                    if all(item is not b for b in back):
                        self._release(item)
                with self._cond:
                    dev.busy -= 1
                    self._cond.notify_all()

    def _run(self, batch: list[_Item], dev: _Device, back: list[_Item]) -> None:
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
        try:
            witnesses = self._expand(live, dev.backend) if _packed(live[0]) else [live[0].witness]
        except Exception as e:  # noqa: BLE001 - a device fault hands every item back; another goes to the batch's jobs
            if not _device_fault(e):
                raise
            witnesses = [e] * len(live)
        for item, w in zip(live, witnesses):
            if isinstance(w, BaseException) and _device_fault(w):
                self._fault(dev, w)
            if dev.fault is not None and not item.job.done:
                back.append(item)
                self._hand_back(item, dev)
                continue
            if isinstance(w, BaseException):
                item.job._finish(error=w)
            elif not item.job.done:
                try:
                    self._prove(item, w, dev)
                except BaseException as e:  # noqa: BLE001 - the job carries the error, or the device's fault hands it back
                    if not _device_fault(e):
                        item.job._finish(error=e)
                    else:
                        self._fault(dev, e)
                        back.append(item)
                        self._hand_back(item, dev)
                        continue
            if not isinstance(w, np.ndarray):  # a host witness (maybe a row of the batch's) goes with the batch
                self._release(item)

    def _fault(self, dev: _Device, error: BaseException) -> None:
        """Mark `dev` bad for a fault it raised (once: later faults of its other workers are only logged)."""
        log.error("engine: device %s faulted", dev.name, exc_info=error)
        self.mark_bad(dev.name, f"{type(error).__name__}: {error}")

    def _hand_back(self, item: _Item, dev: _Device) -> None:
        """Return an item that `dev` could not prove to the GPU queue, for the other devices."""
        self._event(item.job, item.k, "synthesis_end", device=dev.name, fault=dev.fault)
        self._enqueue(item)

    def _expand(self, batch: list[_Item], backend: Backend) -> list[Any]:
        """The full witnesses of a batch of packed items, by one run of the circuit's witness program
        (timings witness.{k}: the run's seconds, witness_batch.{k}: its partitions). When the batch
        fails (e.g. SynthesisError: one partition's inputs are inconsistent), each item is expanded
        alone, so that only a failing item gets its error, in place of its witness; a device fault
        is raised."""
        res = batch[0].res
        if len(batch) > 1:
            try:
                return self._expand_timed(res, batch, backend)
            except Exception as e:  # noqa: BLE001 - each item alone finds the one at fault
                if _device_fault(e):
                    raise
                log.warning("engine: a batch of %d witnesses failed (%s); expanding each alone", len(batch), e)
        return [self._expand_one(res, item, backend) for item in batch]

    def _expand_one(self, res: Resident, item: _Item, backend: Backend) -> Any:
        """One item's full witness, or the error its expansion raised (a SynthesisError naming its job
        and partition)."""
        try:
            return self._expand_timed(res, [item], backend)[0]
        except SynthesisError as e:
            return SynthesisError(f"{item.job.id} partition {item.k}: {e}")
        except Exception as e:  # noqa: BLE001 - the item's job carries it
            return e

    def _expand_timed(self, res: Resident, batch: list[_Item], backend: Backend) -> list[Any]:
        """The batch's witnesses by one program_witness.expand (on the proving backend, or with
        pipeline.gpu_witness off on the host's cores and then copied once to the proving GPU, so that
        the prover's vectors stay there as with the GPU witness), its time (with that copy) and size in
        the jobs' timings."""
        t = time.perf_counter()
        w = self._expanded(res.circuit, [item.witness for item in batch], backend)
        seconds = time.perf_counter() - t
        for item in batch:
            item.job.timings.update({f"witness.{item.k}": seconds, f"witness_batch.{item.k}": len(batch)})
        return list(w)

    def _expanded(self, circuit: CompiledCircuit, packs: list[program_witness.PackedWitness], backend: Backend):
        """The packs' full witnesses by one program_witness.expand, on the proving backend, or with
        pipeline.gpu_witness off on the host's cores and then copied once to the proving GPU (the
        current device: the worker's, _current), so that the prover's vectors stay there as with the
        GPU witness."""
        on = backend if self.config.pipeline.gpu_witness else self._host_backend
        w = program_witness.expand(circuit, packs, on, host=False)
        if on is not backend and backend.name == "cuda":
            import cupy

            w = cupy.asarray(w)
        return w

    def _prove(self, item: _Item, w: Any, dev: _Device) -> None:
        """Check the full witness `w`'s public inputs and prove on `dev` (checking a.b = c); the proof
        goes to the finisher (_verified)."""
        job, k, res = item.job, item.k, item.res
        x = list(job.tasks[k].inputs)
        if Fr.to_ints(to_host(w[1:res.circuit.num_inputs])) != x:
            raise InputError(f"{job.id} partition {k}: the witness's public inputs differ from the expected ones")
        try:
            proof = groth16.prove(res.params.params, res.circuit, w, dev.backend, check=True)
        except UnsatisfiedConstraintError as e:
            raise UnsatisfiedConstraintError(e.index, f"{job.id} partition {k}") from None
        self._event(job, k, "gpu_end", device=dev.name)
        job.timings.update({f"prove.{k}.{s}": v for s, v in proof.timings.items()})
        self._finisher.submit(self._verified, job, k, proof, res.pvk, x)

    def _verified(self, job: Job, k: int, proof: Proof, pvk, inputs: list[int]) -> None:
        """Finish a proven partition on the finisher (the GPU worker has gone on): verify its proof
        against the circuit's key `pvk` and its public inputs, then hand it to its job (or the failure)."""
        try:
            if not groth16.verify(pvk, inputs, proof):
                raise ProofVerificationError(k, f"{job.id}: the proof does not verify")
        except BaseException as e:  # noqa: BLE001 - the job carries it
            job._finish(error=e)
            return
        self._event(job, k, "finished")
        job._partition_done(k, proof)

    def _release(self, item: _Item) -> None:
        item.witness = None
        if item.reservation is not None:
            item.reservation.release()
            item.reservation = None
            with self._cond:
                self._in_flight[0] -= 1
                self._in_flight[1] -= item.local
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
        """A snapshot of the engine for status pages (the queues count only unfinished jobs' items):

            synthesis_workers  {"configured": processes, "busy": those synthesizing an item}
            gpu_workers        {"configured", "busy"}: worker threads of every device, those holding an item
            queue              {"loading": items of jobs whose circuit is still loading, "pending":
                               items waiting for admission (a slot, their RAM), "synthesis":
                               admitted items waiting for a synthesis process, "gpu": synthesized items
                               waiting for a GPU worker}
            host               {"total_bytes", "reserved_bytes"}: the host RAM budget
            devices            per device what `devices` gives; a CUDA one also "name", "vram_total_bytes",
                               "vram_used_bytes" (memGetInfo: every process's use) and
                               "vram_reserved_bytes" (the tables its backend holds under its budget)
            resident           the resident circuits' keys; loading: those loading now
        Workers and queues are read in one hold of the engine's lock; memory is read after it."""
        configured = self.config.pipeline.max_parallel_synthesis
        with self._cond:
            synthesizing = self._synthesizing
            pending = sum(not item.job.done for item in self._pending + [self._admitting] if item is not None)
            gpu = sum(not item.job.done for item in self._gpu_queue)
            loading = self._awaiting_load
            devices = self.devices
        for dev, out in zip(self._devices, devices):
            if dev.backend.name == "cuda":
                import cupy

                with cupy.cuda.Device(dev.backend.device):
                    free, total = cupy.cuda.runtime.memGetInfo()
                out.update(name=dev.backend.info.name, vram_total_bytes=int(total), vram_used_bytes=int(total - free),
                           vram_reserved_bytes=dev.backend.residency.held)
        return {"synthesis_workers": {"configured": configured, "busy": min(synthesizing, configured)},
                "gpu_workers": {"configured": sum(d["workers"] for d in devices),
                                "busy": sum(d["busy"] for d in devices)},
                "queue": {"loading": loading, "pending": pending, "synthesis": max(synthesizing - configured, 0),
                          "gpu": gpu},
                "host": {"total_bytes": self.budget.total, "reserved_bytes": self.budget.used},
                "devices": devices, "resident": self.resident, "loading": self.loading}


def synthesis_threads(pipe: PipelineConfig) -> int:
    """Compute threads of each synthesis process: pipeline.synthesis_threads, or when 0 the CPUs this
    process may use shared out among the max_parallel_synthesis processes (at least 1). Each process
    would otherwise run a thread per CPU and together they oversubscribe the cores: 4 processes packing
    32GiB partitions on a 2-core machine took 61-180 ms a partition with 2 threads each, 11-32 ms
    with 1."""
    if pipe.synthesis_threads:
        return pipe.synthesis_threads
    return max(1, len(os.sched_getaffinity(0)) // pipe.max_parallel_synthesis)


def _numba_threads(n: int) -> None:
    """numba's parallel loops in this process use n threads (at most the pool numba started with)."""
    import numba

    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


def _use_param_cache(directory: Path | None) -> None:
    """srs.param_cache: the directory of the parameters and of cuzk's compiled circuits for this
    process and its synthesis processes, set as $FIL_PROOFS_PARAMETER_CACHE (as curio's daemon does,
    it wins over the variable's own value). None leaves the environment as it is."""
    if directory is None:
        return
    before = os.environ.get(PARAMS_ENV)
    if before and Path(before) != directory:
        log.warning("engine: srs.param_cache %s replaces $%s=%s", directory, PARAMS_ENV, before)
    os.environ[PARAMS_ENV] = str(directory)


def _start_synthesis_process(parent: int, threads: int) -> None:
    """A synthesis process's initializer: numba's parallel loops use `threads` threads, and the process
    exits once the engine process `parent` is gone (checked every second). A SIGKILLed engine's pool
    workers would otherwise wait forever on a pipe they hold both ends of, and a restarted daemon
    would find them still holding memory."""
    _numba_threads(threads)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="cuzk-parent-watch", daemon=True).start()


def _packed(item: _Item) -> bool:
    return isinstance(item.witness, program_witness.PackedWitness)


def _batch(queue: list[_Item], head: _Item, n: int) -> list[_Item]:
    """Up to n items of the heap `queue` to expand with `head`: of its circuit, with packed witnesses,
    in priority order, removed from the heap. An item left waiting (another circuit's, or a full
    witness) is never overtaken by one of lower priority: the scan stops there. Finished jobs' items
    are left for the worker that pops them."""
    taken: list[_Item] = []
    waiting: int | None = None  # the priority of the first item left waiting
    for item in sorted(queue):
        if len(taken) == n or (waiting is not None and item.priority > waiting):
            break
        if item.job.done:
            continue
        if item.job.spec.key == head.job.spec.key and _packed(item):
            taken.append(item)
        elif waiting is None:
            waiting = item.priority
    if taken:
        ids = {id(item) for item in taken}
        queue[:] = [item for item in queue if id(item) not in ids]
        heapq.heapify(queue)
    return taken


def _batch_cap(config: EngineConfig, circuit: AnyCircuit, free: int | None) -> int:
    """How many partitions of `circuit` to expand at once: pipeline.witness_batch, and with `free`
    bytes free on the GPU (None: a host backend) no more than fit there (32 bytes per variable each)
    in memory.vram_fraction of them, less one partition's prover vectors (4 x 32 x domain size); at
    least one. The engine keeps no VRAM ledger for items: the CUDA backend keeps their work's room free
    of new tables (Engine._reserve_for), and this is the memory free when the batch forms: two workers
    of one device forming batches at the same moment may both count the same bytes. The batch's
    witnesses stay on the device until its last item is proved."""
    cap = config.pipeline.witness_batch
    if free is None:
        return cap
    room = config.memory.vram_fraction * free - _vectors_bytes(circuit)
    return max(1, min(cap, int(room // _witness_bytes(circuit))))


def _witness_bytes(circuit: AnyCircuit) -> int:
    """A full witness: 32 bytes per variable."""
    return 32 * (circuit.num_inputs + circuit.num_aux)


def _vectors_bytes(circuit: AnyCircuit) -> int:
    """The prover's vectors a, b, c, h over the domain: 4 x 32 x domain size."""
    return 4 * 32 * circuit.domain_size


def _packed_circuit(circuit: AnyCircuit) -> bool:
    """Whether its items' witnesses come packed (a circuit with a witness program)."""
    return getattr(circuit, "program", None) is not None


def engine_host_bytes(circuit: AnyCircuit, on_gpus: bool, gpu_witness: bool) -> int:
    """Host bytes one item of `circuit` takes in the engine process: on a host backend its full
    witness (32 bytes per variable) and the prover's vectors (4 x 32 x domain size). On GPUs the
    vectors are in VRAM, and so is the witness when a packed one (a circuit with a witness program)
    is expanded there (gpu_witness): then nothing beyond the packed inputs, which the synthesis
    growth counts; expanded on the host's cores, the witness."""
    if not on_gpus:
        return _witness_bytes(circuit) + _vectors_bytes(circuit)
    return 0 if _packed_circuit(circuit) and gpu_witness else _witness_bytes(circuit)


def _work_bytes(config: EngineConfig, circuit: AnyCircuit) -> int:
    """Device bytes the GPU workers of one device use beside the resident tables for `circuit`: each
    worker's witnesses (a batch of pipeline.witness_batch when they come packed, else one) and one
    partition's prover vectors. A CUDA backend keeps them (and one MSM's working memory) free of new
    MSM tables."""
    batch = config.pipeline.witness_batch if _packed_circuit(circuit) else 1
    return config.gpus.gpu_workers_per_device * (batch * _witness_bytes(circuit) + _vectors_bytes(circuit))


def _device_free(backend: Backend) -> int | None:
    """Bytes free on a CUDA backend's device now, the unused blocks of CuPy's pool included (its
    allocations reuse them); None for a host backend."""
    if backend.name != "cuda":
        return None
    import cupy

    with _current(backend):
        return int(cupy.cuda.runtime.memGetInfo()[0]) + int(cupy.get_default_memory_pool().free_bytes())


def _current(backend: Backend) -> contextlib.AbstractContextManager:
    """A CUDA backend's device made the calling thread's current device while the context lasts
    (CuPy's thread-local device, restored after); nothing for a host backend."""
    if backend.name != "cuda":
        return contextlib.nullcontext()
    import cupy

    return cupy.cuda.Device(backend.device)


ITEM_ERRORS = (InputError, SynthesisError, UnsatisfiedConstraintError, ProofVerificationError, BudgetError)


def _device_fault(error: BaseException) -> bool:
    """Whether an error is its device's fault: a RuntimeError or MemoryError (CUDA's errors, CuPy's
    out-of-memory) that is not one of the item's own (ITEM_ERRORS)."""
    return isinstance(error, (RuntimeError, MemoryError)) and not isinstance(error, ITEM_ERRORS)


def _serves(dev: _Device, res: Resident) -> bool:
    """Whether `dev` may prove items of `res`'s circuit: any device, unless its parameters live on one GPU."""
    return res.device is None or (dev.backend.name == "cuda" and dev.backend.device == res.device)


def _room(dev: _Device, res: Resident) -> bool:
    """Whether dev's VRAM budget has room for res's circuit beside the tables it holds (always on a
    host backend)."""
    if dev.backend.name != "cuda" or res.device is not None:
        return True
    return dev.backend.residency.held + res.gpu_bytes <= dev.backend.budget.bytes


def _place(devices: list[_Device], res: Resident) -> _Device | None:
    """The device to give an item of `res`'s circuit now, or None for it to wait (the policy: the
    module docstring)."""
    able = [d for d in devices if d.fault is None and _serves(d, res)]
    idle = [d for d in able if d.busy < d.workers]
    for pool in ([d for d in idle if res.key in d.circuits], [d for d in idle if _room(d, res)]):
        if pool:
            return min(pool, key=_Device.load)
    if idle and not any(res.key in d.circuits for d in able):
        return min(idle, key=_Device.load)
    return None


def _share(devices: list[_Device], dev: _Device, head: _Item, queue: list[_Item]) -> int:
    """How many of head's circuit's waiting items (head among them) a batch on `dev` takes at most: an
    even split with the other healthy devices that have an idle worker and could take them."""
    res = head.res
    waiting = 1 + sum(1 for item in queue if item.job.spec.key == res.key and _packed(item) and not item.job.done)
    others = sum(1 for d in devices if d is not dev and d.fault is None and d.busy < d.workers and _serves(d, res)
                 and (res.key in d.circuits or _room(d, res)))
    return -(-waiting // (1 + others))


def read_calibration(spec: CircuitSpec) -> int | None:
    """The synthesis bytes stored for spec's circuit, or None (no file, another identity, unreadable:
    the engine then measures again)."""
    if spec.calibration is None:
        return None
    if not spec.calibration.exists():
        log.info("engine: no calibration for %s yet; its first item measures one", spec.key)
        return None
    try:
        data = json.loads(spec.calibration.read_text())
        if data.get("identity") == spec.identity and isinstance(data.get("synthesis_bytes"), int) \
                and data["synthesis_bytes"] > 0:
            return data["synthesis_bytes"]
    except (OSError, ValueError, AttributeError):
        log.warning("engine: calibration %s unreadable; measuring again", spec.calibration)
    return None


def write_calibration(spec: CircuitSpec, synthesis_bytes: int) -> None:
    """Keep a measured synthesis size for spec's circuit (atomically; a failure is only logged)."""
    if spec.calibration is None:
        return
    record = {"identity": spec.identity, "synthesis_bytes": int(synthesis_bytes),
              "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        atomic_write(spec.calibration, json.dumps(record).encode())
    except OSError as e:
        log.warning("engine: cannot write calibration %s: %s", spec.calibration, e)


_DEFAULT: dict[str, Engine] = {}
_DEFAULT_LOCK = threading.Lock()


def default_engine(backend: str = "auto") -> Engine:
    """The process-wide engine for a backend name, made on first use from the effective configuration
    (the file named by CUZK_CONFIG, if set, under the CUZK_<TABLE>_<KEY> variables) and closed at
    exit: what cuzk.prove uses, so a second proof in the process reuses its circuit, parameters and
    GPU tables."""
    with _DEFAULT_LOCK:
        engine = _DEFAULT.get(backend)
        if engine is None or engine._closed:
            engine = _DEFAULT[backend] = Engine(resolve(os.environ.get(CONFIG_ENV))[0], backend=backend)
            atexit.register(engine.close)
        return engine


# ---- PoRep adapters (picklable: they cross into the synthesis processes) --------------------------
def porep_spec_of(proof: RegisteredProof, progress: bool = False, allow_setup: bool = False) -> CircuitSpec:
    """The resident-circuit spec of a registered seal proof's partition circuit: its PCE with its
    witness program (built on first use) and its parameters, vectors kept: the official ones, or with
    `allow_setup` cuzk's own (params_cache.load_or_generate); saying so on stderr when `progress`."""

    def load() -> tuple[AnyCircuit, LoadedParams]:
        stem = porep_stem(proof.sector_size)
        if not allow_setup:
            find_params(stem, allow_own=False)  # a missing file fails before the circuit is built
        circuit = program_witness.compiled(proof.name, progress)
        return circuit, load_or_generate(stem, circuit, allow_setup=allow_setup, progress=progress, keep=True)

    ident = pce_cache.identity(proof.name)
    path = pce_cache.path_of(proof.name)
    return CircuitSpec(ident["shape"], load, path.with_name(path.name + ".calibration.json"), ident["circuit_digest"])


@dataclass(frozen=True)
class _PorepWitness:
    """One partition's packed witness (cuzk.porep.program_witness: its vanilla data and public inputs),
    which the GPU worker expands by the circuit's witness program on its backend."""

    proof: str
    replica_id: Any
    comm_d: Any
    comm_r: Any
    vanilla: Any
    inputs: tuple[int, ...]

    def __call__(self) -> program_witness.PackedWitness:
        from cuzk.porep.circuit import PartitionWitness

        w = PartitionWitness.from_vanilla(self.replica_id, self.comm_d, self.comm_r, self.vanilla)
        return program_witness.pack(pce_cache.shape_of(self.proof), w, list(self.inputs))


def _rss(pid: int | str = "self") -> int:
    """The resident bytes of a process (this one by default; 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        if pid == "self":
            raise
        return 0


def _measured(fn: Callable[[], np.ndarray]) -> tuple[np.ndarray, int, float, float]:
    """fn() in a synthesis process: its result, the process's peak RSS growth over the call (bytes)
    and the wall-clock start and end (time.time)."""
    before, start = _rss(), time.time()
    out = fn()
    return out, max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before), start, time.time()


def _worker_rss() -> tuple[int, int]:
    """(pid, resident bytes) of a synthesis process, after a pause that makes the pool start them all."""
    time.sleep(0.2)
    return os.getpid(), _rss()
