"""A tiny pure-Python-int BLS12-381 reference (for selftest, the GPU tests and the benches) (affine, double-and-add).

Points are tuples of ints (G1: (x, y); G2: ((x0, x1), (y0, y1))), None is the identity.
Conversions to/from the shared limb layout (Montgomery, little-endian uint64 limbs) are included and
written out in plain integers on purpose: they are this oracle's own, independent of cuzk.ff's kernels.
The moduli and generators are cuzk's (data, not logic).
"""
from __future__ import annotations

import numpy as np

from cuzk.ec.curves import G1_GENERATOR, G2_GENERATOR
from cuzk.ff import limbs

P = limbs.FQ_MODULUS
R = limbs.FR_MODULUS
G1 = G1_GENERATOR
G2 = G2_GENERATOR


# ---- field arithmetic -------------------------------------------------------------------------
def f_add(a, b):
    return ((a[0] + b[0]) % P, (a[1] + b[1]) % P) if isinstance(a, tuple) else (a + b) % P


def f_sub(a, b):
    return ((a[0] - b[0]) % P, (a[1] - b[1]) % P) if isinstance(a, tuple) else (a - b) % P


def f_mul(a, b):
    if isinstance(a, tuple):
        return ((a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P)
    return a * b % P


def f_inv(a):
    if isinstance(a, tuple):
        t = pow(a[0] * a[0] + a[1] * a[1], P - 2, P)
        return (a[0] * t % P, -a[1] * t % P)
    return pow(a, P - 2, P)


def f_small(k, like):
    return (k % P, 0) if isinstance(like, tuple) else k % P


# ---- curve ------------------------------------------------------------------------------------
def add(p, q):
    if p is None:
        return q
    if q is None:
        return p
    (x1, y1), (x2, y2) = p, q
    if x1 == x2:
        if y1 != y2 or y1 in (0, (0, 0)):
            return None
        lam = f_mul(f_mul(f_small(3, x1), f_mul(x1, x1)), f_inv(f_add(y1, y1)))
    else:
        lam = f_mul(f_sub(y2, y1), f_inv(f_sub(x2, x1)))
    x3 = f_sub(f_sub(f_mul(lam, lam), x1), x2)
    return (x3, f_sub(f_mul(lam, f_sub(x1, x3)), y1))


def neg(p):
    if p is None:
        return None
    return (p[0], f_sub(f_small(0, p[1]), p[1]))


def mul(p, k: int):
    k %= R
    acc, base = None, p
    while k:
        if k & 1:
            acc = add(acc, base)
        base = add(base, base)
        k >>= 1
    return acc


def msm(points, scalars):
    acc = None
    for p, s in zip(points, scalars):
        acc = add(acc, mul(p, s))
    return acc


# ---- limb layout --------------------------------------------------------------------------------
def to_limbs(v: int, n: int) -> list[int]:
    return [(v >> (64 * i)) & (2**64 - 1) for i in range(n)]


def from_limbs(a) -> int:
    return sum(int(x) << (64 * i) for i, x in enumerate(a))


def fq_to_mont(v: int) -> list[int]:
    return to_limbs(v * 2**384 % P, 6)


def fq_from_mont(a) -> int:
    return from_limbs(a) * pow(2**384, -1, P) % P


def fr_to_mont_array(scalars) -> np.ndarray:
    return np.array([to_limbs(int(s) % R * 2**256 % R, 4) for s in scalars], dtype=np.uint64).reshape(-1, 4)


def encode(points, g2: bool) -> np.ndarray:
    """Affine points -> uint64 array (n, 2, 6) or (n, 2, 2, 6), identity as zeros."""
    shape = (len(points), 2, 2, 6) if g2 else (len(points), 2, 6)
    out = np.zeros(shape, dtype=np.uint64)
    for i, p in enumerate(points):
        if p is None:
            continue
        for j, c in enumerate(p):
            if g2:
                out[i, j, 0], out[i, j, 1] = fq_to_mont(c[0]), fq_to_mont(c[1])
            else:
                out[i, j] = fq_to_mont(c)
    return out


def decode(a: np.ndarray, g2: bool):
    """One affine point array (2, 6) / (2, 2, 6) -> tuple or None."""
    if not a.any():
        return None
    if g2:
        return tuple((fq_from_mont(a[j, 0]), fq_from_mont(a[j, 1])) for j in range(2))
    return (fq_from_mont(a[0]), fq_from_mont(a[1]))


# ---- GPU-side helpers for large checks (cupy imported lazily) ------------------------------------
def random_mont_scalars(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random Fr elements in Montgomery form (values below 2^254 < r), shape (n, 4) uint64."""
    s = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    s[:, 3] >>= np.uint64(2)
    return s


def dot_mod_r(canon_u32, k_u32) -> int:
    """sum_i s_i * k_i mod r on the GPU: s_i canonical (n, 8) u32, k_i (n, 2) u32 (64-bit)."""
    import cupy as cp

    s16 = cp.ascontiguousarray(canon_u32).view(cp.uint16).astype(cp.uint64)  # (n, 16)
    k16 = cp.ascontiguousarray(k_u32).view(cp.uint16).astype(cp.uint64)  # (n, 4)
    total = 0
    for b in range(4):
        sums = (s16 * k16[:, b : b + 1]).sum(axis=0).get()  # each < 2^32 * n
        total += sum(int(v) << (16 * (a + b)) for a, v in enumerate(sums))
    return total % R
