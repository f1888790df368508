"""BLS12-381 groups G1 (y^2 = x^3 + 4 over Fq) and G2 (y^2 = x^3 + 4(u+1) over Fq2) on the CPU.

Point forms (uint64 Montgomery limb arrays, see `cuzk.ff.fields`):
- affine (x, y), array shape (..., 2, *coord); the identity is all zeros ((0, 0) is on neither curve);
- Jacobian (X, Y, Z), x = X/Z^2, y = Y/Z^3, shape (..., 3, *coord); the identity has Z = 0;
- XYZZ (X, Y, ZZ, ZZZ), x = X/ZZ, y = Y/ZZZ, identity ZZ = 0: only inside MSM buckets, whose
  mixed addition then costs 8M + 2S (Jacobian: 7M + 4S plus more additions).
with coord = (6,) for G1 and (2, 6) for G2.

The element functions (`jac_*`, `xyzz_*`, `aff_*`) are generic: numba specialises each for Fq tuples
(G1) or Fq2 tuples (G2) through the field dispatchers `_f*`, so every formula is written once. Use
them only inside jitted code. `G1` and `G2` are the array-level API.
"""
from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit, types
from numba.extending import overload

from cuzk.ff import limbs
from cuzk.ff import fields
from cuzk.errors import InputError

# ---------------------------------------------------------------- constants
P = limbs.FQ_MODULUS
R = limbs.FR_MODULUS
X_ABS = 0xD201000000010000  # |x|, x = -X_ABS is the BLS parameter


def _limbs(v: int, n: int) -> tuple:
    return tuple(np.uint64((v >> (64 * i)) & (2**64 - 1)) for i in range(n))


def _mont(v: int) -> tuple:
    return _limbs(v * 2**384 % P, 6)


def _fq2_mul_int(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return ((a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P)


def _fq2_pow_int(a: tuple[int, int], e: int) -> tuple[int, int]:
    acc = (1, 0)
    for bit in bin(e)[2:]:
        acc = _fq2_mul_int(acc, acc)
        if bit == "1":
            acc = _fq2_mul_int(acc, a)
    return acc


_B1 = _mont(4)
_B2 = (_mont(4), _mont(4))
# phi(x, y) = (BETA x, y) acts on G1 as [-x^2] for this cube root of unity (Scott 2021).
_BETA = _mont(pow(2, (P - 1) // 3, P))
# psi = untwist-Frobenius-twist acts on G2 as [x]: psi(x, y) = (conj(x) PSI_X, conj(y) PSI_Y).
_PSI_X = tuple(_mont(c) for c in _fq2_pow_int((1, 1), P * P - 1 - (P - 1) // 3))
_PSI_Y = tuple(_mont(c) for c in _fq2_pow_int((1, 1), P * P - 1 - (P - 1) // 2))
_X2_LIMBS = _limbs(X_ABS * X_ABS, 4)
_X_LIMBS = _limbs(X_ABS, 4)

G1_GENERATOR = (
    0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
    0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1,
)
G2_GENERATOR = (
    (0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
     0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E),
    (0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
     0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE),
)


# ---------------------------------------------------------------- field dispatch (Fq or Fq2)
def _is_fq2(t) -> bool:
    """numba type test: an Fq2 tuple (two Fq tuples) or an Fq2 array view (2-D)."""
    if isinstance(t, types.Array):
        return t.ndim == 2
    return isinstance(t, types.BaseTuple) and isinstance(t[0], types.BaseTuple)


def _dispatch1(fq_fn, fq2_fn):
    def stub(a):
        raise NotImplementedError("jitted code only")

    @overload(stub, inline="always")
    def _impl(a):
        fn = fq2_fn if _is_fq2(a) else fq_fn
        return lambda a: fn(a)

    return stub


def _dispatch2(fq_fn, fq2_fn):
    def stub(a, b):
        raise NotImplementedError("jitted code only")

    @overload(stub, inline="always")
    def _impl(a, b):
        fn = fq2_fn if _is_fq2(a) else fq_fn
        return lambda a, b: fn(a, b)

    return stub


@njit(inline="always", cache=True)
def _fq_zero(a):
    return limbs.FQ_ZERO


@njit(inline="always", cache=True)
def _fq2_zero(a):
    return fields.FQ2_ZERO


@njit(inline="always", cache=True)
def _fq_one(a):
    return limbs.FQ_ONE


@njit(inline="always", cache=True)
def _fq2_one(a):
    return fields.FQ2_ONE


@njit(inline="always", cache=True)
def _fq_b(a):
    return _B1


@njit(inline="always", cache=True)
def _fq2_b(a):
    return _B2


_fadd = _dispatch2(limbs.fq_add, fields.fq2_add)
_fsub = _dispatch2(limbs.fq_sub, fields.fq2_sub)
_fmul = _dispatch2(limbs.fq_mul, fields.fq2_mul)
_feq = _dispatch2(limbs.fq_eq, fields.fq2_eq)
_fstore = _dispatch2(limbs.fq_store, fields.fq2_store)
_fneg = _dispatch1(limbs.fq_neg, fields.fq2_neg)
_fdbl = _dispatch1(limbs.fq_dbl, fields.fq2_dbl)
_fsqr = _dispatch1(limbs.fq_sqr, fields.fq2_sqr)
_finv = _dispatch1(limbs.fq_inv, fields.fq2_inv)
_fiszero = _dispatch1(limbs.fq_is_zero, fields.fq2_is_zero)
_fload = _dispatch1(limbs.fq_load, fields.fq2_load)
_fzero = _dispatch1(_fq_zero, _fq2_zero)  # the constant 0 of the argument's field
_fone = _dispatch1(_fq_one, _fq2_one)
_fb = _dispatch1(_fq_b, _fq2_b)  # the curve coefficient b


# ---------------------------------------------------------------- element functions
@njit(inline="always", cache=True)
def aff_is_identity(a):
    return _fiszero(a[0]) and _fiszero(a[1])


@njit(inline="always", cache=True)
def aff_neg(a):
    return (a[0], _fneg(a[1]))


@njit(cache=True)
def aff_on_curve(a):
    """y^2 == x^3 + b; the identity counts as on the curve."""
    if aff_is_identity(a):
        return True
    x, y = a
    return _feq(_fsqr(y), _fadd(_fmul(_fsqr(x), x), _fb(x)))


@njit(inline="always", cache=True)
def jac_identity(like):
    z = _fzero(like)
    return (z, z, z)


@njit(cache=True)
def jac_from_affine(a):
    if aff_is_identity(a):
        return jac_identity(a[0])
    return (a[0], a[1], _fone(a[0]))


@njit(inline="always", cache=True)
def jac_neg(p):
    return (p[0], _fneg(p[1]), p[2])


@njit(cache=True)
def jac_dbl(p):
    """dbl-2009-l (a = 0): 2M + 5S."""
    X, Y, Z = p
    if _fiszero(Z):
        return p
    a = _fsqr(X)
    b = _fsqr(Y)
    c = _fsqr(b)
    d = _fdbl(_fsub(_fsub(_fsqr(_fadd(X, b)), a), c))
    e = _fadd(_fdbl(a), a)
    x3 = _fsub(_fsqr(e), _fdbl(d))
    y3 = _fsub(_fmul(e, _fsub(d, x3)), _fdbl(_fdbl(_fdbl(c))))
    return (x3, y3, _fdbl(_fmul(Y, Z)))


@njit(cache=True)
def jac_add(p, q):
    """add-2007-bl: 11M + 5S; handles the identity, P + P and P + (-P)."""
    X1, Y1, Z1 = p
    X2, Y2, Z2 = q
    if _fiszero(Z1):
        return q
    if _fiszero(Z2):
        return p
    z1z1 = _fsqr(Z1)
    z2z2 = _fsqr(Z2)
    u1 = _fmul(X1, z2z2)
    s1 = _fmul(_fmul(Y1, Z2), z2z2)
    h = _fsub(_fmul(X2, z1z1), u1)
    r = _fdbl(_fsub(_fmul(_fmul(Y2, Z1), z1z1), s1))
    if _fiszero(h):
        return jac_dbl(p) if _fiszero(r) else jac_identity(X1)
    i = _fsqr(_fdbl(h))
    j = _fmul(h, i)
    v = _fmul(u1, i)
    x3 = _fsub(_fsub(_fsqr(r), j), _fdbl(v))
    y3 = _fsub(_fmul(r, _fsub(v, x3)), _fdbl(_fmul(s1, j)))
    z3 = _fmul(_fsub(_fsub(_fsqr(_fadd(Z1, Z2)), z1z1), z2z2), h)
    return (x3, y3, z3)


@njit(cache=True)
def jac_madd(p, a):
    """p + a for an affine a, madd-2007-bl: 7M + 4S; handles identities, P + P and P + (-P)."""
    X1, Y1, Z1 = p
    x2, y2 = a
    if aff_is_identity(a):
        return p
    if _fiszero(Z1):
        return (x2, y2, _fone(x2))
    z1z1 = _fsqr(Z1)
    h = _fsub(_fmul(x2, z1z1), X1)
    r = _fdbl(_fsub(_fmul(_fmul(y2, Z1), z1z1), Y1))
    if _fiszero(h):
        return jac_dbl(p) if _fiszero(r) else jac_identity(X1)
    hh = _fsqr(h)
    i = _fdbl(_fdbl(hh))
    j = _fmul(h, i)
    v = _fmul(X1, i)
    x3 = _fsub(_fsub(_fsqr(r), j), _fdbl(v))
    y3 = _fsub(_fmul(r, _fsub(v, x3)), _fdbl(_fmul(Y1, j)))
    z3 = _fsub(_fsub(_fsqr(_fadd(Z1, h)), z1z1), hh)
    return (x3, y3, z3)


@njit(inline="always", cache=True)
def jac_to_affine_with(p, zinv):
    """Affine form of p given zinv = 1/Z (any value when p is the identity)."""
    if _fiszero(p[2]):
        z = _fzero(p[0])
        return (z, z)
    zinv2 = _fsqr(zinv)
    return (_fmul(p[0], zinv2), _fmul(p[1], _fmul(zinv2, zinv)))


@njit(cache=True)
def jac_to_affine(p):
    return jac_to_affine_with(p, _finv(p[2]))


@njit(cache=True)
def jac_eq_affine(p, a):
    """Whether Jacobian p and affine a are the same point."""
    if _fiszero(p[2]):
        return aff_is_identity(a)
    if aff_is_identity(a):
        return False
    z2 = _fsqr(p[2])
    return _feq(p[0], _fmul(a[0], z2)) and _feq(p[1], _fmul(a[1], _fmul(z2, p[2])))


@njit(cache=True)
def jac_mul(a, k):
    """[k] a for an affine a and a plain (non-Montgomery) 4-limb integer k < 2^256."""
    acc = jac_identity(a[0])
    for i in range(255, -1, -1):
        acc = jac_dbl(acc)
        if (k[i >> 6] >> np.uint64(i & 63)) & np.uint64(1):
            acc = jac_madd(acc, a)
    return acc


@njit(inline="always", cache=True)
def xyzz_identity(like):
    z = _fzero(like)
    return (z, z, z, z)


@njit(cache=True)
def xyzz_dbl(p):
    """dbl-2008-s-1 (a = 0): 6M + 3S."""
    X1, Y1, ZZ1, ZZZ1 = p
    if _fiszero(ZZ1):
        return p
    u = _fdbl(Y1)
    v = _fsqr(u)
    w = _fmul(u, v)
    s = _fmul(X1, v)
    xx = _fsqr(X1)
    m = _fadd(_fdbl(xx), xx)
    x3 = _fsub(_fsqr(m), _fdbl(s))
    y3 = _fsub(_fmul(m, _fsub(s, x3)), _fmul(w, Y1))
    return (x3, y3, _fmul(v, ZZ1), _fmul(w, ZZZ1))


@njit(cache=True)
def xyzz_madd(p, a):
    """p + a for a non-identity affine a, madd-2008-s: 8M + 2S; handles P + P and P + (-P)."""
    X1, Y1, ZZ1, ZZZ1 = p
    x2, y2 = a
    if _fiszero(ZZ1):
        one = _fone(x2)
        return (x2, y2, one, one)
    pp_ = _fsub(_fmul(x2, ZZ1), X1)
    r = _fsub(_fmul(y2, ZZZ1), Y1)
    if _fiszero(pp_):
        if _fiszero(r):
            one = _fone(x2)
            return xyzz_dbl((x2, y2, one, one))
        return xyzz_identity(x2)
    pp = _fsqr(pp_)
    ppp = _fmul(pp_, pp)
    q = _fmul(X1, pp)
    x3 = _fsub(_fsub(_fsqr(r), ppp), _fdbl(q))
    y3 = _fsub(_fmul(r, _fsub(q, x3)), _fmul(Y1, ppp))
    return (x3, y3, _fmul(ZZ1, pp), _fmul(ZZZ1, ppp))


@njit(cache=True)
def xyzz_add(p, q):
    """add-2008-s: 12M + 2S; handles identities, P + P and P + (-P)."""
    X1, Y1, ZZ1, ZZZ1 = p
    X2, Y2, ZZ2, ZZZ2 = q
    if _fiszero(ZZ1):
        return q
    if _fiszero(ZZ2):
        return p
    u1 = _fmul(X1, ZZ2)
    s1 = _fmul(Y1, ZZZ2)
    pp_ = _fsub(_fmul(X2, ZZ1), u1)
    r = _fsub(_fmul(Y2, ZZZ1), s1)
    if _fiszero(pp_):
        if _fiszero(r):
            return xyzz_dbl(p)
        return xyzz_identity(X1)
    pp = _fsqr(pp_)
    ppp = _fmul(pp_, pp)
    q_ = _fmul(u1, pp)
    x3 = _fsub(_fsub(_fsqr(r), ppp), _fdbl(q_))
    y3 = _fsub(_fmul(r, _fsub(q_, x3)), _fmul(s1, ppp))
    return (x3, y3, _fmul(_fmul(ZZ1, ZZ2), pp), _fmul(_fmul(ZZZ1, ZZZ2), ppp))


@njit(cache=True)
def xyzz_to_affine(p):
    """One inversion: 1/ZZ = ZZZ / (ZZ ZZZ), 1/ZZZ = ZZ / (ZZ ZZZ)."""
    X, Y, ZZ, ZZZ = p
    if _fiszero(ZZ):
        z = _fzero(X)
        return (z, z)
    t = _finv(_fmul(ZZ, ZZZ))
    return (_fmul(X, _fmul(t, ZZZ)), _fmul(Y, _fmul(t, ZZ)))


# ---------------------------------------------------------------- array kernels (G1 and G2)
@njit(inline="always", cache=True)
def load_affine(v):
    return (_fload(v[0]), _fload(v[1]))


@njit(inline="always", cache=True)
def store_affine(v, a):
    _fstore(v[0], a[0])
    _fstore(v[1], a[1])


@njit(inline="always", cache=True)
def load_xyzz(v):
    return (_fload(v[0]), _fload(v[1]), _fload(v[2]), _fload(v[3]))


@njit(inline="always", cache=True)
def store_xyzz(v, p):
    _fstore(v[0], p[0])
    _fstore(v[1], p[1])
    _fstore(v[2], p[2])
    _fstore(v[3], p[3])


@njit(inline="always", cache=True)
def _load_jac(v):
    return (_fload(v[0]), _fload(v[1]), _fload(v[2]))


@njit(inline="always", cache=True)
def _store_jac(v, p):
    _fstore(v[0], p[0])
    _fstore(v[1], p[1])
    _fstore(v[2], p[2])


# Kernels process points [lo, hi) and release the GIL; `parallel_for` spreads them over threads.
def parallel_for(kernel, n: int, *args) -> None:
    """kernel(*args, lo, hi) over [0, n), cut into numba.get_num_threads() concurrent chunks."""
    k = min(n, numba.get_num_threads())
    if k <= 1:
        if n:
            kernel(*args, 0, n)
        return
    bounds = [n * i // k for i in range(k + 1)]
    futures = [_pool(k).submit(kernel, *args, bounds[i], bounds[i + 1]) for i in range(k)]
    for f in futures:
        f.result()


_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(k: int) -> ThreadPoolExecutor:
    if k not in _POOLS:
        _POOLS[k] = ThreadPoolExecutor(max_workers=k, thread_name_prefix="cuzk-curves")
    return _POOLS[k]


@njit(nogil=True, cache=True)
def _add_kernel(p, q, out, lo, hi):
    for i in range(lo, hi):
        _store_jac(out[i], jac_add(_load_jac(p[i]), _load_jac(q[i])))


@njit(nogil=True, cache=True)
def _dbl_kernel(p, out, lo, hi):
    for i in range(lo, hi):
        _store_jac(out[i], jac_dbl(_load_jac(p[i])))


@njit(nogil=True, cache=True)
def _neg_y_kernel(p, out, lo, hi):
    """out[:, 1] = -p[:, 1]; the other coordinates must already be in out."""
    for i in range(lo, hi):
        _fstore(out[i, 1], _fneg(_fload(p[i, 1])))


@njit(nogil=True, cache=True)
def _from_affine_kernel(a, out, lo, hi):
    for i in range(lo, hi):
        _store_jac(out[i], jac_from_affine(load_affine(a[i])))


@njit(nogil=True, cache=True)
def _to_affine_kernel(p, out, lo, hi):
    """Affine form of p[lo:hi] with one inversion (Montgomery's trick)."""
    acc = _fone(_fload(p[lo, 2]))
    for i in range(lo, hi):  # out[i, 0] holds the product of the non-zero Z before i
        _fstore(out[i, 0], acc)
        z = _fload(p[i, 2])
        if not _fiszero(z):
            acc = _fmul(acc, z)
    inv = _finv(acc)
    for i in range(hi - 1, lo - 1, -1):
        pt = _load_jac(p[i])
        zinv = _fmul(inv, _fload(out[i, 0]))
        if not _fiszero(pt[2]):
            inv = _fmul(inv, pt[2])
        store_affine(out[i], jac_to_affine_with(pt, zinv))


@njit(nogil=True, cache=True)
def _mul_kernel(a, k, out, lo, hi):
    for i in range(lo, hi):
        _store_jac(out[i], jac_mul(load_affine(a[i]), limbs.fr_load(k[i])))


@njit(nogil=True, cache=True)
def _on_curve_kernel(a, out, lo, hi):
    for i in range(lo, hi):
        out[i] = aff_on_curve(load_affine(a[i]))


@njit(cache=True)
def g1_in_subgroup(a):
    """On the curve and phi(P) == [-x^2] P (Scott, ePrint 2021/1130; proof in 2022/352)."""
    phi = (limbs.fq_mul(a[0], _BETA), a[1])
    return aff_on_curve(a) and jac_eq_affine(jac_neg(jac_mul(a, _X2_LIMBS)), phi)


@njit(cache=True)
def g2_in_subgroup(a):
    """On the curve and psi(P) == [x] P (Scott, ePrint 2021/1130; proof in 2022/352)."""
    psi = (fields.fq2_mul(fields.fq2_conj(a[0]), _PSI_X), fields.fq2_mul(fields.fq2_conj(a[1]), _PSI_Y))
    return aff_on_curve(a) and jac_eq_affine(jac_neg(jac_mul(a, _X_LIMBS)), psi)


@njit(nogil=True, cache=True)
def _g1_subgroup_kernel(a, out, lo, hi):
    for i in range(lo, hi):
        out[i] = g1_in_subgroup(load_affine(a[i]))


@njit(nogil=True, cache=True)
def _g2_subgroup_kernel(a, out, lo, hi):
    for i in range(lo, hi):
        out[i] = g2_in_subgroup(load_affine(a[i]))


@njit(cache=True)
def _fixed_base_table_kernel(g, table):
    """table[w, j] = [j 256^w] g (Jacobian) for w < 32, j < 256."""
    base = jac_from_affine(load_affine(g))
    for w in range(table.shape[0]):
        acc = jac_identity(base[0])
        for j in range(table.shape[1]):
            _store_jac(table[w, j], acc)
            acc = jac_add(acc, base)
        base = acc


@njit(nogil=True, cache=True)
def _fixed_base_range(table, digits, out, lo, hi):
    """out[i] = sum_w [digits[i, w] 256^w] g from the affine table of `_fixed_base_table_kernel`."""
    for i in range(lo, hi):
        acc = jac_identity(_fload(table[0, 0, 0]))
        for w in range(digits.shape[1]):
            if digits[i, w]:
                acc = jac_madd(acc, load_affine(table[w, np.int64(digits[i, w])]))
        _store_jac(out[i], acc)


# ---------------------------------------------------------------- array-level API
IntPoint = tuple  # (x, y): ints for G1, (c0, c1) pairs for G2


class Curve:
    """One of G1 / G2 as arrays of points: affine (..., 2, *coord) or Jacobian (..., 3, *coord)."""

    def __init__(self, name: str, field, b: tuple, generator: IntPoint, subgroup_kernel) -> None:
        self.name = name
        self.field = field
        self.b = np.array(b, dtype=np.uint64)  # the curve coefficient, Montgomery form
        self.coord_shape: tuple[int, ...] = field.shape
        self.affine_shape = (2, *self.coord_shape)
        self.jacobian_shape = (3, *self.coord_shape)
        self._generator = generator
        self._subgroup_kernel = subgroup_kernel
        self._table: np.ndarray | None = None

    # -- validation and shape handling
    def _form(self, a: np.ndarray) -> str:
        """'affine' or 'jacobian' from the trailing shape; InputError for anything else."""
        if not isinstance(a, np.ndarray) or a.dtype != np.uint64:
            raise InputError(f"{self.name}: points must be a uint64 array, got "
                             f"{getattr(a, 'dtype', type(a).__name__)}")
        k = len(self.affine_shape)
        if a.shape[-k:] == self.affine_shape:
            return "affine"
        if a.shape[-k:] == self.jacobian_shape:
            return "jacobian"
        raise InputError(f"{self.name}: points must have shape (..., 2 or 3, "
                         f"{', '.join(map(str, self.coord_shape))}), got {a.shape}")

    def _lead(self, a: np.ndarray) -> tuple[int, ...]:
        return a.shape[: a.ndim - len(self.affine_shape)]

    def _flat(self, a: np.ndarray, lead: tuple[int, ...]) -> np.ndarray:
        k = a.shape[a.ndim - len(self.affine_shape):]
        return np.ascontiguousarray(np.broadcast_to(a, (*lead, *k))).reshape(-1, *k)

    def _jacobian_flat(self, a: np.ndarray, lead: tuple[int, ...]) -> np.ndarray:
        flat = self._flat(a, lead)
        if self._form(a) == "jacobian":
            return flat
        out = np.empty((len(flat), *self.jacobian_shape), dtype=np.uint64)
        parallel_for(_from_affine_kernel, len(flat), flat, out)
        return out

    def _affine_flat(self, a: np.ndarray, lead: tuple[int, ...]) -> np.ndarray:
        flat = self._flat(a, lead)
        if self._form(a) == "affine":
            return flat
        out = np.empty((len(flat), *self.affine_shape), dtype=np.uint64)
        parallel_for(_to_affine_kernel, len(flat), flat, out)
        return out

    # -- construction and conversion
    def identity(self, n: int) -> np.ndarray:
        """n copies of the identity (affine)."""
        return np.zeros((n, *self.affine_shape), dtype=np.uint64)

    def generator(self) -> np.ndarray:
        """The standard generator, affine, shape (2, *coord)."""
        return self.from_ints([self._generator])[0]

    def from_ints(self, points: Iterable[IntPoint | None]) -> np.ndarray:
        """Affine array from py_ecc-style (x, y) integer tuples (None for the identity)."""
        points = list(points)
        coords = [c for pt in points for c in (pt if pt is not None else (self._zero_int(),) * 2)]
        out = self.field.from_ints(coords).reshape(len(points), *self.affine_shape)
        out[[pt is None for pt in points]] = 0
        return out

    def _zero_int(self):
        return (0, 0) if len(self.coord_shape) == 2 else 0

    def to_ints(self, points: np.ndarray) -> list[IntPoint | None]:
        """py_ecc-style (x, y) integer tuples of the (flattened) points; None for the identity."""
        a = self._affine_flat(points, self._lead(points))
        ints = self.field.to_ints(a)
        ids = ~a.any(axis=tuple(range(1, a.ndim)))
        return [None if ids[i] else (ints[2 * i], ints[2 * i + 1]) for i in range(len(a))]

    def to_affine(self, points: np.ndarray) -> np.ndarray:
        """Affine form of affine or Jacobian points (batch inversion)."""
        self._form(points)
        lead = self._lead(points)
        return self._affine_flat(points, lead).reshape(*lead, *self.affine_shape)

    def to_jacobian(self, points: np.ndarray) -> np.ndarray:
        self._form(points)
        lead = self._lead(points)
        return self._jacobian_flat(points, lead).reshape(*lead, *self.jacobian_shape)

    def random(self, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """n random points of the prime-order subgroup (affine): [k] generator, k < 2^256 random."""
        rng = rng or np.random.default_rng()
        return self._generator_mul_digits(rng.integers(0, 256, size=(n, 32), dtype=np.uint8))

    def generator_mul(self, scalars) -> np.ndarray:
        """[k_i] generator (affine) for Fr Montgomery scalars (n, 4) or integers 0 <= k < 2^256, from
        a table of [j 256^w] generator: at most 32 mixed additions per point, no doublings."""
        plain = np.ascontiguousarray(_plain_scalars(scalars)).reshape(-1, 4)
        return self._generator_mul_digits(plain.astype("<u8").view(np.uint8).reshape(len(plain), 32))

    def _generator_mul_digits(self, digits: np.ndarray) -> np.ndarray:
        out = np.empty((len(digits), *self.jacobian_shape), dtype=np.uint64)
        parallel_for(_fixed_base_range, len(digits), self._fixed_base_table(), digits, out)
        return self.to_affine(out)

    def random_on_curve(self, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """n random points of the whole curve (affine); for tests, as they are almost never in the
        subgroup (cofactor > 1)."""
        rng = rng or np.random.default_rng()
        found = []
        while sum(map(len, found)) < n:
            x = self.field.random(2 * n + 8, rng)
            y, ok = self.field.sqrt(self.field.add(self.field.mul(self.field.sqr(x), x), self.b))
            found.append(np.stack([x[ok], y[ok]], axis=1))
        return np.concatenate(found)[:n]

    def _fixed_base_table(self) -> np.ndarray:
        if self._table is None:
            jac = np.empty((32, 256, *self.jacobian_shape), dtype=np.uint64)
            _fixed_base_table_kernel(self.generator(), jac)
            self._table = self.to_affine(jac)
        return self._table

    # -- group law (results are Jacobian; inputs affine or Jacobian, broadcast over leading axes)
    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self._form(a), self._form(b)
        lead = np.broadcast_shapes(self._lead(a), self._lead(b))
        pa, pb = self._jacobian_flat(a, lead), self._jacobian_flat(b, lead)
        out = np.empty_like(pa)
        parallel_for(_add_kernel, len(out), pa, pb, out)
        return out.reshape(*lead, *self.jacobian_shape)

    def double(self, a: np.ndarray) -> np.ndarray:
        self._form(a)
        lead = self._lead(a)
        pa = self._jacobian_flat(a, lead)
        out = np.empty_like(pa)
        parallel_for(_dbl_kernel, len(out), pa, out)
        return out.reshape(*lead, *self.jacobian_shape)

    def neg(self, a: np.ndarray) -> np.ndarray:
        """-a, in the same form as a."""
        self._form(a)
        flat = self._flat(a, self._lead(a))
        out = flat.copy()
        parallel_for(_neg_y_kernel, len(out), flat, out)
        return out.reshape(a.shape)

    def scalar_mul(self, points: np.ndarray, scalars) -> np.ndarray:
        """[k_i] P_i (Jacobian). scalars: an (..., 4) uint64 array of Fr elements (Montgomery form)
        or integers 0 <= k < 2^256 (an int or a sequence of ints), broadcast against the points."""
        self._form(points)
        k = _plain_scalars(scalars)
        lead = np.broadcast_shapes(self._lead(points), k.shape[:-1])
        pa = self._affine_flat(points, lead)
        kk = np.ascontiguousarray(np.broadcast_to(k, (*lead, 4))).reshape(-1, 4)
        out = np.empty((len(pa), *self.jacobian_shape), dtype=np.uint64)
        parallel_for(_mul_kernel, len(out), pa, kk, out)
        return out.reshape(*lead, *self.jacobian_shape)

    def eq(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Element-wise point equality (any forms)."""
        self._form(a), self._form(b)
        lead = np.broadcast_shapes(self._lead(a), self._lead(b))
        fa, fb = self._affine_flat(a, lead), self._affine_flat(b, lead)
        return (fa == fb).all(axis=tuple(range(1, fa.ndim))).reshape(lead)

    # -- checks
    def is_on_curve(self, points: np.ndarray) -> np.ndarray:
        """Bool array: y^2 == x^3 + b (the identity counts as on the curve)."""
        return self._check(points, _on_curve_kernel)

    def in_subgroup(self, points: np.ndarray) -> np.ndarray:
        """Bool array: on the curve and in the order-r subgroup (the identity is)."""
        return self._check(points, self._subgroup_kernel)

    def _check(self, points: np.ndarray, kernel) -> np.ndarray:
        self._form(points)
        lead = self._lead(points)
        a = self._affine_flat(points, lead)
        out = np.empty(len(a), dtype=np.bool_)
        parallel_for(kernel, len(out), a, out)
        return out.reshape(lead)


def _plain_scalars(scalars) -> np.ndarray:
    """Plain (non-Montgomery) 4-limb integers from Fr Montgomery arrays or Python ints."""
    if isinstance(scalars, np.ndarray) and scalars.dtype == np.uint64:
        fields.Fr.check(scalars)
        flat = np.ascontiguousarray(scalars).reshape(-1, 4)
        out = np.empty_like(flat)
        limbs.fr_from_mont_arr(flat, out)
        return out.reshape(scalars.shape)
    ints = [int(k) for k in np.ravel(np.asarray(scalars, dtype=object))]
    if any(not 0 <= k < 2**256 for k in ints):
        raise InputError("scalars must be integers in [0, 2^256) or an Fr (..., 4) uint64 array")
    buf = b"".join(k.to_bytes(32, "little") for k in ints)
    shape = np.shape(np.asarray(scalars, dtype=object))
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64).reshape(*shape, 4)


G1 = Curve("G1", fields.Fq, _B1, G1_GENERATOR, _g1_subgroup_kernel)
G2 = Curve("G2", fields.Fq2, _B2, G2_GENERATOR, _g2_subgroup_kernel)
