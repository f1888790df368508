"""Atomic file and directory writes: a reader sees the old content or the complete new one, never a part.

Everything is written to a uniquely named temporary beside the target (same directory, so the rename
stays on one file system), flushed and fsynced, renamed into place, and the directory is fsynced so the
rename itself survives a crash. On any error the temporary is removed and the target left untouched.
Concurrent writers to one path each write their own temporary; the last rename wins, whole.
"""
from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

Bytes = bytes | bytearray | memoryview


def atomic_write(path: str | os.PathLike, data: Bytes | Iterable[Bytes], *, mode: int = 0o644) -> None:
    """Write `data` (bytes, or an iterable of byte chunks, e.g. a generator) to `path` atomically, with
    permissions `mode` (the umask is not applied). OSErrors of the write name `path`."""
    chunks = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    with _temporary(Path(path), mode) as (f, _):
        for chunk in chunks:  # an exception raised by the iterable itself passes through unchanged
            with _naming(path):
                f.write(chunk)


@contextmanager
def atomic_path(path: str | os.PathLike, *, mode: int = 0o644) -> Iterator[Path]:
    """Yield the name of an empty temporary file beside `path`, for writers that open a file by name
    (np.memmap); on a clean exit it is fsynced and renamed over `path`, on an exception removed."""
    with _temporary(Path(path), mode) as (_, tmp):
        yield tmp


@contextmanager
def atomic_dir(path: str | os.PathLike, *, mode: int = 0o755) -> Iterator[Path]:
    """Yield a fresh temporary directory beside `path` to fill; on a clean exit every file in it and the
    directory are fsynced and it is renamed to `path` with permissions `mode` (FileExistsError if `path`
    exists), on an exception removed with its contents."""
    path = Path(path)
    with _naming(path):
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        with _naming(path):
            tmp.chmod(mode)
            for entry in tmp.rglob("*"):
                if entry.is_file() and not entry.is_symlink():
                    _fsync(entry, os.O_RDONLY)
            _fsync(tmp, os.O_RDONLY | os.O_DIRECTORY)
            if os.path.lexists(path):  # rename() would silently replace an empty directory
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
            os.rename(tmp, path)
            _fsync(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def _temporary(path: Path, mode: int) -> Iterator[tuple[BinaryIO, Path]]:
    """The open temporary file and its name; committed over `path` on a clean exit, removed otherwise."""
    with _naming(path):
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            with _naming(path):
                os.fchmod(f.fileno(), mode)
            yield f, tmp
            with _naming(path):
                f.flush()
                os.fsync(f.fileno())
        with _naming(path):
            os.replace(tmp, path)
            _fsync(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _naming(path: str | os.PathLike) -> Iterator[None]:
    """Re-raise an OSError of the block as the same error about `path` (not about a temporary name)."""
    try:
        yield
    except OSError as e:
        if e.errno is None:
            raise
        raise type(e)(e.errno, e.strerror, os.fspath(path)) from e
