"""bellperson's .params and .vk files, read memory-mapped and decoded lazily, written atomically.

Layout (all points zcash-uncompressed, big-endian: G1 96 bytes, G2 192 bytes; lengths u32 big-endian):
    vk:     alpha_g1 | beta_g1 | beta_g2 | gamma_g2 | delta_g1 | delta_g2 | len | ic[len]
    params: vk | len | h[len] | len | l[len] | len | a[len] | len | b_g1[len] | len | b_g2[len]
A .vk file is the vk part alone. No point may be the identity except alpha..delta (which bellperson
also never writes as the identity). Any truncation, trailing byte, bad flag, non-canonical coordinate
or point off the curve (or, when checked, off the subgroup) raises ParamsFormatError naming the file
and the byte offset of the first bad length or point.
"""
from __future__ import annotations

import mmap
import os
import struct
from functools import cached_property
from pathlib import Path

import numpy as np

from cuzk.ec import encoding
from cuzk.ec.curves import G1, G2, Curve
from cuzk.errors import CuzkError, ParamsFormatError
from cuzk.groth16.keys import PARAMS_VECTORS, Parameters, VerifyingKey
from cuzk.util.atomic import atomic_write

_VK_POINTS = (("alpha_g1", G1), ("beta_g1", G1), ("beta_g2", G2), ("gamma_g2", G2), ("delta_g1", G1),
              ("delta_g2", G2))
_VECTOR_CURVE = {"ic": G1, "h": G1, "l": G1, "a": G1, "b_g1": G1, "b_g2": G2}
_CHUNK = 1 << 16  # points encoded / decoded per call


def _size(curve: Curve) -> int:
    return encoding.point_size(curve, compressed=False)


def encode_points(curve: Curve, points: np.ndarray) -> bytes:
    """Uncompressed zcash encoding of an (n, 2, *coord) affine array."""
    return encoding.encode(curve, points, compressed=False) if len(points) else b""


class _Reader:
    """Bounds-checked decoding from a buffer (bytes or mmap) that names its source in every error."""

    def __init__(self, buf, name: str, checked: bool) -> None:
        self.buf, self.name, self.checked = buf, name, checked

    def fail(self, offset: int, reason: str) -> ParamsFormatError:
        return ParamsFormatError(self.name, offset, reason)

    def length(self, offset: int, what: str) -> int:
        if offset + 4 > len(self.buf):
            raise self.fail(offset, f"truncated: the file ends inside the length of {what}")
        return struct.unpack_from(">I", self.buf, offset)[0]

    def extent(self, offset: int, count: int, curve: Curve, what: str) -> int:
        """End offset of `count` points starting at `offset`, checked against the buffer's size."""
        end = offset + count * _size(curve)
        if end > len(self.buf):
            raise self.fail(offset, f"truncated: {what} needs {end - offset} bytes ({count} points), "
                                    f"only {len(self.buf) - offset} remain")
        return end

    def points(self, offset: int, count: int, curve: Curve, what: str, allow_identity: bool = False) -> np.ndarray:
        """Decode `count` points at `offset`; the error names the first bad point's offset."""
        size = _size(curve)
        out = np.empty((count, *curve.affine_shape), dtype=np.uint64)
        for lo in range(0, count, _CHUNK):
            hi = min(count, lo + _CHUNK)
            out[lo:hi] = self._chunk(offset + lo * size, hi - lo, curve, what, lo, allow_identity)
        return out

    def _chunk(self, offset: int, count: int, curve: Curve, what: str, first: int,
               allow_identity: bool) -> np.ndarray:
        size = _size(curve)
        data = bytes(self.buf[offset:offset + count * size])
        try:
            pts = self._decode(curve, data)
        except CuzkError as e:
            i = getattr(e, "index", None)
            if i is None:  # no index in the error: find the first bad point one by one
                i = next(j for j in range(count) if not self._decodes(curve, data[j * size:(j + 1) * size]))
            raise self.fail(offset + i * size, f"{what}[{first + i}]: {getattr(e, 'reason', e)}") from e
        identity = ~pts.reshape(count, -1).any(axis=1)
        if not allow_identity and identity.any():
            i = int(np.argmax(identity))
            raise self.fail(offset + i * size, f"{what}[{first + i}] is the point at infinity")
        return pts

    def _decode(self, curve: Curve, data: bytes) -> np.ndarray:
        return encoding.decode(curve, data, compressed=False, check_subgroup=self.checked)

    def _decodes(self, curve: Curve, data: bytes) -> bool:
        try:
            self._decode(curve, data)
        except CuzkError:
            return False
        return True


def _read_vk(r: _Reader) -> tuple[VerifyingKey, int]:
    """The verifying key at the start of r's buffer and the offset just after it."""
    offset, fields = 0, {}
    for name, curve in _VK_POINTS:
        end = r.extent(offset, 1, curve, name)
        fields[name] = r.points(offset, 1, curve, name, allow_identity=True)[0]
        offset = end
    count = r.length(offset, "ic")
    end = r.extent(offset + 4, count, G1, "ic")
    fields["ic"] = r.points(offset + 4, count, G1, "ic")
    return VerifyingKey(**fields), end


def vk_to_bytes(vk: VerifyingKey) -> bytes:
    head = b"".join(encode_points(curve, getattr(vk, name)[None]) for name, curve in _VK_POINTS)
    return head + struct.pack(">I", len(vk.ic)) + encode_points(G1, vk.ic)


def vk_from_bytes(data: bytes, name: str = "<vk bytes>", checked: bool = True) -> VerifyingKey:
    r = _Reader(data, name, checked)
    vk, end = _read_vk(r)
    if end != len(data):
        raise r.fail(end, f"{len(data) - end} trailing bytes after the verifying key")
    return vk


def read_vk(path: str | os.PathLike, checked: bool = True) -> VerifyingKey:
    return vk_from_bytes(Path(path).read_bytes(), str(path), checked)


def write_vk(path: str | os.PathLike, vk: VerifyingKey) -> None:
    atomic_write(path, vk_to_bytes(vk))


class MappedParameters:
    """A bellperson .params file, memory-mapped: the vk and all section offsets are read (and every
    length checked against the file size) on open; h, l, a, b_g1, b_g2 decode on first access.
    `checked` adds the subgroup check to every point (bellperson's `checked`)."""

    def __init__(self, path: str | os.PathLike, checked: bool = True) -> None:
        self.path = str(path)
        with open(self.path, "rb") as f:
            self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size \
                else b""
        self._reader = _Reader(self._mmap, self.path, checked)
        self.vk, offset = _read_vk(self._reader)
        self._sections: dict[str, tuple[int, int]] = {}
        for name in PARAMS_VECTORS:
            count = self._reader.length(offset, name)
            end = self._reader.extent(offset + 4, count, _VECTOR_CURVE[name], name)
            self._sections[name] = (offset + 4, count)
            offset = end
        if offset != len(self._mmap):
            raise self._reader.fail(offset, f"{len(self._mmap) - offset} trailing bytes after b_g2")

    def _vector(self, name: str) -> np.ndarray:
        offset, count = self._sections[name]
        return self._reader.points(offset, count, _VECTOR_CURVE[name], name)

    def lengths(self) -> dict[str, int]:
        """Points per vector, without decoding them."""
        return {name: count for name, (_, count) in self._sections.items()}

    h = cached_property(lambda self: self._vector("h"))
    l = cached_property(lambda self: self._vector("l"))
    a = cached_property(lambda self: self._vector("a"))
    b_g1 = cached_property(lambda self: self._vector("b_g1"))
    b_g2 = cached_property(lambda self: self._vector("b_g2"))

    def close(self) -> None:
        """Unmap the file (vectors decoded so far stay usable)."""
        if isinstance(self._mmap, mmap.mmap):
            self._mmap.close()

    def load(self) -> Parameters:
        """Every vector decoded, as in-memory Parameters."""
        return Parameters(self.vk, *(getattr(self, name) for name in PARAMS_VECTORS))


def read_params(path: str | os.PathLike, checked: bool = True) -> MappedParameters:
    return MappedParameters(path, checked)


def write_params(path: str | os.PathLike, params: Parameters | MappedParameters) -> None:
    """bellperson's Parameters::write layout, written to a temporary file and renamed into place."""
    def chunks():
        yield vk_to_bytes(params.vk)
        for name in PARAMS_VECTORS:
            points = getattr(params, name)
            yield struct.pack(">I", len(points))
            for i in range(0, len(points), _CHUNK):
                yield encode_points(_VECTOR_CURVE[name], points[i:i + _CHUNK])
    atomic_write(path, chunks())
