"""CUDA backend: Pippenger multi-scalar multiplication in G1 and G2 on the GPU, and the NTTs of
cuzk.backend.cuda.ntt.

Kernels live in kernels/ (msm.cuh, msm_g1.cu, msm_g2.cu) and are loaded once per process through
CuPy. One MSM: signed c-bit digits of every scalar -> counting sort of (bucket, point) pairs ->
bucket sums (long buckets split into items of <= L points, partial sums reduced until one per
bucket) -> running-sum reduction of each bucket set -> Horner over the sets -> affine point.

Bases can be prepared once (`prepare_bases_g1/_g2`): they stay on the GPU together with M
precomputed multiples 2^(c*k) * P (k < M), so that M windows share one set of buckets.
CuPy is imported lazily: this module imports on machines without a GPU.
"""
from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.errors import BackendUnavailableError, InputError

from cuzk.backend.cuda import loader as _cuda_module
from cuzk.backend.cuda import ntt as ntt_cuda

__all__ = ["CudaBackend", "PreparedBases", "CudaUnavailableError", "MsmInputError", "cuda_available"]

_FQ_WORDS = 12
_WORDS = {"g1": 2 * _FQ_WORDS, "g2": 4 * _FQ_WORDS}  # u32 words per affine point
_SHAPE = {"g1": (2, 6), "g2": (2, 2, 6)}
_MODULE = {"g1": "msm_g1.cu", "g2": "msm_g2.cu"}
_MAX_MULTIPLES = 16  # PRE_MAX in kernels/msm.cuh
_L0_MIN, _L0_MAX = 32, 256  # points per item when summing buckets, sized for about _ITEMS items
_ITEMS = 1 << 18  # ~8 waves of one 256-thread block per SM on 132 SMs
_L1 = 16  # partial sums per item in later passes
_DENSE_MAX = 32  # at most this many partial sums per bucket: one thread per bucket
_FEW_KEYS = 1 << 12  # fewer keys than this: latency-bound, partial sums reduced with fan-in _L_FEW
_L_FEW = 4
# Reducing one bucket (partial sums + running sums) costs about this many mixed additions (fit to
# the H200 profiles of 2026-11-30, bench/MSM_NOTES.md: G2's full XYZZ add goes through local memory).
_BUCKET_COST = {"g1": 10, "g2": 14}
_THREADS = 256
_STAGE_BYTES = 16 << 20  # host scalars above this size go through two pinned staging buffers


class CudaUnavailableError(BackendUnavailableError):
    """cupy or a CUDA GPU is missing."""


class MsmInputError(InputError):
    """Bases or scalars of the wrong shape, dtype or length."""


def cuda_available() -> bool:
    """True when cupy imports and sees at least one CUDA device."""
    try:
        import cupy as cp

        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _cupy():
    try:
        import cupy as cp
    except ImportError as e:
        raise CudaUnavailableError("the CUDA backend needs cupy (pip install cupy-cuda12x)") from e
    if not cuda_available():
        raise CudaUnavailableError("the CUDA backend needs a CUDA GPU; none is visible")
    return cp


@functools.cache
def _kernel(group: str, name: str):
    module = _cuda_module.module(_MODULE["g1" if name in ("scalar_pass", "fr_from_mont_vec") else group])
    return module.get_function(name)


def _launch(group: str, name: str, n: int, *args: Any, threads: int = _THREADS) -> None:
    if n > 0:
        _kernel(group, name)(((n + threads - 1) // threads,), (threads,), args)


def windows(c: int) -> int:
    """Signed c-bit windows needed for scalars < r < 2^255."""
    return -(-256 // c)


def choose_window(n: int, multiples_allowed: bool, group: str = "g1") -> tuple[int, int]:
    """(c, M): window bits and table multiples minimising madds + bucket-reduction work."""
    best = None
    for c in range(4, 24):
        w = windows(c)
        if 2 * (256 - c * (w - 1)) < c:
            continue  # a top window of under c/2 bits crowds ~n entries into a few buckets (G1 2^20: c=18 +17%)
        m = min(w, _MAX_MULTIPLES) if multiples_allowed else 1
        sets = -(-w // m)
        cost = w * n + _BUCKET_COST[group] * sets * (1 << (c - 1))
        if best is None or cost < best[0]:
            best = (cost, c, m)
    return best[1], best[2]


@dataclass
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


def _check_bases(bases: np.ndarray, group: str) -> None:
    shape = _SHAPE[group]
    if not isinstance(bases, np.ndarray) and not hasattr(bases, "__cuda_array_interface__"):
        raise MsmInputError(f"{group} bases must be an array of shape (n, {', '.join(map(str, shape))})")
    if bases.dtype != np.uint64 or tuple(bases.shape[1:]) != shape or bases.ndim != len(shape) + 1:
        raise MsmInputError(
            f"{group} bases must be uint64 of shape (n, {', '.join(map(str, shape))}); got {bases.dtype} {bases.shape}"
        )


def _check_scalars(scalars, n: int) -> None:
    ok = (getattr(scalars, "ndim", 0) == 2 and scalars.shape[0] == n
          and ((scalars.dtype == np.uint64 and scalars.shape[1] == 4)
               or (scalars.dtype == np.uint32 and scalars.shape[1] == 8)))
    if not ok:
        raise MsmInputError(
            f"expected {n} Montgomery Fr scalars as uint64 (n, 4); got {getattr(scalars, 'dtype', type(scalars))} "
            f"{tuple(getattr(scalars, 'shape', ()))}"
        )


class CudaBackend:
    """GPU MSM with the shared backend interface (numpy in, numpy affine point out)."""

    name = "cuda"

    def __init__(self, table_budget_bytes: int = 40 << 30) -> None:
        self.table_budget_bytes = table_budget_bytes
        self._stage: list[np.ndarray] | None = None  # pinned staging buffers, made at first use
        self._stream = None
        # numpy bases seen before stay on the GPU (with precomputed multiples) while the array lives
        self._resident: dict[int, tuple[weakref.ref, PreparedBases]] = {}

    # ---- NTT over Fr (numpy in and out, or cupy arrays that stay on the device) -----------------
    def ntt(self, values):
        return ntt_cuda.ntt(values)

    def intt(self, values):
        return ntt_cuda.intt(values)

    def coset_ntt(self, values):
        return ntt_cuda.coset_ntt(values)

    def coset_intt(self, values):
        return ntt_cuda.coset_intt(values)

    def quotient(self, a, b, c):
        return ntt_cuda.quotient(a, b, c)

    # ---- bases ---------------------------------------------------------------------------------
    def prepare_bases_g1(self, bases: np.ndarray, precompute: bool = True) -> PreparedBases:
        return self._prepare(bases, "g1", precompute)

    def prepare_bases_g2(self, bases: np.ndarray, precompute: bool = True) -> PreparedBases:
        return self._prepare(bases, "g2", precompute)

    def _prepare(self, bases, group: str, precompute: bool, c: int | None = None, m: int = 1) -> PreparedBases:
        """Table of bases; c (window bits) and m (multiples, <= 16) are chosen by the cost model unless c is given."""
        cp = _cupy()
        _check_bases(bases, group)
        n = int(bases.shape[0])
        if n == 0:
            raise MsmInputError("no bases")
        words = _WORDS[group]
        if c is None:
            c, m = choose_window(n, precompute, group)
            while m > 1 and m * n * words * 4 > self.table_budget_bytes:
                m -= 1
        if m * n >= 1 << 31:
            raise MsmInputError(f"too many bases for the table: {n} x {m}")
        flat = cp.ascontiguousarray(cp.asarray(bases).view(cp.uint32).reshape(n, words))
        if m == 1:
            return PreparedBases(group, n, c, 1, flat)
        table = cp.empty((m * n, words), dtype=cp.uint32)
        _launch(group, f"precompute_{group}", n, flat, np.int32(n), np.int32(m), np.int32(c), table, threads=128)
        return PreparedBases(group, n, c, m, table)

    # ---- MSM entry points ----------------------------------------------------------------------
    def msm_g1(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g1", sparse=False)

    def msm_g2(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g2", sparse=False)

    def msm_g1_sparse(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g1", sparse=True)

    def msm_g2_sparse(self, bases, scalars) -> np.ndarray:
        return self._msm(bases, scalars, "g2", sparse=True)

    def msm_device(self, prepared: PreparedBases, scalars, sparse: bool = False):
        """MSM with scalars already on the GPU; returns the affine result as a cupy u32 array."""
        _check_scalars(scalars, prepared.n)
        sc = self._scalars_device(scalars, prepared.n)
        idx = ones = None
        if sparse:
            idx, ones = self._split_sparse(sc)
        return self._pippenger(prepared, sc, idx, ones)

    def _msm(self, bases, scalars, group: str, sparse: bool) -> np.ndarray:
        if isinstance(bases, PreparedBases):
            if bases.group != group:
                raise MsmInputError(f"prepared bases are {bases.group}, not {group}")
            prepared = bases
            n = bases.n
        else:
            _check_bases(bases, group)
            n = int(bases.shape[0])
        _check_scalars(scalars, n)
        cp = _cupy()
        sc = self._scalars_device(scalars, n)
        idx = ones = None
        if sparse:
            idx, ones = self._split_sparse(sc)
        if not isinstance(bases, PreparedBases):
            if n == 0:
                return np.zeros(_SHAPE[group], dtype=np.uint64)
            prepared = self._resident_bases(bases, group)
        out = self._pippenger(prepared, sc, idx, ones)
        return cp.asnumpy(out).view(np.uint64).reshape(_SHAPE[group])

    def _resident_bases(self, bases: np.ndarray, group: str) -> PreparedBases:
        """Prepared bases for a numpy array: built at its first MSM, reused while the array lives
        (a prover's parameter vectors are the same arrays proof after proof)."""
        key = id(bases)
        entry = self._resident.get(key)
        if entry is not None and entry[0]() is bases and entry[1].group == group:
            return entry[1]
        prepared = self._prepare(bases, group, precompute=True)
        self._resident[key] = (weakref.ref(bases, lambda _ref, k=key: self._resident.pop(k, None)), prepared)
        return prepared

    def _scalars_device(self, scalars, n: int):
        """Scalars as a contiguous cupy (n, 8) u32 array (copied only when they are on the host)."""
        cp = _cupy()
        if isinstance(scalars, np.ndarray) and scalars.nbytes > _STAGE_BYTES:
            dev = self._upload(np.ascontiguousarray(scalars))
        else:
            dev = cp.ascontiguousarray(cp.asarray(scalars))
        return dev.view(cp.uint32).reshape(n, 8)

    def _upload(self, host: np.ndarray):
        """Host -> GPU copy through two pinned buffers: the memcpy into one overlaps the DMA of the other."""
        import cupyx

        cp = _cupy()
        if self._stage is None:
            self._stage = [cupyx.empty_pinned(_STAGE_BYTES, dtype=np.uint8) for _ in range(2)]
            self._stream = cp.cuda.Stream(non_blocking=True)
        flat = host.reshape(-1).view(np.uint8)
        out = cp.empty(flat.nbytes, dtype=cp.uint8)
        done = [None, None]
        for j, off in enumerate(range(0, flat.nbytes, _STAGE_BYTES)):
            k, size = j % 2, min(_STAGE_BYTES, flat.nbytes - off)
            if done[k] is not None:
                done[k].synchronize()
            self._stage[k][:size] = flat[off : off + size]
            out[off : off + size].set(self._stage[k][:size], stream=self._stream)
            done[k] = self._stream.record()
        self._stream.synchronize()
        return out.view(host.dtype).reshape(host.shape)

    @staticmethod
    def _split_sparse(sc):
        """(indices of scalars other than 0 and 1, indices of scalars equal to 1), canonical values."""
        cp = _cupy()
        n = sc.shape[0]
        canon = cp.empty_like(sc)
        _launch("g1", "fr_from_mont_vec", n, sc, np.int32(n), canon)
        high_zero = ~canon[:, 1:].any(axis=1)
        one = high_zero & (canon[:, 0] == 1)
        rest = ~(high_zero & (canon[:, 0] <= 1))
        return cp.nonzero(rest)[0].astype(cp.uint32), cp.nonzero(one)[0].astype(cp.uint32)

    # ---- Pippenger -------------------------------------------------------------------------------
    def _pippenger(self, pb: PreparedBases, sc, idx, ones):
        cp = _cupy()
        g = pb.group
        xw = 2 * _WORDS[g]  # u32 words of one XYZZ point
        c, m = pb.c, pb.multiples
        w = windows(c)
        sets = -(-w // m)
        half = 1 << (c - 1)
        nkeys = sets * half
        ns = pb.n if idx is None else int(idx.size)
        nones = 0 if ones is None else int(ones.size)
        idx_arg = idx if idx is not None else np.uint64(0)

        counts = cp.zeros(nkeys, dtype=cp.uint32)
        args = (sc, idx_arg, np.int32(ns), np.int32(c), np.int32(w), np.int32(m), np.int32(pb.n))
        _launch("g1", "scalar_pass", ns, np.int32(0), *args, counts, np.uint64(0))
        if nones:
            counts[0] += nones
        starts = cp.cumsum(counts, dtype=cp.uint32) - counts
        cursor = starts.copy()
        sorted_ = cp.empty(w * ns + nones + 1, dtype=cp.uint32)
        if nones:
            sorted_[:nones] = ones  # key 0 (digit 1, window 0, multiple 0) starts at 0
            cursor[0] += nones
        _launch("g1", "scalar_pass", ns, np.int32(1), *args, cursor, sorted_)

        l0 = min(_L0_MAX, max(_L0_MIN, (w * ns + nones) // _ITEMS))
        part, st, cnt = self._itemized(g, f"accum_affine_{g}", pb.table, sorted_, starts, counts, l0, xw)
        buckets = self._reduce_segments(g, part, st, cnt, nkeys, xw)

        chunk = max(4, (nkeys + 65535) // 65536)
        nch = -(-half // chunk)
        red = cp.empty((sets * nch, xw), dtype=cp.uint32)
        _launch(g, f"bucket_reduce_{g}", sets * nch, buckets, np.int32(sets), np.int32(half), np.int32(chunk), red,
                threads=128)
        sums = self._reduce_uniform(g, red, sets, nch, xw)
        out = cp.empty(_WORDS[g], dtype=cp.uint32)
        _kernel(g, f"horner_affine_{g}")((1,), (1,), (sums, np.int32(sets), np.int32(c * m), out))
        return out

    @staticmethod
    def _itemized(g, kernel, src, sorted_, starts, counts, L, xw):
        """Split each key's range into items of <= L entries and sum each item (one thread each).

        Items run longest first (so a warp's threads sum equally many entries); item j of key k
        writes row ioff[k] + j, so each key's partial sums stay contiguous."""
        cp = _cupy()
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
            head = (src, sorted_) if sorted_ is not None else (src,)
            _launch(g, kernel, nitems, *head, starts, counts, item_key[order], item_j[order], ioff, np.int32(L),
                    np.int32(nitems), out)
        return out, ioff, nit

    @staticmethod
    def _reduce_uniform(g, part, nkeys, per, xw):
        """Sum rows [k*per, (k+1)*per) of part for each key k (fan-in _L_FEW; shapes known here, so
        no host syncs: these passes are short and latency-bound)."""
        cp = _cupy()
        while per > _L_FEW:
            nit = -(-per // _L_FEW)
            t = cp.arange(nkeys * nit, dtype=cp.uint32)
            key = t // nit
            out = cp.empty((nkeys * nit, xw), dtype=cp.uint32)
            _launch(g, f"accum_xyzz_{g}", nkeys * nit, part, cp.arange(nkeys, dtype=cp.uint32) * per,
                    cp.full(nkeys, per, dtype=cp.uint32), key, t - key * nit,
                    cp.arange(nkeys, dtype=cp.uint32) * nit, np.int32(_L_FEW), np.int32(nkeys * nit), out)
            part, per = out, nit
        out = cp.empty((nkeys, xw), dtype=cp.uint32)
        _launch(g, f"accum_xyzz_{g}", nkeys, part, cp.arange(nkeys, dtype=cp.uint32) * per,
                cp.full(nkeys, per, dtype=cp.uint32), np.uint64(0), np.uint64(0), np.uint64(0), np.int32(0),
                np.int32(nkeys), out)
        return out

    def _reduce_segments(self, g, part, st, cnt, nkeys, xw):
        """Sum each key's partial sums part[st[k] : st[k] + cnt[k]] into one XYZZ point per key.

        Many keys: items of _L1 (throughput-bound). Few keys (the last levels): fan-in _L_FEW, since
        there each level costs its serial additions per thread."""
        cp = _cupy()
        dense_max, fan_in = (_L_FEW, _L_FEW) if nkeys < _FEW_KEYS else (_DENSE_MAX, _L1)
        while int(cnt.max()) > dense_max:
            part, st, cnt = self._itemized(g, f"accum_xyzz_{g}", part, None, st, cnt, fan_in, xw)
        out = cp.empty((nkeys, xw), dtype=cp.uint32)
        _launch(g, f"accum_xyzz_{g}", nkeys, part, st, cnt, np.uint64(0), np.uint64(0), np.uint64(0),
                np.int32(0), np.int32(nkeys), out)
        return out


def scalar_mul_points(group: str, point: np.ndarray, scalars, nbits: int = 256):
    """s_i * point for canonical scalars (cupy u32 (n, 8)); returns cupy u32 (n, words) affine.

    A batched fixed-base multiplication, used to make test and benchmark bases on the GPU.
    """
    cp = _cupy()
    n = int(scalars.shape[0])
    p = cp.asarray(np.ascontiguousarray(point).view(np.uint32).reshape(-1))
    out = cp.empty((n, _WORDS[group]), dtype=cp.uint32)
    _launch(group, f"scalar_mul_{group}", n, p, cp.ascontiguousarray(scalars), np.int32(nbits), np.int32(n), out)
    return out


def to_numpy_points(group: str, pts) -> np.ndarray:
    """cupy u32 (n, words) affine points -> numpy uint64 in the shared layout."""
    cp = _cupy()
    return cp.asnumpy(pts).view(np.uint64).reshape((-1, *_SHAPE[group]))
