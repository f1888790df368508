"""Regression tests for point decoding: all-zero uncompressed bytes are not the identity,
and wrong Python types raise BytesTypeError, never TypeError."""
from array import array

import numpy as np
import pytest

from cuzk.ec.curves import G1, G2
from cuzk.ec.encoding import decode, encode, point_size
from cuzk.errors import BadFlagsError, BytesTypeError, CuzkError, NotOnCurveError, PointLengthError


@pytest.fixture(params=[G1, G2], ids=["G1", "G2"])
def curve(request):
    return request.param


def test_all_zero_uncompressed_is_refused(curve, rng):
    size = point_size(curve, compressed=False)
    with pytest.raises(NotOnCurveError, match="infinity flag") as err:
        decode(curve, bytes(size), compressed=False, check_subgroup=False)
    assert err.value.index == 0
    n = int(rng.integers(2, 8))
    i = int(rng.integers(0, n))
    blobs = [encode(curve, p[None], compressed=False) for p in curve.random(n, rng)]
    blobs[i] = bytes(size)
    with pytest.raises(NotOnCurveError) as err:
        decode(curve, b"".join(blobs), compressed=False)
    assert err.value.index == i


def test_only_the_canonical_identity_decodes_as_identity(curve):
    for compressed, first in ((False, 0x40), (True, 0xC0)):
        size = point_size(curve, compressed)
        canonical = bytes([first]) + bytes(size - 1)
        assert encode(curve, curve.identity(1), compressed) == canonical
        assert not decode(curve, canonical, compressed).any()
    with pytest.raises(BadFlagsError, match="compression flag is missing"):
        decode(curve, bytes(point_size(curve)))  # all-zero compressed: no compression flag


@pytest.mark.parametrize("bad", [None, "ab" * 48, list(range(96)), 96, 1.5, object(), np.zeros(96, np.uint8)],
                         ids=["None", "str", "list", "int", "float", "object", "ndarray"])
def test_wrong_types_raise_bytes_type_error(curve, bad):
    for compressed in (True, False):
        with pytest.raises(BytesTypeError, match="must be bytes") as err:
            decode(curve, bad, compressed)
        assert isinstance(err.value, CuzkError) and not isinstance(err.value, TypeError)


def test_memoryview_and_bytearray(curve, rng):
    pts = curve.random(3, rng)
    data = encode(curve, pts)
    for view in (memoryview(data), bytearray(data), memoryview(array("B", data)), memoryview(data).cast("I")):
        assert np.array_equal(decode(curve, view), pts)  # a memoryview counts as its raw bytes
    with pytest.raises(PointLengthError):
        decode(curve, memoryview(data)[:-1])
