"""The VRAM plan of one partition's proving under a cap: which Groth16 key vectors stay on the GPU as
MSM tables and which are streamed from host memory in chunks, where the quotient's vectors live, and
how many witnesses one expansion makes.

Memory model (bytes). usable = (cap - CONTEXT_BYTES) (1 - HEADROOM): the CUDA context, the kernels'
modules and NVRTC live outside CuPy's pool (pool_limit), and the headroom absorbs the pool's rounding
and fragmentation. With n the domain, V = 32 n a domain vector, W = 32 columns the witness, B the
witness batch and A = 96 / 192 bytes per G1 / G2 affine point, the device holds
    T = circuit_bytes + the resident vectors' tables (m n A, msm.msm_bytes)
and beside T one phase at a time; the peak, T + the largest phase, stays within usable. The quotient
runs in one of three modes (cuzk.groth16.prover.quotient). In the first two a batch's witnesses stay
on the device until its last item is proved: H = B W held in every phase after the expansion. In
"host" they are copied to host memory once expanded (H = 0) and every use uploads what it reads.
When a vector streams, P partitions are proved together (prove_batch, cuzk.groth16.prover.prove_many:
each streamed chunk of the key serves all of them): each is expanded alone and runs its quotient,
then its witness and H coefficients wait in host memory (H = 0 through the MSMs) and the MSMs upload
their scalars:
    expand    B W
    quotient  H + 3 V   ("resident": A w, B w, C w made one at a time, A B merged before C comes in;
                         A B, the next vector and an in-place transform's scratch vector)
              H + 2 V   ("offload": A's and A B's coset values wait in host memory and come back in
                         parts: 2 V more host -> device)
              max(W + V, 2 V)  ("host": as offload, each evaluation beside an uploaded witness that
                         goes before the transforms: 3 W more host -> device)
    msm_h     H + V + work(h)
    msm_l     H + work(l)                       (+ 32 |l|, the uploaded scalars, in host or together)
    msm_a     H + 32 |a| + work(a)                          (A's scalars)
    msm_b     H + 32 |b_g1| + max(work(b_g1), work(b_g2))
work(v) of a resident vector is its plan's working memory, max(run, prepare) (sparse scalars); of a
streamed one, two device staging buffers of k = min(chunk, |v|) points plus the run bytes of the
cheapest one-multiple plan of k points.

Choices, in order: the quotient stays resident if it fits with every vector streamed at MIN_CHUNK,
else it is offloaded, else the witness waits in host memory too, else VramBudgetError names
minimum_cap. Vectors are made resident smallest
table first (each at its smallest one-multiple plan) until one does not fit; the rest stream, in the
largest power-of-two chunk (MIN_CHUNK to MAX_CHUNK) that fits. Then each resident table, in the order
the engine makes them (VECTORS), takes msm.choose_plan's cheapest plan in the room left, and the
witness batch is the largest up to the one asked for whose expansion fits; or, when a vector streams
and more than one is asked for, that many partitions are proved together, each expanded alone (the
MSM phases then hold no witness: the peak only falls). Pure Python: imports without CuPy.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from cuzk.backend.cuda import loader
from cuzk.backend.cuda.layout import WORDS
from cuzk.backend.cuda.memory import CONTEXT_BYTES, VramBudget, pool_limit
from cuzk.backend.cuda.msm import MsmPlan, choose_plan, least_run_bytes, streamed_plan, target_items
from cuzk.errors import InputError, VramBudgetError, format_size
from cuzk.util.sizes import parse_bytes

__all__ = ["CONTEXT_BYTES", "GROUP", "HEADROOM", "MAX_CHUNK", "MIN_CHUNK", "QUOTIENT_MODES", "VECTORS", "ProverShape", "VramPlan",
           "minimum_cap", "plan_prover", "pool_limit", "usable_bytes"]

HEADROOM = 0.04  # of the pool: its rounding and fragmentation
MIN_CHUNK = 1 << 20  # points per streamed chunk, at least and at most
MAX_CHUNK = 1 << 24
QUOTIENT_MODES = ("resident", "offload", "host")  # from the most device memory to the least
VECTORS = ("h", "l", "a", "b_g1", "b_g2")  # the key's MSM vectors, in the order the engine makes their tables
GROUP = {"h": "g1", "l": "g1", "a": "g1", "b_g1": "g1", "b_g2": "g2"}
_PHASE_OF = {"h": "msm_h", "l": "msm_l", "a": "msm_a", "b_g1": "msm_b", "b_g2": "msm_b"}


def _point_bytes(vector: str) -> int:
    return 4 * WORDS[GROUP[vector]]


def usable_bytes(cap: int) -> int:
    """The bytes the plan may use under a cap: the pool limit less HEADROOM."""
    return int(pool_limit(cap) * (1 - HEADROOM))


@dataclass(frozen=True)
class ProverShape:
    """Sizes of one partition's proving on a device: the domain n, the witness's variables, the points
    of each key vector (VECTORS; a missing one has none), the circuit's resident bytes (its PCE arrays
    and witness program) and the device's SMs (msm.target_items)."""

    domain: int
    columns: int
    lengths: dict[str, int]
    circuit_bytes: int
    sm_count: int = 132

    def __post_init__(self) -> None:
        unknown = set(self.lengths) - set(VECTORS)
        if unknown:
            raise InputError(f"unknown key vectors {sorted(unknown)}; expected some of {', '.join(VECTORS)}")
        if self.domain < 1 or self.domain & (self.domain - 1):
            raise InputError(f"the domain size must be a power of two, not {self.domain}")

    @classmethod
    def of(cls, circuit: Any, lengths: dict[str, int], circuit_bytes: int, sm_count: int = 132) -> ProverShape:
        """The shape of any object with domain_size, num_inputs and num_aux."""
        return cls(int(circuit.domain_size), int(circuit.num_inputs) + int(circuit.num_aux), dict(lengths),
                   int(circuit_bytes), sm_count)

    def length(self, vector: str) -> int:
        return int(self.lengths.get(vector, 0))

    @property
    def vector_bytes(self) -> int:
        """V: one domain vector of Fr elements."""
        return 32 * self.domain

    @property
    def witness_bytes(self) -> int:
        """W: one witness of Fr elements."""
        return 32 * self.columns


@dataclass(frozen=True)
class VramPlan:
    """What stays on the device (tables), what streams (streamed, in chunk-point pieces), where the
    quotient's vectors live, and the modelled bytes (module docstring) with the reasons for each choice."""

    cap: int
    usable: int  # usable_bytes(cap): the peak's limit
    quotient: str  # "resident", "offload" or "host" (QUOTIENT_MODES)
    tables: dict[str, MsmPlan]  # the resident vectors' plans, in VECTORS order
    streamed: tuple[str, ...]  # the vectors streamed from host memory
    chunk: int  # points per streamed chunk; 0 when nothing streams
    witness_batch: int  # partitions whose witnesses are expanded in one run
    prove_batch: int  # partitions proved together (prove_many), 1 unless a vector streams
    peak: int  # the held bytes plus the largest phase
    phases: dict[str, int]  # each phase's bytes beside the held ones
    reasons: tuple[str, ...]  # why each choice was made, a sentence each

    @property
    def witness_on_host(self) -> bool:
        """Whether expanded witnesses go to host memory (quotient "host")."""
        return self.quotient == "host"

    def h2d_bytes(self, shape: ProverShape) -> int:
        """Host -> device bytes per partition: the streamed vectors' points, once per prove_batch
        partitions; when the quotient is offloaded A's and A B's coset values coming back; with the
        witness in host memory, the witness for each of the three evaluations; and the MSMs' scalars
        when the witness waits in host memory (those of L, A and both B) and H's too when proved together."""
        points = sum(shape.length(v) * _point_bytes(v) for v in self.streamed) // self.prove_batch
        back = 0 if self.quotient == "resident" else 2 * shape.vector_bytes
        evaluations = 3 * shape.witness_bytes if self.witness_on_host else 0
        together = self.prove_batch > 1
        scalars = 32 * (shape.length("l") + shape.length("a") + 2 * shape.length("b_g1")) \
            if self.witness_on_host or together else 0
        return points + back + evaluations + scalars + (32 * shape.length("h") if together else 0)

    def summary(self) -> str:
        """Two lines for logs and status."""
        tables = ", ".join(f"{v} (c {p.c}, m {p.multiples})" for v, p in self.tables.items()) or "none"
        streamed = f"{', '.join(self.streamed)} in {_chunk_text(self.chunk)} chunks" if self.streamed else "none"
        return (f"VRAM plan for a {format_size(self.cap)} cap: peak {format_size(self.peak)} of "
                f"{format_size(self.usable)} usable; quotient {self.quotient}; witness batch {self.witness_batch}; "
                f"proved together {self.prove_batch}\n"
                f"  tables: {tables}; streamed: {streamed}")


@dataclass(frozen=True)
class _Layout:
    """A candidate plan: quotient mode, resident tables, chunk, witness batch, partitions proved together."""

    quotient: str
    tables: dict[str, MsmPlan]
    chunk: int
    batch: int = 1
    together: int = 1


def _chunk_text(chunk: int) -> str:
    return f"2^{chunk.bit_length() - 1}-point"


def _work(shape: ProverShape, layout: _Layout, vector: str, items: int) -> int:
    """Device bytes of one vector's MSM beside the held tables (module docstring)."""
    n = shape.length(vector)
    if n == 0:
        return 0
    plan = layout.tables.get(vector)
    if plan is not None:
        return max(plan.bytes.run, plan.bytes.prepare)
    k = min(layout.chunk, n)
    return 2 * k * _point_bytes(vector) + streamed_plan(GROUP[vector], k, items).bytes.run


def _phases(shape: ProverShape, layout: _Layout, items: int, without: str | None = None) -> dict[str, int]:
    """Each phase's bytes beside the held tables; `without`: that vector's work counted as nothing."""
    v, w = shape.vector_bytes, shape.witness_bytes
    host = layout.quotient == "host"
    held = 0 if host else layout.batch * w  # the batch's witnesses, on the device through each proof
    quotient = {"resident": held + 3 * v, "offload": held + 2 * v, "host": max(w + v, 2 * v)}[layout.quotient]
    uploads = host or layout.together > 1  # the MSMs' scalars come from host memory
    held = 0 if uploads else held
    work = {x: 0 if x == without else _work(shape, layout, x, items) for x in VECTORS}
    return {
        "expand": layout.batch * w,
        "quotient": quotient,
        "msm_h": held + v + work["h"],
        "msm_l": held + (32 * shape.length("l") if uploads else 0) + work["l"],
        "msm_a": held + 32 * shape.length("a") + work["a"],
        "msm_b": held + 32 * shape.length("b_g1") + max(work["b_g1"], work["b_g2"]),
    }


def _held(shape: ProverShape, layout: _Layout, without: str | None = None) -> int:
    return shape.circuit_bytes + sum(p.bytes.table for x, p in layout.tables.items() if x != without)


def _peak(shape: ProverShape, layout: _Layout, items: int) -> int:
    return _held(shape, layout) + max(_phases(shape, layout, items).values())


def _smallest(vector: str, n: int, items: int) -> MsmPlan:
    """The one-multiple plan of least working memory."""
    least = n * _point_bytes(vector) + least_run_bytes(GROUP[vector], n, items)
    return choose_plan(GROUP[vector], n, VramBudget(least, "its least need"), items=items, precompute=False)


def _fit(shape: ProverShape, layout: _Layout, vector: str, usable: int, items: int) -> MsmPlan:
    """choose_plan's pick for `vector` with the rest of `layout` held: its own phase's other bytes
    as `held`, and the multiples capped so its table also fits beside every other phase."""
    n, held = shape.length(vector), _held(shape, layout, vector)
    others = _phases(shape, layout, items, without=vector)
    beside = others[_PHASE_OF[vector]]
    if vector.startswith("b_"):  # the other B vector's work shares the phase: the table cap covers it
        beside = others["msm_b"] - max(_work(shape, layout, x, items) for x in ("b_g1", "b_g2") if x != vector)
    most = (usable - held - max(others.values())) // (n * _point_bytes(vector))
    return choose_plan(GROUP[vector], n, VramBudget(usable, "the usable VRAM"), items=items, held=held + beside,
                       max_multiples=min(loader.MAX_MULTIPLES, most))


def minimum_cap(shape: ProverShape) -> int:
    """The smallest cap plan_prover accepts: the peak of every vector streamed at MIN_CHUNK with the
    witness in host memory ("host"), plus the context and headroom."""
    need = _peak(shape, _Layout("host", {}, MIN_CHUNK), target_items(shape.sm_count))
    cap = CONTEXT_BYTES + int(need / (1 - HEADROOM))
    while usable_bytes(cap) < need:
        cap += 1
    while usable_bytes(cap - 1) >= need:
        cap -= 1
    return cap


def plan_prover(shape: ProverShape, cap: int | str, *, source: str = "the VRAM cap",
                witness_batch: int = 1) -> VramPlan:
    """The plan of one partition's proving under `cap` (bytes, or a size such as "16GiB"; module
    docstring); VramBudgetError naming minimum_cap when even the all-streamed plan does not fit."""
    cap = parse_bytes(cap, what="VRAM cap")
    if witness_batch < 1:
        raise InputError(f"the witness batch must be at least 1, not {witness_batch}")
    usable, items = usable_bytes(cap), target_items(shape.sm_count)
    reasons: list[str] = []
    layout = _quotient(shape, usable, items, reasons)
    if layout is None:
        raise VramBudgetError(f"proving a partition of {shape.domain} domain, {shape.columns} variables",
                              minimum_cap(shape), cap, source)
    layout = _residency(shape, layout, usable, items, reasons)
    streamed = tuple(v for v in VECTORS if shape.length(v) > 0 and v not in layout.tables)
    if streamed:
        layout = _chunk(shape, layout, streamed, usable, items, reasons)
    for v in VECTORS:
        if v in layout.tables:
            plan = _fit(shape, layout, v, usable, items)
            layout = replace(layout, tables={**layout.tables, v: plan})
            reasons.append(f"{v} resident: table of {format_size(plan.bytes.table)}, c {plan.c}, "
                           f"{plan.multiples} multiple{'s' if plan.multiples > 1 else ''} (the cheapest that fits)")
    if streamed and witness_batch > 1:
        layout = replace(layout, together=witness_batch)
        reasons.append(f"{witness_batch} partitions proved together, each expanded alone: each streamed chunk serves "
                       f"all of them (the streamed key crosses once per {witness_batch} partitions)")
    else:
        batch = max([1] + [b for b in range(2, witness_batch + 1)
                           if _peak(shape, replace(layout, batch=b), items) <= usable])
        layout = replace(layout, batch=batch)
        if batch < witness_batch:
            reasons.append(f"witness batch {batch} of the {witness_batch} asked: more witnesses do not fit")
    return VramPlan(cap=cap, usable=usable, quotient=layout.quotient,
                    tables={v: layout.tables[v] for v in VECTORS if v in layout.tables}, streamed=streamed,
                    chunk=layout.chunk if streamed else 0, witness_batch=layout.batch, prove_batch=layout.together,
                    peak=_peak(shape, layout, items),
                    phases=_phases(shape, layout, items), reasons=tuple(reasons))


def _quotient(shape: ProverShape, usable: int, items: int, reasons: list[str]) -> _Layout | None:
    """Every vector streamed at MIN_CHUNK, the quotient resident if that fits, else offloaded if that
    fits, else with the witness in host memory too if that fits, else None."""
    layout = _Layout("resident", {}, MIN_CHUNK)
    resident = _peak(shape, layout, items)
    if resident <= usable:
        reasons.append("quotient resident: the witness and three domain vectors fit with every vector streamed")
        return layout
    offload = _peak(shape, replace(layout, quotient="offload"), items)
    if offload <= usable:
        reasons.append(f"quotient offloaded to host memory: kept on the device it peaks at {format_size(resident)}, "
                       f"above the {format_size(usable)} usable")
        return replace(layout, quotient="offload")
    layout = replace(layout, quotient="host")
    if _peak(shape, layout, items) > usable:
        return None
    reasons.append(f"quotient offloaded and the witness in host memory (uploaded for each use): with the witness "
                   f"on the device the offloaded quotient peaks at {format_size(offload)}, above the "
                   f"{format_size(usable)} usable")
    return layout


def _residency(shape: ProverShape, layout: _Layout, usable: int, items: int, reasons: list[str]) -> _Layout:
    """The vectors made resident at their smallest one-multiple plan, smallest table first, until one
    does not fit."""
    present = [v for v in VECTORS if shape.length(v) > 0]
    blocked: str | None = None
    for v in sorted(present, key=lambda v: (shape.length(v) * _point_bytes(v), VECTORS.index(v))):
        trial = replace(layout, tables={**layout.tables, v: _smallest(v, shape.length(v), items)})
        if blocked is None and _peak(shape, trial, items) <= usable:
            layout = trial
            continue
        table = format_size(shape.length(v) * _point_bytes(v))
        reasons.append(f"{v} streamed: its table ({table}) would raise the peak to "
                       f"{format_size(_peak(shape, trial, items))}, above the {format_size(usable)} usable"
                       if blocked is None else
                       f"{v} streamed: its table ({table}) is no smaller than {blocked}'s, which did not fit")
        blocked = blocked or v
    return layout


def _chunk(shape: ProverShape, layout: _Layout, streamed: tuple[str, ...], usable: int, items: int,
           reasons: list[str]) -> _Layout:
    """The largest power-of-two chunk from MIN_CHUNK to MAX_CHUNK (and the longest streamed vector)
    that fits."""
    longest = 1 << (max(shape.length(v) for v in streamed) - 1).bit_length()
    top = max(MIN_CHUNK, min(MAX_CHUNK, longest))
    sizes = [1 << b for b in range(MIN_CHUNK.bit_length() - 1, top.bit_length())]
    chunk = max(k for k in sizes if _peak(shape, replace(layout, chunk=k), items) <= usable)
    why = ("the largest that fits" if chunk < top else
           "the most (MAX_CHUNK)" if top == MAX_CHUNK else "the longest streamed vector's size")
    reasons.append(f"{', '.join(streamed)} streamed in {_chunk_text(chunk)} chunks, {why}")
    return replace(layout, chunk=chunk)
