"""NTT over Fr (BLS12-381 scalar field) on a CUDA GPU through CuPy, matching cuzk.backend.cpu.ntt.

Same transforms and roots as the CPU NTT (bellperson's, `cuzk.ff.domain.Domain(log2 n)`: w_n = 7^((r-1)/n)):
    ntt(a)[j] = sum_i a[i] w^(ij)             intt(a)[j] = n^-1 sum_i a[i] w^(-ij)
    coset_ntt(a)[j] = sum_i a[i] s^i w^(ij)   coset_intt(a)[i] = s^-i intt(a)[i]    (s = 7 by default)
Arrays are (n, 4) uint64 Montgomery limbs, natural order in and out, n = 2^k with k <= 27. A numpy
input is copied to the GPU and the result copied back; a cupy input stays on the device and a cupy
array is returned. The kernels (kernels/ntt/ntt.cu) come from cuzk.backend.cuda.loader; twiddle and
scaling tables are built on the device once per size (and shift) and kept. See kernels/ntt/ntt.cu for
the algorithm and bench/NTT_NOTES.md for measurements. CuPy is imported lazily: this module imports
on machines without it.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.backend.cuda import loader
from cuzk.errors import BackendUnavailableError, InputError, NonCanonicalError
from cuzk.ff.domain import MULTIPLICATIVE_GENERATOR, Domain
from cuzk.ff.fields import Fr
from cuzk.ff.limbs import FR_MODULUS

MAX_LOG_N = 27

_MAX_DIGIT = 8  # log2 of the largest transform one block does in shared memory
_MAX_LOG_G = 3  # up to 8 neighbouring transforms per block (256-byte runs in memory)
_MAX_THREADS = 256
_SCALE_NONE, _SCALE_CONST, _SCALE_TABLE = 0, 1, 2
_F_FIRST, _F_LAST, _F_NEGATE, _F_TW_ROOTS = 1, 2, 4, 8
_twiddle_table_max: int | None = None  # bytes of the largest pass table kept (None: every one)


def limit_twiddle_tables(nbytes: int | None) -> None:
    """Keep no pass twiddle table above `nbytes` (None: no limit): a larger pass computes its
    twiddles from the root tables (one more product per element) instead of reading a table (a
    2^27 transform's first pass would keep one of 2^27 elements, 4 GiB). A VRAM cap sets it."""
    global _twiddle_table_max
    _twiddle_table_max = nbytes
    with _tables_lock:  # tables above the limit made before it go
        for key in [k for k, t in _tables.items() if k[1] == "tw" and nbytes is not None and t.nbytes > nbytes]:
            del _tables[key]


def drop_tables() -> None:
    """Forget every kept table (made again at their next use)."""
    with _tables_lock:
        _tables.clear()


def table_bytes(log_n: int) -> int:
    """Device bytes the transforms of size 2^log_n keep (root, scale and pass tables) under the
    current limit_twiddle_tables."""
    h = _split(log_n)
    roots = 32 * ((1 << (log_n - h)) + (1 << h))
    passes = [32 * (1 << (p.log_r + p.log_st)) for p in plan(log_n)[:-1]]
    kept = sum(b for b in passes if _twiddle_table_max is None or b <= _twiddle_table_max)
    return 3 * roots + kept + 32 * sum(1 << max(0, p.log_r - 1) for p in plan(log_n))


@dataclass(frozen=True)
class Pass:
    """One launch of ntt_pass: transforms of size 2^log_r along a digit of stride 2^log_st."""

    log_r: int
    log_g: int
    log_st: int
    first: bool
    last: bool

    def launch(self, log_n: int) -> tuple[int, int, int]:
        """(blocks, threads, dynamic shared-memory bytes)."""
        tile = 1 << (self.log_r + self.log_g)
        threads = min(_MAX_THREADS, max(32, tile // 8))
        return 1 << (log_n - self.log_r - self.log_g), threads, (2 * tile + (1 << self.log_r)) * 16


def plan(log_n: int, max_digit: int = _MAX_DIGIT) -> list[Pass]:
    """Split 2^log_n into ceil(log_n / max_digit) digits as even as possible, most significant first."""
    n_pass = max(1, -(-log_n // max_digit))
    digits = [log_n // n_pass + (q < log_n % n_pass) for q in range(n_pass)]
    passes = []
    for p, d in enumerate(digits):
        last = p == n_pass - 1
        log_st = sum(digits[p + 1:])
        log_g = min(_MAX_LOG_G, log_n - d if last else log_st)
        passes.append(Pass(d, log_g, log_st, p == 0, last))
    return passes


# ---------------------------------------------------------------- device state
def _cupy():
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise BackendUnavailableError("the CUDA NTT needs cupy (pip install 'cuzk[gpu]' for cupy-cuda12x, or the "
                                      "cupy wheel that matches your CUDA)") from exc
    return cupy


def _kernel(name: str):
    return loader.function(name)


def _launch1d(name: str, count: int, args: tuple) -> None:
    threads = 128
    _kernel(name)(((count + threads - 1) // threads,), (threads,), args)


_tables: dict[tuple, object] = {}
_tables_lock = threading.RLock()  # builders nest (twiddles use the root tables)


def _cached(key: tuple, build):
    """A device table built once per (device, key)."""
    key = (_cupy().cuda.Device().id, *key)
    with _tables_lock:
        if key not in _tables:
            _tables[key] = build()
        return _tables[key]


def powers(base: int, count: int, factor: int = 1):
    """Device array factor * base^i, i < count."""
    cp = _cupy()
    out = cp.empty((count, 4), dtype=cp.uint64)
    b, c = cp.asarray(Fr.const(base)), cp.asarray(Fr.const(factor))
    _launch1d("fr_powers", count, (b, c, out, np.uint64(count)))
    return out


def _split(log_n: int) -> int:
    return (log_n + 1) // 2


def _root_tables(log_n: int):
    """(hi, lo): w^(t 2^split) and w^t for the size-2^log_n root w."""
    def build():
        h, w = _split(log_n), Domain(log_n).root
        return powers(pow(w, 1 << h, FR_MODULUS), 1 << (log_n - h)), powers(w, 1 << h)
    return _cached(("roots", log_n), build)


def _twiddles(log_n: int, count: int, log_st: int, mul: int):
    """fr_twiddles table: w_n^((k J mul) mod n) for i = (k, J), or w_n^(i mul) when log_st < 0."""
    def build():
        cp = _cupy()
        hi, lo = _root_tables(log_n)
        out = cp.empty((count, 4), dtype=cp.uint64)
        _launch1d("fr_twiddles", count, (hi, lo, np.int32(_split(log_n)), out, np.uint64(count),
                                          np.int32(log_st), np.uint64(mul), np.int32(log_n)))
        return out
    return _cached(("tw", log_n, count, log_st, mul), build)


def _scale_tables(kind: str, log_n: int, shift: int):
    """(mode, hi, lo) for the first pass ("pre") or the last pass ("post") of transform `kind`."""
    h, inv_n = _split(log_n), Domain(log_n).n_inv
    if kind == "intt":
        return _SCALE_CONST, *_cached(("const", inv_n), lambda: (powers(1, 1, inv_n),) * 2)
    if kind in ("coset_ntt", "coset_intt"):
        s, c = (shift, 1) if kind == "coset_ntt" else (pow(shift, -1, FR_MODULUS), inv_n)
        return _SCALE_TABLE, *_cached(("scale", log_n, s, c), lambda: (
            powers(pow(s, 1 << h, FR_MODULUS), 1 << (log_n - h), c), powers(s, 1 << h)))
    return _SCALE_NONE, None, None


# ---------------------------------------------------------------- transforms
def _run(a, kind: str, shift: int | None, check: bool, in_place: bool = False):
    """The transform of device array `a`: a new array, or `a` itself when in_place. The first pass reads
    a, the middle passes work in place in one scratch array and the last writes the output (its
    digit-reversed reads cannot share a buffer with its writes), so in place the transform holds a
    and one scratch array, else a, the scratch and the output."""
    cp = _cupy()
    log_n = a.shape[0].bit_length() - 1
    if log_n == 0:  # n = 1: every transform is the identity (n^-1 = s^0 = 1)
        return a if in_place else a.copy()
    passes = plan(log_n)
    out = a if in_place and len(passes) > 1 else cp.empty_like(a)
    shift = MULTIPLICATIVE_GENERATOR if shift is None else shift
    pre = _scale_tables(kind, log_n, shift) if kind in ("intt", "coset_ntt") else (_SCALE_NONE, None, None)
    post = _scale_tables(kind, log_n, shift) if kind == "coset_intt" else (_SCALE_NONE, None, None)
    negate = _F_NEGATE if kind in ("intt", "coset_intt") else 0
    digits = [p.log_r for p in passes[:-1]] + [0] * (4 - len(passes))
    flag = cp.zeros(1, dtype=cp.uint32)
    tmp = cp.empty_like(a) if len(passes) > 1 else None
    kern = _kernel("ntt_pass")
    for p in passes:
        src = a if p.first else tmp
        dst = out if p.last else tmp
        wloc = _twiddles(log_n, max(1, 1 << (p.log_r - 1)), -1, 1 << (log_n - p.log_r))
        count, mul = 1 << (p.log_r + p.log_st), 1 << (log_n - p.log_r - p.log_st)
        roots = not p.last and _twiddle_table_max is not None and 32 * count > _twiddle_table_max
        tw, tw_lo = (wloc, wloc) if p.last else _root_tables(log_n) if roots else \
            (_twiddles(log_n, count, p.log_st, mul), wloc)
        blocks, threads, smem = p.launch(log_n)
        if kern.max_dynamic_shared_size_bytes < smem:
            kern.max_dynamic_shared_size_bytes = smem
        flags = (_F_FIRST if p.first else 0) | (_F_LAST if p.last else 0) | (negate if p.first else 0) \
            | (_F_TW_ROOTS if roots else 0)
        kern((blocks,), (threads,), (
            src, dst, tw, wloc, *(t if t is not None else wloc for t in (*pre[1:], *post[1:])), flag,
            np.int32(log_n), np.int32(p.log_r), np.int32(p.log_g), np.int32(p.log_st), np.int32(flags),
            np.int32(pre[0] if p.first else _SCALE_NONE), np.int32(post[0] if p.last else _SCALE_NONE),
            np.int32(_split(log_n)), np.int32(len(passes) - 1), *map(np.int32, digits[:3]), tw_lo,
            np.uint64(mul if roots else 0)),
            shared_mem=smem)
    if check and int(flag.get()[0]):
        raise NonCanonicalError("NTT input has Fr elements whose limbs are not below the modulus r")
    if in_place and out is not a:
        a[...] = out
        return a
    return out


def _on_device(a):
    """`a` checked (an (n, 4) uint64 array, n a power of two <= 2^MAX_LOG_N) as a contiguous device array."""
    cp = _cupy()
    on_host = isinstance(a, np.ndarray)
    if not (on_host or isinstance(a, cp.ndarray)) or a.dtype != np.uint64 or a.ndim != 2 or a.shape[1] != 4:
        raise InputError("NTT input must be a uint64 array of shape (n, 4) (Fr Montgomery limbs), got "
                         f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
    n = a.shape[0]
    if n == 0 or n & (n - 1):
        raise InputError(f"NTT length must be a power of two, got {n}")
    if n > 1 << MAX_LOG_N:
        raise InputError(f"the CUDA NTT supports up to 2^{MAX_LOG_N} elements, got 2^{int(math.log2(n))}")
    return cp.ascontiguousarray(cp.asarray(a))


def _transform(a, kind: str, shift: int | None = None, check: bool = True):
    if shift is not None and int(shift) % FR_MODULUS == 0:
        raise InputError("coset shift must be non-zero in Fr")
    out = _run(_on_device(a), kind, None if shift is None else int(shift) % FR_MODULUS, check)
    return out.get() if isinstance(a, np.ndarray) else out


def ntt(a, check: bool = True):
    """Forward NTT: out[j] = sum_i a[i] w^(ij). numpy in -> numpy out, cupy in -> cupy out.

    check: verify that every input element is canonical (< r); raises NonCanonicalError (this
    synchronizes with the GPU; pass False to keep the call asynchronous).
    """
    return _transform(a, "ntt", check=check)


def intt(a, check: bool = True):
    """Inverse NTT: out[j] = n^-1 sum_i a[i] w^(-ij)."""
    return _transform(a, "intt", check=check)


def coset_ntt(a, shift: int | None = None, check: bool = True):
    """NTT on the coset shift*<w> (default shift 7): out[j] = sum_i a[i] shift^i w^(ij)."""
    return _transform(a, "coset_ntt", shift, check)


def coset_intt(a, shift: int | None = None, check: bool = True):
    """Inverse of coset_ntt: out[i] = shift^-i intt(a)[i]."""
    return _transform(a, "coset_intt", shift, check)


def to_coset(x, between: Callable[[], None] = lambda: None):
    """x (a device (n, 4) array) replaced in place by coset_ntt(intt(x)): the values on the coset
    g<w> of the polynomial that x interpolates on <w>; between() runs after each transform (its
    scratch freed). NonCanonicalError for limbs >= r."""
    x = _on_device(x)
    _run(x, "intt", None, True, in_place=True)
    between()
    _run(x, "coset_ntt", None, False, in_place=True)
    between()
    return x


def mul_assign(a, b):
    """a *= b elementwise in place (device (n, 4) arrays)."""
    _launch1d("fr_mul_assign", a.shape[0], (a, b, np.uint64(a.shape[0])))
    return a


def quotient_coefficients(ab_parts: Iterable[tuple[int, Any]], c):
    """Coefficients 0 .. n-2 of H = (A B - C) / Z from the coset values of A B, given as device parts
    (row offset, rows), and those of C in the device array c (overwritten: the result is a view of
    it). Z(g w^j) = g^n - 1 is one constant, so the division is pointwise; coset_intt interpolates H."""
    n = c.shape[0]
    z_inv = _cupy().asarray(Fr.const(Domain(n.bit_length() - 1).coset_vanishing_inv))
    for lo, part in ab_parts:
        _launch1d("fr_sub_scale", part.shape[0], (part, c[lo: lo + part.shape[0]], z_inv, np.uint64(part.shape[0])))
    return _run(c, "coset_intt", None, False, in_place=True)[: n - 1]
