"""The engine's resident circuits: each loaded once (its PCE, witness program and parameters, the
prepared verifying key) on a loader thread outside every lock, so that a circuit taking a minute to
become resident stalls no other work; its host bytes reserved from the host budget while it stays;
evicted on request, or when the budget lacks room and it has been idle memory.eviction_min_idle; its
calibration (the measured synthesis growth of its items) kept in a file beside its PCE."""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cuzk import groth16
from cuzk.engine.budget import MemoryBudget, Reservation
from cuzk.engine.jobs import CircuitSpec
from cuzk.errors import CuzkError, InputError, format_size
from cuzk.groth16 import AnyCircuit, CompiledCircuit
from cuzk.groth16.keys import Parameters
from cuzk.porep.params_cache import LoadedParams
from cuzk.util.arrays import on_device
from cuzk.util.atomic import atomic_write
from cuzk.util.jsonio import load_json

log = logging.getLogger("cuzk.engine")
LOADER_THREADS = 2  # circuits loading at once
CALIBRATION_MAX_BYTES = 1 << 12  # a calibration file is one small JSON object
# a record without this version (made before processes.measured read VmHWM) counted the engine
# process's own peak, gigabytes too many: measured again
CALIBRATION_VERSION = 2

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


class Residency:
    """The resident circuits of one engine (see the module docstring). `admission_timeout_s`: how long
    a circuit's reservation waits for room; `min_idle_s`: memory.eviction_min_idle; `on_drop(key)`:
    called as a circuit is dropped (the engine forgets which devices hold it)."""

    def __init__(self, budget: MemoryBudget, admission_timeout_s: float, min_idle_s: float,
                 on_drop: Callable[[str], None]) -> None:
        self.budget, self.admission_timeout_s, self.min_idle_s = budget, admission_timeout_s, min_idle_s
        self._on_drop = on_drop
        self._resident: dict[str, Resident] = {}
        self._loading: dict[str, Future] = {}  # circuit key -> its load in progress (a Future of its Resident)
        self._lock = threading.Lock()  # guards both; never held while loading or reserving
        self._loader = ThreadPoolExecutor(LOADER_THREADS, thread_name_prefix="cuzk-load")
        self._closed = False

    def load(self, spec: CircuitSpec) -> Future:
        """A Future of spec's Resident: done at once when resident, else the one load in progress for
        its key (started here when none is), on a loader thread."""
        with self._lock:
            res = self._resident.get(spec.key)
            if res is not None:
                res.last_used = time.monotonic()
                done: Future = Future()
                done.set_result(res)
                return done
            loading = self._loading.get(spec.key)
            if loading is None:
                loading = self._loading[spec.key] = self._loader.submit(self._make, spec)
            return loading

    def _make(self, spec: CircuitSpec) -> Resident:
        """Load spec's circuit and reserve its host bytes (on a loader thread)."""
        try:
            t = time.perf_counter()
            circuit, params = spec.load()
            held = self.budget.reserve(resident_bytes(circuit, params), f"circuit {spec.key} resident",
                                       self.admission_timeout_s)
            res = Resident(spec.key, circuit, params, groth16.prepare_verifying_key(params.vk), held,
                           read_calibration(spec), gpu_bytes=device_bytes(circuit, params),
                           device=params_device(params))
            with self._lock:
                closed = self._closed  # decided once: a circuit is either kept or given back
                if not closed:
                    self._resident[spec.key] = res
            if closed:
                held.release()
                raise InputError("the engine is closed")
            log.info("engine: circuit %s resident in %.1f s", spec.key, time.perf_counter() - t)
            return res
        finally:
            with self._lock:
                self._loading.pop(spec.key, None)

    def preload(self, spec: CircuitSpec) -> Resident:
        """The circuit of `spec`, loaded unless resident already; waits for the load."""
        return self.load(spec).result()

    def job_started(self, res: Resident) -> None:
        """A job of res's circuit is queued: the circuit is not idle until it ends (job_ended)."""
        with self._lock:
            res.jobs += 1

    def job_ended(self, res: Resident) -> None:
        with self._lock:
            res.jobs -= 1
            res.last_used = time.monotonic()

    def evict(self, key: str) -> bool:
        """Drop a resident circuit (its parameters and their GPU tables go with it, once the items that
        hold it have ended)."""
        with self._lock:
            res = self._resident.pop(key, None)
        if res is not None:
            self._dropped(res)
        return res is not None

    def _dropped(self, res: Resident) -> None:
        self._on_drop(res.key)
        res.reservation.release()

    def evict_idle(self, short: int) -> int:
        """The host budget's evictor: evict resident circuits idle at least min_idle_s (no unfinished
        job, unused that long), least recently used first, until `short` bytes are free; the bytes
        freed."""
        cutoff = time.monotonic() - self.min_idle_s
        freed = 0
        while freed < short:
            with self._lock:
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
    def keys(self) -> list[str]:
        """The resident circuits' keys."""
        with self._lock:
            return list(self._resident)

    @property
    def loading(self) -> list[str]:
        """The circuits loading now."""
        with self._lock:
            return list(self._loading)

    @property
    def held(self) -> int:
        """Host bytes reserved for the resident circuits."""
        with self._lock:
            return sum(r.reservation.bytes for r in self._resident.values())

    def close(self) -> None:
        """Drop every circuit; a load under way finds the residency closed and gives its bytes back."""
        with self._lock:
            self._closed = True
        self._loader.shutdown(wait=False, cancel_futures=True)
        for key in self.keys:
            self.evict(key)


def read_calibration(spec: CircuitSpec) -> int | None:
    """The synthesis bytes stored for spec's circuit, or None (no file, another identity or
    CALIBRATION_VERSION, unreadable: the engine then measures again)."""
    if spec.calibration is None:
        return None
    if not spec.calibration.exists():
        log.info("engine: no calibration for %s yet; its first item measures one", spec.key)
        return None
    try:
        data = load_json(str(spec.calibration), what="calibration", max_bytes=CALIBRATION_MAX_BYTES, max_depth=2)
        if data.get("version") != CALIBRATION_VERSION:
            log.info("engine: calibration %s is from an older measurement; measuring again", spec.calibration)
        elif data.get("identity") == spec.identity and isinstance(data.get("synthesis_bytes"), int) \
                and data["synthesis_bytes"] > 0:
            return data["synthesis_bytes"]
    except (CuzkError, OSError, ValueError, AttributeError) as e:
        log.warning("engine: calibration %s unreadable (%s); measuring again", spec.calibration, e)
    return None


def write_calibration(spec: CircuitSpec, synthesis_bytes: int) -> None:
    """Keep a measured synthesis size for spec's circuit (atomically; a failure is only logged)."""
    if spec.calibration is None:
        return
    record = {"version": CALIBRATION_VERSION, "identity": spec.identity, "synthesis_bytes": int(synthesis_bytes),
              "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        atomic_write(spec.calibration, json.dumps(record).encode())
    except OSError as e:
        log.warning("engine: cannot write calibration %s: %s", spec.calibration, e)
