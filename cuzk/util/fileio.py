"""Reading files that may change underneath: never mapped (a mapping of a file truncated later dies
with SIGBUS on its next access), read with os.preadv into memory the caller owns.

open_regular opens without blocking on a FIFO and reports what the path is; pread_into fills a buffer
and says how much it got, so a caller can turn a file that shrank since its size was taken into its
own typed error. `locked` holds an exclusive flock on a lock file, saying so when it has to wait.
"""
from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def open_fd(path: str | os.PathLike) -> tuple[int, os.stat_result]:
    """A read-only descriptor of `path` (the caller closes it) and its fstat. OSErrors pass through;
    the caller checks stat.S_ISREG (see is_regular): O_NONBLOCK lets a FIFO open instead of blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def open_regular(path: str | os.PathLike) -> Iterator[tuple[int, os.stat_result]]:
    """open_fd as a context manager that closes the descriptor."""
    fd, st = open_fd(path)
    try:
        yield fd, st
    finally:
        os.close(fd)


def is_regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)


def irregular_reason(st: os.stat_result) -> tuple[int | None, str]:
    """Why a file that is not regular is refused: (errno, message), EISDIR for a directory."""
    if stat.S_ISDIR(st.st_mode):
        return errno.EISDIR, os.strerror(errno.EISDIR)
    return None, "not a regular file"


def pread_into(fd: int, out: memoryview, offset: int) -> int:
    """Read len(out) bytes of `fd` from `offset` into `out` (a writable byte memoryview); the count
    read, less than len(out) only where the file ends sooner."""
    got, n = 0, len(out)
    while got < n:
        step = os.preadv(fd, [out[got:]], offset + got)
        if step == 0:
            break
        got += step
    return got


@contextmanager
def locked(path: str | os.PathLike, say: Callable[[], None]) -> Iterator[None]:
    """An exclusive flock on the regular file `path` (created, mode 0o666 less the umask, when missing)
    for the duration; `say()` is called once before waiting for another holder. OSErrors pass through
    for the caller to type: IsADirectoryError for a directory at `path`, ENXIO for a FIFO without a
    reader, an OSError naming `path` for anything else that is not a regular file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        st = os.fstat(fd)
        if not is_regular(st):
            code, reason = irregular_reason(st)
            raise OSError(code or errno.EINVAL, reason, os.fspath(path))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say()
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
