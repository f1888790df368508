"""BLS12-381 groups G1 (y^2 = x^3 + 4 over Fq) and G2 (y^2 = x^3 + 4(u+1) over Fq2) as point arrays.

Points are uint64 Montgomery limb arrays (see `cuzk.ff.fields`):
- affine (x, y), shape (..., 2, *coord); the identity is all zeros ((0, 0) is on neither curve);
- Jacobian (X, Y, Z), x = X/Z^2, y = Y/Z^3, shape (..., 3, *coord); the identity has Z = 0;
with coord = (6,) for G1 and (2, 6) for G2. `G1` and `G2` are `Curve`s: construction and conversion,
the group law, scalar multiplication, [k] generator from a fixed-base table, and the on-curve and
subgroup checks, each over whole arrays by GIL-free numba kernels spread over threads. The formulas
themselves are in `cuzk.ec.formulas`, the subgroup tests in `cuzk.ec.subgroup`.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numba import njit

from cuzk.ec.formulas import (B_G1, B_G2, aff_on_curve, fiszero, fload, fmul, fneg, finv, fone,
                              fstore, jac_add, jac_dbl, jac_from_affine, jac_identity, jac_madd,
                              jac_mul, jac_to_affine_with, load_affine, load_jac, store_affine,
                              store_jac)
from cuzk.ec.subgroup import g1_in_subgroup, g2_in_subgroup
from cuzk.errors import InputError
from cuzk.ff import limbs
from cuzk.ff.fields import Fq, Fq2, Fr
from cuzk.util.parallel import parallel_for

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


# ---------------------------------------------------------------- array kernels [lo, hi) (G1 and G2)
@njit(nogil=True, cache=True)
def _add_kernel(p, q, out, lo, hi):
    for i in range(lo, hi):
        store_jac(out[i], jac_add(load_jac(p[i]), load_jac(q[i])))


@njit(nogil=True, cache=True)
def _dbl_kernel(p, out, lo, hi):
    for i in range(lo, hi):
        store_jac(out[i], jac_dbl(load_jac(p[i])))


@njit(nogil=True, cache=True)
def _neg_y_kernel(p, out, lo, hi):
    """out[:, 1] = -p[:, 1]; the other coordinates must already be in out."""
    for i in range(lo, hi):
        fstore(out[i, 1], fneg(fload(p[i, 1])))


@njit(nogil=True, cache=True)
def _from_affine_kernel(a, out, lo, hi):
    for i in range(lo, hi):
        store_jac(out[i], jac_from_affine(load_affine(a[i])))


@njit(nogil=True, cache=True)
def _to_affine_kernel(p, out, lo, hi):
    """Affine form of p[lo:hi] with one inversion (Montgomery's trick)."""
    acc = fone(fload(p[lo, 2]))
    for i in range(lo, hi):  # out[i, 0] holds the product of the non-zero Z before i
        fstore(out[i, 0], acc)
        z = fload(p[i, 2])
        if not fiszero(z):
            acc = fmul(acc, z)
    inv = finv(acc)
    for i in range(hi - 1, lo - 1, -1):
        pt = load_jac(p[i])
        zinv = fmul(inv, fload(out[i, 0]))
        if not fiszero(pt[2]):
            inv = fmul(inv, pt[2])
        store_affine(out[i], jac_to_affine_with(pt, zinv))


@njit(nogil=True, cache=True)
def _mul_kernel(a, k, out, lo, hi):
    for i in range(lo, hi):
        store_jac(out[i], jac_mul(load_affine(a[i]), limbs.fr_load(k[i])))


@njit(nogil=True, cache=True)
def _on_curve_kernel(a, out, lo, hi):
    for i in range(lo, hi):
        out[i] = aff_on_curve(load_affine(a[i]))


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
            store_jac(table[w, j], acc)
            acc = jac_add(acc, base)
        base = acc


@njit(nogil=True, cache=True)
def _fixed_base_range(table, digits, out, lo, hi):
    """out[i] = sum_w [digits[i, w] 256^w] g from the affine table of `_fixed_base_table_kernel`."""
    for i in range(lo, hi):
        acc = jac_identity(fload(table[0, 0, 0]))
        for w in range(digits.shape[1]):
            if digits[i, w]:
                acc = jac_madd(acc, load_affine(table[w, np.int64(digits[i, w])]))
        store_jac(out[i], acc)


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

    def sum(self, points: Sequence[np.ndarray]) -> np.ndarray:
        """The affine sum of single points (affine or Jacobian); the identity for none."""
        if not points:
            return self.identity(1)[0]
        acc = self.to_jacobian(points[0])
        for p in points[1:]:
            acc = self.add(acc, p)
        return self.to_affine(acc)

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
        return Fr.to_canonical_limbs(scalars)
    ints = [int(k) for k in np.ravel(np.asarray(scalars, dtype=object))]
    if any(not 0 <= k < 2**256 for k in ints):
        raise InputError("scalars must be integers in [0, 2^256) or an Fr (..., 4) uint64 array")
    buf = b"".join(k.to_bytes(32, "little") for k in ints)
    shape = np.shape(np.asarray(scalars, dtype=object))
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64).reshape(*shape, 4)


G1 = Curve("G1", Fq, B_G1, G1_GENERATOR, _g1_subgroup_kernel)
G2 = Curve("G2", Fq2, B_G2, G2_GENERATOR, _g2_subgroup_kernel)
