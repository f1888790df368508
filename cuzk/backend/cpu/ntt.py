"""Number-theoretic transforms over Fr (BLS12-381 scalar field) on the CPU, with numba.

Conventions follow bellperson / ff (and so Filecoin): the roots and the default coset shift are
`cuzk.ff.domain.Domain(log2 n)`'s, w = 7^((r-1)/n) and s = 7. For a domain of size n with root w:
    ntt(a)[j]        = sum_i a[i] * w^(i*j)
    intt(a)[j]       = n^-1 * sum_i a[i] * w^(-i*j)
    coset_ntt(a)[j]  = sum_i a[i] * s^i * w^(i*j)          (s = shift, 7 by default)
    coset_intt(a)[i] = s^-i * intt(a)[i]
All arrays are (n, 4) uint64 Fr elements in Montgomery form, natural order in and out.

Algorithm: iterative radix-2 decimation in time. The log2(n) butterfly stages are grouped into at most
_MAX_PASS_STAGES consecutive stages per pass; a pass copies tiles of 2^d x w elements (d stages, w
neighbouring columns) into a small cache-resident buffer, runs its stages there and writes them back,
so 2^20 takes two sweeps over memory. The bit-reversal permutation, the intt's index reversal and the
scalings by n^-1 and by powers of the coset shift are fused into the first (gather) and last (scatter)
passes. Twiddles come from one shared "tower" table, tw[m + j] = w_2m^j, whose prefix of length 2^k
serves every size up to 2^k.
"""
from __future__ import annotations

import threading

import numpy as np
from numba import njit, prange

from cuzk.errors import InputError
from cuzk.ff.domain import MULTIPLICATIVE_GENERATOR, TWO_ADICITY, Domain
from cuzk.ff.fields import Fr
from cuzk.ff.limbs import FR_MODULUS, fr_add, fr_load, fr_mul, fr_store, fr_sub

_MAX_PASS_STAGES = 10  # stages per pass: a tile is 2^10 x _COLS elements (128 KiB at 4 columns)
_COLS = 4              # neighbouring columns per tile in passes after the first
_SCALE_NONE, _SCALE_CONST, _SCALE_POWERS = 0, 1, 2


# ---------------------------------------------------------------- kernels
@njit(cache=True)
def _bitrev(x, bits):
    r = 0
    for _ in range(bits):
        r = (r << 1) | (x & 1)
        x >>= 1
    return r


@njit(parallel=True, cache=True)
def _fill_powers(base, step, out):
    """out[i] = base * step^i, computed in parallel chunks that start from step^(chunk start)."""
    n = out.shape[0]
    chunk = 4096
    b = fr_load(base)
    s = fr_load(step)
    for c in prange((n + chunk - 1) // chunk):
        lo = c * chunk
        e = np.uint64(lo)
        acc = b
        p = s
        while e:  # acc = base * step^lo by square-and-multiply
            if e & np.uint64(1):
                acc = fr_mul(acc, p)
            p = fr_mul(p, p)
            e >>= np.uint64(1)
        for i in range(lo, min(lo + chunk, n)):
            fr_store(out[i], acc)
            acc = fr_mul(acc, s)


@njit(cache=True)
def _fill_tower_levels(tw, top):
    """Given tw[top + j] = w_2top^j, fill the lower levels tw[m + j] = tw[2m + 2j]."""
    m = top >> 1
    while m >= 1:
        for j in range(m):
            tw[m + j] = tw[2 * m + 2 * j]
        m >>= 1


@njit(inline='always')
def _ld(a, i):
    return (a[i, 0], a[i, 1], a[i, 2], a[i, 3])


@njit(inline='always')
def _st(a, i, x):
    a[i, 0] = x[0]
    a[i, 1] = x[1]
    a[i, 2] = x[2]
    a[i, 3] = x[3]


@njit(inline='always')
def _factor(tab_hi, tab_lo, k, e):
    """tab_hi[e >> k] * tab_lo[e & (2^k - 1)]: s^e from two half-size power tables."""
    return fr_mul(_ld(tab_hi, e >> k), _ld(tab_lo, e & ((1 << k) - 1)))


@njit(parallel=True, cache=True)
def _pass(src, dst, tw, log_n, s_lo, s_hi, cols, first, negate, pre, post, const, tab_hi, tab_lo, k):
    """Radix-2 DIT stages s_lo..s_hi-1 (stage s has half-size 2^s) over tiles of 2^(s_hi-s_lo) x cols.

    first: gather src in bit-reversed order (negate: from index -rev(i) mod n, for the intt) and
    apply `pre` scaling by the source index; otherwise src is dst. post: scaling by the output index.
    Scalings: 0 none, 1 times `const`, 2 times s^index from the tables (see _factor).
    """
    n = 1 << log_n
    d = s_hi - s_lo
    rows = 1 << d
    col_span = 1 << s_lo
    col_tiles = col_span // cols
    n_tiles = (n >> s_hi) * col_tiles
    revd = np.empty(rows, dtype=np.int64)
    for i in range(rows):
        revd[i] = _bitrev(i, d)
    c = fr_load(const)
    for t in prange(n_tiles):
        high = t // col_tiles
        col0 = (t % col_tiles) * cols
        base = high * (rows << s_lo) + col0
        buf = np.empty((rows * cols, 4), dtype=np.uint64)
        # gather
        if first:  # s_lo == 0, cols == 1
            rh = _bitrev(high, log_n - d)
            for r in range(rows):
                e = (revd[r] << (log_n - d)) | rh
                if negate:
                    e = (n - e) & (n - 1)
                x = _ld(src, e)
                if pre == 1:
                    x = fr_mul(x, c)
                elif pre == 2:
                    x = fr_mul(x, _factor(tab_hi, tab_lo, k, e))
                _st(buf, r, x)
        else:
            for r in range(rows):
                for q in range(cols):
                    buf[r * cols + q] = src[base + (r << s_lo) + q]
        # butterflies
        for s in range(d):
            m = 1 << s
            gm = m << s_lo  # global half-size: twiddles tw[gm + j], j < gm
            unit = s_lo + s == 0  # the very first stage has twiddle 1 only
            for blk in range(0, rows, 2 * m):
                for jm in range(m):
                    tb = gm + (jm << s_lo) + col0
                    i0 = (blk + jm) * cols
                    i1 = i0 + m * cols
                    for q in range(cols):
                        u = _ld(buf, i0 + q)
                        v = _ld(buf, i1 + q)
                        if not unit:
                            v = fr_mul(v, _ld(tw, tb + q))
                        _st(buf, i0 + q, fr_add(u, v))
                        _st(buf, i1 + q, fr_sub(u, v))
        # scatter
        for r in range(rows):
            for q in range(cols):
                e = base + (r << s_lo) + q
                x = _ld(buf, r * cols + q)
                if post == 1:
                    x = fr_mul(x, c)
                elif post == 2:
                    x = fr_mul(x, _factor(tab_hi, tab_lo, k, e))
                _st(dst, e, x)


# ---------------------------------------------------------------- twiddles and power tables
_tower = np.empty((0, 4), dtype=np.uint64)
_tower_lock = threading.Lock()


def _twiddles(log_n: int) -> np.ndarray:
    """The shared tower tw[m + j] = w_2m^j (m = 2^s < n, j < m), at least n = 2^log_n long."""
    global _tower
    n = 1 << log_n
    with _tower_lock:
        if _tower.shape[0] < n:
            tw = np.empty((n, 4), dtype=np.uint64)
            tw[0] = Fr.const(1)
            if n > 1:
                _fill_powers(Fr.const(1), Fr.const(Domain(log_n).root), tw[n // 2:])
                _fill_tower_levels(tw, n // 2)
            _tower = tw
        return _tower[:n]


def _power_tables(shift: int, factor: int, log_n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Tables for factor * shift^e, e < 2^log_n: tab_hi[e >> k] * tab_lo[e & (2^k - 1)]."""
    k = (log_n + 1) // 2
    tab_lo = np.empty((1 << k, 4), dtype=np.uint64)
    tab_hi = np.empty((1 << (log_n - k), 4), dtype=np.uint64)
    _fill_powers(Fr.const(factor), Fr.const(shift), tab_lo)
    _fill_powers(Fr.const(1), Fr.const(pow(shift, 1 << k, FR_MODULUS)), tab_hi)
    return tab_hi, tab_lo, k


# ---------------------------------------------------------------- driver
def _check(a: np.ndarray, out: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
    if not isinstance(a, np.ndarray) or a.dtype != np.uint64 or a.ndim != 2 or a.shape[1] != 4:
        raise InputError("NTT input must be a uint64 array of shape (n, 4) (Fr Montgomery limbs), got "
                         f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
    n = a.shape[0]
    if n == 0 or n & (n - 1):
        raise InputError(f"NTT length must be a power of two, got {n}")
    log_n = n.bit_length() - 1
    if log_n > TWO_ADICITY:
        raise InputError(f"NTT length 2^{log_n} exceeds the two-adicity of Fr (2^{TWO_ADICITY})")
    if out is None:
        out = np.empty_like(a)
    elif not (isinstance(out, np.ndarray) and out.dtype == np.uint64 and out.shape == a.shape
              and out.flags.c_contiguous and out.flags.writeable):
        raise InputError(f"out must be a writeable C-contiguous uint64 array of shape {a.shape}")
    a = np.ascontiguousarray(a)
    Fr.check_canonical(a, "NTT input element")
    if np.shares_memory(a, out):
        a = a.copy()
    return a, out, log_n


def _transform(a: np.ndarray, out: np.ndarray | None, inverse: bool, shift: int | None) -> np.ndarray:
    """Forward or inverse NTT, on the coset shift*<w> when shift is not None."""
    a, out, log_n = _check(a, out)
    inv_n = Domain(log_n).n_inv
    pre = post = _SCALE_NONE
    const = Fr.const(inv_n)
    tab_hi = tab_lo = const.reshape(1, 4)
    k = 0
    if shift is None:
        pre = _SCALE_CONST if inverse else _SCALE_NONE
    else:
        shift = int(shift) % FR_MODULUS
        if shift == 0:
            raise InputError("coset shift must be non-zero in Fr")
        if inverse:  # out[i] = n^-1 shift^-i (...)
            post = _SCALE_POWERS
            tab_hi, tab_lo, k = _power_tables(pow(shift, -1, FR_MODULUS), inv_n, log_n)
        else:  # scale a[i] by shift^i
            pre = _SCALE_POWERS
            tab_hi, tab_lo, k = _power_tables(shift, 1, log_n)
    tw = _twiddles(log_n)
    n_pass = max(1, -(-log_n // _MAX_PASS_STAGES))
    bounds = [log_n * p // n_pass for p in range(n_pass + 1)]
    for p in range(n_pass):
        s_lo, s_hi = bounds[p], bounds[p + 1]
        first, last = p == 0, p == n_pass - 1
        cols = 1 if first else min(_COLS, 1 << s_lo)
        _pass(a if first else out, out, tw, log_n, s_lo, s_hi, cols, first, inverse,
              pre if first else _SCALE_NONE, post if last else _SCALE_NONE, const, tab_hi, tab_lo, k)
    return out


def ntt(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Forward NTT: out[j] = sum_i a[i] w^(ij). out may be a itself (in place)."""
    return _transform(a, out, inverse=False, shift=None)


def intt(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Inverse NTT: out[j] = n^-1 sum_i a[i] w^(-ij). out may be a itself (in place)."""
    return _transform(a, out, inverse=True, shift=None)


def coset_ntt(a: np.ndarray, shift: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """NTT on the coset shift*<w> (shift: an Fr integer, default g = 7): sum_i a[i] shift^i w^(ij)."""
    return _transform(a, out, inverse=False, shift=MULTIPLICATIVE_GENERATOR if shift is None else shift)


def coset_intt(a: np.ndarray, shift: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Inverse of coset_ntt: out[i] = shift^-i * intt(a)[i]."""
    return _transform(a, out, inverse=True, shift=MULTIPLICATIVE_GENERATOR if shift is None else shift)
