"""zcash point encoding against py_ecc and py-arkworks, and every strict-decoding error."""
import numpy as np
import py_arkworks_bls12381 as ark
import pytest
from py_ecc import optimized_bls12_381 as pe
from py_ecc.bls.point_compression import compress_G1, compress_G2, decompress_G1, decompress_G2

from cuzk.ec.curves import G1, G2
from cuzk.errors import (BadFlagsError, InvalidPointError, NonCanonicalError, NotInSubgroupError,
                         NotOnCurveError, PointLengthError)
from cuzk.ec.encoding import decode, encode, point_size
from cuzk.ff.fields import Fq

P = Fq.modulus


@pytest.fixture(params=[G1, G2], ids=["G1", "G2"])
def curve(request):
    return request.param



def to_pe(c, pt):
    if pt is None:
        return pe.Z1 if c is G1 else pe.Z2
    if c is G1:
        return (pe.FQ(pt[0]), pe.FQ(pt[1]), pe.FQ.one())
    return (pe.FQ2(list(pt[0])), pe.FQ2(list(pt[1])), pe.FQ2.one())


def py_ecc_compressed(c, pt) -> bytes:
    if c is G1:
        return compress_G1(to_pe(c, pt)).to_bytes(48, "big")
    z1, z2 = compress_G2(to_pe(c, pt))
    return z1.to_bytes(48, "big") + z2.to_bytes(48, "big")


def coord_bytes(c, v) -> bytes:
    return v.to_bytes(48, "big") if c is G1 else v[1].to_bytes(48, "big") + v[0].to_bytes(48, "big")


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def test_compressed_matches_py_ecc_and_arkworks(curve, rng):
    c = curve
    pts = np.concatenate([c.random(12, rng), c.identity(1), c.neg(c.random(3, rng))])
    size = point_size(c)
    enc = encode(c, pts)
    assert len(enc) == len(pts) * size
    ark_point = ark.G1Point if c is G1 else ark.G2Point
    for pt, got in zip(c.to_ints(pts), split(enc, size)):
        assert got == py_ecc_compressed(c, pt)
        assert bytes(ark_point.from_compressed_bytes(got).to_compressed_bytes()) == got
    assert np.array_equal(decode(c, enc), pts)
    assert np.array_equal(decode(c, encode(c, c.to_jacobian(pts))), pts)  # Jacobian input


def test_decode_matches_py_ecc_and_arkworks(curve, rng):
    c = curve
    pts = c.random(6, rng)
    ark_point = ark.G1Point if c is G1 else ark.G2Point
    blobs = [bytes(ark_point.from_compressed_bytes(b).to_compressed_bytes()) for b in split(encode(c, pts), point_size(c))]
    got = c.to_ints(decode(c, b"".join(blobs)))
    for blob, pt in zip(blobs, got):
        if c is G1:
            ref = decompress_G1(int.from_bytes(blob, "big"))
        else:
            ref = decompress_G2((int.from_bytes(blob[:48], "big"), int.from_bytes(blob[48:], "big")))
        assert pe.eq(ref, to_pe(c, pt))


def test_uncompressed_layout_and_round_trip(curve, rng):
    c = curve
    pts = np.concatenate([c.random(5, rng), c.identity(1)])
    size = point_size(c, compressed=False)
    enc = encode(c, pts, compressed=False)
    blobs = split(enc, size)
    for pt, blob in zip(c.to_ints(pts[:5]), blobs):
        assert blob == coord_bytes(c, pt[0]) + coord_bytes(c, pt[1])
    assert blobs[-1] == b"\x40" + bytes(size - 1)
    if c is G1:
        assert blobs[0] == bytes(ark.G1Point.from_compressed_bytes(encode(c, pts[:1])).to_xy_bytes_be())
    assert np.array_equal(decode(c, enc, compressed=False), pts)


def test_identity_and_empty(curve):
    c = curve
    assert encode(c, c.identity(1)) == b"\xc0" + bytes(point_size(c) - 1)
    assert decode(c, b"").shape == (0, *c.affine_shape)
    assert encode(c, c.identity(0)) == b""


def corrupt(c, rng, compressed, index, edit):
    """Four valid encodings with point `index` passed through edit(bytearray)."""
    size = point_size(c, compressed)
    blobs = [bytearray(b) for b in split(encode(c, c.random(4, rng), compressed), size)]
    edit(blobs[index])
    return b"".join(map(bytes, blobs))


def raises_at(error, index, c, data, **kw):
    with pytest.raises(error) as info:
        decode(c, data, **kw)
    assert f"point {index}" in str(info.value)
    if issubclass(error, InvalidPointError):
        assert info.value.index == index


@pytest.mark.parametrize("compressed", [True, False], ids=["compressed", "uncompressed"])
def test_bad_flags(curve, rng, compressed):
    c = curve
    size = point_size(c, compressed)

    def flip_compression(b):
        b[0] ^= 0x80

    def infinity_with_bits(b):
        b[0] |= 0x40

    def infinity_with_sign(b):
        b[:] = bytes([b[0] & 0x80 | 0x60]) + bytes(size - 1)

    for edit in (flip_compression, infinity_with_bits, infinity_with_sign):
        raises_at(BadFlagsError, 2, c, corrupt(c, rng, compressed, 2, edit), compressed=compressed)
    if not compressed:
        def sign_set(b):
            b[0] |= 0x20
        raises_at(BadFlagsError, 1, c, corrupt(c, rng, compressed, 1, sign_set), compressed=False)


@pytest.mark.parametrize("compressed", [True, False], ids=["compressed", "uncompressed"])
def test_non_canonical_coordinates(curve, rng, compressed):
    c = curve

    def x_is_p(b):
        b[0:48] = P.to_bytes(48, "big")
        b[0] |= 0x80 if compressed else 0

    raises_at(NonCanonicalError, 3, c, corrupt(c, rng, compressed, 3, x_is_p), compressed=compressed)
    if c is G2:  # the c0 half of x (bytes 48..96) at p + 5
        def c0_above_p(b):
            b[48:96] = (P + 5).to_bytes(48, "big")
        raises_at(NonCanonicalError, 0, c, corrupt(c, rng, compressed, 0, c0_above_p), compressed=compressed)
    if not compressed:
        def y_is_p(b):
            half = len(b) // 2
            b[half:half + 48] = P.to_bytes(48, "big")
        raises_at(NonCanonicalError, 1, c, corrupt(c, rng, False, 1, y_is_p), compressed=False)


def test_not_on_curve(curve, rng):
    c = curve
    # compressed: an x with no y on the curve (x^3 + b a non-square)
    xs = c.field.random(64, rng)
    _, ok = c.field.sqrt(c.field.add(c.field.mul(c.field.sqr(xs), xs), c.b))
    bad_x = c.field.to_ints(xs[~ok][:1])[0]

    def set_x(b):
        b[:len(b)] = coord_bytes(c, bad_x)
        b[0] |= 0x80

    raises_at(NotOnCurveError, 2, c, corrupt(c, rng, True, 2, set_x))

    def bump_y(b):  # uncompressed: last byte of y + 1 (still canonical w.h.p.)
        b[-1] ^= 1

    raises_at(NotOnCurveError, 1, c, corrupt(c, rng, False, 1, bump_y), compressed=False)


@pytest.mark.parametrize("compressed", [True, False], ids=["compressed", "uncompressed"])
def test_not_in_subgroup(curve, rng, compressed):
    c = curve
    pts = c.random(3, rng)
    pts[1] = c.random_on_curve(1, rng)[0]
    data = encode(c, pts, compressed)
    raises_at(NotInSubgroupError, 1, c, data, compressed=compressed)
    assert np.array_equal(decode(c, data, compressed, check_subgroup=False), pts)


def test_wrong_length(curve, rng):
    c = curve
    data = encode(c, c.random(3, rng))
    for bad in (data[:-1], data + b"\x00", data[:10]):
        with pytest.raises(PointLengthError):
            decode(c, bad)
    with pytest.raises(PointLengthError):
        decode(c, data, compressed=False)  # 3 compressed points are 1.5 uncompressed ones
