"""The on-disk container of a compiled circuit (PCE): named numpy arrays under a circuit identity,
checked end to end before use. It knows nothing of what the arrays mean (cuzk.r1cs.pce does).

Layout, format version 1 (integers little-endian):

    offset   bytes  content
    0        8      magic b"CUZKPCE\\0"
    8        4      format version, uint32 (1)
    12       4      H, the length of the header, uint32, 2 <= H <= MAX_HEADER
    16       H      the header: canonical JSON (ASCII, keys sorted, no spaces)
    16 + H   32     the header checksum: BLAKE2b-256, person b"cuzk-pce-header", of bytes [0, 16 + H)
    then per section, in header order: zero bytes up to its `offset` (the first multiple of ALIGN =
    4096 at or after the end of what precedes it), then its `nbytes` bytes. The file ends where the last
    section does (at 48 + H without sections).

The header:

    {"file_size": <int>, "identity": {<str>: <str | int | bool | null>, ...},
     "sections": [{"checksum": <64 hex digits>, "dtype": "<u4", "name": <str>, "nbytes": <int>,
                   "offset": <int>, "shape": [<int>, ...]}, ...]}

`identity` is the caller's (shape name, cuzk version, circuit digest...): a file is used only for
an equal identity. `dtype` is numpy's dtype.str (byte order, kind b/i/u/f/c, item size); a section
holds its array's bytes in C order, nbytes = prod(shape) * itemsize (a 0-d array, the way to carry a
scalar, has shape []; an empty one nbytes 0). A section's checksum is BLAKE2b-256, person
b"cuzk-pce-section", of the concatenated BLAKE2b-256 digests, person b"cuzk-pce-leaf", of its
consecutive LEAF = 8 MiB pieces (the last shorter, none when empty): pieces are read and hashed in
parallel.

The layout is canonical: a reader recomputes every offset and the file size, requires the header in
canonical form and the padding to be zeros, so a change to any byte is detected. Sections start at
multiples of 4096, so they can be read (or mapped) straight into arrays.

Reading fills memory the caller owns with preads (never a mapping, which dies with SIGBUS when the
file is truncated underneath) and returns nothing before every checksum matched. Writing goes
through cuzk.util.atomic (temporary, fsync, rename) under an exclusive flock on `<path>.lock`;
build_or_load re-checks under that lock, so processes building one PCE at once build it once. A lock
path that cannot be locked (a directory there, a FIFO, no permission) is a PceReadError naming it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import struct
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuzk.errors import (InputError, PceFileError, PceFormatError, PceMismatchError, PceNotFoundError,
                         PceReadError)
from cuzk.util.atomic import atomic_write
from cuzk.util.cache_dirs import params_dir
from cuzk.util.fileio import is_regular, locked, open_regular, pread_into
from cuzk.util.jsonio import as_hex, as_int, as_object, load_json, quote

log = logging.getLogger("cuzk.pce")

MAGIC = b"CUZKPCE\0"
FORMAT_VERSION = 1
ALIGN = 4096
LEAF = 8 << 20
MAX_HEADER = 1 << 20
MAX_THREADS = 32
_PREFIX = struct.Struct("<8sII")
_DIGEST = 32
_HEADER_AT = _PREFIX.size
_KINDS = "biufc"
_DTYPE = re.compile(r"[<>|][biufc][1-9][0-9]{0,2}")
_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_SECTION_KEYS = {"checksum", "dtype", "name", "nbytes", "offset", "shape"}
_U63 = (1 << 63) - 1

IdentityValue = str | int | bool | None
Identity = Mapping[str, IdentityValue]
Arrays = Mapping[str, np.ndarray]


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()  # an identity field one side lacks, in PceMismatchError.differences


@dataclass(frozen=True)
class Section:
    """One array of a PCE file: where its bytes lie and their checksum."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    checksum: bytes


@dataclass(frozen=True)
class PceHeader:
    """The checked header of a PCE file (its sections not yet read)."""

    identity: dict[str, IdentityValue]
    sections: tuple[Section, ...]
    header_end: int  # 48 + H: where the padding before the first section begins
    file_size: int


def pce_path(identity_or_stem: Identity | str) -> Path:
    """<params_dir()>/cuzk-<stem>.pce, beside the parameters; an identity's stem is its "shape"."""
    stem = identity_or_stem if isinstance(identity_or_stem, str) else identity_or_stem.get("shape")
    if not isinstance(stem, str) or not _STEM.fullmatch(stem):
        raise InputError(f"PCE file stem {stem!r}: expected letters, digits, '.', '_', '-' (at most 200)")
    return params_dir() / f"cuzk-{stem}.pce"


def read_header(path: str | os.PathLike) -> PceHeader:
    """The header of the PCE file `path`, checked (prefix, checksum, layout, file size) but with no
    section read: PceFormatError / PceMismatchError (format version) / PceReadError."""
    with _opened(path) as (fd, size):
        return _header(fd, size, os.fspath(path))


def read_pce(path: str | os.PathLike, identity: Identity) -> dict[str, np.ndarray]:
    """The arrays of the PCE file `path`, in the order written, once the header, `identity` and every
    section's checksum are checked: PceMismatchError names what differs from `identity`,
    PceFormatError a corrupt or truncated file (also one truncated while being read), PceNotFoundError
    a missing one and PceReadError one that cannot be read."""
    want = _identity(identity)
    with _opened(path) as (fd, size):
        header = _header(fd, size, os.fspath(path))
        _check_identity(header.identity, want, os.fspath(path))
        return _read_sections(fd, header, os.fspath(path))


def write_pce(path: str | os.PathLike, identity: Identity, arrays: Arrays, *,
              progress: Callable[[int], None] | None = None) -> None:
    """Write `arrays` (name -> numpy array of a bool, int, uint, float or complex dtype) under
    `identity` to `path` atomically, holding `<path>.lock`; `progress(n)` is told of each n bytes
    written. The directory is made when missing."""
    path = Path(path)
    with _locked(path):
        _write(path, identity, arrays, progress)


def build_or_load(path: str | os.PathLike, identity: Identity, build: Callable[[], Arrays], *,
                  warn: Callable[[str], None] = log.warning,
                  progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """The arrays of the PCE file `path` for `identity`; when it is missing, corrupt, truncated or made
    for another identity, `build()`'s arrays, written there first. A bad file is reported in one
    `warn` line and moved aside (`<name>.corrupt-<UTC time>`, `<name>.stale-<UTC time>` for another
    identity or format). Builds hold `<path>.lock`, and whoever waited for it re-reads the file first,
    so concurrent callers build once. A path that cannot be read (a directory, no permission) raises
    PceReadError: nothing is built over it."""
    path = Path(path)
    try:
        return read_pce(path, identity)
    except (PceNotFoundError, PceFormatError, PceMismatchError):
        pass  # decided under the lock: another process may be replacing the file
    with _locked(path):
        try:
            return read_pce(path, identity)
        except PceNotFoundError:
            pass
        except (PceFormatError, PceMismatchError) as e:
            aside = _move_aside(path, "stale" if isinstance(e, PceMismatchError) else "corrupt")
            warn(f"{e}; moved it aside to {aside.name} and rebuilding")
        return _write(path, identity, build(), progress)


# ---------------------------------------------------------------- writing

def _write(path: Path, identity: Identity, arrays: Arrays,
           progress: Callable[[int], None] | None) -> dict[str, np.ndarray]:
    ident = _identity(identity)
    items = _arrays(arrays)
    views = [_bytes_of(a) for a in items.values()]
    pieces = [v[a:b] for v in views for a, b in _pieces(len(v))]
    with _pool(len(pieces)) as pool:
        rest = iter(list(pool.map(_leaf, pieces)))
    checksums = [_root([next(rest) for _ in _pieces(len(v))]) for v in views]
    head, sections = _encode(ident, [(name, a.dtype, a.shape, a.nbytes, digest)
                                     for (name, a), digest in zip(items.items(), checksums)])

    def chunks() -> Iterator[bytes | memoryview]:
        yield head
        cursor = len(head)
        for section, view in zip(sections, views):
            yield bytes(section.offset - cursor)
            for a, b in _pieces(section.nbytes):
                yield view[a:b]
                if progress is not None:
                    progress(b - a)
            cursor = section.offset + section.nbytes

    atomic_write(path, chunks())
    return items


def _arrays(arrays: Arrays) -> dict[str, np.ndarray]:
    """The arrays to write, C-contiguous, checked: InputError for a bad name, type or dtype."""
    if not isinstance(arrays, Mapping):
        raise InputError(f"PCE arrays: expected a mapping of names to numpy arrays, got {type(arrays).__name__}")
    out = {}
    for name, a in arrays.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"PCE section name {name!r}: expected a non-empty string")
        if not isinstance(a, (np.ndarray, np.generic)):
            raise InputError(f"PCE section {name!r}: expected a numpy array, got {type(a).__name__}")
        a = np.asarray(a, order="C")
        if a.dtype.kind not in _KINDS:  # not object, structured, string or datetime
            raise InputError(f"PCE section {name!r}: dtype {a.dtype} is not bool, int, uint, float or complex")
        out[name] = a
    return out


def _encode(identity: dict, specs: list[tuple[str, np.dtype, tuple[int, ...], int, bytes]]
            ) -> tuple[bytes, list[Section]]:
    """The prefix, header and header checksum, and the sections laid out after them. The offsets
    depend on the header's length, which depends on their digits: iterate to the fixed point (the
    length never shrinks, so it converges)."""
    length = 0
    while True:
        offsets, size = _layout(length, [n for _, _, _, n, _ in specs])
        sections = [Section(name, dtype, tuple(shape), off, n, digest)
                    for (name, dtype, shape, n, digest), off in zip(specs, offsets)]
        text = _canonical({"file_size": size, "identity": identity, "sections": [
            {"checksum": s.checksum.hex(), "dtype": s.dtype.str, "name": s.name, "nbytes": s.nbytes,
             "offset": s.offset, "shape": list(s.shape)} for s in sections]})
        if len(text) == length:
            break
        length = len(text)
    if length > MAX_HEADER:
        raise InputError(f"PCE header of {length:,} bytes: more than the {MAX_HEADER:,} allowed (too many sections?)")
    head = _PREFIX.pack(MAGIC, FORMAT_VERSION, length) + text
    return head + _header_digest(head), sections


# ---------------------------------------------------------------- reading

@contextmanager
def _opened(path: str | os.PathLike) -> Iterator[tuple[int, int]]:
    """A read-only descriptor of the regular file `path` and its size; OSErrors of the block (and of
    the open) become PceReadError / PceNotFoundError."""
    name = os.fspath(path)
    try:
        with open_regular(path) as (fd, st):
            if not is_regular(st):
                raise PceReadError(name, "not a regular file")
            yield fd, st.st_size
    except PceFileError:
        raise
    except FileNotFoundError:
        raise PceNotFoundError(name, "no such file") from None
    except OSError as e:
        raise PceReadError(name, e.strerror or str(e)) from e


def _header(fd: int, size: int, path: str) -> PceHeader:
    prefix = bytearray(_PREFIX.size)
    got = pread_into(fd, memoryview(prefix), 0)
    if got < _PREFIX.size:
        raise PceFormatError(path, f"truncated: {got} bytes, fewer than the {_PREFIX.size} of the prefix", offset=got)
    magic, version, length = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise PceFormatError(path, f"not a PCE file (magic bytes {magic!r})", offset=0)
    if version != FORMAT_VERSION:
        raise PceMismatchError(path, {"format version": (version, FORMAT_VERSION)})
    if not 2 <= length <= MAX_HEADER:
        raise PceFormatError(path, f"header length {length:,} outside [2, {MAX_HEADER:,}]", offset=12)
    end = _HEADER_AT + length + _DIGEST
    head = bytearray(end)
    head[:_HEADER_AT] = prefix
    got = _HEADER_AT + pread_into(fd, memoryview(head)[_HEADER_AT:], _HEADER_AT)
    if got < end:
        raise PceFormatError(path, f"truncated in the header: the file ends at byte {got:,}, the header at {end:,}",
                             offset=got)
    if _header_digest(head[:end - _DIGEST]) != head[end - _DIGEST:]:
        raise PceFormatError(path, "the header checksum does not match", offset=end - _DIGEST)
    text = bytes(head[_HEADER_AT:end - _DIGEST])
    try:
        obj = load_json(text, what="PCE header", max_bytes=MAX_HEADER, max_depth=4)
    except InputError as e:
        raise PceFormatError(path, str(e), offset=_HEADER_AT) from None
    header = _parse(obj, length, path)
    if _canonical(obj) != text:
        raise PceFormatError(path, "the header is not in canonical form", offset=_HEADER_AT)
    if size != header.file_size:
        what = "truncated" if size < header.file_size else "bytes after the end"
        raise PceFormatError(path, f"{what}: {size:,} bytes, the header says {header.file_size:,}",
                             offset=min(size, header.file_size))
    return header


def _parse(obj: object, length: int, path: str) -> PceHeader:
    """The header's fields checked against the format (layout recomputed from the lengths)."""
    def bad(field: str, reason: str) -> PceFormatError:
        return PceFormatError(path, f"header field {field}: {reason}", offset=_HEADER_AT)

    obj = as_object(obj, "", error=bad)
    _keys(obj, {"file_size", "identity", "sections"}, "<top>", bad)
    try:
        identity = _identity(as_object(obj["identity"], "identity", error=bad))
    except InputError as e:
        raise bad("identity", str(e)) from None
    if not isinstance(obj["sections"], list):
        raise bad("sections", "expected an array")
    raw, names = [], set()
    for i, s in enumerate(obj["sections"]):
        at = f"sections[{i}]"
        s = as_object(s, at, error=bad)
        _keys(s, _SECTION_KEYS, at, bad)
        name = s["name"]
        if not isinstance(name, str) or not name or name in names:
            raise bad(f"{at}.name", f"{quote(name)} is not a new non-empty string")
        names.add(name)
        dtype = s["dtype"]
        dtype = _dtype(dtype) if isinstance(dtype, str) and _DTYPE.fullmatch(dtype) else None
        if dtype is None:
            raise bad(f"{at}.dtype", f"{quote(s['dtype'])} is not a dtype of kind b, i, u, f or c")
        shape = s["shape"]
        if not isinstance(shape, list) or len(shape) > 64:
            raise bad(f"{at}.shape", "expected an array of at most 64 dimensions")
        shape = tuple(as_int(d, f"{at}.shape", 0, _U63, error=bad) for d in shape)
        nbytes = as_int(s["nbytes"], f"{at}.nbytes", 0, _U63, error=bad)
        if math.prod(shape) * dtype.itemsize != nbytes:
            raise bad(f"{at}.nbytes", f"{nbytes:,} is not the size of shape {list(shape)} of {dtype.str}")
        raw.append((name, dtype, shape, as_int(s["offset"], f"{at}.offset", 0, _U63, error=bad), nbytes,
                    as_hex(s["checksum"], f"{at}.checksum", _DIGEST, error=bad)))
    offsets, size = _layout(length, [r[4] for r in raw])
    for i, (r, offset) in enumerate(zip(raw, offsets)):
        if r[3] != offset:
            raise bad(f"sections[{i}].offset", f"{r[3]:,}, but the layout puts the section at {offset:,}")
    if as_int(obj["file_size"], "file_size", 0, _U63, error=bad) != size:
        raise bad("file_size", f"{obj['file_size']:,}, but the layout ends at {size:,}")
    return PceHeader(identity, tuple(Section(*r) for r in raw), _HEADER_AT + length + _DIGEST, size)


def _dtype(text: str) -> np.dtype | None:
    """The dtype whose dtype.str is `text`, or None."""
    try:
        dtype = np.dtype(text)
    except TypeError:
        return None
    return dtype if dtype.str == text else None


def _keys(obj: dict, want: set[str], at: str, bad: Callable[[str, str], PceFormatError]) -> None:
    if set(obj) != want:
        raise bad(at, f"keys {sorted(obj)}, expected {sorted(want)}")


def _check_identity(found: dict, want: dict, path: str) -> None:
    differences = {}
    for key in sorted(found.keys() | want.keys()):
        a, b = found.get(key, ABSENT), want.get(key, ABSENT)
        if a is ABSENT or b is ABSENT or _canonical(a) != _canonical(b):  # True == 1, but not here
            differences[key] = (a, b)
    if differences:
        raise PceMismatchError(path, differences)


def _read_sections(fd: int, header: PceHeader, path: str) -> dict[str, np.ndarray]:
    """Every section read into a new array and checked; the padding between them checked to be zeros."""
    arrays = {s.name: np.empty(s.shape, s.dtype) for s in header.sections}
    jobs = [(s, s.offset + a, _bytes_of(arrays[s.name])[a:b]) for s in header.sections for a, b in _pieces(s.nbytes)]

    def piece(job: tuple[Section, int, memoryview]) -> bytes:
        section, offset, out = job
        if pread_into(fd, out, offset) < len(out):
            raise _shrunk(fd, header, path, section.name)
        return _leaf(out)

    with _pool(len(jobs)) as pool:
        leaves = iter(pool.map(piece, jobs))
        _check_padding(fd, header, path)
        for s in header.sections:
            if _root([next(leaves) for _ in _pieces(s.nbytes)]) != s.checksum:
                raise PceFormatError(path, "the checksum does not match", section=s.name, offset=s.offset)
    return arrays


def _shrunk(fd: int, header: PceHeader, path: str, section: str | None) -> PceFormatError:
    size = os.fstat(fd).st_size
    return PceFormatError(path, f"truncated while being read: {size:,} bytes left of {header.file_size:,}",
                          section=section, offset=size)


def _check_padding(fd: int, header: PceHeader, path: str) -> None:
    cursor = header.header_end
    for s in header.sections:
        gap = bytearray(s.offset - cursor)
        if pread_into(fd, memoryview(gap), cursor) < len(gap):
            raise _shrunk(fd, header, path, None)
        if any(gap):
            raise PceFormatError(path, f"padding before section {quote(s.name)} is not zeros",
                                 offset=cursor + next(i for i, byte in enumerate(gap) if byte))
        cursor = s.offset + s.nbytes


# ---------------------------------------------------------------- shared

def _identity(identity: Identity) -> dict[str, IdentityValue]:
    """`identity` as a plain dict, checked: InputError unless it maps non-empty strings to strings,
    64-bit integers, booleans or None."""
    if not isinstance(identity, Mapping):
        raise InputError(f"PCE identity: expected a mapping, got {type(identity).__name__}")
    out = {}
    for key, value in identity.items():
        if not isinstance(key, str) or not key:
            raise InputError(f"PCE identity key {quote(key)}: expected a non-empty string")
        if not (value is None or isinstance(value, (str, bool))
                or (type(value) is int and -(1 << 63) <= value < 1 << 64)):
            raise InputError(f"PCE identity {quote(key)}: {quote(value)} is not a string, 64-bit integer, boolean "
                             "or None")
        out[key] = value
    return out


def _layout(length: int, sizes: list[int]) -> tuple[list[int], int]:
    """The section offsets and the file size for a header of `length` bytes and sections of `sizes`."""
    cursor, offsets = _HEADER_AT + length + _DIGEST, []
    for n in sizes:
        cursor = -(-cursor // ALIGN) * ALIGN
        offsets.append(cursor)
        cursor += n
    return offsets, cursor


def _pieces(nbytes: int) -> list[tuple[int, int]]:
    return [(a, min(a + LEAF, nbytes)) for a in range(0, nbytes, LEAF)]


def _bytes_of(a: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array (writable when it is)."""
    return memoryview(a.reshape(-1).view(np.uint8))


def _leaf(data: bytes | bytearray | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST, person=b"cuzk-pce-leaf").digest()


def _root(leaves: list[bytes]) -> bytes:
    return hashlib.blake2b(b"".join(leaves), digest_size=_DIGEST, person=b"cuzk-pce-section").digest()


def _header_digest(data: bytes | bytearray) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST, person=b"cuzk-pce-header").digest()


def _canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def _pool(jobs: int) -> ThreadPoolExecutor:
    """Threads for `jobs` pieces: preads and BLAKE2b of large buffers release the GIL."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return ThreadPoolExecutor(max_workers=max(1, min(jobs, cores, MAX_THREADS)), thread_name_prefix="cuzk-pce")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive flock on `<path>.lock` for the duration (waiting for a holder); makes the directory.
    A lock path that cannot be taken (a directory, a FIFO, no permission) raises PceReadError naming it."""
    lock = path.with_name(path.name + ".lock")
    with ExitStack() as stack:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(locked(lock, lambda: log.info("waiting for another process writing %s", path)))
        except OSError as e:
            raise PceReadError(os.fspath(e.filename or lock), f"cannot take the lock: {e.strerror or e}") from e
        yield


def _move_aside(path: Path, tag: str) -> Path:
    """Rename `path` to `<name>.<tag>-<UTC time>` (a free name; the caller holds the lock)."""
    stem = f"{path.name}.{tag}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    aside, n = path.with_name(stem), 1
    while os.path.lexists(aside):
        aside, n = path.with_name(f"{stem}-{n}"), n + 1
    os.rename(path, aside)
    return aside
