"""Prime-order subgroup membership of G1 and G2 points by an endomorphism (numba element functions).

With the BLS parameter x = -X_ABS (Scott, ePrint 2021/1130; proof in 2022/352):
- G1: phi(x, y) = (beta x, y), beta a cube root of unity in Fq, acts on the order-r subgroup as
  [-x^2], so P is in it iff phi(P) = [-x^2] P;
- G2: psi = untwist-Frobenius-twist, psi(x, y) = (conj(x) psi_x, conj(y) psi_y) with
  psi_x = (1 + u)^(-(p-1)/3) and psi_y = (1 + u)^(-(p-1)/2), acts on it as [x], so P is in it iff
  psi(P) = [x] P.
Both tests also require the point to be on its curve; the identity passes.
"""
from __future__ import annotations

from numba import njit

from cuzk.ec.formulas import aff_on_curve, jac_eq_affine, jac_mul, jac_neg
from cuzk.ff import fields, limbs
from cuzk.ff.fields import Fq, int_limbs

X_ABS = 0xD201000000010000  # |x|, x = -X_ABS is the BLS parameter
_P = Fq.modulus


def _fq2_mul_int(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return ((a[0] * b[0] - a[1] * b[1]) % _P, (a[0] * b[1] + a[1] * b[0]) % _P)


def _fq2_pow_int(a: tuple[int, int], e: int) -> tuple[int, int]:
    acc = (1, 0)
    for bit in bin(e)[2:]:
        acc = _fq2_mul_int(acc, acc)
        if bit == "1":
            acc = _fq2_mul_int(acc, a)
    return acc


BETA = tuple(Fq.const(pow(2, (_P - 1) // 3, _P)))
# (1 + u)^(p^2 - 1 - e) = (1 + u)^(-e): Fq2* has order p^2 - 1.
_PSI_X = tuple(tuple(Fq.const(c)) for c in _fq2_pow_int((1, 1), _P * _P - 1 - (_P - 1) // 3))
_PSI_Y = tuple(tuple(Fq.const(c)) for c in _fq2_pow_int((1, 1), _P * _P - 1 - (_P - 1) // 2))
_X2_LIMBS = int_limbs(X_ABS * X_ABS, 4)
_X_LIMBS = int_limbs(X_ABS, 4)


@njit(cache=True)
def g1_in_subgroup(a):
    """On the curve and phi(P) == [-x^2] P."""
    phi = (limbs.fq_mul(a[0], BETA), a[1])
    return aff_on_curve(a) and jac_eq_affine(jac_neg(jac_mul(a, _X2_LIMBS)), phi)


@njit(cache=True)
def g2_in_subgroup(a):
    """On the curve and psi(P) == [x] P."""
    psi = (fields.fq2_mul(fields.fq2_conj(a[0]), _PSI_X), fields.fq2_mul(fields.fq2_conj(a[1]), _PSI_Y))
    return aff_on_curve(a) and jac_eq_affine(jac_neg(jac_mul(a, _X_LIMBS)), psi)
