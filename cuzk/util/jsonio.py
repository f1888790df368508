"""JSON read with limits checked before parsing, and strict accessors for its fields.

load_json refuses, before json.loads sees the text, input larger than `max_bytes` (the file's size,
then a bounded read: InputTooLargeError) and input nested deeper than `max_depth` (a scan of the bytes
for brackets outside strings, so deep input never reaches the parser's recursion: JsonFormatError).
The same scan refuses numbers of more than MAX_INT_DIGITS digits (int() of a huge literal is slow,
or refused by Python's digit limit). Text that is not UTF-8 or not strict JSON (NaN, Infinity,
duplicate keys) is a JsonFormatError naming the source and, where known, the byte offset (for a
duplicate key: the JSON path of its object, e.g. vanilla_proofs.StackedDrg2KiBV1[0][3]).

as_int / as_hex / as_object check one value, require_int / require_hex one field of an object: ints
are ints (not bool, not 7.5 or 7.0, not "7") within an inclusive range, hex is exactly 2 * nbytes hex
digits. They raise `error(field, reason)` (FieldError by default; any class of that signature, such as
C1FormatError). Messages quote at most QUOTE_CHARS characters of a bad value (see `quote`).
"""
from __future__ import annotations

import json
import os
import re
import reprlib
import stat
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cuzk.errors import FieldError, InputTooLargeError, JsonFormatError

QUOTE_CHARS = 60
MAX_INT_DIGITS = 64  # far above any u64 (20 digits); bounds int() on hostile literals
_LONG_NUMBER = f"a number of more than {MAX_INT_DIGITS} digits"
_CHUNK = 1 << 22  # bytes per step of the depth scan
_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN, _CLOSE = (0x5B, 0x7B), (0x5D, 0x7D)

ErrorFactory = Callable[[str, str], Exception]
Source = str | os.PathLike | bytes | bytearray | memoryview

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = _repr.maxlong = QUOTE_CHARS
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 4
_repr.maxlevel = 2


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """repr(value) cut to about `limit` characters (long strings say how long they were)."""
    if isinstance(value, (str, bytes, bytearray)) and len(value) > limit:
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{value[:limit]!r}... ({len(value):,} {unit})"
    if type(value) is int and value.bit_length() > 3 * limit:
        return f"an integer of {value.bit_length():,} bits"
    try:
        text = _repr.repr(value)
    except ValueError:  # an int too long for str() inside a container
        return f"a {type(value).__name__}"
    return text if len(text) <= 2 * limit else text[:2 * limit] + "..."


def read_limited(path: str | os.PathLike, *, what: str, max_bytes: int) -> bytes:
    """The bytes of the file `path`, refused (InputTooLargeError) past `max_bytes` without reading
    further. OSErrors (missing, a directory, no permission) pass through unchanged."""
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        source = f"{what} {os.fspath(path)}"
        regular = stat.S_ISREG(info.st_mode)
        if regular and info.st_size > max_bytes:
            raise InputTooLargeError(source, info.st_size, max_bytes)
        step = info.st_size + 1 if regular else 1 << 20  # one read for a file that does not change
        chunks, total = [], 0
        while total <= max_bytes and (chunk := f.read(min(step, max_bytes + 1 - total))):
            chunks.append(chunk)
            total += len(chunk)
    if total > max_bytes:  # a file that grew, or a stream
        raise InputTooLargeError(source, None, max_bytes)
    return b"".join(chunks)


def load_json(source: Source, *, what: str, max_bytes: int, max_depth: int) -> Any:
    """The JSON value of a file (str or path) or of bytes, read within the limits (see the module
    docstring). `what` describes the input in messages ("C1 output", "sector metadata")."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, name = bytes(source), what
        if len(data) > max_bytes:
            raise InputTooLargeError(name, len(data), max_bytes)
    else:
        data, name = read_limited(source, what=what, max_bytes=max_bytes), f"{what} {os.fspath(source)}"
    fault = _scan(data, max_depth)
    if fault is not None:
        raise JsonFormatError(name, *fault)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonFormatError(name, e.start, "not UTF-8") from None
    objects = _Objects()
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=objects)
    except json.JSONDecodeError as e:
        raise JsonFormatError(name, len(text[:e.pos].encode("utf-8")), f"not JSON ({e.msg})") from None
    except _Refused as e:
        raise JsonFormatError(name, None, str(e)) from None
    if objects.repeated is not None:
        key, obj = objects.repeated
        raise JsonFormatError(name, None, f"duplicate key {quote(key)} in the object at {_path_to(value, obj)}")
    return value


class _Refused(ValueError):
    """Raised by the parser hooks; load_json re-raises it as a JsonFormatError."""


def _refuse_constant(name: str) -> None:
    raise _Refused(f"{name} is not JSON")


class _Objects:
    """The parser's object_pairs_hook: a dict of the pairs; the first object found with a key twice is
    kept with that key (`repeated`), so that load_json can name its path once the tree is built."""

    def __init__(self) -> None:
        self.repeated: tuple[str, dict] | None = None

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict:
        obj = dict(pairs)
        if len(obj) != len(pairs) and self.repeated is None:
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    self.repeated = (key, obj)
                    break
                seen.add(key)
        return obj


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


def _path_to(root: Any, target: dict) -> str:
    """The JSON path of the object `target` (found by identity) inside `root`: "<top>", or keys and
    indices as in vanilla_proofs.StackedDrg2KiBV1[0][3] (a key that is not a short name is quoted)."""
    return next(path or "<top>" for node, path in _nodes(root) if node is target)


def _nodes(root: Any) -> Iterator[tuple[Any, str]]:
    """Every value of a parsed JSON tree with its path (depth first, without recursion)."""
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        yield node, path
        if isinstance(node, dict):
            stack += [(v, (f"{path}.{k}" if path else k) if _NAME.fullmatch(k) else f"{path}[{quote(k, 20)}]")
                      for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, f"{path}[{i}]") for i, v in enumerate(node)]


def _scan(data: bytes, max_depth: int) -> tuple[int, str] | None:
    """(byte offset, reason) of the first fault outside strings: a bracket opening nesting level
    max_depth + 1, or an integer literal of more than MAX_INT_DIGITS digits; None if there is none.

    A quote preceded by an odd run of backslashes does not end a string. The scan stops where the
    nesting goes below zero, as the parser does: for any prefix a parser accepts, this scan's string
    boundaries are the parser's, so it sees at least the parser's depth.
    """
    arr = np.frombuffer(data, np.uint8)
    depth, in_string, carry = 0, False, 0  # carry: parity of the backslash run ending a chunk
    for start in range(0, arr.size, _CHUNK):
        chunk = arr[start:start + _CHUNK]
        toggles, next_carry = _unescaped_quotes(chunk, carry)
        faults, stop = [], chunk.size
        brackets = np.flatnonzero(np.isin(chunk, _OPEN + _CLOSE))
        brackets = brackets[_outside(toggles, in_string, brackets)]
        if brackets.size:
            level = depth + np.cumsum(np.where(np.isin(chunk[brackets], _OPEN), 1, -1))
            over, under = np.flatnonzero(level > max_depth), np.flatnonzero(level < 0)
            if over.size:
                faults.append((int(brackets[over[0]]), f"nested more than {max_depth} levels deep"))
            if under.size:
                stop = int(brackets[under[0]])
            depth = int(level[-1])
        base = max(start - MAX_INT_DIGITS, 0)  # a long number may begin in the previous chunk
        long = _long_numbers(arr[base:start + _CHUNK]) + (base - start)
        long = long[_outside(toggles, in_string, np.maximum(long, 0))]
        if long.size:
            faults.append((int(long[0]), _LONG_NUMBER))
        faults = [f for f in faults if f[0] < stop]
        if faults:
            offset, reason = min(faults)
            return start + offset, reason
        if stop < chunk.size:
            return None
        in_string ^= bool(toggles.size % 2)
        carry = next_carry
    return None


def _long_numbers(window: np.ndarray) -> np.ndarray:
    """The positions in `window` that begin MAX_INT_DIGITS + 1 consecutive digits."""
    digit = (window >= 0x30) & (window <= 0x39)
    run, width = digit, 1  # run[i]: window[i:i + width] are all digits
    while width < MAX_INT_DIGITS + 1 and run.any():
        step = min(width, MAX_INT_DIGITS + 1 - width)
        run, width = run[:-step] & run[step:run.size], width + step
    return np.flatnonzero(run) if width == MAX_INT_DIGITS + 1 else np.zeros(0, np.intp)


def _outside(toggles: np.ndarray, in_string: bool, pos):
    """Whether chunk positions `pos` lie outside strings, given the chunk's string-delimiting quotes."""
    return (np.searchsorted(toggles, pos) + in_string) % 2 == 0


def _unescaped_quotes(chunk: np.ndarray, carry: int) -> tuple[np.ndarray, int]:
    """Positions of the quotes in `chunk` not escaped by an odd run of backslashes (the run may begin
    in the previous chunk: `carry` is its parity), and the parity of the run ending this chunk."""
    quotes = np.flatnonzero(chunk == _QUOTE)
    slashes = np.flatnonzero(chunk == _BACKSLASH)
    if not slashes.size:
        return (quotes[1:] if carry and quotes.size and quotes[0] == 0 else quotes), 0
    starts = np.empty(slashes.size, bool)
    starts[0] = True
    starts[1:] = np.diff(slashes) != 1
    run_start = slashes[np.maximum.accumulate(np.where(starts, np.arange(slashes.size), 0))]

    def run_parity(ends: np.ndarray) -> np.ndarray:
        """Parity of the backslash run ending at each position in `ends` (0 where there is none)."""
        j = np.minimum(np.searchsorted(slashes, ends), slashes.size - 1)
        length = np.where(slashes[j] == ends, ends - run_start[j] + 1 + np.where(run_start[j] == 0, carry, 0), 0)
        return np.where(ends < 0, carry, length) % 2

    escaped = run_parity(quotes - 1) == 1
    return quotes[~escaped], int(run_parity(np.array([chunk.size - 1]))[0])


# ---------------------------------------------------------------- strict field accessors

def describe(value: Any) -> str:
    """A value described for a message: its JSON type and a short quote."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    names = {int: "the integer", float: "the number", str: "the string"}
    for t, name in names.items():
        if isinstance(value, t):
            return f"{name} {quote(value)}"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def as_object(value: Any, field: str, *, error: ErrorFactory = FieldError) -> dict:
    """`value` if it is an object (dict), else error(field or "<top>", ...)."""
    if not isinstance(value, dict):
        raise error(field or "<top>", f"expected an object, got {describe(value)}")
    return value


def as_int(value: Any, field: str, lo: int, hi: int, *, error: ErrorFactory = FieldError) -> int:
    """`value` if it is an int (bool, float, str refused) with lo <= value <= hi."""
    if type(value) is not int:
        raise error(field, f"expected an integer, got {describe(value)}")
    if not lo <= value <= hi:
        raise error(field, f"{quote(value)} is out of range [{lo}, {hi}]")
    return value


def as_hex(value: Any, field: str, nbytes: int, *, error: ErrorFactory = FieldError) -> bytes:
    """The bytes of `value`, a string of exactly 2 * nbytes hex digits (no prefix, no spaces)."""
    if not isinstance(value, str):
        raise error(field, f"expected {nbytes} bytes in hex, got {describe(value)}")
    if len(value) != 2 * nbytes:
        raise error(field, f"expected {2 * nbytes} hex digits ({nbytes} bytes), got {len(value):,} characters")
    if not all(c in "0123456789abcdefABCDEF" for c in value):
        raise error(field, f"not hex: {quote(value)}")
    return bytes.fromhex(value)


def _field(obj: Any, field: str, at: str, error: ErrorFactory) -> tuple[Any, str]:
    name = f"{at}.{field}" if at else field
    obj = as_object(obj, at, error=error)
    if field not in obj:
        raise error(name, "missing")
    return obj[field], name


def require_int(obj: Any, field: str, lo: int, hi: int, *, at: str = "",
                error: ErrorFactory = FieldError) -> int:
    """obj[field] checked by as_int; `at` is the path of obj in messages ("" at the top)."""
    value, name = _field(obj, field, at, error)
    return as_int(value, name, lo, hi, error=error)


def require_hex(obj: Any, field: str, nbytes: int, *, at: str = "", error: ErrorFactory = FieldError) -> bytes:
    """obj[field] checked by as_hex; `at` is the path of obj in messages ("" at the top)."""
    value, name = _field(obj, field, at, error)
    return as_hex(value, name, nbytes, error=error)
