"""CudaBackend: cuzk.backend.base.Backend on one CUDA device, a thin layer over the device's
properties (device), its memory (memory: VRAM budget, residency, staging) and the kernels' drivers
(msm, ntt, spmv, pce). numpy in, numpy out; CuPy is imported at first use."""
from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from cuzk.backend.base import SparseMatrix, TemplateCircuit, WitnessProgram, check_program_witness
from cuzk.backend.cuda import device as cuda_device
from cuzk.backend.cuda import msm
from cuzk.backend.cuda import ntt as ntt_cuda
from cuzk.backend.cuda import pce as pce_cuda
from cuzk.backend.cuda import points as points_cuda
from cuzk.backend.cuda import setup as setup_cuda
from cuzk.backend.cuda import spmv
from cuzk.backend.cuda import stream
from cuzk.backend.cuda import vram_plan
from cuzk.backend.cuda import witness as witness_cuda
from cuzk.backend.cuda.device import cupy
from cuzk.backend.cuda.layout import POINT_SHAPE, WORDS
from cuzk.backend.cuda.memory import DEFAULT_FRACTION, POOL_PEAK, Residency, Stager, VramBudget, resolve_budget
from cuzk.backend.cuda.msm import MsmInputError, MsmPlan, PreparedBases
from cuzk.backend.cuda.msm_stages import Stage, StageEvents, untimed
from cuzk.errors import VramBudgetError, format_size
from cuzk.util.arrays import on_device

log = logging.getLogger("cuzk.cuda")


DEFAULT_CHUNK = 1 << 22  # points per streamed chunk without a plan
CAPPED_TWIDDLE_TABLE = 64 << 20  # under a VRAM cap, larger NTT passes compute their twiddles


class _ByArray:
    """Values keyed by host arrays (by identity), each dropped when its array dies."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref, Any]] = {}
        self._lock = threading.Lock()

    def set(self, array, value) -> None:
        key = id(array)
        with self._lock:
            self._items[key] = (weakref.ref(array, lambda _ref: self._drop(key)), value)

    def get(self, array) -> Any:
        with self._lock:
            entry = self._items.get(id(array))
        return entry[1] if entry is not None and entry[0]() is array else None

    def _drop(self, key: int) -> None:
        with self._lock:
            self._items.pop(key, None)


class _Kept:
    """A device array kept in the residency (an object it can hold a weak reference to)."""

    def __init__(self, array) -> None:
        self.array = array


class CudaBackend:
    """The GPU backend on `device` (default: the current device at first use) under a VRAM budget.

    vram_budget: bytes (or "16GiB"); without it $CUZK_VRAM_BUDGET, else a fraction of the memory
    free at first use (cuzk.backend.cuda.memory). Prepared bases (and the tables this backend keeps
    for base arrays it has seen, while those arrays live) count against it; the least recently used
    kept tables are evicted when a new one, or an MSM's working memory, would not fit. A new table
    takes the cheapest plan that fits next to the tables and parameter vectors already held
    (`hold`) and the reserve for the work beside them (`reserve_beside_tables`, table_reserve
    bytes), evicting only when none does. Budget and residency belong to the instance
    (get_backend and device_backends share one per device and process); the NTTs' memory is not
    counted. A circuit evaluated from its template form keeps its arrays on the device
    the same way (an LRU entry while the circuit lives). last_msm_plan: the plan (c, multiples,
    estimated bytes) of the latest MSM."""

    name = "cuda"

    def __init__(self, device: int | None = None, vram_budget: int | str | None = None) -> None:
        self._device = device
        self._vram_budget = vram_budget
        self._budget: VramBudget | None = None
        self._vram_fraction = DEFAULT_FRACTION
        self._vram_cap: tuple[int | str, str] | None = None
        self.residency = Residency()
        self._stager = Stager()
        self.last_msm_plan: MsmPlan | None = None
        self.table_reserve = 0
        self._planned = _ByArray()  # bases -> the MsmPlan of their table (plan_vram)
        self._streamed = _ByArray()  # bases -> True: streamed from host memory (plan_vram, or no room)
        self.stream_chunk = DEFAULT_CHUNK
        self.stream_stats = stream.StreamStats()
        self._pinned = stream.PinnedArrays()
        self._stage_log: list[dict] | None = None  # recording_msm_stages

    # ---- the device -----------------------------------------------------------------------------
    @property
    def device(self) -> int:
        if self._device is None:
            self._device = int(cupy().cuda.Device().id)
        return self._device

    @property
    def info(self) -> cuda_device.DeviceInfo:
        return cuda_device.info(self.device)

    @property
    def budget(self) -> VramBudget:
        """This device's VRAM budget, resolved at first use."""
        if self._budget is None:
            budget = resolve_budget(self._vram_budget, self.device, lambda: cuda_device.free_bytes(self.device),
                                    self._vram_fraction, self._vram_cap)
            if self._vram_budget is None:  # a budget of its own (tests, benches) leaves the pool as it is
                POOL_PEAK.install()
            if budget.cap is not None:
                ntt_cuda.limit_twiddle_tables(CAPPED_TWIDDLE_TABLE)
                with self._on_device():
                    cupy().get_default_memory_pool().set_limit(size=budget.bytes)
                log.info("cuda:%d: VRAM capped at %s (%s): CuPy's pool limited to %s", self.device,
                         format_size(budget.cap), budget.source, format_size(budget.bytes))
            self._budget = budget
        return self._budget

    def use_vram_cap(self, cap: int | str, source: str = "memory.vram_budget") -> None:
        """Cap this device's whole use at `cap` (bytes or "16GiB"; memory.vram_budget): CuPy's pool is
        limited to it less the context (cuzk.backend.cuda.memory), and that limit is the budget. It
        takes precedence over $CUZK_VRAM_BUDGET and the fraction; a budget already in use stays."""
        if self._budget is not None:
            log.warning("cuda:%d: the VRAM budget is in use (%s); %s %s applies from the next process",
                        self.device, self._budget.source, source, cap)
        self._vram_cap = (cap, source)

    def use_vram_fraction(self, fraction: float) -> None:
        """Size the budget, when neither an explicit one nor $CUZK_VRAM_BUDGET is set, as `fraction`
        of the memory free at first use (memory.vram_fraction). A budget already in use stays."""
        if self._budget is not None and fraction != self._vram_fraction:
            log.warning("cuda:%d: the VRAM budget is in use (%s); memory.vram_fraction %g applies from the "
                        "next process", self.device, self._budget.source, fraction)
        self._vram_fraction = fraction

    def _on_device(self):
        return cupy().cuda.Device(self.device)

    # ---- device placement (Backend's "device" members) --------------------------------------------
    def device_scope(self):
        """This device made the calling thread's current device while the context lasts (CuPy's
        thread-local device, restored after)."""
        return self._on_device()

    def free_bytes(self) -> int:
        """Bytes free on the device now, the unused blocks of CuPy's pool included (its allocations
        reuse them)."""
        with self._on_device():
            return int(cupy().cuda.runtime.memGetInfo()[0]) + int(cupy().get_default_memory_pool().free_bytes())

    def memory_stats(self) -> dict:
        """name, vram_total_bytes, vram_used_bytes (memGetInfo: every process's use),
        vram_reserved_bytes (the tables this backend holds under its budget), vram_budget_bytes,
        vram_cap_bytes (0 without a cap), vram_pool_bytes and vram_pool_peak_bytes (CuPy's pool now
        and its high-water mark: memory.POOL_PEAK), pinned_bytes (host memory page-locked for this
        device: streamed keys registered in place, staging and offload buffers) and h2d_stream_bytes
        (key bytes streamed to it so far)."""
        budget = self.budget
        with self._on_device():
            free, total = cupy().cuda.runtime.memGetInfo()
            pool = int(cupy().get_default_memory_pool().total_bytes())
        return {"name": self.info.name, "vram_total_bytes": int(total), "vram_used_bytes": int(total - free),
                "vram_reserved_bytes": self.residency.held, "vram_budget_bytes": budget.bytes,
                "vram_cap_bytes": budget.cap or 0, "vram_pool_bytes": pool,
                "vram_pool_peak_bytes": max(POOL_PEAK.peak(self.device), pool),
                "pinned_bytes": self._pinned.nbytes + self._stager.pinned_bytes,
                "h2d_stream_bytes": self.stream_stats.h2d_bytes}

    def has_room(self, nbytes: int) -> bool:
        """Whether the VRAM budget has room for `nbytes` beside the tables it holds."""
        return self.residency.held + nbytes <= self.budget.bytes

    def asarray(self, array):
        """`array` on this device."""
        with self._on_device():
            return cupy().asarray(array)

    def zeros(self, shape, dtype):
        with self._on_device():
            return cupy().zeros(shape, dtype)

    def _items(self) -> int:
        return msm.target_items(self.info.sm_count)

    def _reserve(self, need: int, what: str) -> None:
        """Make room for `need` more device bytes under the budget (evicting LRU tables), or raise."""
        self.residency.make_room(need, self.budget, what)

    # ---- R1CS evaluation and NTT over Fr (numpy in and out, or cupy arrays that stay on the device)
    def evaluate(self, matrix: SparseMatrix, witness: np.ndarray) -> np.ndarray:
        with self._on_device():
            return spmv.evaluate(matrix, witness, self._reserve)

    def evaluate_pce(self, pce: TemplateCircuit, witness: np.ndarray,
                     matrices: Sequence[int] = (0, 1, 2)) -> tuple[np.ndarray, ...]:
        """(A w, B w, C w), those of `matrices`, straight from the template form (cuzk.backend.cuda.pce);
        the circuit's arrays are uploaded at its first call and kept in the residency for the next ones."""
        with self._on_device():
            return pce_cuda.evaluate_pce(pce, witness, self._reserve, self.residency, matrices)

    def run_witness_program(self, pce: TemplateCircuit, program: WitnessProgram, w) -> None:
        """The program's kernels (cuzk.backend.cuda.witness) on w in place: a cupy array on this device
        stays there; a numpy one is copied in and back. The program is uploaded at its first run, beside
        the circuit's resident arrays, and kept (an LRU entry under the VRAM budget)."""
        check_program_witness(pce, w)
        with self._on_device():
            dev = self._program(pce, program)
            if on_device(w):
                witness_cuda.run_device(dev, w, w.shape[0])
            else:
                self._reserve(w.nbytes, "a witness on the device")
                on_gpu = cupy().asarray(w)
                witness_cuda.run_device(dev, on_gpu, w.shape[0])
                w[...] = on_gpu.get()

    def _kept(self, host, nbytes: int, what: str, make):
        """What this device keeps for the host object `host`: make() at its first use, after room for
        its `nbytes` under the budget, then kept while `host` lives (an LRU entry)."""
        held = self.residency.lookup(host)
        if held is None:
            self._reserve(nbytes, what)
            held = make()
            self.residency.track(held, nbytes)
            self.residency.insert(host, held)
        return held

    def _program(self, pce: TemplateCircuit, program: WitnessProgram) -> witness_cuda.DeviceWitnessProgram:
        """The program on this device, uploaded at its first use beside the circuit's resident arrays."""
        def upload() -> witness_cuda.DeviceWitnessProgram:
            t = time.perf_counter()
            dev = witness_cuda.upload_program(pce, program, pce_cuda.resident(pce, self._reserve, self.residency, 0))
            log.info("cuda: witness program of %d steps uploaded in %.2f s", len(program.steps), time.perf_counter() - t)
            return dev

        return self._kept(program, witness_cuda.program_bytes(program),
                          f"the witness program of a {pce.num_constraints}-row circuit", upload)

    def kept_copy(self, array: np.ndarray):
        """A host array's copy on this device (a circuit's density masks, read every proof), made at its
        first use and kept while the array lives."""
        with self._on_device():
            return self._kept(array, array.nbytes, f"a kept copy of a {array.shape} {array.dtype} array",
                              lambda: _Kept(cupy().asarray(array))).array

    def keep(self, g1: Sequence, g2: Sequence, pce: TemplateCircuit | None = None,
             program: WitnessProgram | None = None) -> None:
        """Make now what a circuit's first proof would make: the kept table of each G1 and G2 base
        array (as its first MSM does) and, when given, the witness program on this device."""
        with self._on_device():
            for group, arrays in (("g1", g1), ("g2", g2)):
                for bases in arrays:
                    if int(bases.shape[0]) and not self._streamed.get(bases):
                        self._resident(bases, group)
            if program is not None:
                self._program(pce, program)

    def first_unsatisfied(self, a, b, c) -> int | None:
        """The smallest row r with a[r] * b[r] != c[r] in Fr, or None; (n, 4) Fr arrays, numpy or cupy."""
        with self._on_device():
            return pce_cuda.first_unsatisfied(a, b, c, self._reserve)

    def ntt(self, values):
        with self._on_device():
            return ntt_cuda.ntt(values)

    def intt(self, values):
        with self._on_device():
            return ntt_cuda.intt(values)

    def coset_ntt(self, values):
        with self._on_device():
            return ntt_cuda.coset_ntt(values)

    def coset_intt(self, values):
        with self._on_device():
            return ntt_cuda.coset_intt(values)

    def to_coset(self, values):
        with self._on_device():
            self._release_free_blocks()  # the evaluation the padded values came from
            return ntt_cuda.to_coset(self._stager.to_device(values), self._release_free_blocks)

    def mul_assign(self, a, b):
        with self._on_device():
            for lo, part in self._parts(b):
                ntt_cuda.mul_assign(a[lo: lo + len(part)], part)
            return a

    def quotient_coefficients(self, ab, c):
        with self._on_device():
            h = ntt_cuda.quotient_coefficients(self._parts(ab), c)
            self._release_free_blocks()
            return h

    def _release_free_blocks(self) -> None:
        """Under a cap, CuPy's unused blocks back to the driver now, after a domain vector was freed:
        else a small allocation carved out of its block would pin all of it against the pool's limit."""
        if self.budget.cap is not None:
            cupy().get_default_memory_pool().free_all_blocks()

    def _parts(self, values):
        """Stager.parts of `values`; an offloaded (host) vector's bytes counted in stream_stats."""
        if isinstance(values, np.ndarray):
            self.stream_stats.add(values.nbytes)
        return self._stager.parts(values)

    def offload(self, values):
        """values copied into this backend's pinned host buffer (Stager.offload)."""
        with self._on_device():
            return self._stager.offload(values)

    # ---- Groth16 setup (not part of the Backend interface) -----------------------------------------
    def setup_key_points(self, pce: TemplateCircuit, tau: int, alpha: int, beta: int, gamma: int, delta: int,
                         a_dense: np.ndarray, b_dense: np.ndarray, keep_on_device: bool = False,
                         progress: bool = False) -> setup_cuda.KeyPoints:
        """Every group element of the Groth16 key of a template-form circuit for the given toxic waste,
        computed on this device (cuzk.backend.cuda.setup.key_points, its peak reserved under the VRAM
        budget); the query vectors stay on the device when keep_on_device, else they come back as numpy."""
        with self._on_device():
            return setup_cuda.key_points(pce, tau, alpha, beta, gamma, delta, a_dense, b_dense, self._reserve,
                                         self.residency, keep_on_device, progress)

    # ---- parameter files (not part of the Backend interface) -------------------------------------
    def upload_points(self, read_into: points_cuda.ReadInto, offset: int, count: int, group: str, *,
                      chunk_bytes: int | None = None, readers: int = points_cuda.READERS):
        """A vector of `count` encoded points of a .params file decoded on this device
        (cuzk.backend.cuda.points.upload: the cupy array and the index of the first bad point or
        None), its device memory reserved under the VRAM budget first (beside the vectors uploaded
        before it, which count while they live); the array counts against the budget while it lives
        (`hold`)."""
        with self._on_device():
            self._reserve(points_cuda.upload_bytes(group, count, chunk_bytes), f"{count} {group.upper()} parameter points")
            points, bad = points_cuda.upload(read_into, offset, count, group, chunk_bytes=chunk_bytes, readers=readers)
            self.hold(points)
            return points, bad

    def hold(self, array) -> None:
        """Count a device array (parameter vectors kept on the GPU) against the budget while it lives."""
        self.residency.track(array, int(array.nbytes))

    def encoded_points(self, points, group: str, chunk_bytes: int | None = None):
        """The .params encoding of a device vector, chunk by chunk (cuzk.backend.cuda.points.encoded_chunks)."""
        return points_cuda.encoded_chunks(points, group, chunk_bytes)

    # ---- bases ---------------------------------------------------------------------------------
    def prepare_bases_g1(self, bases, precompute: bool = True) -> PreparedBases:
        return self._prepare(bases, "g1", precompute)

    def prepare_bases_g2(self, bases, precompute: bool = True) -> PreparedBases:
        return self._prepare(bases, "g2", precompute)

    def _prepare(self, bases, group: str, precompute: bool = True, c: int | None = None,
                 m: int | None = None) -> PreparedBases:
        """Bases on the device with their table of multiples, tracked against the budget. The plan
        (c, m) is chosen under the budget (sized for sparse scalars, the larger case) unless c is
        given (then m defaults to 1)."""
        with self._on_device():
            cp = cupy()
            msm.check_bases(bases, group)
            n = int(bases.shape[0])
            if n == 0:
                raise MsmInputError("no bases")
            held_bases = self.residency.holds(bases)
            if c is None:
                plan = self._new_plan(group, n, precompute, held_bases)
            else:
                plan = msm.plan_for(group, n, c, m or 1, True, self._items())
                self.residency.make_room(msm.new_bytes(plan, held_bases), self.budget, self._what(group, n, plan))
            t = time.perf_counter()
            flat = self._stager.to_device(bases).view(cp.uint32).reshape(n, WORDS[group])
            table = msm.build_table(flat, group, plan.c, plan.multiples)
            del flat
            if log.isEnabledFor(logging.INFO):  # the table's kernels are asynchronous: time them when logged
                cp.cuda.get_current_stream().synchronize()
            log.info("cuda: %s table of %d bases (c = %d, %d multiples) made in %.2f s", group.upper(), n, plan.c,
                     plan.multiples, time.perf_counter() - t)
            prepared = PreparedBases(group, n, plan.c, plan.multiples, table)
            # bases the budget counts already (`hold`) are the table's first multiple or a copy of it
            self.residency.track(prepared, prepared.nbytes - (int(bases.nbytes) if held_bases else 0))
            return prepared

    def plan_vram(self, circuit: Any, vectors: Mapping[str, Any], witness_batch: int) -> vram_plan.VramPlan | None:
        """Under a cap, vram_plan.plan_prover for the circuit and key `vectors` on this device; its
        tables' (c, m) and streamed vectors are what this backend's later MSMs and `keep` follow, its
        chunk the streamed chunk (logged with its reasons). None without a cap."""
        budget = self.budget
        if budget.cap is None:
            return None
        pce, program = getattr(circuit, "pce", None), getattr(circuit, "program", None)
        held = (pce_cuda.resident_bytes(pce) if pce is not None else 0) + \
            (witness_cuda.program_bytes(program) if program is not None else 0) + \
            2 * circuit.num_aux + circuit.num_inputs + \
            ntt_cuda.table_bytes(circuit.domain_size.bit_length() - 1)  # the density masks (kept_copy), NTT tables
        shape = vram_plan.ProverShape(circuit.domain_size, circuit.num_columns,
                                      {name: int(v.shape[0]) for name, v in vectors.items()}, held, self.info.sm_count)
        plan = vram_plan.plan_prover(shape, budget.cap, source=budget.source, witness_batch=witness_batch)
        for name, bases in vectors.items():
            if name in plan.tables:
                self._planned.set(bases, plan.tables[name])
            elif name in plan.streamed:
                self._streamed.set(bases, True)
        if plan.chunk:
            self.stream_chunk = plan.chunk
        log.info("cuda:%d: %s", self.device, plan.summary())
        for reason in plan.reasons:
            log.info("cuda:%d:   %s", self.device, reason)
        return plan

    def reserve_beside_tables(self, nbytes: int, msm_points: int = 0) -> None:
        """Keep `nbytes` of the budget free of new tables: the work beside them (a batch of witnesses,
        the prover's vectors over the domain) that the residency does not count, plus the working
        memory of a G1 MSM of `msm_points` (its smallest m = 1 plan), so that a table made for one MSM
        never leaves the next without room to run. The largest asked for stays."""
        run = msm.least_run_bytes("g1", msm_points, self._items()) if msm_points else 0
        self.table_reserve = max(self.table_reserve, int(nbytes) + run)

    def _new_plan(self, group: str, n: int, precompute: bool, held_bases: bool = False) -> MsmPlan:
        """The cheapest plan that fits next to the held tables and the reserve beside them, evicting
        kept tables (LRU) only when none fits."""
        while True:
            try:
                return msm.choose_plan(group, n, self.budget, items=self._items(),
                                       held=self.residency.held + self.table_reserve, precompute=precompute,
                                       bases_held=held_bases)
            except VramBudgetError:
                if not self.residency.evict_lru():
                    raise

    def _resident(self, bases, group: str) -> PreparedBases:
        """The kept table of a base array (numpy, or cupy on this device), made at its first MSM and
        reused while the array lives (a prover's parameter vectors are the same arrays proof after
        proof)."""
        prepared = self.residency.lookup(bases)
        if prepared is not None and prepared.group == group:
            return prepared
        planned = self._planned.get(bases)
        prepared = self._prepare(bases, group) if planned is None else \
            self._prepare(bases, group, c=planned.c, m=planned.multiples)
        self.residency.insert(bases, prepared)
        return prepared

    def _streams(self, bases, group: str) -> bool:
        """Whether an MSM over `bases` streams them from host memory: host bases the plan streams, or
        whose table does not fit the budget (then they stream from now on, logged once)."""
        if not isinstance(bases, np.ndarray):
            return False
        if self._streamed.get(bases):
            return True
        if self.residency.lookup(bases) is not None:
            return False
        try:
            self._resident(bases, group)
            return False
        except VramBudgetError as e:
            log.warning("cuda:%d: %d %s bases stream from host memory: %s", self.device, len(bases), group.upper(), e)
            self._streamed.set(bases, True)
            return True

    # ---- MSM entry points ----------------------------------------------------------------------
    def msm_g1(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g1", sparse=False)

    def msm_g2(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g2", sparse=False)

    def msm_g1_sparse(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g1", sparse=True)

    def msm_g2_sparse(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g2", sparse=True)

    def msm_sets(self, bases, scalar_sets: Sequence, group: str, sparse: bool) -> list[np.ndarray]:
        """One MSM per scalar set over `bases` (Backend.msm_sets): over bases that stream from host
        memory, every set shares each chunk's crossing (msm_streamed), else one MSM after another."""
        if len(scalar_sets) > 1 and isinstance(bases, np.ndarray) and self._streams(bases, group):
            msm.check_bases(bases, group)
            for scalars in scalar_sets:
                msm.check_scalars(scalars, int(bases.shape[0]))
            return self.msm_streamed(bases, scalar_sets, group, sparse)
        return [self._msm(bases, scalars, group, sparse) for scalars in scalar_sets]

    def msm_streamed(self, bases: np.ndarray, scalar_sets: Sequence, group: str, sparse: bool) -> list[np.ndarray]:
        """sum_i s_i P_i for each scalar set over host bases that cross to the device once, in chunks of
        stream_chunk points (cuzk.backend.cuda.stream); numpy affine points. One set is uploaded whole;
        of several, those in host memory cross chunk by chunk beside the bases."""
        with self._on_device():
            if any(s.dtype != np.uint64 for s in scalar_sets):
                raise MsmInputError("streamed MSMs take (n, 4) uint64 Montgomery scalars")
            sets = [self._stager.to_device(s) for s in scalar_sets] if len(scalar_sets) == 1 else list(scalar_sets)
            del scalar_sets
            out = stream.msm_streamed(bases, sets, group, sparse=sparse, chunk=self.stream_chunk,
                                      items=self._items(), pinned=self._pinned, stats=self.stream_stats,
                                      upload=self._stager.to_device)
            self._release_free_blocks()
            return out

    def msm_device(self, prepared: PreparedBases, scalars, sparse: bool = False):
        """MSM with scalars on the GPU (or host); returns the affine result as a cupy u32 array."""
        if not isinstance(prepared, PreparedBases):
            raise MsmInputError("msm_device takes bases from prepare_bases_g1 / prepare_bases_g2")
        with self._on_device():
            self._check_device(prepared)
            msm.check_scalars(scalars, prepared.n)
            stage = self._stage()
            out = self._run(prepared, scalars, sparse, stage)
            self._log_stages(stage, prepared.group, prepared.n, sparse)
            return out

    def _msm(self, bases, scalars, group: str, sparse: bool) -> np.ndarray:
        with self._on_device():
            if isinstance(bases, PreparedBases):
                if bases.group != group:
                    raise MsmInputError(f"prepared bases are {bases.group}, not {group}")
                self._check_device(bases)
                n = bases.n
            else:
                msm.check_bases(bases, group)
                n = int(bases.shape[0])
            msm.check_scalars(scalars, n)
            if n == 0:
                return np.zeros(POINT_SHAPE[group], dtype=np.uint64)
            if self._streams(bases, group):
                return self.msm_streamed(bases, [scalars], group, sparse)[0]
            prepared = bases if isinstance(bases, PreparedBases) else self._resident(bases, group)
            stage = self._stage()
            out = self._run(prepared, scalars, sparse, stage)
            with stage("copy"):
                point = cupy().asnumpy(out)
            self._log_stages(stage, group, n, sparse)
            return point.view(np.uint64).reshape(POINT_SHAPE[group])

    def _run(self, prepared: PreparedBases, scalars, sparse: bool, stage: Stage = untimed):
        """One MSM on prepared bases, after making room for its working memory."""
        cp = cupy()
        plan = msm.plan_for(prepared.group, prepared.n, prepared.c, prepared.multiples, sparse, self._items())
        self.residency.make_room(plan.bytes.run, self.budget, self._what(prepared.group, prepared.n, plan),
                                 keep=prepared)
        with stage("copy"):
            sc = self._stager.to_device(scalars).view(cp.uint32).reshape(prepared.n, 8)
        idx = ones = None
        if sparse:
            with stage("plan"):
                idx, ones = msm.split_sparse(sc)
        out = msm.pippenger(prepared, sc, idx, ones, self._items(), stage)
        self.last_msm_plan = plan
        return out

    # ---- the MSMs' stage split ----------------------------------------------------------------
    @contextlib.contextmanager
    def recording_msm_stages(self) -> Iterator[list[dict]]:
        """Within the block, each MSM on resident bases (not a streamed one) appends
        {"msm": "msm_g1" | "msm_g2" | "msm_g1_sparse" | ..., "n": points, "<stage>_ms": GPU ms per
        stage of cuzk.backend.cuda.msm_stages} to the yielded list, in the order the MSMs end."""
        log_ = self._stage_log = []
        try:
            yield log_
        finally:
            self._stage_log = None

    def _stage(self) -> Stage:
        return StageEvents() if self._stage_log is not None else untimed

    def _log_stages(self, stage: Stage, group: str, n: int, sparse: bool) -> None:
        if isinstance(stage, StageEvents) and self._stage_log is not None:
            split = {f"{k}_ms": round(v, 3) for k, v in stage.milliseconds().items()}
            self._stage_log.append({"msm": f"msm_{group}" + ("_sparse" if sparse else ""), "n": n, **split})

    def _check_device(self, prepared: PreparedBases) -> None:
        where = int(prepared.table.device.id)
        if where != self.device:
            raise MsmInputError(f"prepared bases live on device {where}, this backend runs on device {self.device}")

    @staticmethod
    def _what(group: str, n: int, plan: MsmPlan) -> str:
        return f"a {group.upper()} MSM of {n} points (c = {plan.c}, {plan.multiples} table multiples)"
