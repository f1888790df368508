"""Multi-scalar multiplication sum_i [k_i] P_i on the CPU: Pippenger with signed window digits.

Scalars are cut into c-bit signed digits d in [-(2^(c-1) - 1), 2^(c-1)]; in each window a point
goes into bucket |d| (negated when d < 0) by an XYZZ mixed addition, buckets are summed with a
running sum, and windows are joined by Horner's rule. Windows run in parallel (GIL-free kernels on a
thread pool), each thread reusing its own bucket array. The kernels are generic: the same code
serves G1 and G2.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from cuzk.ec.formulas import (aff_is_identity, aff_neg, load_affine, load_xyzz, store_affine, store_xyzz,
                              xyzz_add, xyzz_dbl, xyzz_identity, xyzz_madd, xyzz_to_affine)
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.util.parallel import parallel_for

SCALAR_BITS = 255  # canonical Fr elements are below r < 2^255


def window_bits(n: int) -> int:
    """Window width c minimising (windows) x (n mixed additions + 2^c bucket-sum additions)."""
    def cost(c: int) -> float:
        return -(-(SCALAR_BITS + 1) // c) * (10 * n + 14 * 2**c)
    return min(range(1, 17), key=cost)


@njit(nogil=True, cache=True)
def _signed_digits(k, c, out, lo, hi):
    """out[w, i]: signed c-bit digits of the plain 4-limb scalars k[i], least significant first."""
    mask = (np.uint64(1) << np.uint64(c)) - np.uint64(1)
    half = 1 << (c - 1)
    for i in range(lo, hi):
        carry = 0
        for w in range(out.shape[0]):
            bit = w * c
            limb, off = bit >> 6, bit & 63
            v = k[i, limb] >> np.uint64(off)
            if off + c > 64 and limb < 3:
                v |= k[i, limb + 1] << np.uint64(64 - off)
            d = np.int64(v & mask) + carry
            carry = 0
            if d > half:
                d -= 1 << c
                carry = 1
            out[w, i] = d


@njit(cache=True)
def _window_sum(bases, digits, buckets):
    """sum_i [digits[i]] bases[i] (XYZZ) with the given scratch buckets (|digit| - 1 indexes them)."""
    buckets[:] = 0
    for i in range(digits.shape[0]):
        d = digits[i]
        if d == 0:
            continue
        a = load_affine(bases[i])
        if aff_is_identity(a):
            continue
        if d < 0:
            a = aff_neg(a)
            d = -d
        store_xyzz(buckets[d - 1], xyzz_madd(load_xyzz(buckets[d - 1]), a))
    running = xyzz_identity(bases[0, 0])
    total = running
    for j in range(buckets.shape[0] - 1, -1, -1):
        running = xyzz_add(running, load_xyzz(buckets[j]))
        total = xyzz_add(total, running)
    return total


@njit(nogil=True, cache=True)
def _windows_kernel(bases, digits, nbuckets, out, lo, hi):
    """Window sums out[lo:hi] (XYZZ), reusing one array of nbuckets buckets."""
    buckets = np.empty((nbuckets,) + out.shape[1:], dtype=np.uint64)
    for w in range(lo, hi):
        store_xyzz(out[w], _window_sum(bases, digits[w], buckets))


@njit(cache=True)
def _combine(sums, c, out):
    """out = sum_w [2^(c w)] sums[w] (affine)."""
    acc = load_xyzz(sums[sums.shape[0] - 1])
    for w in range(sums.shape[0] - 2, -1, -1):
        for _ in range(c):
            acc = xyzz_dbl(acc)
        acc = xyzz_add(acc, load_xyzz(sums[w]))
    store_affine(out, xyzz_to_affine(acc))


def _msm(bases: np.ndarray, scalars: np.ndarray, coord: tuple[int, ...], name: str) -> np.ndarray:
    if not isinstance(bases, np.ndarray) or bases.dtype != np.uint64 or bases.shape[1:] != (2, *coord):
        raise InputError(f"{name}: bases must be a uint64 array of shape (n, 2, "
                         f"{', '.join(map(str, coord))}), got {getattr(bases, 'dtype', type(bases).__name__)} "
                         f"{getattr(bases, 'shape', '')}")
    if not isinstance(scalars, np.ndarray) or scalars.dtype != np.uint64 or scalars.ndim != 2 \
            or scalars.shape[1] != 4:
        raise InputError(f"{name}: scalars must be a uint64 array of shape (n, 4), got "
                         f"{getattr(scalars, 'dtype', type(scalars).__name__)} {getattr(scalars, 'shape', '')}")
    if len(bases) != len(scalars):
        raise InputError(f"{name}: {len(bases)} bases but {len(scalars)} scalars")
    out = np.zeros((2, *coord), dtype=np.uint64)
    n = len(bases)
    if n == 0:
        return out
    plain = Fr.to_canonical_limbs(scalars)
    c = window_bits(n)
    nwin = -(-(SCALAR_BITS + 1) // c)
    digits = np.empty((nwin, n), dtype=np.int32)
    parallel_for(_signed_digits, n, plain, c, digits)
    del plain  # the digits replace the scalars
    sums = np.empty((nwin, 4, *coord), dtype=np.uint64)
    parallel_for(_windows_kernel, nwin, np.ascontiguousarray(bases), digits, 1 << (c - 1), sums)
    _combine(sums, c, out)
    return out


def msm_g1(bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
    """sum_i [scalars[i]] bases[i]: bases (n, 2, 6) affine G1, scalars (n, 4) Fr Montgomery -> (2, 6)."""
    return _msm(bases, scalars, (6,), "msm_g1")


def msm_g2(bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
    """sum_i [scalars[i]] bases[i]: bases (n, 2, 2, 6) affine G2, scalars (n, 4) -> (2, 2, 6)."""
    return _msm(bases, scalars, (2, 6), "msm_g2")
