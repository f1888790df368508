"""Reading files that may change underneath: never mapped (a mapping of a file truncated later dies
with SIGBUS on its next access), read with os.preadv into memory the caller owns.

open_regular opens without blocking on a FIFO and reports what the path is; pread_into fills a buffer
and says how much it got, so a caller can turn a file that shrank since its size was taken into its
own typed error.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
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
