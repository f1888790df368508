"""The checks of one configuration value (cuzk.engine.config): parsers of integers, sizes, durations,
paths, listen addresses and the other kinds of value, each with its bounds; an environment variable's
text read as the TOML value it stands for; and `checked`, which runs a key's check and raises
ConfigError naming where the value was set.

Each parser takes (a TOML value, the directory relative paths start from) and returns the value as
the configuration holds it, or raises Bad saying what the value must be ("must be ...")."""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NamedTuple

from cuzk.backend import vram_context_bytes
from cuzk.errors import ConfigError, InputError, format_size
from cuzk.util.sizes import parse_bytes

MAX_SECONDS = 10 * 365.25 * 86400  # any duration: at most 10 years
MAX_TEXT = 4096  # characters of a string value


class Bad(ValueError):
    """What is wrong with a value, as the end of a message ("must be ...")."""


Parser = Callable[[Any, Path], Any]  # (a TOML value, the directory relative paths start from) -> the value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_text(value: Any) -> bool:
    """A string cuzk takes: at most MAX_TEXT characters, no NUL."""
    return isinstance(value, str) and len(value) <= MAX_TEXT and "\0" not in value


def integer(low: int, high: int) -> Parser:
    def parse(value: Any, base: Path) -> int:
        if not _is_int(value) or not low <= value <= high:
            raise Bad(f"must be an integer from {low} to {high}")
        return value
    return parse


def boolean(value: Any, base: Path) -> bool:
    if not isinstance(value, bool):
        raise Bad("must be true or false")
    return value


def size(allow_zero: bool) -> Parser:
    reason = (f"must be a size {'>= 0' if allow_zero else '> 0'} and below 2^64"
              ' (bytes, or a number with K, M, G or T, e.g. "2GiB")')

    def parse(value: Any, base: Path) -> int:
        if not (_is_int(value) or _is_text(value)):
            raise Bad(reason)
        try:
            size = parse_bytes(value, allow_zero=allow_zero)
        except InputError:
            raise Bad(reason) from None
        if size >= 1 << 64:
            raise Bad(reason)
        return size
    return parse


def vram_cap(value: Any, base: Path) -> int | None:
    """memory.vram_budget: None for "" (no cap), else a size above the CUDA context's share
    (cuzk.backend.vram_context_bytes: CuPy's pool gets the cap less it)."""
    if value == "":
        return None
    floor = vram_context_bytes()
    reason = (f'must be "" (no cap) or a size above {format_size(floor)} and below 2^64 (bytes, or a number '
              'with K, M, G or T, e.g. "16GiB")')
    try:
        cap = size(allow_zero=False)(value, base)
    except Bad:
        raise Bad(reason) from None
    if cap <= floor:
        raise Bad(reason)
    return cap


def total_budget(value: Any, base: Path) -> int | None:
    """curio's memory.total_budget: None for "auto", else a size."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    try:
        return size(allow_zero=False)(value, base)
    except Bad as e:
        raise Bad(f'must be "auto" or {str(e).removeprefix("must be ")}') from None


def seconds(allow_zero: bool) -> Parser:
    reason = f"must be a number of seconds {'>= 0' if allow_zero else '> 0'}, at most 10 years ({MAX_SECONDS:.0f})"

    def parse(value: Any, base: Path) -> float:
        # compared before any float(): an integer too large for a float is refused, not overflowed
        if not _is_number(value) or not (0 <= value if allow_zero else 0 < value) or not value <= MAX_SECONDS:
            raise Bad(reason)
        return float(value)
    return parse


def fraction(value: Any, base: Path) -> float:
    if not _is_number(value) or not 0 < value <= 1:
        raise Bad("must be a number in (0, 1]")
    return float(value)


_DURATION = re.compile(r"\s*(\d{1,12})\s*([smh]?)\s*", re.ASCII | re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}


def duration(value: Any, base: Path) -> float:
    """curio's duration: an integer number of seconds, or "30s", "5m", "1h"; in seconds."""
    if _is_int(value):
        seconds = value
    else:
        match = _DURATION.fullmatch(value) if _is_text(value) else None
        seconds = int(match[1]) * _UNIT_SECONDS[match[2].lower()] if match else -1
    if not 0 <= seconds <= MAX_SECONDS:
        raise Bad('must be a duration: "30s", "5m", "1h" or an integer number of seconds, at most 10 years')
    return float(seconds)


def devices(value: Any, base: Path) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(_is_int(d) and 0 <= d <= 255 for d in value) \
            or len(set(value)) < len(value):
        raise Bad("must be a list of distinct GPU ordinals (integers from 0 to 255)")
    return tuple(value)


def directory(value: Any, base: Path) -> Path:
    if not _is_text(value) or not value.strip():
        raise Bad(f"must be a directory path (a non-empty string of at most {MAX_TEXT} characters, no NUL)")
    return base / Path(value).expanduser()  # an absolute path stays as it is


def string(value: Any, base: Path) -> str:
    if not _is_text(value):
        raise Bad(f"must be a string of at most {MAX_TEXT} characters, no NUL")
    return value


def strings(value: Any, base: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > 64 or not all(_is_text(v) for v in value):
        raise Bad(f"must be a list of at most 64 strings of at most {MAX_TEXT} characters")
    return tuple(value)


def choice(names: Collection[str]) -> Parser:
    """One of `names` in any case, lower-cased (names are lower case)."""
    def parse(value: Any, base: Path) -> str:
        if not isinstance(value, str) or value.lower() not in names:
            raise Bad(f"must be one of {', '.join(names)}")
        return value.lower()
    return parse


_HOST_PORT = re.compile(r"[^\x00-\x20\x7f/]+:(\d{1,5})", re.ASCII)


def listen(unix: bool, off: bool) -> Parser:
    """A listen address: unix:///PATH (with `unix`), HOST:PORT (port 0-65535), or "" (with `off`)."""
    forms = [*(['""'] if off else []), *(["unix:///PATH"] if unix else []), "HOST:PORT (port 0-65535)"]
    reason = f"must be {', '.join(forms[:-1])}{' or ' if len(forms) > 1 else ''}{forms[-1]}"

    def parse(value: Any, base: Path) -> str:
        if not _is_text(value):
            raise Bad(reason)
        if off and value == "":
            return value
        if unix and value.startswith("unix:///") and len(value) > len("unix:///"):
            return value
        match = None if value.startswith("unix:") else _HOST_PORT.fullmatch(value)
        if match is None or int(match[1]) > 65535:
            raise Bad(reason)
        return value
    return parse


# ---------------------------------------------------------------- environment values as TOML ones

def bool_text(text: str) -> bool | str:
    """"true" / "1" -> True, "false" / "0" -> False (any case); anything else stays text, refused."""
    return {"true": True, "1": True, "false": False, "0": False}.get(text.strip().lower(), text)


def int_text(text: str) -> int | str:
    """An environment value for an integer key: the integer, or the text for the check to refuse."""
    try:
        return int(text)
    except ValueError:
        return text


def float_text(text: str) -> float | str:
    """An environment value for a number key: the number, or the text for the check to refuse."""
    try:
        return float(text)
    except ValueError:
        return text


def list_text(text: str) -> list[int] | str:
    """"0,1" -> [0, 1]; "" -> []."""
    try:
        return [int(part) for part in text.split(",")] if text.strip() else []
    except ValueError:
        return text


def strings_text(text: str) -> list[str]:
    """"a,b" -> ["a", "b"]; "" -> []."""
    return [part.strip() for part in text.split(",")] if text.strip() else []


def duration_text(text: str) -> int | str:
    """curio's duration from the environment: digits are seconds, anything else stays text."""
    return int_text(text) if text.strip().isdigit() else text



# ---------------------------------------------------------------- a value checked, where it was set

def shown(value: Any) -> str:
    """A value as TOML would write it (near enough), cut to 60 characters."""
    text = str(value) if isinstance(value, float) and not math.isfinite(value) else json.dumps(
        value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:60] + "..."


class Origin(NamedTuple):
    source: str  # the file's path, or "environment"
    name: str  # the dotted key, or the variable

    def shown(self) -> str:
        """Where a value came from, as config show prints it: the file's path, or "env CUZK_..."."""
        return f"env {self.name}" if self.source == "environment" else self.source


Values = dict[str, tuple[Any, Origin]]  # dotted key -> (its checked value, where it was set)


def checked(check: Parser, value: Any, base: Path, origin: Origin) -> Any:
    """`value` run through `check`; ConfigError naming the origin's source and name when it is bad."""
    try:
        return check(value, base)
    except Bad as e:
        raise ConfigError(origin.source, origin.name, f"{e}, got {shown(value)}") from None
