"""Groth16 parameters on the GPU from a circuit's template form, for given toxic waste: the
same key as cuzk.groth16.setup.key_points with bellperson's reduction (cuzk.groth16.qap; its rows,
domain and H query length from cuzk.ff.domain.QapRows, which the backend layer can import), each
stage a kernel (kernels/setup/):

    L_e = L_e(tau) = Z(tau) w^e / (n (tau - w^e)), e < rows                setup_lagrange
    u = A^T L[:m] (+ the input rows' L), v = B^T L[:m], w = C^T L[:m]       pce_transpose, setup_fold
    ext = beta u + alpha v + w; ic = ext[:k] / gamma; l = ext[k:] / delta     fr_lincomb
    h_i = tau^i Z(tau) / delta                                             fr_powers (ntt module)
    [s_i] G1 and [s_i] G2 for every query vector                           fb_mul_g1 / fb_mul_g2

A^T L is a scatter over the template form (the walk of kernels/pce/walk.cuh, one thread per row):
each term adds the 32-bit limbs of coeff * L_row into eight 64-bit sums of its column by atomics,
exact below 2^32 terms per column, folded into Fr once (setup_fold). The fixed-base products use a
table of [j 2^(c w)] G, j <= 2^(c-1) (signed c-bit digits, c = WINDOW_BITS: 16 mixed additions per
point, no doublings; 50 MB for G1, 101 MB for G2, built on the GPU once per device and kept) and one
inversion per thread for the affine form (kernels/setup/fixed_base.cuh).

Device memory (Fr elements 32 bytes, points 96 bytes in G1 and 192 in G2; rows = m + k, N columns,
n the domain, |a| and |b| the variables with A and B query points), stage by stage (`stage_bytes`):
    qap      32 rows (L) + 64 N (limb sums) + N (marks) + 96 N (u, v, w)
    select   96 N (u, v, ext) + 32 (|a| + |b|) (the A and B query scalars)
    l        32 N (ext) + 32 (|a| + |b|) + 96 (N - k) (l)
    a        32 (|a| + |b|) + 96 |a| (a) + the outputs so far
    b        32 |b| + 288 |b| (b_g1, b_g2) + the outputs so far
    h        128 (n - 1) (scalars, h) + the outputs so far
plus the circuit's resident arrays (cuzk.backend.cuda.pce), the tables and the fixed-base scratch
(two field elements per point of one launch, at most _MAX_CHUNK points). Outputs kept on the device
stay there (counted in `residency` while they live, as CudaBackend.hold counts them); otherwise each
vector is copied to the host as soon as it is made. The 32GiB PoRep partition (m = 130,278,541,
k = 328, N = 130,170,221, n = 2^27, |a| ~ 129.8 M, |b| ~ 33.1 M): qap 25.1 GB; with the outputs kept
the peak is 51.7 GB at h, 47.4 GB of it the key; with them copied out, 25.1 GB (at qap).

CuPy is imported lazily: this module imports on machines without it.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk.backend.base import TemplateCircuit
from cuzk.backend.cuda import loader
from cuzk.backend.cuda import ntt as ntt_cuda
from cuzk.backend.cuda import pce as pce_cuda
from cuzk.backend.cuda.device import cupy, info
from cuzk.backend.cuda.layout import FB_THREADS, POINT_SHAPE, WORDS
from cuzk.backend.cuda.memory import Residency
from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError, SetupError
from cuzk.ff.domain import Domain, QapRows
from cuzk.ff.fields import Fr, int_limbs
from cuzk.util.progress import Progress, StageTimer

log = logging.getLogger("cuzk.groth16")
R = Fr.modulus
WINDOW_BITS = 16
_PER_THREAD = 128  # points per fixed-base thread: one inversion (~570 Fq products) shared by them
_MAX_CHUNK = 1 << 23  # points per fixed-base launch (its scratch: 2 field elements per point)
_LAGRANGE_THREADS = 1 << 20  # setup_lagrange threads (one inversion each)
_CURVES = {"g1": G1, "g2": G2}
QUERIES = ("h", "l", "a", "b_g1", "b_g2")


# ---------------------------------------------------------------- small helpers
def _launch(name: str, count: int, args: tuple, threads: int = 256) -> None:
    if count > 0:
        loader.function(name)(((count + threads - 1) // threads,), (threads,), args)


def _sync() -> None:
    cupy().cuda.Device().synchronize()


def _consts(values: list[int]):
    """A (len, 4) device array of Montgomery Fr constants."""
    return cupy().asarray(Fr.from_ints([v % R for v in values]))


def lincomb(out, terms: list[tuple[int, Any]]) -> None:
    """out = sum_q c_q x_q element-wise for up to three (c_q, x_q) of (count, 4) device arrays (out may
    be one of the x_q)."""
    xs = [x for _, x in terms] + [np.uint64(0)] * (3 - len(terms))
    _launch("fr_lincomb", int(out.shape[0]), (*xs, _consts([c for c, _ in terms]), np.int32(len(terms)), out,
                                              np.uint64(out.shape[0])))


def _any_zero(x) -> bool:
    return bool(x.shape[0]) and bool((x == 0).all(axis=1).any())


# ---------------------------------------------------------------- fixed-base multiplication
def windows(c: int) -> int:
    """Signed c-bit windows of a scalar below r < 2^255: ceil(256 / c) (the top one takes no carry)."""
    return -(-256 // c)


@dataclass(eq=False)
class FixedBaseTable:
    """table[w H + j - 1] = [j 2^(c w)] P (affine u32 words), j = 1 .. H = 2^(c-1), w < windows."""

    group: str
    c: int
    windows: int
    table: Any

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes)


def window_bases(group: str, c: int, point: np.ndarray | None = None) -> np.ndarray:
    """(windows(c), *affine) host array of [2^(c w)] P (P: the group's generator by default)."""
    curve = _CURVES[group]
    base = curve.generator() if point is None else point
    return curve.to_affine(curve.scalar_mul(base, [1 << (c * w) for w in range(windows(c))]))


def fixed_base_table(group: str, c: int = WINDOW_BITS, point: np.ndarray | None = None) -> FixedBaseTable:
    """The fixed-base table of P (default: the generator) on the current device, built by fb_table."""
    if group not in _CURVES or not 2 <= c <= 24:
        raise InputError(f"fixed-base table: group must be g1 or g2 and 2 <= c <= 24, got {group!r}, {c}")
    cp = cupy()
    nw, half = windows(c), 1 << (c - 1)
    bases = cp.asarray(np.ascontiguousarray(window_bases(group, c, point)).view(np.uint32).reshape(nw, -1))
    table = cp.empty((nw * half, WORDS[group]), dtype=cp.uint32)
    _launch(f"fb_table_{group}", nw * half, (bases, np.uint32(half), np.uint64(nw * half), table), FB_THREADS)
    return FixedBaseTable(group, c, nw, table)


_tables: dict[tuple[int, str, int], FixedBaseTable] = {}
_tables_lock = threading.Lock()


def generator_table(group: str, c: int | None = None) -> FixedBaseTable:
    """fixed_base_table of the group's generator (c: WINDOW_BITS by default), built once per (device,
    group, c) and kept."""
    c = WINDOW_BITS if c is None else c
    key = (int(cupy().cuda.Device().id), group, c)
    with _tables_lock:
        if key not in _tables:
            _tables[key] = fixed_base_table(group, c)
        return _tables[key]


def drop_generator_tables() -> None:
    """Forget the kept generator tables (made again at the next setup): a setup done, the process's
    device memory goes back to proving."""
    with _tables_lock:
        _tables.clear()


def _resident_threads(kernel, threads: int) -> int:
    """Threads of `kernel` (a CuPy RawKernel) the current device holds at once, from its register count
    (allocated per thread in multiples of 8 of the SM's 64 Ki); 2^16 when the count cannot be read."""
    try:
        regs = -(-int(kernel.attributes["num_regs"]) // 8) * 8
        per_sm = max(1, min(2048 // threads, 65536 // (threads * regs)))
        return info(int(cupy().cuda.Device().id)).sm_count * per_sm * threads
    except Exception:
        return 1 << 16


def fixed_base_mul(table: FixedBaseTable, scalars, progress: Progress | None = None):
    """[s_i] P for (n, 4) uint64 Montgomery Fr scalars (cupy or numpy) as a cupy (n, 2, 6) (G1) or
    (n, 2, 2, 6) (G2) uint64 affine array in the host layout (identity = zeros). Launches of at most _MAX_CHUNK points, each spread over the threads the device holds
    at once (about _PER_THREAD points per thread); `progress` counts the points done."""
    cp = cupy()
    g = table.group
    if getattr(scalars, "ndim", 0) != 2 or scalars.shape[1] != 4 or scalars.dtype != np.uint64:
        raise InputError(f"fixed-base scalars must be (n, 4) uint64 Montgomery Fr, got "
                         f"{getattr(scalars, 'dtype', type(scalars).__name__)} {getattr(scalars, 'shape', '')}")
    n = int(scalars.shape[0])
    out = cp.empty((n, *POINT_SHAPE[g]), dtype=cp.uint64)
    if n == 0:
        return out
    sc = cp.ascontiguousarray(cp.asarray(scalars))
    kernel = loader.function(f"fb_mul_{g}")
    spread = min(n, _resident_threads(kernel, FB_THREADS))
    chunk = min(n, spread * _PER_THREAD, _MAX_CHUNK)
    fw = WORDS[g] // 2
    zs, pre = (cp.empty((chunk, fw), dtype=cp.uint32) for _ in range(2))
    for off in range(0, n, chunk):
        count = min(chunk, n - off)
        threads = min(spread, count)
        kernel((-(-threads // FB_THREADS),), (FB_THREADS,),
               (table.table, np.int32(table.c), np.int32(table.windows), sc[off:off + count], np.uint64(count),
                np.uint64(threads), out[off:off + count], zs, pre))
        if progress is not None:
            _sync()
            progress.update(count)
    return out


# ---------------------------------------------------------------- the QAP at tau
def lagrange(domain: Domain, tau: int, count: int):
    """(count, 4) device array of L_e(tau), e < count <= n (Domain.lagrange_at(tau, count)), for tau
    outside the domain (SetupError otherwise)."""
    z = domain.vanishing(tau)
    if z == 0:
        raise SetupError("tau hit a point of the evaluation domain (probability n/r): run setup again")
    if not 0 <= count <= domain.n:
        raise InputError(f"{count} Lagrange coefficients of a {domain.n}-point domain")
    cp = cupy()
    out = cp.empty((count, 4), dtype=cp.uint64)
    if count == 0:
        return out
    spread = min(count, _LAGRANGE_THREADS)
    w = domain.root
    ws = pow(w, spread, R)
    consts = np.concatenate([Fr.from_ints([1, w, ws, pow(ws, -1, R), tau % R, z * domain.n_inv % R]),
                             np.array([int_limbs(R - 2, 4)], np.uint64)])
    _launch("setup_lagrange", spread, (cp.asarray(consts), out, np.uint64(count), np.uint64(spread)))
    return out


def transposed(dev: pce_cuda.DevicePce, matrix: int, lag, ncols: int, acc, mark, out) -> None:
    """out = M^T lag for matrix 0, 1, 2 (A, B, C) of the resident circuit: (ncols, 4) out[c] =
    sum_r M[r, c] lag[r]; acc: (ncols, 8) uint64 scratch; mark[c] = 1 for every column M names."""
    acc.fill(0)
    indptr, tvars, tcids, pindptr, pcols, pcids = dev.matrices[matrix]
    if dev.ctas:
        loader.function("pce_transpose")((dev.ctas,), (pce_cuda.THREADS,), (
            dev.parts, np.uint32(dev.nparts), indptr, tvars, tcids, dev.wire_cols, pindptr, pcols, pcids,
            dev.coeffs, lag, acc, mark, np.uint32(dev.widths[matrix])))
    _launch("setup_fold", ncols, (acc, _consts([1 << (32 * q) for q in range(8)]), out, np.uint64(ncols)))


# ---------------------------------------------------------------- the whole key
@dataclass(eq=False)
class KeyPoints:
    """Every group element of the key in cuzk.groth16.keys' layout: g1 = [alpha, beta, delta] G1 and
    g2 = [beta, gamma, delta] G2, ic (host numpy), and the query vectors by name (QUERIES: cupy arrays
    when kept on the device, else numpy); timings: seconds per stage."""

    g1: np.ndarray
    g2: np.ndarray
    ic: np.ndarray
    queries: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)


def stage_bytes(rows: int, ncols: int, k: int, n: int, a: int, b: int, keep: bool = True) -> dict[str, int]:
    """Device bytes of each stage of key_points (the module docstring's table), without the circuit,
    the tables and the fixed-base scratch; keep: the outputs stay on the device."""
    out = {"l": 96 * (ncols - k), "a": 96 * a, "b": 288 * b}
    kept = (lambda *names: sum(out[x] for x in names)) if keep else (lambda *names: 0)
    return {"qap": 32 * rows + 161 * ncols,
            "select": 96 * ncols + 32 * (a + b),
            "l": 32 * ncols + 32 * (a + b) + out["l"],
            "a": 32 * (a + b) + out["a"] + kept("l"),
            "b": 32 * b + out["b"] + kept("l", "a"),
            "h": 128 * max(n - 1, 0) + kept("l", "a", "b")}


def setup_bytes(pce: TemplateCircuit, a: int, b: int, keep: bool = True) -> int:
    """Peak device bytes of key_points: the largest stage, the circuit's resident arrays, the tables at
    WINDOW_BITS and the fixed-base scratch."""
    qap = QapRows(pce.num_constraints, pce.num_inputs)
    tables = sum(windows(WINDOW_BITS) << (WINDOW_BITS - 1) for _ in range(3)) * 96  # G1 + G2 (twice G1)
    scratch = 2 * 96 * _MAX_CHUNK
    return (max(stage_bytes(qap.rows, pce.shape[1], qap.inputs, qap.domain.n, a, b, keep).values())
            + pce_cuda.resident_bytes(pce) + tables + scratch)


def key_points(pce: TemplateCircuit, tau: int, alpha: int, beta: int, gamma: int, delta: int, a_dense: np.ndarray,
               b_dense: np.ndarray, reserve, residency: Residency, keep_on_device: bool = True,
               progress: bool = False) -> KeyPoints:
    """The key of cuzk.groth16.setup.key_points (bellperson's reduction) for a template-form circuit,
    computed on the current device: toxic waste tau, alpha, beta, gamma, delta (non-zero Fr
    integers), a_dense / b_dense the (num_inputs + num_aux,) bool masks of the variables with an A / B
    query point. reserve(bytes, what) makes room first for the peak (setup_bytes); the circuit's
    arrays are uploaded (or found) in `residency`. SetupError as the CPU setup raises it: tau in the
    domain, an aux variable named by no term (structurally: one named only with coefficients that
    cancel in its rows passes here and fails as a QAP root below), a zero query scalar (tau at a root
    of a QAP polynomial). progress: stage lines and a bar over the points on stderr."""
    cp = cupy()
    m, k, ncols = pce.num_constraints, pce.num_inputs, pce.shape[1]
    qap = QapRows(m, k)
    domain = qap.domain
    for name, x in (("tau", tau), ("alpha", alpha), ("beta", beta), ("gamma", gamma), ("delta", delta)):
        if not 0 < x < R:
            raise InputError(f"toxic waste {name} must be an integer in [1, r), got {x}")
    a_dense, b_dense = (np.asarray(x, dtype=bool) for x in (a_dense, b_dense))
    if a_dense.shape != (ncols,) or b_dense.shape != (ncols,):
        raise InputError(f"a_dense and b_dense must be ({ncols},) bool masks, got {a_dense.shape}, {b_dense.shape}")
    if domain.vanishing(tau) == 0:
        raise SetupError("tau hit a point of the evaluation domain (probability n/r): run setup again")
    na, nb = int(a_dense.sum()), int(b_dense.sum())
    reserve(setup_bytes(pce, na, nb, keep_on_device), f"a Groth16 setup of {m} constraints on the GPU")
    timer = StageTimer("setup (cuda)", echo=progress, logger=log)

    def stage(name: str) -> None:  # the stage ends when the device is done with it
        _sync()
        timer.mark(name)

    dev = pce_cuda.resident(pce, reserve, residency)
    delta_inv, z = pow(delta, -1, R), domain.vanishing(tau)
    lag = lagrange(domain, tau, qap.rows)
    stage("lagrange")
    acc = cp.empty((ncols, 8), dtype=cp.uint64)
    mark = cp.zeros(ncols, dtype=cp.uint8)
    u, v, ext = (cp.empty((ncols, 4), dtype=cp.uint64) for _ in range(3))
    for q, out in enumerate((u, v, ext)):
        transposed(dev, q, lag, ncols, acc, mark, out)
    lincomb(u[:k], [(1, u[:k]), (1, lag[qap.input_rows])])  # u_i += L_(m+i): the input rows
    del acc, lag
    free = cp.nonzero(mark[k:] == 0)[0]
    del mark
    if free.size:
        raise SetupError(f"{free.size} aux variable(s) appear in no constraint (first: aux {int(free[0])})")
    lincomb(ext, [(beta, u), (alpha, v), (1, ext)])
    stage("qap")
    g1, g2 = generator_table("g1"), generator_table("g2")
    stage("tables")
    n_points = qap.h_len + ncols + na + 2 * nb
    bar = Progress("cuzk: setup points (cuda)", total=n_points, unit="pt", unit_scale=True, enabled=progress)

    def kept(x):
        residency.track(x, int(x.nbytes))
        return x

    take = kept if keep_on_device else cp.asnumpy

    def points(table: FixedBaseTable, scalars):
        return take(fixed_base_mul(table, scalars, progress=bar if progress else None))

    try:
        ic_scalars = cp.empty((k, 4), dtype=cp.uint64)
        lincomb(ic_scalars, [(pow(gamma, -1, R), ext[:k])])
        lincomb(ext[k:], [(delta_inv, ext[k:])])
        a_scalars = u[cp.asarray(a_dense)]
        b_scalars = v[cp.asarray(b_dense)]
        if any(_any_zero(x) for x in (ext[k:], a_scalars, b_scalars)):  # [x] G = O iff x = 0
            raise SetupError("tau hit a root of a QAP polynomial (probability ~n/r): run setup again")
        del u, v
        stage("select")
        ic = cp.asnumpy(fixed_base_mul(g1, ic_scalars))
        l_pts = points(g1, ext[k:])
        del ext
        stage("l")
        a_pts = points(g1, a_scalars)
        del a_scalars
        stage("a")
        b1_pts, b2_pts = points(g1, b_scalars), points(g2, b_scalars)
        del b_scalars
        stage("b")
        h_pts = points(g1, _h_scalars(tau, z * delta_inv % R, qap.h_len))
        vk_g1 = cp.asnumpy(fixed_base_mul(g1, _consts([alpha, beta, delta])))
        vk_g2 = cp.asnumpy(fixed_base_mul(g2, _consts([beta, gamma, delta])))
        stage("h")
    finally:
        bar.close()
    log.info("setup (cuda): %d constraints, %d inputs, %d aux, domain %d, %d points in %.2f s (%s)", m, k, ncols - k,
             domain.n, n_points, sum(timer.timings.values()),
             ", ".join(f"{s} {t:.2f} s" for s, t in timer.timings.items()))
    return KeyPoints(vk_g1, vk_g2, ic, dict(zip(QUERIES, (h_pts, l_pts, a_pts, b1_pts, b2_pts))), dict(timer.timings))


def _h_scalars(tau: int, factor: int, count: int):
    """(count, 4) device array factor * tau^i: bellperson's H query scalars with factor Z(tau) / delta."""
    if count == 0:
        return cupy().empty((0, 4), dtype=np.uint64)
    return ntt_cuda.powers(tau, count, factor)
