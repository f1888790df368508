"""Pippenger multi-scalar multiplication in G1 and G2 on the GPU: the plan (window bits c and table
multiples m, chosen by a cost model under a VRAM budget) and its kernel launches.

One MSM: signed c-bit digits of every scalar -> counting sort of (bucket, point) pairs -> bucket
sums (long buckets split into items of <= L points, partial sums reduced until one per bucket) ->
running-sum reduction of each bucket set -> Horner over the sets -> affine point.

A prepared table holds m precomputed multiples 2^(c*k) * P (k < m) of every base P, so m windows
share one bucket set: ceil(W / m) sets of 2^(c-1) buckets instead of W. Kernels (kernels/msm/:
scalars.cu, and pippenger.cuh built per group into precompute, accum and reduce modules, msm_g1_*.cu
and msm_g2_*.cu) come from cuzk.backend.cuda.loader on the current device. CuPy is
imported lazily: this module imports on machines without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from cuzk.backend.cuda import loader
from cuzk.backend.cuda.device import cupy
from cuzk.backend.cuda.layout import POINT_SHAPE, WORDS
from cuzk.backend.cuda.memory import VramBudget
from cuzk.backend.cuda.msm_stages import Stage, untimed
from cuzk.errors import InputError, VramBudgetError

__all__ = ["MsmInputError", "MsmBytes", "MsmPlan", "PreparedBases", "choose_plan", "msm_bytes", "pippenger",
           "plan_for", "scalar_mul_points", "streamed_plan", "to_numpy_points", "windows"]

_L0_MIN, _L0_MAX = 32, 256  # points per item when summing buckets, sized for about target_items items
_WAVES = 8  # bucket-sum items: about this many waves of one _THREADS-thread block per SM
_L1 = 16  # partial sums per item in later passes
_DENSE_MAX = 32  # at most this many partial sums per bucket: one thread per bucket
_FEW_KEYS = 1 << 12  # fewer keys than this: latency-bound, partial sums reduced with fan-in _L_FEW
_L_FEW = 4
# Reducing one bucket (partial sums + running sums) costs about this many mixed additions (fit to
# profiles of the MSM kernels, bench/MSM_NOTES.md: G2's full XYZZ add goes through local memory).
_BUCKET_COST = {"g1": 10, "g2": 14}
_THREADS = 256
_WINDOW_BITS = range(4, 24)
_INDEX_LIMIT = 1 << 31  # sorted entries hold (multiple * n + base) below the sign bit


class MsmInputError(InputError):
    """Bases or scalars of the wrong shape, dtype or length."""


def _kernel(name: str):
    return loader.function(name)


def _launch(name: str, n: int, *args: Any, threads: int = _THREADS) -> None:
    if n > 0:
        _kernel(name)(((n + threads - 1) // threads,), (threads,), args)


def windows(c: int) -> int:
    """Signed c-bit windows needed for scalars < r < 2^255."""
    return -(-256 // c)


def target_items(sm_count: int) -> int:
    """Items per bucket-sum launch that fill the device: _WAVES waves of _THREADS threads per SM."""
    return _WAVES * _THREADS * sm_count


# ---- the plan and its memory ------------------------------------------------------------------------
@dataclass(frozen=True)
class MsmBytes:
    """Device bytes of one MSM: the table, and the extra bytes while preparing it and while running."""

    table: int
    prepare: int
    run: int

    @property
    def peak(self) -> int:
        return self.table + max(self.prepare, self.run)


def msm_bytes(group: str, n: int, c: int, m: int, sparse: bool, items: int) -> MsmBytes:
    """Estimated peak device bytes of one MSM of n bases with window c and m table multiples.

    With A / X the bytes of an affine / XYZZ point (G1 96 / 192, G2 192 / 384), W = ceil(256 / c)
    windows, S = ceil(W / m) bucket sets, K = S 2^(c-1) bucket keys, E = W n + 1 sorted entries
    (a bound for sparse scalars too), L0 = clamp(E // items, 32, 256) points per item and
    I = ceil(E / L0) + K level-0 items:
        table   = m n A                           the resident bases and their multiples
        prepare = n A when m > 1, else 0          the uploaded bases, while the multiples are made
        run     = 32 n (+ 4 n sparse)             scalars (and the index lists of the 0/1 split)
                  + max(split, sort, items, reduce, buckets), the phases of `pippenger`:
          split   = 64 n (sparse only)            canonical copy, masks, nonzero scans and lists
          sort    = 4 E + 16 K                    sorted entries; counts, starts, cursor, cumsum
          items   = 4 E + 20 K + (X + 64) I       level-0 partial sums and their index arrays
          reduce  = X (I + I/3 + 4 K) + 16 I + 88 K   later levels of partial sums, bucket points
          buckets = X (K + K/2 + 2 S) + 8 K + 32 S    bucket points and running-sum partials
    The 64 bytes per item cover the item index arrays and CuPy's argsort; fan-in 4 or more makes
    the later levels at most I/3 + 3 K items. It ignores CuPy's pool rounding and fragmentation,
    which the budget's headroom (DEFAULT_FRACTION) absorbs.
    """
    a = 4 * WORDS[group]
    x = 2 * a
    w = windows(c)
    sets = -(-w // m)
    k = sets << (c - 1)
    e = w * n + 1
    l0 = min(_L0_MAX, max(_L0_MIN, e // items))
    i0 = -(-e // l0) + k
    phases = (
        64 * n if sparse else 0,
        4 * e + 16 * k,
        4 * e + 20 * k + (x + 64) * i0,
        x * (i0 + i0 // 3 + 4 * k) + 16 * i0 + 88 * k,
        x * (k + k // 2 + 2 * sets) + 8 * k + 32 * sets,
    )
    run = 32 * n + (4 * n if sparse else 0) + max(phases)
    return MsmBytes(table=m * n * a, prepare=n * a if m > 1 else 0, run=run)


@dataclass(frozen=True)
class MsmPlan:
    """One MSM's window bits c, table multiples, modelled cost (mixed additions) and memory."""

    group: str
    n: int
    c: int
    multiples: int
    sparse: bool
    cost: int
    bytes: MsmBytes

    @property
    def peak_bytes(self) -> int:
        return self.bytes.peak


def plan_for(group: str, n: int, c: int, m: int, sparse: bool, items: int) -> MsmPlan:
    """The plan of a given (c, m). Cost: W n bucket additions + _BUCKET_COST per bucket of the S sets."""
    sets = -(-windows(c) // m)
    cost = windows(c) * n + _BUCKET_COST[group] * sets * (1 << (c - 1))
    return MsmPlan(group, n, c, m, sparse, cost, msm_bytes(group, n, c, m, sparse, items))


def _candidates(group: str, n: int, sparse: bool, items: int, precompute: bool, max_multiples: int) -> list[MsmPlan]:
    """Every sensible (c, m): a top window of at least c/2 bits (a thinner one crowds about n entries
    into a few buckets), and per bucket-set count S only the smallest m giving it."""
    plans = []
    for c in _WINDOW_BITS:
        w = windows(c)
        if 2 * (256 - c * (w - 1)) < c:
            continue
        for m in range(1, min(w, max_multiples if precompute else 1) + 1):
            if m > 1 and -(-w // (m - 1)) == -(-w // m):
                continue
            if m * n < _INDEX_LIMIT:
                plans.append(plan_for(group, n, c, m, sparse, items))
    return plans


@lru_cache(maxsize=256)
def streamed_plan(group: str, n: int, items: int, sparse: bool = True) -> MsmPlan:
    """The cheapest one-multiple plan of n bases, whatever its memory: how a chunk of streamed bases
    (used as they arrive, no table made) is summed."""
    return choose_plan(group, n, VramBudget(1 << 62, "no limit"), items=items, sparse=sparse, precompute=False)


def least_run_bytes(group: str, n: int, items: int) -> int:
    """The working memory (msm_bytes' run) of the smallest one-multiple plan of an MSM of n bases with
    sparse scalars: what any MSM of that size needs beside its table."""
    return min(p.bytes.run for p in _candidates(group, n, True, items, False, 1))


def new_bytes(plan: MsmPlan, bases_held: bool) -> int:
    """The device bytes a plan adds at its peak: msm_bytes' peak, less the bases' own n A when they are
    on the device and counted already (then they are the table's first multiple or the source of its
    copy, and nothing is uploaded)."""
    if not bases_held:
        return plan.peak_bytes
    a = 4 * WORDS[plan.group] * plan.n
    return plan.bytes.table - a + max(plan.bytes.run, plan.bytes.prepare - a)


def choose_plan(group: str, n: int, budget: VramBudget, *, items: int, held: int = 0, sparse: bool = True,
                precompute: bool = True, max_multiples: int | None = None, bases_held: bool = False) -> MsmPlan:
    """The cheapest plan whose new bytes (new_bytes: the peak of msm_bytes, less the bases when
    `bases_held`) fit in the budget less `held` (bytes held beside it); ties go to the smaller peak.
    VramBudgetError, naming the smallest need of any plan, when none fits. max_multiples defaults to
    the kernels' PRE_MAX (loader.MAX_MULTIPLES)."""
    if max_multiples is None:
        max_multiples = loader.MAX_MULTIPLES
    plans = _candidates(group, n, sparse, items, precompute, max_multiples)
    if not plans:
        raise MsmInputError(f"too many bases for one {group.upper()} MSM: {n} (at most {_INDEX_LIMIT - 1})")
    fitting = [p for p in plans if new_bytes(p, bases_held) <= budget.bytes - held]
    if not fitting:
        least = min(plans, key=lambda p: new_bytes(p, bases_held))
        what = (f"a {group.upper()} MSM of {n} points (its smallest plan: c = {least.c}, "
                f"{least.multiples} table multiple{'s' if least.multiples > 1 else ''})")
        raise VramBudgetError(what, new_bytes(least, bases_held), budget.bytes, budget.source, held)
    return min(fitting, key=lambda p: (p.cost, p.peak_bytes))


# ---- prepared bases -----------------------------------------------------------------------------
@dataclass(eq=False)
class PreparedBases:
    """Bases resident on the GPU: table[k*n + i] = 2^(c*k) * P_i for k < multiples (affine u32)."""

    group: str
    n: int
    c: int
    multiples: int
    table: Any  # cupy uint32 array (multiples * n, words)

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes)


def check_bases(bases, group: str) -> None:
    shape = POINT_SHAPE[group]
    if not isinstance(bases, np.ndarray) and not hasattr(bases, "__cuda_array_interface__"):
        raise MsmInputError(f"{group} bases must be an array of shape (n, {', '.join(map(str, shape))})")
    if bases.dtype != np.uint64 or tuple(bases.shape[1:]) != shape or bases.ndim != len(shape) + 1:
        raise MsmInputError(
            f"{group} bases must be uint64 of shape (n, {', '.join(map(str, shape))}); got {bases.dtype} {bases.shape}"
        )


def check_scalars(scalars, n: int) -> None:
    ok = (getattr(scalars, "ndim", 0) == 2 and scalars.shape[0] == n
          and ((scalars.dtype == np.uint64 and scalars.shape[1] == 4)
               or (scalars.dtype == np.uint32 and scalars.shape[1] == 8)))
    if not ok:
        raise MsmInputError(
            f"expected {n} Montgomery Fr scalars as uint64 (n, 4); got {getattr(scalars, 'dtype', type(scalars))} "
            f"{tuple(getattr(scalars, 'shape', ()))}"
        )


def build_table(flat, group: str, c: int, m: int):
    """The (m n, words) table of 2^(c k) P_i from (n, words) affine bases on the device."""
    if m == 1:
        return flat
    cp = cupy()
    n = int(flat.shape[0])
    table = cp.empty((m * n, WORDS[group]), dtype=cp.uint32)
    _launch(f"precompute_{group}", n, flat, np.int32(n), np.int32(m), np.int32(c), table, threads=128)
    return table


# ---- one MSM ------------------------------------------------------------------------------------
def split_sparse(sc):
    """(indices of scalars other than 0 and 1, indices of scalars equal to 1), canonical values."""
    cp = cupy()
    n = sc.shape[0]
    canon = cp.empty_like(sc)
    _launch("fr_from_mont_vec", n, sc, np.int32(n), canon)
    high_zero = ~canon[:, 1:].any(axis=1)
    one = high_zero & (canon[:, 0] == 1)
    rest = ~(high_zero & (canon[:, 0] <= 1))
    return cp.nonzero(rest)[0].astype(cp.uint32), cp.nonzero(one)[0].astype(cp.uint32)


def pippenger(pb: PreparedBases, sc, idx, ones, items: int, stage: Stage = untimed):
    """sum_i s_i P_i as a cupy u32 affine point, for (n, 8) u32 Montgomery scalars on the device.
    idx / ones (split_sparse) restrict the sum to the scalars other than 0 / 1 and add the bases of
    the ones; items is the bucket-sum launch size (target_items); `stage` brackets the launches of
    each stage (cuzk.backend.cuda.msm_stages). Arrays are dropped as soon as a phase no longer needs
    them (msm_bytes models the phases)."""
    cp = cupy()
    g = pb.group
    xw = 2 * WORDS[g]  # u32 words of one XYZZ point
    c, m = pb.c, pb.multiples
    w = windows(c)
    sets = -(-w // m)
    half = 1 << (c - 1)
    nkeys = sets * half
    ns = pb.n if idx is None else int(idx.size)
    nones = 0 if ones is None else int(ones.size)
    idx_arg = idx if idx is not None else np.uint64(0)

    args = (sc, idx_arg, np.int32(ns), np.int32(c), np.int32(w), np.int32(m), np.int32(pb.n))
    with stage("plan"):
        counts = cp.zeros(nkeys, dtype=cp.uint32)
        _launch("scalar_pass", ns, np.int32(0), *args, counts, np.uint64(0))
        if nones:
            counts[0] += nones
        starts = cp.cumsum(counts, dtype=cp.uint32) - counts
        cursor = starts.copy()
    with stage("sort"):
        sorted_ = cp.empty(w * ns + nones + 1, dtype=cp.uint32)
        if nones:
            sorted_[:nones] = ones  # key 0 (digit 1, window 0, multiple 0) starts at 0
            cursor[0] += nones
        _launch("scalar_pass", ns, np.int32(1), *args, cursor, sorted_)
    del cursor

    l0 = min(_L0_MAX, max(_L0_MIN, (w * ns + nones) // items))
    part, st, cnt = _itemized(f"accum_affine_{g}", pb.table, sorted_, starts, counts, l0, xw, stage, "accumulate")
    del sorted_, starts, counts
    buckets = _reduce_segments(g, part, st, cnt, nkeys, xw, stage)
    del part, st, cnt

    with stage("reduce"):
        chunk = max(4, (nkeys + 65535) // 65536)
        nch = -(-half // chunk)
        red = cp.empty((sets * nch, xw), dtype=cp.uint32)
        _launch(f"bucket_reduce_{g}", sets * nch, buckets, np.int32(sets), np.int32(half), np.int32(chunk), red,
                threads=128)
        sums = _reduce_uniform(g, red, sets, nch, xw)
        out = cp.empty(WORDS[g], dtype=cp.uint32)
        _kernel(f"horner_affine_{g}")((1,), (1,), (sums, np.int32(sets), np.int32(c * m), out))
    return out


def _itemized(kernel: str, src, sorted_, starts, counts, L: int, xw: int, stage: Stage = untimed,
              work: str = "reduce"):
    """Split each key's range into items of <= L entries (stage "plan") and sum each item, one thread
    each (stage `work`).

    Items run longest first (so a warp's threads sum equally many entries); item j of key k
    writes row ioff[k] + j, so each key's partial sums stay contiguous."""
    cp = cupy()
    with stage("plan"):
        nit = (counts + (L - 1)) // L
        incl = cp.cumsum(nit, dtype=cp.uint32)
        ioff = incl - nit
        nitems = int(incl[-1])
        out = cp.empty((max(nitems, 1), xw), dtype=cp.uint32)
        if nitems:
            t = cp.arange(nitems, dtype=cp.uint32)
            item_key = cp.searchsorted(incl, t, side="right").astype(cp.uint32)
            item_j = t - ioff[item_key]
            short = L - cp.minimum(counts[item_key] - item_j * L, L)  # L minus the item's length
            order = cp.argsort(short)
    if nitems:
        with stage(work):
            head = (src, sorted_) if sorted_ is not None else (src,)
            _launch(kernel, nitems, *head, starts, counts, item_key[order], item_j[order], ioff, np.int32(L),
                    np.int32(nitems), out)
    return out, ioff, nit


def _reduce_uniform(g: str, part, nkeys: int, per: int, xw: int):
    """Sum rows [k*per, (k+1)*per) of part for each key k (fan-in _L_FEW; shapes known here, so
    no host syncs: these passes are short and latency-bound)."""
    cp = cupy()
    while per > _L_FEW:
        nit = -(-per // _L_FEW)
        t = cp.arange(nkeys * nit, dtype=cp.uint32)
        key = t // nit
        out = cp.empty((nkeys * nit, xw), dtype=cp.uint32)
        _launch(f"accum_xyzz_{g}", nkeys * nit, part, cp.arange(nkeys, dtype=cp.uint32) * per,
                cp.full(nkeys, per, dtype=cp.uint32), key, t - key * nit,
                cp.arange(nkeys, dtype=cp.uint32) * nit, np.int32(_L_FEW), np.int32(nkeys * nit), out)
        part, per = out, nit
    out = cp.empty((nkeys, xw), dtype=cp.uint32)
    _launch(f"accum_xyzz_{g}", nkeys, part, cp.arange(nkeys, dtype=cp.uint32) * per,
            cp.full(nkeys, per, dtype=cp.uint32), np.uint64(0), np.uint64(0), np.uint64(0), np.int32(0),
            np.int32(nkeys), out)
    return out


def _reduce_segments(g: str, part, st, cnt, nkeys: int, xw: int, stage: Stage = untimed):
    """Sum each key's partial sums part[st[k] : st[k] + cnt[k]] into one XYZZ point per key.

    Many keys: items of _L1 (throughput-bound). Few keys (the last levels): fan-in _L_FEW, since
    there each level costs its serial additions per thread."""
    cp = cupy()
    dense_max, fan_in = (_L_FEW, _L_FEW) if nkeys < _FEW_KEYS else (_DENSE_MAX, _L1)
    while int(cnt.max()) > dense_max:
        part, st, cnt = _itemized(f"accum_xyzz_{g}", part, None, st, cnt, fan_in, xw, stage)
    with stage("reduce"):
        out = cp.empty((nkeys, xw), dtype=cp.uint32)
        _launch(f"accum_xyzz_{g}", nkeys, part, st, cnt, np.uint64(0), np.uint64(0), np.uint64(0),
                np.int32(0), np.int32(nkeys), out)
    return out


# ---- test and benchmark helpers -------------------------------------------------------------------
def scalar_mul_points(group: str, point: np.ndarray, scalars, nbits: int = 256):
    """s_i * point for canonical scalars (cupy u32 (n, 8)); returns cupy u32 (n, words) affine.

    A batched fixed-base multiplication, used to make test and benchmark bases on the GPU.
    """
    cp = cupy()
    n = int(scalars.shape[0])
    p = cp.asarray(np.ascontiguousarray(point).view(np.uint32).reshape(-1))
    out = cp.empty((n, WORDS[group]), dtype=cp.uint32)
    _launch(f"scalar_mul_{group}", n, p, cp.ascontiguousarray(scalars), np.int32(nbits), np.int32(n), out)
    return out


def to_numpy_points(group: str, pts) -> np.ndarray:
    """cupy u32 (n, words) affine points -> numpy uint64 in the shared layout."""
    cp = cupy()
    return cp.asnumpy(pts).view(np.uint64).reshape((-1, *POINT_SHAPE[group]))
