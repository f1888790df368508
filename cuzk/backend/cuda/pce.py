"""A w, B w, C w on the GPU straight from a circuit's template form (kernels/pce/pce.cu), and the
satisfaction check a[r] * b[r] == c[r].

The circuit is duck-typed (cuzk.backend.base.TemplateCircuit; cuzk.r1cs.pce.PCE is one). Its arrays
go to the device as stored (the kernel reads 32- or 64-bit indices and 16- or 32-bit coefficient ids
alike, so nothing is widened) together with its part table (`parts`), once: the DevicePce is kept in
the backend's Residency, an LRU entry counted against the VRAM budget while it is held, dropped when
the circuit dies or evicted when room is needed. One launch per matrix covers all rows.

Device memory: the resident circuit takes `resident_bytes(pce)` =
    sum of its index / id arrays' bytes + 32 ncoeff + 88 (blocks + plain segments)
and each evaluate_pce call `call_bytes(pce, k)` = 32 (cols + k rows) on top (the witness and the
outputs A w, B w, C w). first_unsatisfied needs 96 n + 8 bytes for host inputs, 8 for device
ones. CuPy is imported lazily: this module imports on machines without it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.backend.base import TemplateCircuit, check_triple, check_witness
from cuzk.backend.cuda import loader
from cuzk.backend.cuda.device import cupy
from cuzk.backend.cuda.layout import MATRIX_ARRAYS, PART_FIELDS, WIDTHS, PCE_THREADS as THREADS
from cuzk.backend.cuda.memory import Residency
from cuzk.errors import InputError
from cuzk.util.arrays import on_device

_NO_ROW = (1 << 64) - 1


def parts(pce: TemplateCircuit, threads: int = THREADS) -> np.ndarray:
    """(nparts, len(PART_FIELDS)) int64 work table of pce_evaluate, blocks first, then plain segments,
    parts without rows left out. A block's items j < per * k are (template row j // k, instance j % k),
    written to row + (j % k) per + j // k; a plain segment (k = 0) writes plain row first + j to row + j.
    Part s gets CUDA blocks cta0[s] .. cta0[s] + ceil(items / threads)."""
    rows = []
    for tpl, k, row_base, aux_col, aux_per, in_col, in_per, wire_off, _ in pce.blocks.tolist():
        first, end = int(pce.tpl_rows[tpl]), int(pce.tpl_rows[tpl + 1])
        rows.append([0, (end - first) * k, k, row_base, first, end - first, aux_col, aux_per, in_col, in_per,
                     wire_off])
    plain0 = 0
    for row, n in pce.plain_segs.tolist():
        rows.append([0, n, 0, row, plain0, 0, 0, 0, 0, 0, 0])
        plain0 += n
    table = np.array([r for r in rows if r[1] > 0], np.int64).reshape(-1, len(PART_FIELDS))
    ctas = -(-table[:, 1] // threads)
    table[:, 0] = np.cumsum(ctas) - ctas
    return table


def widths(pce: TemplateCircuit, matrix) -> int:
    """The kernel's `widths` bits for one of the circuit's matrices: which arrays are 64-bit (ids 32-bit).
    InputError for a dtype the kernel does not read."""
    bits = 0
    for i, (name, narrow, wide) in enumerate(WIDTHS):
        arr = pce.wire_cols if name == "wire_cols" else getattr(matrix, name)
        if arr.dtype not in (narrow, wide):
            raise InputError(f"PCE {name} must be {np.dtype(narrow).name} or {np.dtype(wide).name}, got {arr.dtype}")
        bits |= 1 << i if arr.dtype == wide else 0
    return bits


def _host_arrays(pce: TemplateCircuit) -> list[np.ndarray]:
    return [pce.coeffs, pce.wire_cols] + [getattr(m, name) for m in (pce.a, pce.b, pce.c) for name in MATRIX_ARRAYS]


def resident_bytes(pce: TemplateCircuit) -> int:
    """Device bytes of the circuit's kept arrays (see the module docstring)."""
    return sum(arr.nbytes for arr in _host_arrays(pce)) + 8 * len(PART_FIELDS) * (len(pce.blocks) + len(pce.plain_segs))


def call_bytes(pce: TemplateCircuit, outputs: int = 3) -> int:
    """Device bytes one evaluate_pce call needs next to the kept arrays: witness and its outputs."""
    return 32 * (pce.shape[1] + outputs * pce.num_constraints)


@dataclass(eq=False)
class DevicePce:
    """A circuit's arrays on the device: the part table (nparts parts over ctas CUDA blocks), the
    coefficients, the wire table and per matrix its six arrays (MATRIX_ARRAYS) with its `widths` bits;
    nbytes as resident_bytes counts them."""

    parts: Any
    nparts: int
    ctas: int
    coeffs: Any
    wire_cols: Any
    matrices: tuple[tuple[Any, ...], ...]
    widths: tuple[int, int, int]
    nbytes: int


def upload(pce: TemplateCircuit) -> DevicePce:
    """The circuit's arrays copied to the current device as stored (their dtypes checked first;
    plain_indptr is int64)."""
    bits = tuple(widths(pce, m) for m in (pce.a, pce.b, pce.c))
    cp = cupy()
    table = parts(pce)
    mats = tuple(tuple(cp.asarray(np.ascontiguousarray(getattr(m, name), np.int64 if name == "plain_indptr" else None))
                       for name in MATRIX_ARRAYS) for m in (pce.a, pce.b, pce.c))
    ctas = int((-(-table[:, 1] // THREADS)).sum())
    return DevicePce(cp.asarray(table), len(table), ctas, cp.asarray(np.ascontiguousarray(pce.coeffs)),
                     cp.asarray(np.ascontiguousarray(pce.wire_cols)), mats, bits, resident_bytes(pce))


def resident(pce: TemplateCircuit, reserve: Callable[[int, str], None], residency: Residency,
             outputs: int = 3) -> DevicePce:
    """The circuit's DevicePce from `residency`, else uploaded and kept there (tracked while it lives,
    an LRU entry while pce lives); reserve(bytes, what) makes room first for the upload and one call
    of `outputs` outputs."""
    dev = residency.lookup(pce)
    what = f"evaluating a {pce.num_constraints} x {pce.shape[1]} circuit from its template form"
    if dev is None:
        reserve(resident_bytes(pce) + call_bytes(pce, outputs), what)
        dev = upload(pce)
        residency.track(dev, dev.nbytes)
        residency.insert(pce, dev)
    else:
        reserve(call_bytes(pce, outputs), what)
    return dev


def evaluate_device(dev: DevicePce, w, rows: int, matrices: Sequence[int] = (0, 1, 2)) -> tuple[Any, ...]:
    """(A w, B w, C w), those of `matrices`, as cupy (rows, 4) uint64 arrays, for a witness `w` already
    on the device."""
    cp = cupy()
    kernel = loader.function("pce_evaluate")
    outs = []
    for j in matrices:
        (indptr, tvars, tcids, pindptr, pcols, pcids), bits = dev.matrices[j], dev.widths[j]
        out = cp.empty((rows, 4), dtype=cp.uint64)
        kernel((dev.ctas,), (THREADS,), (dev.parts, np.uint32(dev.nparts), indptr, tvars, tcids, dev.wire_cols, pindptr,
                                     pcols, pcids, dev.coeffs, w, out, np.uint32(bits)))
        outs.append(out)
    return tuple(outs)


def evaluate_pce(pce: TemplateCircuit, witness: np.ndarray, reserve: Callable[[int, str], None],
                 residency: Residency, matrices: Sequence[int] = (0, 1, 2)) -> tuple[np.ndarray, ...]:
    """(A w, B w, C w), each (num_constraints, 4) Montgomery, those of `matrices` (0 = A, 1 = B, 2 = C),
    for a (num_inputs + num_aux, 4) witness, computed on the current device from the circuit's resident arrays (`resident`). A witness already on
    the device (cupy) gives device outputs; a numpy one, numpy outputs."""
    device = on_device(witness)
    if device:
        _check_device_witness(pce, witness)
    else:
        check_witness(pce, witness)
    cp = cupy()
    rows = pce.num_constraints
    if rows == 0:
        return tuple((cp if device else np).empty((0, 4), np.uint64) for _ in matrices)
    dev = resident(pce, reserve, residency, len(matrices))
    outs = evaluate_device(dev, cp.ascontiguousarray(witness) if device else cp.asarray(np.ascontiguousarray(witness)),
                           rows, matrices)
    return outs if device else tuple(cp.asnumpy(x) for x in outs)


def _check_device_witness(pce: TemplateCircuit, witness) -> None:
    if witness.dtype != np.uint64 or witness.shape != (pce.shape[1], 4):
        raise InputError(f"witness must be a ({pce.shape[1]}, 4) uint64 Fr array, got {witness.dtype} {witness.shape}")


def first_unsatisfied(a, b, c, reserve: Callable[[int, str], None]) -> int | None:
    """The smallest row r with a[r] * b[r] != c[r] in Fr, or None, for (n, 4) Montgomery arrays (numpy
    or cupy; limbs are compared, so the inputs are canonical), checked on the current device.
    reserve(bytes, what) is called first with the bytes to upload (host inputs) and the result's 8."""
    check_triple(a, b, c)
    n = a.shape[0]
    if n == 0:
        return None
    reserve(8 + sum(x.nbytes for x in (a, b, c) if isinstance(x, np.ndarray)), f"checking {n} R1CS rows")
    cp = cupy()
    a, b, c = (cp.ascontiguousarray(cp.asarray(x)) for x in (a, b, c))
    first = cp.asarray(np.array([_NO_ROW], np.uint64))
    loader.function("fr_first_unsatisfied")((-(-n // THREADS),), (THREADS,), (a, b, c, np.uint64(n), first))
    row = int(cp.asnumpy(first)[0])
    return None if row == _NO_ROW else row
