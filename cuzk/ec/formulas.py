"""Point formulas of BLS12-381's G1 (y^2 = x^3 + 4 over Fq) and G2 (y^2 = x^3 + 4(u+1) over Fq2),
written once for both groups as numba element functions.

Point forms (tuples of field elements, each a tuple of uint64 Montgomery limbs):
- affine (x, y); the identity is (0, 0) (on neither curve);
- Jacobian (X, Y, Z), x = X/Z^2, y = Y/Z^3; the identity has Z = 0;
- XYZZ (X, Y, ZZ, ZZZ), x = X/ZZ, y = Y/ZZZ, identity ZZ = 0: for MSM buckets, whose mixed addition
  then costs 8M + 2S (Jacobian: 7M + 4S plus more additions).

The field operations `f*` (fadd, fmul, ...) dispatch on their argument's numba type, Fq tuples (G1)
or Fq2 tuples (G2), so numba specialises every formula for each group. `load_*` / `store_*` move
points between limb-array rows (2|3|4, *coord) and tuples. Use all of them only inside jitted code.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from cuzk.ff import fields, limbs
from cuzk.ff.fields import Fq

# The curve coefficients b in Montgomery form: 4 (G1) and 4 + 4u (G2).
B_G1 = tuple(Fq.const(4))
B_G2 = (B_G1, B_G1)


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
    return B_G1


@njit(inline="always", cache=True)
def _fq2_b(a):
    return B_G2


fadd = _dispatch2(limbs.fq_add, fields.fq2_add)
fsub = _dispatch2(limbs.fq_sub, fields.fq2_sub)
fmul = _dispatch2(limbs.fq_mul, fields.fq2_mul)
feq = _dispatch2(limbs.fq_eq, fields.fq2_eq)
fstore = _dispatch2(limbs.fq_store, fields.fq2_store)
fneg = _dispatch1(limbs.fq_neg, fields.fq2_neg)
fdbl = _dispatch1(limbs.fq_dbl, fields.fq2_dbl)
fsqr = _dispatch1(limbs.fq_sqr, fields.fq2_sqr)
finv = _dispatch1(limbs.fq_inv, fields.fq2_inv)
fiszero = _dispatch1(limbs.fq_is_zero, fields.fq2_is_zero)
fload = _dispatch1(limbs.fq_load, fields.fq2_load)
fzero = _dispatch1(_fq_zero, _fq2_zero)  # the constant 0 of the argument's field
fone = _dispatch1(_fq_one, _fq2_one)
fb = _dispatch1(_fq_b, _fq2_b)  # the curve coefficient b


# ---------------------------------------------------------------- element functions
@njit(inline="always", cache=True)
def aff_is_identity(a):
    return fiszero(a[0]) and fiszero(a[1])


@njit(inline="always", cache=True)
def aff_neg(a):
    return (a[0], fneg(a[1]))


@njit(cache=True)
def aff_on_curve(a):
    """y^2 == x^3 + b; the identity counts as on the curve."""
    if aff_is_identity(a):
        return True
    x, y = a
    return feq(fsqr(y), fadd(fmul(fsqr(x), x), fb(x)))


@njit(inline="always", cache=True)
def jac_identity(like):
    z = fzero(like)
    return (z, z, z)


@njit(cache=True)
def jac_from_affine(a):
    if aff_is_identity(a):
        return jac_identity(a[0])
    return (a[0], a[1], fone(a[0]))


@njit(inline="always", cache=True)
def jac_neg(p):
    return (p[0], fneg(p[1]), p[2])


@njit(cache=True)
def jac_dbl(p):
    """dbl-2009-l (a = 0): 2M + 5S."""
    X, Y, Z = p
    if fiszero(Z):
        return p
    a = fsqr(X)
    b = fsqr(Y)
    c = fsqr(b)
    d = fdbl(fsub(fsub(fsqr(fadd(X, b)), a), c))
    e = fadd(fdbl(a), a)
    x3 = fsub(fsqr(e), fdbl(d))
    y3 = fsub(fmul(e, fsub(d, x3)), fdbl(fdbl(fdbl(c))))
    return (x3, y3, fdbl(fmul(Y, Z)))


@njit(cache=True)
def jac_add(p, q):
    """add-2007-bl: 11M + 5S; handles the identity, P + P and P + (-P)."""
    X1, Y1, Z1 = p
    X2, Y2, Z2 = q
    if fiszero(Z1):
        return q
    if fiszero(Z2):
        return p
    z1z1 = fsqr(Z1)
    z2z2 = fsqr(Z2)
    u1 = fmul(X1, z2z2)
    s1 = fmul(fmul(Y1, Z2), z2z2)
    h = fsub(fmul(X2, z1z1), u1)
    r = fdbl(fsub(fmul(fmul(Y2, Z1), z1z1), s1))
    if fiszero(h):
        return jac_dbl(p) if fiszero(r) else jac_identity(X1)
    i = fsqr(fdbl(h))
    j = fmul(h, i)
    v = fmul(u1, i)
    x3 = fsub(fsub(fsqr(r), j), fdbl(v))
    y3 = fsub(fmul(r, fsub(v, x3)), fdbl(fmul(s1, j)))
    z3 = fmul(fsub(fsub(fsqr(fadd(Z1, Z2)), z1z1), z2z2), h)
    return (x3, y3, z3)


@njit(cache=True)
def jac_madd(p, a):
    """p + a for an affine a, madd-2007-bl: 7M + 4S; handles identities, P + P and P + (-P)."""
    X1, Y1, Z1 = p
    x2, y2 = a
    if aff_is_identity(a):
        return p
    if fiszero(Z1):
        return (x2, y2, fone(x2))
    z1z1 = fsqr(Z1)
    h = fsub(fmul(x2, z1z1), X1)
    r = fdbl(fsub(fmul(fmul(y2, Z1), z1z1), Y1))
    if fiszero(h):
        return jac_dbl(p) if fiszero(r) else jac_identity(X1)
    hh = fsqr(h)
    i = fdbl(fdbl(hh))
    j = fmul(h, i)
    v = fmul(X1, i)
    x3 = fsub(fsub(fsqr(r), j), fdbl(v))
    y3 = fsub(fmul(r, fsub(v, x3)), fdbl(fmul(Y1, j)))
    z3 = fsub(fsub(fsqr(fadd(Z1, h)), z1z1), hh)
    return (x3, y3, z3)


@njit(inline="always", cache=True)
def jac_to_affine_with(p, zinv):
    """Affine form of p given zinv = 1/Z (any value when p is the identity)."""
    if fiszero(p[2]):
        z = fzero(p[0])
        return (z, z)
    zinv2 = fsqr(zinv)
    return (fmul(p[0], zinv2), fmul(p[1], fmul(zinv2, zinv)))


@njit(cache=True)
def jac_to_affine(p):
    return jac_to_affine_with(p, finv(p[2]))


@njit(cache=True)
def jac_eq_affine(p, a):
    """Whether Jacobian p and affine a are the same point."""
    if fiszero(p[2]):
        return aff_is_identity(a)
    if aff_is_identity(a):
        return False
    z2 = fsqr(p[2])
    return feq(p[0], fmul(a[0], z2)) and feq(p[1], fmul(a[1], fmul(z2, p[2])))


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
    z = fzero(like)
    return (z, z, z, z)


@njit(cache=True)
def xyzz_dbl(p):
    """dbl-2008-s-1 (a = 0): 6M + 3S."""
    X1, Y1, ZZ1, ZZZ1 = p
    if fiszero(ZZ1):
        return p
    u = fdbl(Y1)
    v = fsqr(u)
    w = fmul(u, v)
    s = fmul(X1, v)
    xx = fsqr(X1)
    m = fadd(fdbl(xx), xx)
    x3 = fsub(fsqr(m), fdbl(s))
    y3 = fsub(fmul(m, fsub(s, x3)), fmul(w, Y1))
    return (x3, y3, fmul(v, ZZ1), fmul(w, ZZZ1))


@njit(cache=True)
def xyzz_madd(p, a):
    """p + a for a non-identity affine a, madd-2008-s: 8M + 2S; handles P + P and P + (-P)."""
    X1, Y1, ZZ1, ZZZ1 = p
    x2, y2 = a
    if fiszero(ZZ1):
        one = fone(x2)
        return (x2, y2, one, one)
    pp_ = fsub(fmul(x2, ZZ1), X1)
    r = fsub(fmul(y2, ZZZ1), Y1)
    if fiszero(pp_):
        if fiszero(r):
            one = fone(x2)
            return xyzz_dbl((x2, y2, one, one))
        return xyzz_identity(x2)
    pp = fsqr(pp_)
    ppp = fmul(pp_, pp)
    q = fmul(X1, pp)
    x3 = fsub(fsub(fsqr(r), ppp), fdbl(q))
    y3 = fsub(fmul(r, fsub(q, x3)), fmul(Y1, ppp))
    return (x3, y3, fmul(ZZ1, pp), fmul(ZZZ1, ppp))


@njit(cache=True)
def xyzz_add(p, q):
    """add-2008-s: 12M + 2S; handles identities, P + P and P + (-P)."""
    X1, Y1, ZZ1, ZZZ1 = p
    X2, Y2, ZZ2, ZZZ2 = q
    if fiszero(ZZ1):
        return q
    if fiszero(ZZ2):
        return p
    u1 = fmul(X1, ZZ2)
    s1 = fmul(Y1, ZZZ2)
    pp_ = fsub(fmul(X2, ZZ1), u1)
    r = fsub(fmul(Y2, ZZZ1), s1)
    if fiszero(pp_):
        if fiszero(r):
            return xyzz_dbl(p)
        return xyzz_identity(X1)
    pp = fsqr(pp_)
    ppp = fmul(pp_, pp)
    q_ = fmul(u1, pp)
    x3 = fsub(fsub(fsqr(r), ppp), fdbl(q_))
    y3 = fsub(fmul(r, fsub(q_, x3)), fmul(s1, ppp))
    return (x3, y3, fmul(fmul(ZZ1, ZZ2), pp), fmul(fmul(ZZZ1, ZZZ2), ppp))


@njit(cache=True)
def xyzz_to_affine(p):
    """One inversion: 1/ZZ = ZZZ / (ZZ ZZZ), 1/ZZZ = ZZ / (ZZ ZZZ)."""
    X, Y, ZZ, ZZZ = p
    if fiszero(ZZ):
        z = fzero(X)
        return (z, z)
    t = finv(fmul(ZZ, ZZZ))
    return (fmul(X, fmul(t, ZZZ)), fmul(Y, fmul(t, ZZ)))



# ---------------------------------------------------------------- limb-array rows <-> tuples
@njit(inline="always", cache=True)
def load_affine(v):
    return (fload(v[0]), fload(v[1]))


@njit(inline="always", cache=True)
def store_affine(v, a):
    fstore(v[0], a[0])
    fstore(v[1], a[1])


@njit(inline="always", cache=True)
def load_xyzz(v):
    return (fload(v[0]), fload(v[1]), fload(v[2]), fload(v[3]))


@njit(inline="always", cache=True)
def store_xyzz(v, p):
    fstore(v[0], p[0])
    fstore(v[1], p[1])
    fstore(v[2], p[2])
    fstore(v[3], p[3])


@njit(inline="always", cache=True)
def load_jac(v):
    return (fload(v[0]), fload(v[1]), fload(v[2]))


@njit(inline="always", cache=True)
def store_jac(v, p):
    fstore(v[0], p[0])
    fstore(v[1], p[1])
    fstore(v[2], p[2])
