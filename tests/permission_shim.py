"""The refusals that file modes give a user who is not root, injected at the OS calls, so that the
permission tests run where the tests run as root (CI), where a chmod changes nothing.

deny_read(patch, path): `path` is unreadable, as after chmod 0: os.open, open / io.open (pathlib's
reads), os.scandir and os.listdir of it raise PermissionError(EACCES) naming it.
deny_create(patch, directory): no entry can be created in `directory`, as after chmod 0o500: os.open
with O_CREAT of a name in it, and O_TMPFILE of it (tempfile.TemporaryFile), raise the same.

`patch` is pytest's monkeypatch (undone after the test), or Patch() in a child process, which
cli_code(...) sets up before running the real `cuzk` command line in it. Every other call passes
through unchanged.
"""
from __future__ import annotations

import builtins
import errno
import io
import os
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Patch:
    """monkeypatch.setattr for a child process (nothing to undo: the process ends)."""

    setattr = staticmethod(setattr)


def _key(path) -> str | None:
    """The absolute name of a path argument; None for a descriptor."""
    if isinstance(path, int):
        return None
    return os.path.abspath(os.fsdecode(path))


def _refused(path) -> PermissionError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)


def _wrap(patch, owner, name: str, refuses: Callable[..., bool]) -> None:
    real = getattr(owner, name)

    def refusing(*args, **kwargs):
        if args and kwargs.get("dir_fd") is None and refuses(*args, **kwargs):
            raise _refused(args[0])
        return real(*args, **kwargs)

    patch.setattr(owner, name, refusing)


def deny_read(patch, *paths: str | os.PathLike) -> None:
    names = {_key(p) for p in paths}

    def refuses(path, *_, **__) -> bool:
        return _key(path) in names

    for owner, name in ((os, "open"), (builtins, "open"), (io, "open"), (os, "scandir"), (os, "listdir")):
        _wrap(patch, owner, name, refuses)


def deny_create(patch, *directories: str | os.PathLike) -> None:
    names = {_key(d) for d in directories}
    tmpfile = getattr(os, "O_TMPFILE", 0)

    def refuses(path, flags=0, *_, **__) -> bool:
        key = _key(path)
        if key is None:
            return False
        if tmpfile and flags & tmpfile == tmpfile:
            return key in names
        return bool(flags & os.O_CREAT) and os.path.dirname(key) in names and not os.path.lexists(key)

    _wrap(patch, os, "open", refuses)


def cli_code(deny: str, path: str | os.PathLike) -> str:
    """Python code for `python -c CODE ARGS` that applies deny_<deny>(path) and exits with
    cuzk.cli.main(ARGS): the real command line, its real output and exit status."""
    if deny not in ("read", "create"):
        raise ValueError(f"deny must be 'read' or 'create', got {deny!r}")
    return (f"import sys\nsys.path.insert(0, {str(HERE)!r})\nimport permission_shim as shim\n"
            f"shim.deny_{deny}(shim.Patch(), {os.fspath(path)!r})\n"
            "import cuzk.cli\nsys.exit(cuzk.cli.main(sys.argv[1:]))")
