"""bellperson's .params and .vk files: read with ordinary file reads, validated, decoded; written atomically.

Layout (all points zcash-uncompressed, big-endian: G1 96 bytes, G2 192 bytes; lengths u32 big-endian):
    vk:     alpha_g1 | beta_g1 | beta_g2 | gamma_g2 | delta_g1 | delta_g2 | len | ic[len]
    params: vk | len | h[len] | len | l[len] | len | a[len] | len | b_g1[len] | len | b_g2[len]
A .vk file is the vk part alone. The identity (only its canonical encoding, see cuzk.ec.encoding) is
refused where bellperson refuses it: in ic, h, l, a, b_g1 and b_g2 (its VerifyingKey::read and
Parameters::read), and in delta_g1 / delta_g2 of a .params file (its prover refuses such parameters);
alpha_g1 .. delta_g2 of a .vk may be the identity, as bellperson reads them. Any truncation, trailing
byte, bad flag, non-canonical coordinate or point off the curve (or, when checked, off the subgroup)
raises ParamsFormatError naming the file, the vector and index, and the byte offset.

Files are never memory-mapped (a mapped file truncated underneath kills the process with SIGBUS on the
next access): they are read with os.pread into memory the process owns, and every length is checked
against the file's size before anything is allocated. A file that shrinks while open gives
ParamsFormatError on the next read; one that cannot be opened gives ParamsReadError.
"""
from __future__ import annotations

import os
import struct
import weakref

import numpy as np

from cuzk.backend import get_backend
from cuzk.ec import encoding
from cuzk.ec.curves import G1, G2, Curve
from cuzk.errors import CuzkError, InputError, ParamsFormatError, ParamsReadError
from cuzk.groth16.keys import PARAMS_VECTORS, Parameters, VerifyingKey
from cuzk.util.arrays import on_device
from cuzk.util.atomic import atomic_write
from cuzk.util.fileio import is_regular, open_fd, pread_into

_VK_POINTS = (("alpha_g1", G1), ("beta_g1", G1), ("beta_g2", G2), ("gamma_g2", G2), ("delta_g1", G1),
              ("delta_g2", G2))
_DELTA = ("delta_g1", "delta_g2")
_VECTOR_CURVE = {"ic": G1, "h": G1, "l": G1, "a": G1, "b_g1": G1, "b_g2": G2}
_CHUNK = 1 << 16  # points read and decoded per call (6 MiB of G1, 12 MiB of G2)


def _size(curve: Curve) -> int:
    return encoding.point_size(curve, compressed=False)


def encode_points(curve: Curve, points: np.ndarray) -> bytes:
    """Uncompressed zcash encoding of an (n, 2, *coord) affine array."""
    return encoding.encode(curve, points, compressed=False) if len(points) else b""


class _Reader:
    """Bounds-checked decoding from `size` bytes read by `read(offset, n)`; every error names the
    source `name` and the byte offset."""

    def __init__(self, name: str, size: int, checked: bool) -> None:
        self.name, self.size, self.checked = name, size, checked

    def read(self, offset: int, n: int) -> bytes:
        raise NotImplementedError

    def fail(self, offset: int, reason: str) -> ParamsFormatError:
        return ParamsFormatError(self.name, offset, reason)

    def length(self, offset: int, what: str) -> int:
        if offset + 4 > self.size:
            raise self.fail(offset, f"truncated: the file ends inside the length of {what}")
        return struct.unpack(">I", self.read(offset, 4))[0]

    def extent(self, offset: int, count: int, curve: Curve, what: str) -> int:
        """End offset of `count` points starting at `offset`, checked against the size."""
        end = offset + count * _size(curve)
        if end > self.size:
            raise self.fail(offset, f"truncated: {what} needs {end - offset} bytes ({count} points), "
                                    f"only {self.size - offset} remain")
        return end

    def points(self, offset: int, count: int, curve: Curve, what: str, allow_identity: bool = False) -> np.ndarray:
        """Decode `count` points at `offset` (within the size: see `extent`), a chunk at a time."""
        size = _size(curve)
        out = np.empty((count, *curve.affine_shape), dtype=np.uint64)
        for lo in range(0, count, _CHUNK):
            hi = min(count, lo + _CHUNK)
            out[lo:hi] = self._chunk(offset + lo * size, hi - lo, curve, what, lo, allow_identity)
        return out

    def _chunk(self, offset: int, count: int, curve: Curve, what: str, first: int,
               allow_identity: bool) -> np.ndarray:
        size = _size(curve)
        data = self.read(offset, count * size)
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


class _BytesReader(_Reader):
    """A _Reader over bytes in memory."""

    def __init__(self, data: bytes | bytearray, name: str, checked: bool) -> None:
        super().__init__(name, len(data), checked)
        self.data = data

    def read(self, offset: int, n: int) -> bytes:
        return bytes(self.data[offset:offset + n])


class _FileReader(_Reader):
    """A _Reader over an open regular file, read with os.pread. Its size is taken once, at open; a read
    that finds the file shorter (truncated since) raises ParamsFormatError."""

    def __init__(self, path: str | os.PathLike, checked: bool) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise InputError(f"a parameter file path must be str or os.PathLike, got {type(path).__name__}")
        name = os.fsdecode(path)
        try:
            fd, st = open_fd(path)
        except OSError as e:
            raise ParamsReadError(name, f"cannot open: {e.strerror}") from e
        if not is_regular(st):
            os.close(fd)
            raise ParamsReadError(name, "not a regular file")
        super().__init__(name, st.st_size, checked)
        self.fd: int | None = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    def read(self, offset: int, n: int) -> bytes:
        out = bytearray(n)
        self.read_into(offset, memoryview(out))
        return bytes(out)

    def read_into(self, offset: int, out: memoryview) -> None:
        """Fill `out` with the bytes at `offset`."""
        if self.fd is None:
            raise ParamsReadError(self.name, "read after close()")
        try:
            got = pread_into(self.fd, out, offset)
        except OSError as e:
            raise self.fail(offset, f"read failed: {e.strerror}") from e
        if got < len(out):
            raise self.fail(offset + got, f"truncated while open: the file was {self.size} bytes "
                                          f"when opened and now ends at byte {offset + got}")

    def close(self) -> None:
        self.fd = None
        self._finalizer()


def _read_vk(r: _Reader, delta_may_be_identity: bool) -> tuple[VerifyingKey, int]:
    """The verifying key at the start of r's source and the offset just after it."""
    offset, fields = 0, {}
    for name, curve in _VK_POINTS:
        end = r.extent(offset, 1, curve, name)
        fields[name] = r.points(offset, 1, curve, name, allow_identity=True)[0]
        if name in _DELTA and not delta_may_be_identity and not fields[name].any():
            raise r.fail(offset, f"{name} is the point at infinity (bellperson refuses to prove with it)")
        offset = end
    count = r.length(offset, "ic")
    end = r.extent(offset + 4, count, G1, "ic")
    fields["ic"] = r.points(offset + 4, count, G1, "ic")
    return VerifyingKey(**fields), end


def _read_whole_vk(r: _Reader) -> VerifyingKey:
    vk, end = _read_vk(r, delta_may_be_identity=True)
    if end != r.size:
        raise r.fail(end, f"{r.size - end} trailing bytes after the verifying key")
    return vk


def vk_to_bytes(vk: VerifyingKey) -> bytes:
    head = b"".join(encode_points(curve, getattr(vk, name)[None]) for name, curve in _VK_POINTS)
    return head + struct.pack(">I", len(vk.ic)) + encode_points(G1, vk.ic)


def vk_from_bytes(data: bytes | bytearray | memoryview, name: str = "<vk bytes>",
                  checked: bool = True) -> VerifyingKey:
    """A verifying key from bellperson's layout; ParamsFormatError (BytesTypeError for a non-bytes type)."""
    return _read_whole_vk(_BytesReader(encoding.as_bytes(data, "a verifying key"), name, checked))


def read_vk(path: str | os.PathLike, checked: bool = True) -> VerifyingKey:
    """A .vk file; ParamsReadError if it cannot be opened, ParamsFormatError if it is bad."""
    r = _FileReader(path, checked)
    try:
        return _read_whole_vk(r)
    finally:
        r.close()


def write_vk(path: str | os.PathLike, vk: VerifyingKey) -> None:
    atomic_write(path, vk_to_bytes(vk))


class MappedParameters:
    """A bellperson .params file (bellperson's name; read with os.pread, not mapped), kept open.

    Opening reads and checks the vk and the five section lengths (against the file size). Each vector
    h, l, a, b_g1, b_g2 is read and decoded on access, an array of the size it has on disk (96 bytes
    per G1 point, 192 per G2): with `keep` it is kept from its first access on (close() releases the
    file, not the vectors decoded so far), without it each access reads it again, so a prover that
    takes one vector per MSM holds one at a time. `checked` adds the subgroup check to every point
    (bellperson's `checked`).
    """

    def __init__(self, path: str | os.PathLike, checked: bool = True, keep: bool = True) -> None:
        self._reader = _FileReader(path, checked)
        self.path = self._reader.name
        self.keep = keep
        self._kept: dict[str, np.ndarray] = {}
        try:
            self.vk, offset = _read_vk(self._reader, delta_may_be_identity=False)
            self._sections: dict[str, tuple[int, int]] = {}
            for name in PARAMS_VECTORS:
                count = self._reader.length(offset, name)
                end = self._reader.extent(offset + 4, count, _VECTOR_CURVE[name], name)
                self._sections[name] = (offset + 4, count)
                offset = end
            if offset != self._reader.size:
                raise self._reader.fail(offset, f"{self._reader.size - offset} trailing bytes after b_g2")
        except BaseException:
            self._reader.close()
            raise

    def vector(self, name: str) -> np.ndarray:
        """Query vector `name` (one of PARAMS_VECTORS), decoded (see the class doc)."""
        if name in self._kept:
            return self._kept[name]
        offset, count = self._sections[name]
        points = self._reader.points(offset, count, _VECTOR_CURVE[name], name)
        if self.keep:
            self._kept[name] = points
        return points

    def lengths(self) -> dict[str, int]:
        """Points per vector, without reading them."""
        return {name: count for name, (_, count) in self._sections.items()}

    def section(self, name: str) -> tuple[int, int]:
        """(byte offset of the first point, points) of vector `name` in the file."""
        return self._sections[name]

    def read_raw(self, offset: int, out: memoryview, drop_cache: bool = False) -> None:
        """The file's bytes at `offset` into `out` (ParamsFormatError where the file ends sooner);
        drop_cache: then drop them from the page cache (POSIX_FADV_DONTNEED), for a reader that
        streams the file once."""
        self._reader.read_into(offset, out)
        if drop_cache and len(out):
            os.posix_fadvise(self._reader.fd, offset, len(out), os.POSIX_FADV_DONTNEED)

    def point_error(self, name: str, index: int, why: str) -> ParamsFormatError:
        """The ParamsFormatError that `vector(name)` raises for a bad point `index` (found by decoding
        the read chunk that holds it), or one stating `why` where the host decodes that chunk."""
        offset, count = self._sections[name]
        curve = _VECTOR_CURVE[name]
        lo = index - index % _CHUNK
        try:
            self._reader._chunk(offset + lo * _size(curve), min(count, lo + _CHUNK) - lo, curve, name, lo,
                                allow_identity=False)
        except ParamsFormatError as e:
            return e
        return self._reader.fail(offset + index * _size(curve), f"{name}[{index}]: {why}")

    h = property(lambda self: self.vector("h"))
    l = property(lambda self: self.vector("l"))
    a = property(lambda self: self.vector("a"))
    b_g1 = property(lambda self: self.vector("b_g1"))
    b_g2 = property(lambda self: self.vector("b_g2"))

    def close(self) -> None:
        """Close the file; vectors decoded so far stay usable, the others raise ParamsReadError."""
        self._reader.close()

    def load(self) -> Parameters:
        """Every vector decoded, as in-memory Parameters."""
        return Parameters(self.vk, *(getattr(self, name) for name in PARAMS_VECTORS))


def read_params(path: str | os.PathLike, checked: bool = True, keep: bool = True) -> MappedParameters:
    """A .params file, opened (see MappedParameters); ParamsReadError / ParamsFormatError."""
    return MappedParameters(path, checked, keep)


def write_params(path: str | os.PathLike, params: Parameters | MappedParameters) -> None:
    """bellperson's Parameters::write layout, written to a temporary file and renamed into place.
    Vectors on the GPU (cupy arrays) are encoded there and come to the host a chunk at a time
    (CudaBackend.encoded_points), never whole."""
    def chunks():
        yield vk_to_bytes(params.vk)
        for name in PARAMS_VECTORS:
            points, curve = getattr(params, name), _VECTOR_CURVE[name]
            yield struct.pack(">I", len(points))
            if on_device(points):
                yield from get_backend("cuda").encoded_points(points, "g2" if curve is G2 else "g1")
                continue
            for i in range(0, len(points), _CHUNK):
                yield encode_points(curve, points[i:i + _CHUNK])
    atomic_write(path, chunks())
