"""The witness program on the GPU (kernels/witness/witness.cu): every aux value of P partitions'
witnesses computed in place from their public inputs and free values, by the steps of a
cuzk.r1cs.witness_program.WitnessProgram over the circuit's template form (cuzk.r1cs.pce.PCE).

The program runs as *runs*: run 0 is the plain program (its rows are plain rows, their terms name
columns), run 1 + b is block b's template program for the block's k instances (template variables
mapped per instance as in pce.cu), in that order. A run is its template's levels in order, a level
being steps that only read values of earlier levels, each step done for every instance and
partition at once. With X.w = sum_e coeffs[cid_e] w[col_e] over a row of X, X'.w the same without
the step's unknown term, a decomposition's *targets* the terms of its side (A, C or HR) off the ONE
column with a coefficient 2^e, and X0 the sum over X's other terms, a step (op, row, term, inv) is
    SOLVE_C  w[col(term of C)] = (A.w B.w - C'.w) inv        DEC_A  v = C.w inv - A0
    SOLVE_A  w[col(term of A)] = (C.w - B.w A'.w) inv        DEC_C  v = A.w B.w - C0
    SOLVE_B  w[col(term of B)] = (C.w - A.w B'.w) inv        DEC_H  v = HL.w - HR0 (hint rows)
where a decomposition DEC_* gives each target bit e of the integer v in [0, r) (Fr one or zero),
each bit taken once, and must use up every bit of v: else the inputs are inconsistent
(SynthesisError, as run_cpu raises).

The program's levels run one after the other, so the witness takes as long as its levels' longest
chains of dependent loads (thousands of levels, few hundred steps each: latency, not bandwidth, is
the cost). The upload gives each step its sides' term ranges (`heads`, read off the indptr arrays
once), and a thread's step whose rows have at most 4 terms each (nearly all) loads all of its terms,
then their columns, then their values, each round at once; a SOLVE step whose sides have at most 4
terms besides its unknown one (nearly all) has a record (step_records) holding its op, inv, and every
term's stored variable and coefficient id, so that its thread waits on one load less and starts from
the record itself. The steps of a level whose longest row
has more than LONG_TERMS terms come first in the level (the upload reorders them: a level's steps
are independent) and take a warp per (step, instance, partition), the lanes splitting the terms; the
others a thread each, on the warps after theirs.
`cooperative` runs every run in one persistent launch of witness_program (grid sized from the
kernel's occupancy so that all its blocks are resident, a grid barrier between levels); otherwise
witness_level is launched once per level of each run. The circuit's arrays go to the device as
DevicePce (cuzk.backend.cuda.pce.upload) keeps them, the hint sides HL, HR likewise, and the program's
arrays as stored; the kernels receive all their addresses in one struct by value (layout.PROGRAM_STRUCT).

The program and circuit are duck-typed (cuzk.r1cs is a higher layer): `pce` has num_inputs, num_aux,
coeffs, wire_cols, blocks and a, b, c; `program` has steps, levels, prog_levels, inv, coeff_log2, hl
and hr. CuPy is imported lazily: this module imports on machines without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.backend.base import DEC_H, SOLVE_A, SOLVE_B, SOLVE_C
from cuzk.backend.cuda import loader
from cuzk.backend.cuda import pce as pce_cuda
from cuzk.backend.cuda.device import cupy, info
from cuzk.backend.cuda.layout import (MATRIX_ARRAYS, PROGRAM_ARRAYS, PROGRAM_MATRICES, PROGRAM_STRUCT, REC_CIDS,
                                      REC_VARS, REC_WORDS, RUN_FIELDS, SHORT_TERMS, WP_THREADS as THREADS)
from cuzk.errors import InputError, SynthesisError

LONG_TERMS = 16  # a step whose longest row has more terms takes a warp per item
_BLOCK_COLUMNS = [0, 1, 3, 4, 5, 6, 7]  # RUN_FIELDS in cuzk.r1cs.pce.BLOCK_FIELDS


def runs(pce, program) -> np.ndarray:
    """(nblk + 1, len(RUN_FIELDS)) int64: run 0 the plain program (template ntpl, k = 0), then run
    1 + b block b's instances of its template."""
    plain = np.array([[len(program.prog_levels) - 2, 0, 0, 0, 0, 0, 0]], np.int64)
    return np.concatenate([plain, np.asarray(pce.blocks, np.int64).reshape(-1, 9)[:, _BLOCK_COLUMNS]])


def ordered_steps(pce, program) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps, heads, long_end): the program's steps with each level's long ones (a row of more than
    LONG_TERMS terms) first; each step's sides' terms, heads[s] = (first term of A, B, C; their counts),
    HL, HR and an empty side for DEC_H (an empty side's first term 0), int32; and the end of level L's
    long steps, levels[L] <= long_end[L] <= levels[L+1]."""
    steps, levels = program.steps, program.levels
    level_of = np.repeat(np.arange(len(levels) - 1), np.diff(levels))
    plain = np.arange(len(steps)) >= levels[program.prog_levels[-2]]  # the plain program's steps come last
    hint = steps[:, 0] == DEC_H
    heads = np.zeros((len(steps), 6), np.int64)
    for side, mats in enumerate(((pce.a, program.hl), (pce.b, program.hr), (pce.c, None))):
        for m, reads in zip(mats, (~hint, hint)):
            if m is None:
                continue
            for indptr, which in ((m.tpl_indptr, ~plain), (m.plain_indptr, plain)):
                sel = np.flatnonzero(reads & which)
                rows = steps[sel, 1]
                heads[sel, side] = indptr[rows]
                heads[sel, 3 + side] = indptr[rows + 1].astype(np.int64) - indptr[rows]
    heads[:, :3][heads[:, 3:] == 0] = 0
    if heads.size and heads.max() > np.iinfo(np.int32).max:
        raise InputError("witness program: a term index does not fit 32 bits")
    long = heads[:, 3:].max(axis=1, initial=0) > LONG_TERMS
    order = np.lexsort((~long, level_of))
    return steps[order], heads[order].astype(np.int32), levels[:-1] + np.bincount(level_of[long], minlength=len(levels) - 1)


def step_records(pce, program, steps: np.ndarray, heads: np.ndarray) -> np.ndarray | None:
    """(nsteps, REC_WORDS) int32 records of the short SOLVE steps (`steps`, `heads` as ordered_steps
    orders them): all that a thread reads about such a step in one load, where otherwise it waits on
    its step, then its terms, then their variables. A SOLVE step is short when each side has at most
    SHORT_TERMS terms besides its unknown one; its record holds in word 0 op | n_A << 8 | n_B << 12 |
    n_C << 16 | 1 << 24 (n_X: side X's terms but the unknown), word 1 its inv, word 2 the stored
    variable of its unknown term (a template variable, or a column in the plain program), words
    REC_VARS + SHORT_TERMS q + j the stored variable of side q's j-th other term and words
    REC_CIDS + SHORT_TERMS q + j its coefficient id. Other steps' records are 0 (the kernel reads them
    through heads). None when a stored variable, id or inv does not fit 31 bits (the kernel then reads
    every step through heads)."""
    stored = [getattr(m, name) for m in (pce.a, pce.b, pce.c) for name in ("tpl_vars", "tpl_cids", "plain_cols", "plain_cids")]
    if any(a.size and int(a.max()) >= 1 << 31 for a in stored) or (steps.size and int(steps[:, 3].max()) >= 1 << 31):
        return None
    n = steps.shape[0]
    rec = np.zeros((n, REC_WORDS), np.int32)
    plain = np.arange(n) >= program.levels[program.prog_levels[-2]]  # the plain program's steps come last
    op, term = steps[:, 0], steps[:, 2]
    solve = (op == SOLVE_C) | (op == SOLVE_A) | (op == SOLVE_B)
    side = np.select([op == SOLVE_C, op == SOLVE_A, op == SOLVE_B], [2, 0, 1], -1)  # the unknown term's side
    first, count = heads[:, :3].astype(np.int64), heads[:, 3:].astype(np.int64)
    unknown_here = np.arange(3)[None, :] == side[:, None]
    others = count - unknown_here
    short = solve & (others <= SHORT_TERMS).all(axis=1)
    for q, m in enumerate((pce.a, pce.b, pce.c)):
        for stored, cids, which in ((m.tpl_vars, m.tpl_cids, ~plain), (m.plain_cols, m.plain_cids, plain)):
            mine = short & which
            at = mine & (side == q)
            rec[at, 2] = stored[term[at]]
            for j in range(SHORT_TERMS + 1):
                e = first[:, q] + j
                sel = mine & (j < count[:, q]) & ~((side == q) & (e == term))
                slot = j - ((side == q) & (term < e))
                rec[sel, REC_VARS + SHORT_TERMS * q + slot[sel]] = stored[e[sel]]
                rec[sel, REC_CIDS + SHORT_TERMS * q + slot[sel]] = cids[e[sel]]
    rec[:, 1] = steps[:, 3]
    rec[:, 0] = op | others[:, 0] << 8 | others[:, 1] << 12 | others[:, 2] << 16 | 1 << 24
    rec[~short] = 0
    return rec


@dataclass(eq=False)
class DeviceWitnessProgram:
    """A program and its circuit on the device: `pce` (coefficients, wire table, A, B, C), the hint
    sides and the program's arrays (`arrays`: kept alive for `args`, the kernels' struct holding
    their addresses); on the host, the run table and the levels with their long steps' ends (for
    per-level launches)."""

    pce: pce_cuda.DevicePce
    hints: tuple[tuple[Any, ...], tuple[Any, ...]]
    arrays: tuple[Any, ...]
    args: np.ndarray
    runs: np.ndarray
    prog_levels: np.ndarray
    levels: np.ndarray
    long_end: np.ndarray
    ncols: int


def program_bytes(program) -> int:
    """Device bytes upload_program adds next to the circuit's own arrays (DevicePce): the hint sides,
    the program's arrays, the run table and each level's end of long steps."""
    hints = sum(getattr(m, name).nbytes for m in (program.hl, program.hr) for name in MATRIX_ARRAYS)
    own = sum(x.nbytes for x in (program.steps, program.levels, program.prog_levels, program.inv, program.coeff_log2))
    own += (24 + 4 * REC_WORDS) * program.steps.shape[0]  # heads, step records
    return hints + own + program.levels.nbytes + 8 * len(RUN_FIELDS) * 64


def upload_program(pce, program, dev_pce: pce_cuda.DevicePce | None = None) -> DeviceWitnessProgram:
    """The program's and circuit's arrays copied to the current device (the circuit's from `dev_pce`
    when given, e.g. the backend's resident one). InputError for an array dtype the kernels do not read."""
    cp = cupy()
    bits = [pce_cuda.widths(pce, m) for m in (pce.a, pce.b, pce.c, program.hl, program.hr)]
    dev_pce = pce_cuda.upload(pce) if dev_pce is None else dev_pce
    hints = tuple(tuple(cp.asarray(np.ascontiguousarray(getattr(m, name), np.int64 if name == "plain_indptr" else None))
                        for name in MATRIX_ARRAYS) for m in (program.hl, program.hr))
    table = runs(pce, program)
    if program.coeff_log2.dtype != np.int16 or program.coeff_log2.shape != (pce.coeffs.shape[0],):
        raise InputError("witness program: coeff_log2 must be (ncoeff,) int16")
    for name in ("prog_levels", "levels", "steps"):
        if getattr(program, name).dtype != np.int64:
            raise InputError(f"witness program: {name} must be int64, got {getattr(program, name).dtype}")
    steps, heads, long_end = ordered_steps(pce, program)
    host = {"runs": table, "prog_levels": program.prog_levels, "levels": program.levels, "long_end": long_end,
            "steps": steps, "heads": heads, "inv": program.inv, "coeff_log2": program.coeff_log2}
    records = step_records(pce, program, steps, heads)
    if records is not None:
        host["records"] = records
    arrays = {name: cp.asarray(np.ascontiguousarray(arr)) for name, arr in host.items()}
    arrays["coeffs"], arrays["wire_cols"] = dev_pce.coeffs, dev_pce.wire_cols
    args = np.zeros(1, PROGRAM_STRUCT)
    for m, mat, width in zip(PROGRAM_MATRICES, (*dev_pce.matrices, *hints), bits):
        for name, x in zip(MATRIX_ARRAYS, mat):
            args[f"{m}_{name}"] = x.data.ptr
        args[f"{m}_widths"] = width
    for name, _, _ in PROGRAM_ARRAYS:
        args[name] = arrays[name].data.ptr if name in arrays else 0  # no records: null
    return DeviceWitnessProgram(dev_pce, hints, tuple(arrays.values()), args, table, program.prog_levels,
                                program.levels, long_end, pce.num_inputs + pce.num_aux)


def run_device(dev: DeviceWitnessProgram, w, partitions: int, cooperative: bool = True,
               grid: int | None = None) -> None:
    """Run the program in place on w, a C-contiguous cupy (partitions, ncols, 4) uint64 array on the
    current device whose inputs and free values are set: the plain program, then each block's
    instances. SynthesisError when a decomposition does not fit its value. `grid` caps the
    cooperative launch's blocks (default: all that can be resident)."""
    cp = cupy()
    if not isinstance(w, cp.ndarray) or w.shape != (partitions, dev.ncols, 4) or w.dtype != cp.uint64 \
            or not w.flags.c_contiguous:
        raise InputError(f"witness program: w must be a C-contiguous cupy ({partitions}, {dev.ncols}, 4) uint64 array")
    error = cp.zeros(1, cp.int32)
    tail = (np.uint64(dev.ncols), np.uint32(partitions), error)
    if cooperative:
        kernel = loader.function("witness_program").kernel
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.ptr, THREADS, 0)
        resident = per_sm * info(cp.cuda.Device().id).sm_count
        grid = min(grid or resident, resident)
        barrier = cp.zeros(1, cp.uint32)
        kernel((grid,), (THREADS,), (dev.args, np.uint32(0), np.uint32(len(dev.runs)), w, *tail, barrier),
               enable_cooperative_groups=True)
    else:
        kernel = loader.function("witness_level")
        for r, (t, k) in enumerate(dev.runs[:, :2].tolist()):
            for level in range(int(dev.prog_levels[t]), int(dev.prog_levels[t + 1])):
                s0, s1, s2 = int(dev.levels[level]), int(dev.long_end[level]), int(dev.levels[level + 1])
                threads = (32 * (s1 - s0) + s2 - s1) * max(k, 1) * partitions
                kernel((-(-threads // THREADS),), (THREADS,), (dev.args, np.uint32(r), np.uint64(level), w, *tail))
    if int(error.get()[0]):
        raise SynthesisError("witness program: a decomposition does not fit its value: the inputs are inconsistent")


def run(pce, program, w_host: np.ndarray, cooperative: bool = True) -> np.ndarray:
    """The program run on a copy of w_host ((P, ncols, 4) or one (ncols, 4) uint64 Montgomery
    witness, inputs and free values set) on the current device: the completed witness, same shape."""
    ws = w_host[None] if w_host.ndim == 2 else w_host
    if ws.ndim != 3 or ws.dtype != np.uint64:
        raise InputError("witness program: w must be a (P, ncols, 4) or (ncols, 4) uint64 array")
    cp = cupy()
    w = cp.asarray(np.ascontiguousarray(ws))
    run_device(upload_program(pce, program), w, ws.shape[0], cooperative)
    out = cp.asnumpy(w)
    return out[0] if w_host.ndim == 2 else out
