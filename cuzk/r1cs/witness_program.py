"""The witness program: every aux value of a circuit computed from its public inputs and a few free
values by solving the circuit's own rows, in an order fixed once per circuit (the GPU witness path,
and the fast CPU one).

The gadget code stays the single source of truth: the program is derived from the rows it records
(the PCE) and from its *hints*, equalities a gadget knows but packs away (`ConstraintSystem.hint`:
each sum MultiEq packs into a shared row). One step solves one row or hint:
    SOLVE_C  A.w * B.w = C.w, one unknown term u in C:        u = (A.w B.w - C'.w) / c_u
    SOLVE_A  one unknown term u in A, B a constant beta:       u = (C.w - beta A'.w) / (beta a_u)
    SOLVE_B  the same with A and B swapped
    DEC_A    A = alpha + sum_j 2^e_j u_j, B = beta: v = C.w / beta - alpha as an integer in [0, r),
             u_j = bit e_j of v; the targets u_j are A's terms with a coefficient 2^e (not ONE), with
             distinct e_j, some unknown; alpha is A's other terms, all known
    DEC_C    C = gamma + sum_j 2^e_j u_j:                       v = A.w B.w - gamma
    DEC_H    a hint lhs = gamma + sum_j 2^e_j u_j:               v = lhs.w - gamma
(primes: the row without the unknown term; a decomposition must reproduce v exactly, else the
inputs are inconsistent). When no rule applies, the lowest-index aux variable still unknown is *free*:
its value comes with the inputs. Gadgets compute each value from values allocated before it, so the
free variables are exactly the external data (for PoRep: data leaves, Merkle siblings, column labels,
comm_c, comm_r_last) in allocation order.

The solver's steps are then re-levelled (_relevel): each as late as possible before its readers, and
a step with a row longer than LONG_ROW terms onto a level that already holds one, since on a GPU such
a step costs a level its slowest kind of item and a level costs about its slowest item.

Arrays of a WitnessProgram (steps sorted by level; a level's steps only read earlier levels):
    steps        (nsteps, 4) int64   op, row, term, inv: row a constraint row (or hint row for DEC_H)
                                     numbered as the PCE numbers template / plain rows; term the
                                     absolute index of the unknown term (SOLVE_*); inv an index into inv
    levels       (nlevels + 1,)      level L is steps[levels[L]:levels[L + 1]]
    prog_levels  (ntpl + 2,)         template t's program: levels prog_levels[t]..[t + 1]; the last,
                                     t = ntpl, is the plain program, which runs first
    inv          (ninv, 4) uint64    Montgomery constants 1 / c
    coeff_log2   (ncoeff,) int16     e where the PCE coefficient is 2^e, else -1
    hl, hr       PceMatrix           hint sides over hint rows (template hint rows numbered over all
                                     templates, tpl_hints giving template t's; plain hint rows after)
    free_tpl_ptr, free_tpl           template t's free aux (template-local indices), in order
    free_plain   (nfree,)            the plain program's free columns, in order
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numba import njit

from cuzk.backend import get_backend
from cuzk.backend.base import DEC_A, DEC_C, DEC_H, SOLVE_A, SOLVE_B, SOLVE_C, WITNESS_OPS
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.r1cs.lc import R
from cuzk.r1cs.pce import PCE, VAR_AUX, PceMatrix, flat_arrays, pce_matrix, split_chunks

_KNOWN, _NEVER, _ONE = -1, -2, -3  # term codes of the solver besides unknown ids >= 0
LONG_ROW = 16  # a row longer than this makes a slow level on a GPU (cuzk.backend.cuda.witness.LONG_TERMS)


@dataclass(frozen=True)
class WitnessProgram:
    """See the module docstring."""

    steps: np.ndarray
    levels: np.ndarray
    prog_levels: np.ndarray
    inv: np.ndarray
    coeff_log2: np.ndarray
    hl: PceMatrix
    hr: PceMatrix
    tpl_hints: np.ndarray
    free_tpl_ptr: np.ndarray
    free_tpl: np.ndarray
    free_plain: np.ndarray

    def to_arrays(self) -> dict[str, np.ndarray]:
        return flat_arrays(self, fields(self))

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> WitnessProgram:
        want = {f"{f.name}_{g.name}" if f.name in ("hl", "hr") else f.name
                for f in fields(cls) for g in (fields(PceMatrix) if f.name in ("hl", "hr") else [None])}
        if set(arrays) != want:
            raise InputError(f"witness program arrays: missing {sorted(want - set(arrays))}, "
                             f"unknown {sorted(set(arrays) - want)}")
        kw = {}
        for f in fields(cls):
            if f.name in ("hl", "hr"):
                kw[f.name] = PceMatrix(**{g.name: arrays[f"{f.name}_{g.name}"] for g in fields(PceMatrix)})
            else:
                kw[f.name] = arrays[f.name]
        return cls(**kw)

    @property
    def num_free(self) -> tuple[int, int]:
        """(free values of the plain program, free values per instance summed over templates)."""
        return int(self.free_plain.shape[0]), int(self.free_tpl.shape[0])

    def stats(self) -> dict[str, int]:
        counts = np.bincount(self.steps[:, 0], minlength=len(WITNESS_OPS)) if self.steps.size else np.zeros(6, int)
        return {"steps": int(self.steps.shape[0]), "levels": int(self.levels.shape[0] - 1),
                **{name: int(n) for name, n in zip(WITNESS_OPS, counts)}}


# ---------------------------------------------------------------- building

def hint_matrices(cs, pce: PCE) -> tuple[PceMatrix, PceMatrix, np.ndarray]:
    """The hints of a recorded system in the PCE's template form: (hl, hr, tpl_hints), hint template
    t belonging to constraint template t (the system must be the one `pce` was built from)."""
    hint_rows = cs.hint_recording()
    ni = pce.num_inputs
    id_type = pce.a.tpl_cids.dtype
    tpls, plains, blocks, _, _ = split_chunks([r.chunks for r in hint_rows], ni, id_type, cs.num_hints)
    if len(blocks) != pce.blocks.shape[0]:
        raise InputError("the hints and the PCE disagree on the batch blocks")
    ntpl = pce.tpl_rows.shape[0] - 1
    of_tpl = np.full(ntpl, -1, np.int64)
    for b, hblock in enumerate(blocks):
        t = int(pce.blocks[b, 0])
        if of_tpl[t] not in (-1, hblock[0]):
            raise InputError(f"blocks of template {t} record different hints")
        of_tpl[t] = hblock[0]
    order = [int(h) for h in of_tpl]
    col_type = pce.a.plain_cols.dtype
    mats = [pce_matrix([tpls[s][h] for h in order], plains[s], col_type, id_type) for s in (0, 1)]
    tpl_hints = np.zeros(ntpl + 1, np.int64)
    np.cumsum([len(tpls[0][h][0]) for h in order], out=tpl_hints[1:])
    return mats[0], mats[1], tpl_hints


def coeff_log2(pce: PCE) -> np.ndarray:
    """(ncoeff,) int16: e where coefficient = 2^e, else -1."""
    out = np.full(pce.coeffs.shape[0], -1, np.int16)
    for i, v in enumerate(Fr.to_ints(pce.coeffs)):
        if v & (v - 1) == 0:
            out[i] = v.bit_length() - 1
    return out


def compile_program(pce: PCE, hints: tuple[PceMatrix, PceMatrix, np.ndarray]) -> WitnessProgram:
    """The witness program of a circuit (module docstring) from its PCE and `hint_matrices`."""
    hl, hr, tpl_hints = hints
    log2 = coeff_log2(pce)
    ntpl = pce.tpl_rows.shape[0] - 1
    progs, free_tpl = [], []
    for t in range(ntpl):
        r0, r1 = int(pce.tpl_rows[t]), int(pce.tpl_rows[t + 1])
        h0, h1 = int(tpl_hints[t]), int(tpl_hints[t + 1])
        naux = _template_aux(pce, t)
        sides = [_template_side(m, r0, r1) for m in (pce.a, pce.b, pce.c)] + \
                [_template_side(m, h0, h1) for m in (hl, hr)]
        steps, free = _run_solver(sides, naux, log2)
        steps[:, 1] += np.where(steps[:, 0] == DEC_H, h0, r0)
        progs.append(steps)
        free_tpl.append(free)
    plain_sides, top_aux = _plain_sides(pce, (pce.a, pce.b, pce.c, hl, hr))
    steps, free = _run_solver(plain_sides, top_aux.shape[0], log2)
    progs.append(steps)
    free_plain = pce.num_inputs + top_aux[free] if free.size else np.zeros(0, np.int64)
    return _assemble(pce, progs, free_tpl, free_plain, log2, hl, hr, tpl_hints)


def _template_aux(pce: PCE, t: int) -> int:
    rows = np.flatnonzero(pce.blocks[:, 0] == t)
    return int(pce.blocks[rows[0], 4]) if rows.size else 0


def _template_side(m: PceMatrix, r0: int, r1: int):
    """(ptr, codes, cids, first term) of template rows r0..r1: codes unknown aux index, _ONE, _KNOWN."""
    ptr = m.tpl_indptr[r0:r1 + 1].astype(np.int64)
    e0, e1 = int(ptr[0]), int(ptr[-1])
    var = m.tpl_vars[e0:e1].astype(np.int64)
    codes = np.where((var & 3) == VAR_AUX, var >> 2, np.where(var == 0, _ONE, _KNOWN))
    return ptr - e0, codes, m.tpl_cids[e0:e1].astype(np.int64), e0


def _plain_sides(pce: PCE, mats):
    """The plain rows as solver sides over the top-level aux (columns outside every block); a block's
    aux can never be solved here (its program runs later)."""
    ni, ncols = pce.num_inputs, pce.num_inputs + pce.num_aux
    in_block = np.zeros(pce.num_aux, bool)
    for blk in pce.blocks:
        in_block[blk[3] - ni:blk[3] - ni + blk[1] * blk[4]] = True
    top_aux = np.flatnonzero(~in_block)
    sides = []
    for m in mats:
        cols = m.plain_cols.astype(np.int64)
        idx = np.searchsorted(top_aux, cols - ni)
        is_top = (cols >= ni) & (idx < top_aux.shape[0]) & (top_aux[np.minimum(idx, max(top_aux.shape[0] - 1, 0))]
                                                            == cols - ni) if top_aux.size else np.zeros(cols.shape, bool)
        codes = np.where(cols == 0, _ONE, np.where(cols < ni, _KNOWN, np.where(is_top, idx, _NEVER)))
        if np.any((cols < 0) | (cols >= ncols)):
            raise InputError("plain rows name a column outside the circuit")
        sides.append((m.plain_indptr.astype(np.int64), codes, m.plain_cids.astype(np.int64), 0))
    return sides, top_aux


def _run_solver(sides, naux: int, log2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(steps (n, 6): op, local row, absolute term, cid1, cid2, level; free local aux in order)."""
    args = []
    for ptr, codes, cids, _ in sides:
        args += [ptr, codes, cids]
    steps, nsteps, free, nfree = _solve(*args, naux, log2)
    steps = steps[:nsteps]
    steps[:, 5] = _relevel(steps, *args, free[:nfree], naux, log2, LONG_ROW)
    solve = steps[:, 0] <= SOLVE_B
    side_of = np.select([steps[:, 0] == SOLVE_C, steps[:, 0] == SOLVE_A], [2, 0], 1)
    for s in range(3):
        steps[solve & (side_of == s), 2] += sides[s][3]
    return steps, free[:nfree]


def _assemble(pce, progs, free_tpl, free_plain, log2, hl, hr, tpl_hints) -> WitnessProgram:
    coeffs = Fr.to_ints(pce.coeffs)
    inv_ids: dict[int, int] = {}
    all_steps, levels, prog_levels = [], [0], [0]
    for steps in progs:
        prod = [coeffs[a] * coeffs[b] % R for a, b in steps[:, 3:5].tolist()]
        ids = np.array([inv_ids.setdefault(v, len(inv_ids)) for v in prod], np.int64)
        order = np.argsort(steps[:, 5], kind="stable")
        steps = steps[order]
        ids = ids[order]
        nlev = int(steps[:, 5].max()) + 1 if steps.size else 0
        counts = np.bincount(steps[:, 5], minlength=nlev) if steps.size else np.zeros(0, np.int64)
        base = levels[-1]
        levels += (base + np.cumsum(counts)).tolist()
        prog_levels.append(len(levels) - 1)
        all_steps.append(np.stack([steps[:, 0], steps[:, 1], steps[:, 2], ids], axis=1))
    inv = Fr.from_ints([pow(v, -1, R) for v in inv_ids]) if inv_ids else np.zeros((0, 4), np.uint64)
    free_ptr = np.zeros(len(free_tpl) + 1, np.int64)
    np.cumsum([f.shape[0] for f in free_tpl], out=free_ptr[1:])
    return WitnessProgram(np.concatenate(all_steps).astype(np.int64).reshape(-1, 4), np.array(levels, np.int64),
                          np.array(prog_levels, np.int64), inv, log2, hl, hr, tpl_hints, free_ptr,
                          np.concatenate([np.zeros(0, np.int64)] + list(free_tpl)).astype(np.int64),
                          np.asarray(free_plain, np.int64))


# ---------------------------------------------------------------- the solver

@njit(cache=True)
def _dec_pattern(ptr, codes, cids, r, log2, known):
    """Whether row r can be decomposed: its targets (non-ONE terms with a coefficient 2^e) variables
    with distinct exponents, some unknown, every other term known; and the number of unknown targets.
    (A target may already be known, solved backwards from a later value: the step rewrites it.)"""
    seen = np.zeros(4, np.uint64)
    n = 0
    for e in range(ptr[r], ptr[r + 1]):
        c = codes[e]
        if c == _ONE:
            continue
        unknown = c == _NEVER or (c >= 0 and not known[c])
        if log2[cids[e]] < 0:
            if unknown:
                return False, 0
            continue
        if c < 0:
            return False, 0
        x = log2[cids[e]]
        bit = np.uint64(1) << np.uint64(x & 63)
        if seen[x >> 6] & bit:
            return False, 0
        seen[x >> 6] |= bit
        n += unknown
    return n > 0, n


@njit(cache=True)
def _unknown_terms(ptr, codes, r, known, targets):
    """Row r's variables not known yet, written into targets; how many."""
    n = 0
    for e in range(ptr[r], ptr[r + 1]):
        if codes[e] >= 0 and not known[codes[e]]:
            targets[n] = codes[e]
            n += 1
    return n


@njit(cache=True)
def _one_cid(ptr, codes, cids, r):
    """The coefficient id of a row that is exactly one ONE term, else -1."""
    if ptr[r + 1] - ptr[r] == 1 and codes[ptr[r]] == _ONE:
        return cids[ptr[r]]
    return -1


@njit(cache=True)
def _solve(pa, ca, ia, pb, cb, ib, pc, cc, ic, pl, cl, il, pr, cr, ir, naux, log2):
    nrow, nhint = pa.shape[0] - 1, pl.shape[0] - 1
    nitem = nrow + nhint
    ptrs = (pa, pb, pc, pl, pr)
    cods = (ca, cb, cc, cl, cr)
    # incidence: unknown var -> (item * 3 + side slot) per term
    deg = np.zeros(naux + 1, np.int64)
    for s in range(5):
        c = cods[s]
        for e in range(c.shape[0]):
            if c[e] >= 0:
                deg[c[e] + 1] += 1
    inc_ptr = np.cumsum(deg)
    inc = np.empty(inc_ptr[-1], np.int64)
    fill = inc_ptr[:-1].copy()
    nu = np.zeros((nitem, 3), np.int64)
    for s in range(5):
        p, c = ptrs[s], cods[s]
        base, slot = (0, s) if s < 3 else (nrow, s - 3)
        for r in range(p.shape[0] - 1):
            for e in range(p[r], p[r + 1]):
                if c[e] >= 0:
                    inc[fill[c[e]]] = (base + r) * 3 + slot
                    fill[c[e]] += 1
                if c[e] >= 0 or c[e] == _NEVER:
                    nu[base + r, slot] += 1
    known = np.zeros(naux, np.bool_)
    level = np.full(naux, -1, np.int64)
    done = np.zeros(nitem, np.bool_)
    queued = np.ones(nitem, np.bool_)
    stack = np.empty(nitem + naux * 3 + 1, np.int64)
    top = nitem
    for i in range(nitem):
        stack[i] = nitem - 1 - i
    steps = np.empty((naux, 6), np.int64)
    nsteps = 0
    free = np.empty(naux, np.int64)
    nfree = 0
    nknown = 0
    next_free = 0
    targets = np.empty(naux + 1, np.int64)
    while nknown < naux:
        while top > 0:
            top -= 1
            item = stack[top]
            queued[item] = False
            if done[item]:
                continue
            op, row, term, cid1, cid2 = -1, 0, 0, 0, 0
            nt = 0
            if item < nrow:
                r = item
                a, b, c = nu[r, 0], nu[r, 1], nu[r, 2]
                if a + b + c == 0:
                    done[r] = True
                    continue
                bconst, aconst = _one_cid(pb, cb, ib, r), _one_cid(pa, ca, ia, r)
                if a == 0 and b == 0 and c == 1:
                    for e in range(pc[r], pc[r + 1]):
                        if cc[e] >= 0 and not known[cc[e]]:
                            op, term, cid2, targets[0], nt = SOLVE_C, e, ic[e], cc[e], 1
                elif b == 0 and c == 0 and a == 1 and bconst >= 0:
                    for e in range(pa[r], pa[r + 1]):
                        if ca[e] >= 0 and not known[ca[e]]:
                            op, term, cid1, cid2, targets[0], nt = SOLVE_A, e, bconst, ia[e], ca[e], 1
                elif a == 0 and c == 0 and b == 1 and aconst >= 0:
                    for e in range(pb[r], pb[r + 1]):
                        if cb[e] >= 0 and not known[cb[e]]:
                            op, term, cid1, cid2, targets[0], nt = SOLVE_B, e, aconst, ib[e], cb[e], 1
                elif b == 0 and c == 0 and bconst >= 0:
                    ok, n = _dec_pattern(pa, ca, ia, r, log2, known)
                    if ok and n == a:
                        op, cid1, nt = DEC_A, bconst, _unknown_terms(pa, ca, r, known, targets)
                elif a == 0 and b == 0:
                    ok, n = _dec_pattern(pc, cc, ic, r, log2, known)
                    if ok and n == c:
                        op, nt = DEC_C, _unknown_terms(pc, cc, r, known, targets)
                row = r
            else:
                h = item - nrow
                lft, rgt = nu[item, 0], nu[item, 1]
                if lft + rgt == 0:
                    done[item] = True
                    continue
                if lft == 0:
                    ok, n = _dec_pattern(pr, cr, ir, h, log2, known)
                    if ok and n == rgt:
                        op, row, nt = DEC_H, h, _unknown_terms(pr, cr, h, known, targets)
            if op < 0:
                continue
            # the step's level: one past the latest value it reads
            lev = -1
            s_lo, s_hi = (0, 3) if item < nrow else (3, 5)
            for s in range(s_lo, s_hi):
                p, cd = ptrs[s], cods[s]
                for e in range(p[row], p[row + 1]):
                    v = cd[e]
                    if v >= 0 and known[v] and level[v] > lev:
                        lev = level[v]
            lev += 1
            steps[nsteps, 0], steps[nsteps, 1], steps[nsteps, 2] = op, row, term
            steps[nsteps, 3], steps[nsteps, 4], steps[nsteps, 5] = cid1, cid2, lev
            nsteps += 1
            done[item] = True
            for j in range(nt):
                level[targets[j]] = lev
                top = _learn(targets[j], known, inc_ptr, inc, nu, queued, done, stack, top)
            nknown += nt
        if nknown == naux:
            break
        while known[next_free]:
            next_free += 1
        free[nfree] = next_free
        nfree += 1
        nknown += 1
        top = _learn(next_free, known, inc_ptr, inc, nu, queued, done, stack, top)
    return steps, nsteps, free, nfree


@njit(cache=True)
def _relevel(steps, pa, ca, ia, pb, cb, ib, pc, cc, ic, pl, cl, il, pr, cr, ir, free, naux, log2, long_row):
    """New levels for the solver's steps (solve order, ASAP levels steps[:, 5]), with the same
    dependencies: a step reads the variables of its rows (hint sides for DEC_H) that earlier steps
    produced, except its own targets. Walking down from the last level, each step goes to the latest
    level before every step that reads it (as late as possible); a step with a row longer than
    `long_row` terms (on a GPU: a warp per item, the slowest kind of level) goes to the latest such
    level that already holds a long step, if one lies in its range, so that long steps share levels
    rather than each making one slow. Levels left empty are dropped. A decomposition target already
    known (a rewrite of the same value) keeps its first producer, so the rewrite is not ordered
    against its readers."""
    n = steps.shape[0]
    if n == 0:
        return steps[:, 5].copy()
    ptrs = (pa, pb, pc, pl, pr)
    cods = (ca, cb, cc, cl, cr)
    cidss = (ia, ib, ic, il, ir)
    producer = np.full(naux, -1, np.int64)
    for v in free:
        producer[v] = -2
    islong = np.zeros(n, np.bool_)
    for s in range(n):
        op, row, term = steps[s, 0], steps[s, 1], steps[s, 2]
        lo = 3 if op == DEC_H else 0
        for q in range(lo, lo + 3 if lo == 0 else 5):
            if ptrs[q][row + 1] - ptrs[q][row] > long_row:
                islong[s] = True
        if op == SOLVE_C or op == SOLVE_A or op == SOLVE_B:
            side = 2 if op == SOLVE_C else 0 if op == SOLVE_A else 1
            producer[cods[side][term]] = s
        else:
            side = 0 if op == DEC_A else 2 if op == DEC_C else 4
            p, cd, ci = ptrs[side], cods[side], cidss[side]
            for e in range(p[row], p[row + 1]):
                if cd[e] >= 0 and log2[ci[e]] >= 0 and producer[cd[e]] == -1:
                    producer[cd[e]] = s
    asap = steps[:, 5]
    depth = asap.max() + 1
    deadline = np.full(n, depth - 1, np.int64)
    longlev = np.zeros(depth, np.bool_)
    new = np.empty(n, np.int64)
    for s in np.argsort(-asap, kind="mergesort"):
        hi, lo = deadline[s], asap[s]
        level = hi
        if islong[s]:
            while level >= lo and not longlev[level]:
                level -= 1
            if level < lo:
                level = hi
                longlev[level] = True
        new[s] = level
        op, row = steps[s, 0], steps[s, 1]
        first = 3 if op == DEC_H else 0
        dec = 0 if op == DEC_A else 2 if op == DEC_C else 4 if op == DEC_H else -1
        for q in range(first, first + 3 if first == 0 else 5):
            p, cd, ci = ptrs[q], cods[q], cidss[q]
            for e in range(p[row], p[row + 1]):
                v = cd[e]
                if v < 0 or (q == dec and log2[ci[e]] >= 0):
                    continue
                d = producer[v]
                if d >= 0 and d != s and deadline[d] > level - 1:
                    deadline[d] = level - 1
    used = np.zeros(depth + 1, np.int64)
    for s in range(n):
        used[new[s] + 1] = 1
    rank = np.cumsum(used)
    for s in range(n):
        new[s] = rank[new[s]]
    return new


@njit(cache=True)
def _learn(v, known, inc_ptr, inc, nu, queued, done, stack, top):
    """Mark variable v known: one unknown term fewer in every row and hint naming it, each pushed for
    another look; the new stack top."""
    known[v] = True
    for x in range(inc_ptr[v], inc_ptr[v + 1]):
        it, slot = inc[x] // 3, inc[x] % 3
        nu[it, slot] -= 1
        if not queued[it] and not done[it]:
            queued[it] = True
            stack[top] = it
            top += 1
    return top


def seed(pce: PCE, program: WitnessProgram, inputs: np.ndarray, plain_free: np.ndarray,
         block_free: list[np.ndarray]) -> np.ndarray:
    """A (P, ncols, 4) witness holding only what the program starts from: the inputs ((P, num_inputs, 4),
    ONE first), the plain program's free values ((P, nfree, 4)) and per block its instances' free values
    ((P, k, nfree of its template, 4)); zeros elsewhere."""
    P, ni = inputs.shape[0], pce.num_inputs
    if inputs.shape[1:] != (ni, 4) or plain_free.shape != (P, program.free_plain.shape[0], 4) \
            or len(block_free) != pce.blocks.shape[0]:
        raise InputError("witness program: inputs or free values do not match the circuit")
    w = np.zeros((P, ni + pce.num_aux, 4), np.uint64)
    w[:, :ni] = inputs
    w[:, program.free_plain] = plain_free
    for blk, vals in zip(pce.blocks, block_free):
        t, k, aux_col, aux_per = int(blk[0]), int(blk[1]), int(blk[3]), int(blk[4])
        free = program.free_tpl[program.free_tpl_ptr[t]:program.free_tpl_ptr[t + 1]]
        if vals.shape != (P, k, free.shape[0], 4):
            raise InputError(f"witness program: a block needs ({P}, {k}, {free.shape[0]}, 4) free values, got {vals.shape}")
        cols = aux_col + np.arange(k)[:, None] * aux_per + free[None, :]
        w[:, cols] = vals
    return w


def run_cpu(pce: PCE, program: WitnessProgram, w: np.ndarray) -> None:
    """Run the program in place on w ((P, ncols, 4) uint64 Montgomery, or one (ncols, 4) witness) whose
    inputs and free values are set, on all CPU cores (the CPU backend's run_witness_program).
    SynthesisError when a decomposition does not reproduce its value (inconsistent inputs)."""
    get_backend("cpu").run_witness_program(pce, program, w[None] if w.ndim == 2 else w)
