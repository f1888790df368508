"""The witness program on the CPU (cuzk.r1cs.witness_program; ops cuzk.backend.base.WITNESS_OPS): one
job per (partition, block instance), all cores, each running its template's steps in order (steps
are sorted by level, a topological order), the plain program first, then each block's instances in
block order (a block may read an earlier block's values, as a SnapDeals apex tree's levels do; the GPU
runs them in the same order, cuzk.backend.cuda.witness). With X.w = sum_e c_e w[col_e]
over a row of X and X' that row without the step's unknown term:
    SOLVE_C  u = (A.w B.w - C'.w) inv     DEC_A  v = C.w inv - A0   (A0: A's non-target terms)
    SOLVE_A  u = (C.w - B.w A'.w) inv     DEC_C  v = A.w B.w - C0
    SOLVE_B  u = (C.w - A.w B'.w) inv     DEC_H  v = HL.w - HR0
and a decomposition writes bit e of the integer v into each target (a term off the ONE column with
coefficient 2^e), counting a value with bits no target takes.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.backend.base import DEC_A, DEC_C, DEC_H, SOLVE_A, SOLVE_C, check_program_witness
from cuzk.backend.cpu.pce import add_term
from cuzk.errors import SynthesisError
from cuzk.ff import limbs


@njit(inline="always")
def _col(v, aux0, in0, wire_off, k, i, wire_cols):
    kind, index = v & 3, v >> 2
    if kind == 0:
        return index
    if kind == 1:
        return aux0 + index
    if kind == 2:
        return in0 + index
    return np.int64(wire_cols[wire_off + index * k + i])


@njit(inline="always")
def _lc(ptr, vars_, cids, row, skip, known_only, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2):
    """sum of a row's terms but term `skip`; with known_only, only the terms a decomposition does not
    target (column 0, or a coefficient that is not 2^e)."""
    acc = limbs.FR_ZERO
    for e in range(ptr[row], ptr[row + 1]):
        if e == skip:
            continue
        col = np.int64(vars_[e]) if plain else _col(np.int64(vars_[e]), aux0, in0, wire_off, k, i, wire_cols)
        if known_only and col != 0 and log2[cids[e]] >= 0:
            continue
        acc = add_term(acc, limbs.fr_load(w[col]), cids[e], coeffs)
    return acc


@njit(inline="always")
def _bits(ptr, vars_, cids, row, v, plain, aux0, in0, wire_off, k, i, wire_cols, log2, w):
    """Write bit e of the canonical v into the column of every target term (coefficient 2^e, not column 0);
    False when v has a bit no target takes."""
    c = limbs.fr_from_mont(v)
    rest = np.array([c[0], c[1], c[2], c[3]], np.uint64)
    for e in range(ptr[row], ptr[row + 1]):
        col = np.int64(vars_[e]) if plain else _col(np.int64(vars_[e]), aux0, in0, wire_off, k, i, wire_cols)
        x = np.int64(log2[cids[e]])
        if col == 0 or x < 0:
            continue
        bit = (rest[x >> 6] >> np.uint64(x & 63)) & np.uint64(1)
        rest[x >> 6] &= ~(np.uint64(1) << np.uint64(x & 63))
        limbs.fr_store(w[col], limbs.FR_ONE if bit else limbs.FR_ZERO)
    return rest[0] == 0 and rest[1] == 0 and rest[2] == 0 and rest[3] == 0


@njit(cache=True)
def _exec(s0, s1, steps, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, inv, log2, mats, w):
    """Steps s0..s1 for one instance (or the plain program) of one partition's witness w; the number of
    decompositions that did not fit."""
    pa, va, ia, pb, vb, ib, pc, vc, ic, pl, vl, il, pr, vr, ir = mats
    bad = 0
    for s in range(s0, s1):
        op, row, term = steps[s, 0], steps[s, 1], steps[s, 2]
        factor = limbs.fr_load(inv[steps[s, 3]])
        if op == DEC_H:
            v = limbs.fr_sub(_lc(pl, vl, il, row, -1, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2),
                             _lc(pr, vr, ir, row, -1, True, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2))
            bad += not _bits(pr, vr, ir, row, v, plain, aux0, in0, wire_off, k, i, wire_cols, log2, w)
            continue
        if op == SOLVE_C or op == DEC_C:
            ab = limbs.fr_mul(_lc(pa, va, ia, row, -1, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2),
                              _lc(pb, vb, ib, row, -1, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2))
            if op == SOLVE_C:
                rest = _lc(pc, vc, ic, row, term, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2)
                val = limbs.fr_mul(limbs.fr_sub(ab, rest), factor)
                col = np.int64(vc[term]) if plain else _col(np.int64(vc[term]), aux0, in0, wire_off, k, i, wire_cols)
                limbs.fr_store(w[col], val)
            else:
                v = limbs.fr_sub(ab, _lc(pc, vc, ic, row, -1, True, plain, aux0, in0, wire_off, k, i, wire_cols,
                                         coeffs, w, log2))
                bad += not _bits(pc, vc, ic, row, v, plain, aux0, in0, wire_off, k, i, wire_cols, log2, w)
            continue
        cval = _lc(pc, vc, ic, row, -1, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2)
        if op == DEC_A:
            v = limbs.fr_sub(limbs.fr_mul(cval, factor),
                             _lc(pa, va, ia, row, -1, True, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2))
            bad += not _bits(pa, va, ia, row, v, plain, aux0, in0, wire_off, k, i, wire_cols, log2, w)
        elif op == SOLVE_A:
            other = _lc(pb, vb, ib, row, -1, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2)
            rest = _lc(pa, va, ia, row, term, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2)
            val = limbs.fr_mul(limbs.fr_sub(cval, limbs.fr_mul(other, rest)), factor)
            col = np.int64(va[term]) if plain else _col(np.int64(va[term]), aux0, in0, wire_off, k, i, wire_cols)
            limbs.fr_store(w[col], val)
        else:  # SOLVE_B
            other = _lc(pa, va, ia, row, -1, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2)
            rest = _lc(pb, vb, ib, row, term, False, plain, aux0, in0, wire_off, k, i, wire_cols, coeffs, w, log2)
            val = limbs.fr_mul(limbs.fr_sub(cval, limbs.fr_mul(other, rest)), factor)
            col = np.int64(vb[term]) if plain else _col(np.int64(vb[term]), aux0, in0, wire_off, k, i, wire_cols)
            limbs.fr_store(w[col], val)
    return bad


@njit(parallel=True, nogil=True, cache=True)
def _exec_jobs(jobs, levels, prog_levels, steps, blocks, wire_cols, coeffs, inv, log2, tmats, pmats, w, bad):
    """jobs (n, 3): (partition, block or -1 for the plain program, instance), in parallel, without the
    GIL (an engine's other threads, e.g. a GPU worker proving, run meanwhile)."""
    ntpl = prog_levels.shape[0] - 2
    for j in prange(jobs.shape[0]):
        p, b, i = jobs[j, 0], jobs[j, 1], jobs[j, 2]
        if b < 0:
            s0, s1 = levels[prog_levels[ntpl]], levels[prog_levels[ntpl + 1]]
            bad[j] = _exec(s0, s1, steps, True, 0, 0, 0, 0, 0, wire_cols, coeffs, inv, log2, pmats, w[p])
        else:
            t, k = blocks[b, 0], blocks[b, 1]
            s0, s1 = levels[prog_levels[t]], levels[prog_levels[t + 1]]
            aux0, in0 = blocks[b, 3] + i * blocks[b, 4], blocks[b, 5] + i * blocks[b, 6]
            bad[j] = _exec(s0, s1, steps, False, aux0, in0, blocks[b, 7], k, i, wire_cols, coeffs, inv, log2,
                           tmats, w[p])


def run_program(pce, program, w: np.ndarray) -> None:
    """Backend.run_witness_program on the CPU: w (P, ncols, 4) uint64, in place."""
    check_program_witness(pce, w)
    tmats = tuple(x for m in (pce.a, pce.b, pce.c, program.hl, program.hr)
                  for x in (m.tpl_indptr, m.tpl_vars, m.tpl_cids))
    pmats = tuple(x for m in (pce.a, pce.b, pce.c, program.hl, program.hr)
                  for x in (m.plain_indptr, m.plain_cols, m.plain_cids))
    P = w.shape[0]
    plain = np.stack([np.arange(P), np.full(P, -1), np.zeros(P, np.int64)], axis=1).astype(np.int64)
    # one block after the other, as the GPU runs them: a block may read an earlier one's values
    blocks = [np.array([(p, b, i) for p in range(P) for i in range(int(pce.blocks[b, 1]))], np.int64).reshape(-1, 3)
              for b in range(pce.blocks.shape[0])]
    for jobs in (plain, *blocks):
        bad = np.zeros(jobs.shape[0], np.int64)
        _exec_jobs(jobs, program.levels, program.prog_levels, program.steps, pce.blocks, pce.wire_cols, pce.coeffs,
                   program.inv, program.coeff_log2, tmats, pmats, w, bad)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise SynthesisError(f"witness program: {int(bad.sum())} decomposition(s) do not fit their value "
                                 f"(partition {jobs[j, 0]}, block {jobs[j, 1]}, instance {jobs[j, 2]}): "
                                 "the inputs are inconsistent")
