"""What the `cuzk` command checks before any work (cuzk.cli): a number in its range (an argparse
type) and paths, each in milliseconds: an input file that opens, a directory that lists, an output
that can be made. A bad path is an InputError naming the option."""
from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from cuzk.errors import InputError
from cuzk.util.fileio import irregular_reason, is_regular, open_regular
from cuzk.util.jsonio import quote


def number_in(kind: type[int] | type[float], low: float, high: float) -> Callable[[str], int | float]:
    """An argparse type: an int (or a float) from `low` to `high`."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {quote(text)}") from None
        if not low <= value <= high:  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}, got {value:g}")
        return value
    return parse


def check_input(option: str, path: str | os.PathLike) -> None:
    """`path` is a regular file that opens for reading (InputError naming the option: missing, a
    directory, a FIFO, no permission, a path below a regular file); opening never blocks."""
    try:
        with open_regular(path) as (_, st):
            pass
    except OSError as e:
        raise InputError(f"{option} {os.fspath(path)}: {e.strerror or e}") from None
    if not is_regular(st):
        raise InputError(f"{option} {os.fspath(path)}: {irregular_reason(st)[1]}")


def check_directory(option: str, path: str | os.PathLike) -> None:
    """`path` is a directory that can be listed (InputError naming the option)."""
    try:
        with os.scandir(path):
            pass
    except OSError as e:
        raise InputError(f"{option} {os.fspath(path)}: {e.strerror or e}") from None


def check_output(option: str, path: str | os.PathLike, *, directory: bool = False, parents: bool = False) -> None:
    """`path` can be made by the writer, checked in milliseconds before the work: a file that is not a
    directory (nor a device or pipe, which a rename would replace), or a directory that does not exist
    yet; and files can be created in its directory (with `parents`, or for a directory, in its nearest
    existing ancestor, below which the writer makes the missing directories)."""
    path = Path(path)
    if directory and os.path.lexists(path):
        raise InputError(f"{option} {path}: already exists")
    if path.is_dir():
        raise InputError(f"{option} {path}: is a directory")
    if os.path.lexists(path) and not path.is_file():
        raise InputError(f"{option} {path}: not a regular file")
    where = path.parent
    if directory or parents:
        where = next(d for d in (where, *where.parents) if os.path.lexists(d))
    try:
        with tempfile.TemporaryFile(dir=where):
            pass
    except OSError as e:
        raise InputError(f"{option} {path}: cannot create files in {where}: {e.strerror or e}") from None
