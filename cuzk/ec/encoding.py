"""zcash encoding of BLS12-381 points (as written by bellman, blst, arkworks, py_ecc), vectorised.

A point is x (compressed) or x || y (uncompressed), each coordinate big-endian; an Fq2 coordinate is
c1 || c0. The top three bits of the first byte are flags: 0x80 compressed, 0x40 the identity (all
other bits zero), 0x20 (compressed only) y is the lexicographically larger root: y > (p-1)/2, for
Fq2 comparing c1 first and c0 when c1 == 0. Sizes: G1 48 / 96 bytes, G2 96 / 192 bytes.

Decoding is strict: bad flag combinations (BadFlagsError), coordinates >= p (NonCanonicalError),
points off the curve (NotOnCurveError) and, unless check_subgroup=False, outside the prime-order
subgroup (NotInSubgroupError) are rejected, naming the first bad point's index. The identity is only
its canonical encoding (infinity flag, all other bits zero): all-zero uncompressed bytes are (0, 0),
off the curve, and refused as zcash's bls12_381 does. Data that is not bytes, bytearray or memoryview
raises BytesTypeError.
"""
from __future__ import annotations

import numpy as np

from cuzk.ec.curves import Curve
from cuzk.errors import (BadFlagsError, BytesTypeError, NonCanonicalError, NotInSubgroupError,
                         NotOnCurveError, PointLengthError)
from cuzk.ff.fields import Fq, int_limbs

_COMPRESSED, _INFINITY, _SIGN = 0x80, 0x40, 0x20
_HALF_LIMBS = np.array(int_limbs((Fq.modulus - 1) // 2, 6), dtype=np.uint64)


def point_size(curve: Curve, compressed: bool = True) -> int:
    """Bytes per encoded point."""
    return 48 * (2 if len(curve.coord_shape) == 2 else 1) * (1 if compressed else 2)


def _above_half(a: np.ndarray) -> np.ndarray:
    """a > (p-1)/2 for plain little-endian limb rows a (..., 6)."""
    gt = np.zeros(a.shape[:-1], dtype=bool)
    eq = np.ones(a.shape[:-1], dtype=bool)
    for i in range(5, -1, -1):
        gt |= eq & (a[..., i] > _HALF_LIMBS[i])
        eq &= a[..., i] == _HALF_LIMBS[i]
    return gt


def _y_is_larger(y_plain: np.ndarray) -> np.ndarray:
    """The zcash sign bit of plain coordinates (n, *coord)."""
    if y_plain.ndim == 2:
        return _above_half(y_plain)
    c1_zero = ~y_plain[:, 1].any(axis=1)
    return _above_half(y_plain[:, 1]) | (c1_zero & _above_half(y_plain[:, 0]))


def _coord_bytes(plain: np.ndarray) -> np.ndarray:
    """(n, 48 k) uint8 big-endian bytes of plain coordinates (n, *coord): limbs and c0/c1 reversed."""
    n, k = len(plain), int(np.prod(plain.shape[1:]))
    return plain.reshape(n, k)[:, ::-1].astype(">u8").view(np.uint8).reshape(n, 8 * k)


def _coord_limbs(raw: np.ndarray, coord_shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of `_coord_bytes`: plain limbs (n, *coord) from (n, 48 k) uint8."""
    n = len(raw)
    words = np.ascontiguousarray(raw).view(">u8").reshape(n, raw.shape[1] // 8)
    return words[:, ::-1].astype(np.uint64).reshape(n, *coord_shape)


def encode(curve: Curve, points: np.ndarray, compressed: bool = True) -> bytes:
    """zcash encoding of affine or Jacobian points (..., 2|3, *coord), concatenated in order."""
    aff = curve.to_affine(points).reshape(-1, *curve.affine_shape)
    plain = Fq.to_canonical_limbs(aff)
    identity = ~aff.any(axis=tuple(range(1, aff.ndim)))
    x, y = plain[:, 0], plain[:, 1]
    out = _coord_bytes(x) if compressed else np.concatenate([_coord_bytes(x), _coord_bytes(y)], axis=1)
    flags = np.where(identity, _INFINITY, 0)
    if compressed:
        flags |= _COMPRESSED | np.where(~identity & _y_is_larger(y), _SIGN, 0)
    out[:, 0] |= flags.astype(np.uint8)
    return out.tobytes()


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if len(idx) else None


def as_bytes(data: bytes | bytearray | memoryview, what: str) -> bytes | bytearray:
    """`data` itself, or a memoryview's raw bytes; BytesTypeError for any other type."""
    if isinstance(data, memoryview):
        return data.tobytes()
    if not isinstance(data, (bytes, bytearray)):
        raise BytesTypeError(f"{what} must be bytes, bytearray or memoryview, got {type(data).__name__}")
    return data


def decode(curve: Curve, data: bytes | bytearray | memoryview, compressed: bool = True,
           check_subgroup: bool = True) -> np.ndarray:
    """Affine points (n, 2, *coord) from zcash encodings; raises a typed InvalidPointError (or
    NonCanonicalError) naming the first bad point. check_subgroup=False trusts subgroup membership."""
    data = as_bytes(data, f"encoded {curve.name} points")
    size = point_size(curve, compressed)
    if len(data) % size:
        raise PointLengthError(f"{curve.name}: {len(data)} bytes is not a multiple of the "
                               f"{'compressed' if compressed else 'uncompressed'} point size {size}")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, size).copy()
    n = len(raw)
    flags = raw[:, 0] & 0xE0
    raw[:, 0] &= 0x1F
    infinity = (flags & _INFINITY) != 0
    sign = (flags & _SIGN) != 0
    checks = [
        ((flags & _COMPRESSED) == 0 if compressed else (flags & _COMPRESSED) != 0,
         "compression flag is " + ("missing" if compressed else "set in an uncompressed encoding")),
        (infinity & raw.any(axis=1), "infinity flag with non-zero coordinate bits"),
        (infinity & sign, "infinity flag with the sign bit set"),
        (~np.full(n, compressed) & sign, "sign bit set in an uncompressed encoding"),
    ]
    for mask, reason in checks:
        if (i := _first(mask)) is not None:
            raise BadFlagsError(i, reason)
    if not compressed and (i := _first(~infinity & ~raw.any(axis=1))) is not None:
        raise NotOnCurveError(i, f"all-zero bytes are (0, 0), not on the {curve.name} curve "
                                 "(the identity is encoded with the infinity flag)")

    half = size if compressed else size // 2
    coords = [_coord_limbs(raw[:, :half], curve.coord_shape)]
    if not compressed:
        coords.append(_coord_limbs(raw[:, half:], curve.coord_shape))
    for name, c in zip("xy", coords):
        ok = Fq.is_canonical(c)
        if (i := _first(~ok.all(axis=tuple(range(1, ok.ndim))))) is not None:
            raise NonCanonicalError(f"{curve.name} point {i}: {name} coordinate is not below p")

    x = Fq.from_canonical_limbs(coords[0])
    if compressed:
        f = curve.field
        y, ok = f.sqrt(f.add(f.mul(f.sqr(x), x), curve.b))
        if (i := _first(~ok & ~infinity)) is not None:
            raise NotOnCurveError(i, f"x is not the abscissa of a {curve.name} curve point")
        flip = _y_is_larger(Fq.to_canonical_limbs(y)) != sign
        y[flip] = f.neg(y[flip])
    else:
        y = Fq.from_canonical_limbs(coords[1])
    points = np.stack([x, y], axis=1)
    points[infinity] = 0
    if not compressed and (i := _first(~curve.is_on_curve(points))) is not None:
        raise NotOnCurveError(i, f"not on the {curve.name} curve")
    if check_subgroup and (i := _first(~curve.in_subgroup(points))) is not None:
        raise NotInSubgroupError(i, f"not in the {curve.name} prime-order subgroup")
    return points
