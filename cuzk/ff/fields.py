"""BLS12-381 fields on the CPU: Fr, Fq and Fq2 as vectorised Montgomery limb arrays.

Elements are uint64 arrays whose last axis holds little-endian 64-bit limbs in Montgomery form
(Fr: 4 limbs, Fq: 6 limbs, Fq2: (2, 6) for c0 + c1*u with u^2 = -1). `Fr`, `Fq` and `Fq2` are the
array-level API; the `fq2_*` functions below (and `fr_*` / `fq_*` in `cuzk.ff.limbs`) are numba
element functions on limb tuples for use inside other jitted code.

Conversions have one home, on the field: `const(x)` (an integer's Montgomery limbs x R mod p),
`from_canonical_limbs` / `to_canonical_limbs` (plain canonical limbs x <-> Montgomery limbs x R mod p,
R = 2^(64 nlimbs)) and `is_canonical` / `check_canonical` (plain limbs below p). `int_limbs` splits a
plain integer (an exponent, a scalar) into a limb tuple for numba globals.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numba import njit, prange

from cuzk.ff import limbs
from cuzk.errors import InputError, NonCanonicalError

# ---------------------------------------------------------------- Fq2 element functions (numba)
FQ2_ZERO = (limbs.FQ_ZERO, limbs.FQ_ZERO)
FQ2_ONE = (limbs.FQ_ONE, limbs.FQ_ZERO)


@njit(cache=True)
def fq2_load(v):
    return (limbs.fq_load(v[0]), limbs.fq_load(v[1]))


@njit(cache=True)
def fq2_store(v, x):
    limbs.fq_store(v[0], x[0])
    limbs.fq_store(v[1], x[1])


@njit(cache=True)
def fq2_is_zero(a):
    return limbs.fq_is_zero(a[0]) and limbs.fq_is_zero(a[1])


@njit(cache=True)
def fq2_eq(a, b):
    return limbs.fq_eq(a[0], b[0]) and limbs.fq_eq(a[1], b[1])


@njit(cache=True)
def fq2_add(a, b):
    return (limbs.fq_add(a[0], b[0]), limbs.fq_add(a[1], b[1]))


@njit(cache=True)
def fq2_sub(a, b):
    return (limbs.fq_sub(a[0], b[0]), limbs.fq_sub(a[1], b[1]))


@njit(cache=True)
def fq2_dbl(a):
    return (limbs.fq_dbl(a[0]), limbs.fq_dbl(a[1]))


@njit(cache=True)
def fq2_neg(a):
    return (limbs.fq_neg(a[0]), limbs.fq_neg(a[1]))


@njit(cache=True)
def fq2_conj(a):
    return (a[0], limbs.fq_neg(a[1]))


@njit(cache=True)
def fq2_mul(a, b):
    """Karatsuba: three Fq products."""
    v0 = limbs.fq_mul(a[0], b[0])
    v1 = limbs.fq_mul(a[1], b[1])
    cross = limbs.fq_mul(limbs.fq_add(a[0], a[1]), limbs.fq_add(b[0], b[1]))
    return (limbs.fq_sub(v0, v1), limbs.fq_sub(limbs.fq_sub(cross, v0), v1))


@njit(cache=True)
def fq2_sqr(a):
    """(c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two Fq products."""
    c0 = limbs.fq_mul(limbs.fq_add(a[0], a[1]), limbs.fq_sub(a[0], a[1]))
    return (c0, limbs.fq_dbl(limbs.fq_mul(a[0], a[1])))


@njit(cache=True)
def fq2_mul_fq(a, s):
    return (limbs.fq_mul(a[0], s), limbs.fq_mul(a[1], s))


@njit(cache=True)
def fq2_mul_by_nonresidue(a):
    """Multiply by u + 1: (c0 - c1) + (c0 + c1) u."""
    return (limbs.fq_sub(a[0], a[1]), limbs.fq_add(a[0], a[1]))


@njit(cache=True)
def fq2_inv(a):
    """1 / (c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2); zero maps to zero."""
    norm_inv = limbs.fq_inv(limbs.fq_add(limbs.fq_sqr(a[0]), limbs.fq_sqr(a[1])))
    return (limbs.fq_mul(a[0], norm_inv), limbs.fq_neg(limbs.fq_mul(a[1], norm_inv)))


@njit(cache=True)
def fq2_pow(a, e):
    acc = FQ2_ONE
    for i in range(len(e) - 1, -1, -1):
        w = e[i]
        for k in range(63, -1, -1):
            acc = fq2_sqr(acc)
            if (w >> np.uint64(k)) & np.uint64(1):
                acc = fq2_mul(acc, a)
    return acc


def int_limbs(x: int, n: int) -> tuple[np.uint64, ...]:
    """The n little-endian 64-bit limbs of a plain integer 0 <= x < 2^(64 n), as a tuple (the form
    numba takes as a compile-time constant)."""
    if not 0 <= x < 1 << (64 * n):
        raise InputError(f"{x} does not fit in {n} 64-bit limbs")
    return tuple(np.uint64((x >> (64 * i)) & (2**64 - 1)) for i in range(n))


@njit(parallel=True, cache=True)
def _below_kernel(a, p, out):
    """out[i] = (a[i] < p) for plain little-endian limb rows a[i] and limbs p: compare from the top."""
    for i in prange(a.shape[0]):
        below = False
        for k in range(a.shape[1] - 1, -1, -1):
            if a[i, k] != p[k]:
                below = a[i, k] < p[k]
                break
        out[i] = below


@njit(parallel=True, cache=True)
def _fq_sqrt_arr(a, out, ok):
    """p = 3 mod 4: sqrt(a) = a^((p+1)/4) when a is a square."""
    for i in prange(a.shape[0]):
        x = limbs.fq_load(a[i])
        s = limbs.fq_pow(x, _FQ_SQRT_EXP)
        ok[i] = limbs.fq_eq(limbs.fq_sqr(s), x)
        limbs.fq_store(out[i], s)


@njit(parallel=True, cache=True)
def _fq2_sqrt_arr(a, out, ok):
    """Square root in Fq2 for p = 3 mod 4 (Adj and Rodriguez-Henriquez, Algorithm 9)."""
    for i in prange(a.shape[0]):
        x = fq2_load(a[i])
        a1 = fq2_pow(x, _FQ_P_MINUS_3_DIV_4)
        x0 = fq2_mul(a1, x)
        alpha = fq2_mul(a1, x0)
        if fq2_eq(alpha, _FQ2_MINUS_ONE):
            s = fq2_mul(_FQ2_U, x0)
        else:
            b = fq2_pow(fq2_add(FQ2_ONE, alpha), _FQ_P_MINUS_1_DIV_2)
            s = fq2_mul(b, x0)
        ok[i] = fq2_eq(fq2_sqr(s), x)
        fq2_store(out[i], s)


_FQ2_OPS = {"add": 0, "sub": 1, "mul": 2, "neg": 3, "sqr": 4, "inv": 5}


@njit(parallel=True, cache=True)
def _fq2_binary_arr(op, a, b, out):
    for i in prange(out.shape[0]):
        x, y = fq2_load(a[i]), fq2_load(b[i])
        if op == 0:
            r = fq2_add(x, y)
        elif op == 1:
            r = fq2_sub(x, y)
        else:
            r = fq2_mul(x, y)
        fq2_store(out[i], r)


@njit(parallel=True, cache=True)
def _fq2_unary_arr(op, a, out):
    for i in prange(out.shape[0]):
        x = fq2_load(a[i])
        if op == 3:
            r = fq2_neg(x)
        elif op == 4:
            r = fq2_sqr(x)
        else:
            r = fq2_inv(x)
        fq2_store(out[i], r)


# ---------------------------------------------------------------- array-level API
class PrimeField:
    """A prime field of Montgomery limb arrays, shape (..., nlimbs), dtype uint64.

    An element x is stored as x R mod p, R = 2^(64 nlimbs), in little-endian 64-bit limbs. Plain
    ("canonical") limbs hold x itself, 0 <= x < p: the form of files, kernels' inputs and exponents.
    """

    def __init__(self, name: str, prefix: str, byte_order: str, symbol: str) -> None:
        self.name = name
        self.symbol = symbol  # the modulus's usual letter, for messages
        self.modulus: int = getattr(limbs, f"{prefix.upper()}_MODULUS")
        self.nlimbs: int = getattr(limbs, f"{prefix.upper()}_NLIMBS")
        self.byte_len = (self.modulus.bit_length() + 7) // 8
        self.byte_order = byte_order  # how Filecoin / zcash store this field
        self._k = {op: getattr(limbs, f"{prefix}_{op}_arr") for op in (
            "add", "sub", "mul", "neg", "sqr", "inv", "to_mont", "from_mont", "pow", "batch_inv")}
        self._modulus_limbs = np.array(int_limbs(self.modulus, self.nlimbs), dtype=np.uint64)
        self.shape = (self.nlimbs,)

    # -- conversions
    def const(self, x: int) -> np.ndarray:
        """Montgomery limbs of one integer, (x mod p) R mod p: a fresh (*shape,) uint64 array that
        broadcasts against element arrays. `tuple(field.const(x))` is the numba-constant form."""
        return np.array(int_limbs(int(x) % self.modulus * (1 << (64 * self.nlimbs)) % self.modulus,
                                  self.nlimbs), dtype=np.uint64)

    def is_canonical(self, a: np.ndarray) -> np.ndarray:
        """Bool mask over the leading axes of limbs a (..., nlimbs): the integer they hold is below p
        (as every reduced element is, in plain and in Montgomery form)."""
        flat = np.ascontiguousarray(self._check_limbs(a)).reshape(-1, self.nlimbs)
        out = np.empty(len(flat), dtype=np.bool_)
        _below_kernel(flat, self._modulus_limbs, out)
        return out.reshape(a.shape[:-1])

    def check_canonical(self, a: np.ndarray, what: str = "element") -> np.ndarray:
        """a itself when every element of the limbs a is below p (see is_canonical); otherwise
        NonCanonicalError naming the first bad element by its index into the flattened leading axes."""
        bad = np.flatnonzero(~self.is_canonical(a))
        if bad.size:
            raise NonCanonicalError(f"{what} {int(bad[0])} is not below {self.symbol} "
                                    f"(not a canonical {self.name} element)")
        return a

    def from_canonical_limbs(self, a: np.ndarray, what: str = "element") -> np.ndarray:
        """Montgomery limbs x R mod p of plain canonical limbs x (..., *shape); NonCanonicalError
        (see check_canonical) if some x >= p."""
        return self._convert("to_mont", self.check_canonical(self.check(a), what))

    def to_canonical_limbs(self, a: np.ndarray) -> np.ndarray:
        """Plain canonical limbs x, 0 <= x < p, of Montgomery limbs x R mod p (..., *shape)."""
        return self._convert("from_mont", self.check(a))

    def _check_limbs(self, a: np.ndarray) -> np.ndarray:
        if not isinstance(a, np.ndarray) or a.dtype != np.uint64 or a.shape[-1:] != (self.nlimbs,):
            raise InputError(f"{self.name}: expected a uint64 limb array of shape (..., {self.nlimbs}), "
                             f"got {getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
        return a

    def _convert(self, op: str, a: np.ndarray) -> np.ndarray:
        """The limb kernel `op` ("to_mont" or "from_mont") over every nlimbs-row of a."""
        flat = np.ascontiguousarray(a).reshape(-1, self.nlimbs)
        out = np.empty_like(flat)
        self._k[op](flat, out)
        return out.reshape(a.shape)

    def from_ints(self, values: Iterable[int]) -> np.ndarray:
        """Montgomery limbs of the given integers, reduced modulo p (negative values allowed)."""
        width = 8 * self.nlimbs
        buf = b"".join((int(v) % self.modulus).to_bytes(width, "little") for v in values)
        raw = np.frombuffer(buf, dtype="<u8").reshape(-1, self.nlimbs).astype(np.uint64)
        return self._convert("to_mont", raw)

    def to_ints(self, a: np.ndarray) -> list[int]:
        """Canonical integers of a (..., nlimbs) array, flattened."""
        raw = self.to_canonical_limbs(a).reshape(-1, self.nlimbs).astype("<u8")
        return [int.from_bytes(row.tobytes(), "little") for row in raw]

    def from_bytes(self, data: bytes, order: str | None = None) -> np.ndarray:
        """Decode canonical fixed-width encodings (rejects values >= p with NonCanonicalError)."""
        order = order or self.byte_order
        if len(data) % self.byte_len:
            raise InputError(f"{self.name}: {len(data)} bytes is not a multiple of {self.byte_len}")
        raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, self.byte_len)
        padded = np.zeros((len(raw), 8 * self.nlimbs), dtype=np.uint8)
        padded[:, :self.byte_len] = raw if order == "little" else raw[:, ::-1]
        return self.from_canonical_limbs(padded.view("<u8").astype(np.uint64))

    def to_bytes(self, a: np.ndarray, order: str | None = None) -> bytes:
        order = order or self.byte_order
        raw = self.to_canonical_limbs(a).reshape(-1, self.nlimbs).astype("<u8").view(np.uint8)
        raw = raw[:, :self.byte_len]
        return (raw if order == "little" else raw[:, ::-1]).tobytes()

    def zeros(self, n: int) -> np.ndarray:
        return np.zeros((n, *self.shape), dtype=np.uint64)

    def ones(self, n: int) -> np.ndarray:
        return np.broadcast_to(self.const(1), (n, *self.shape)).copy()

    def random(self, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """n uniform random elements (Montgomery form)."""
        rng = rng or np.random.default_rng()
        words = rng.integers(0, 2**64, size=(n, 2 * self.nlimbs), dtype=np.uint64, endpoint=False)
        ints = [int.from_bytes(row.tobytes(), "little") for row in words]  # 2x wide: bias < 2^-250
        return self.from_ints(ints)

    # -- arithmetic (element-wise, any leading shape)
    def check(self, a: np.ndarray) -> np.ndarray:
        if not isinstance(a, np.ndarray) or a.dtype != np.uint64 or a.shape[-len(self.shape):] != self.shape:
            raise InputError(f"{self.name}: expected a uint64 array of shape (..., "
                             f"{', '.join(map(str, self.shape))}), got "
                             f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
        return a

    def _apply(self, op: str, *arrays: np.ndarray) -> np.ndarray:
        shape = np.broadcast_shapes(*(x.shape for x in arrays))
        flat = [np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1, self.nlimbs) for x in arrays]
        out = np.empty_like(flat[0])
        self._k[op](*flat, out)
        return out.reshape(shape)

    def add(self, a, b): return self._apply("add", self.check(a), self.check(b))
    def sub(self, a, b): return self._apply("sub", self.check(a), self.check(b))
    def mul(self, a, b): return self._apply("mul", self.check(a), self.check(b))
    def neg(self, a): return self._apply("neg", self.check(a))
    def sqr(self, a): return self._apply("sqr", self.check(a))

    def inv(self, a: np.ndarray) -> np.ndarray:
        """Element-wise inverse; raises ZeroDivisionError if any element is zero."""
        if not np.all(self.check(a).reshape(-1, self.nlimbs).any(axis=1)):
            raise ZeroDivisionError(f"{self.name}: inverse of zero")
        return self._apply("inv", a)

    def batch_inv(self, a: np.ndarray) -> np.ndarray:
        """Inverse of every element with one field inversion; zeros stay zero."""
        return self._apply("batch_inv", self.check(a))

    def pow(self, a: np.ndarray, e: int) -> np.ndarray:
        """a^e element-wise for a non-negative integer exponent."""
        if e < 0:
            return self.pow(self.inv(a), -e)
        a = self.check(a).reshape(-1, self.nlimbs)
        if e >= 2 ** (64 * self.nlimbs):
            raise InputError(f"{self.name}: exponent wider than {64 * self.nlimbs} bits")
        e_limbs = np.array(int_limbs(e, self.nlimbs), dtype=np.uint64)
        out = np.empty_like(a)
        self._k["pow"](np.ascontiguousarray(a), e_limbs, out)
        return out

    def sqrt(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(roots, is_square): a root of each square element; is_square is False elsewhere."""
        if self.name != "Fq":
            raise NotImplementedError(f"sqrt is implemented for Fq and Fq2, not {self.name}")
        flat = np.ascontiguousarray(self.check(a)).reshape(-1, 6)
        out, ok = np.empty_like(flat), np.empty(len(flat), dtype=np.bool_)
        _fq_sqrt_arr(flat, out, ok)
        return out.reshape(a.shape), ok.reshape(a.shape[:-1])


class QuadraticExtension(PrimeField):
    """Fq2 = Fq[u]/(u^2 + 1): arrays of shape (..., 2, 6); integers as (c0, c1) pairs."""

    def __init__(self, base: PrimeField) -> None:
        self.name = "Fq2"
        self.symbol = base.symbol
        self.base = base
        self.modulus = base.modulus
        self.nlimbs = base.nlimbs
        self.byte_len = 2 * base.byte_len
        self.byte_order = base.byte_order
        self._k = base._k  # the limb kernels of `_convert` (conversions act on each coefficient)
        self.shape = (2, base.nlimbs)

    def const(self, x: int | Sequence[int]) -> np.ndarray:
        """Montgomery limbs (2, nlimbs) of one element c0 + c1 u given as (c0, c1) or as c0."""
        return np.stack([self.base.const(c) for c in ((x, 0) if isinstance(x, int) else x)])

    def is_canonical(self, a: np.ndarray) -> np.ndarray:
        """Bool mask over the leading axes of plain (..., 2, nlimbs): both coefficients below p."""
        return self.base.is_canonical(self.check(a)).all(axis=-1)

    def _apply(self, op, *arrays):
        shape = np.broadcast_shapes(*(x.shape for x in arrays))
        flat = [np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1, *self.shape) for x in arrays]
        out = np.empty_like(flat[0])
        kernel = _fq2_binary_arr if len(flat) == 2 else _fq2_unary_arr
        kernel(_FQ2_OPS[op], *flat, out)
        return out.reshape(shape)

    def from_ints(self, values: Iterable[Sequence[int]]) -> np.ndarray:
        flat = [c for pair in values for c in pair]
        return self.base.from_ints(flat).reshape(-1, *self.shape)

    def to_ints(self, a: np.ndarray) -> list[tuple[int, int]]:
        flat = self.base.to_ints(self.check(a))
        return list(zip(flat[0::2], flat[1::2]))

    def from_bytes(self, data: bytes, order: str | None = None) -> np.ndarray:
        raise NotImplementedError("Fq2 encodings are point-format specific: see cuzk.ec.encoding")

    to_bytes = from_bytes

    def random(self, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
        return self.base.random(2 * n, rng).reshape(n, *self.shape)

    def inv(self, a: np.ndarray) -> np.ndarray:
        if not np.all(self.check(a).reshape(-1, 12).any(axis=1)):
            raise ZeroDivisionError("Fq2: inverse of zero")
        return self._apply("inv", a)

    def batch_inv(self, a: np.ndarray) -> np.ndarray:
        out = np.zeros_like(self.check(a))
        nonzero = a.reshape(-1, 12).any(axis=1).reshape(a.shape[:-2])
        out[nonzero] = self._apply("inv", a[nonzero])
        return out

    def pow(self, a: np.ndarray, e: int) -> np.ndarray:
        raise NotImplementedError("Fq2.pow: use fq2_pow inside jitted code")

    def sqrt(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat = np.ascontiguousarray(self.check(a)).reshape(-1, *self.shape)
        out, ok = np.empty_like(flat), np.empty(len(flat), dtype=np.bool_)
        _fq2_sqrt_arr(flat, out, ok)
        return out.reshape(a.shape), ok.reshape(a.shape[:-2])


Fr = PrimeField("Fr", "fr", "little", "r")
Fq = PrimeField("Fq", "fq", "big", "p")
Fq2 = QuadraticExtension(Fq)

# Constants of the square-root kernels above (numba reads globals when it compiles them).
_FQ_SQRT_EXP = int_limbs((Fq.modulus + 1) // 4, 6)
_FQ_P_MINUS_3_DIV_4 = int_limbs((Fq.modulus - 3) // 4, 6)
_FQ_P_MINUS_1_DIV_2 = int_limbs((Fq.modulus - 1) // 2, 6)
_FQ2_MINUS_ONE = (tuple(Fq.const(-1)), limbs.FQ_ZERO)
_FQ2_U = (limbs.FQ_ZERO, limbs.FQ_ONE)
