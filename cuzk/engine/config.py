"""The engine's and the daemon's configuration: frozen dataclasses, loaded from TOML (load_config) or
the defaults (EngineConfig.default()), under environment overrides (resolve). cuzk.example.toml at the
repository root shows every key.

curio's own cuzk.toml (the configuration of curio's cuzk daemon) loads unchanged. Its keys that cuzk
has with the same meaning are cuzk's keys under the same name. Its other keys, marked "curio's" below,
each set one of cuzk's keys or, where cuzk cannot honour them, are checked and ignored with one
warning at load naming the key and the reason. Setting one of curio's keys and the key of cuzk's it
sets is an error naming both. Every key, its default and its range:

    [gpus]
    devices = []                   GPU ordinals to use (distinct, 0-255); [] = every visible GPU
                                   (none: the CPU engine)
    gpu_workers_per_device = 2     GPU workers per device (1-64)
    gpu_threads = 0                compute threads of the engine process's host-side work for its
                                   GPU workers, numba's thread count there (0-4096); 0 = all CPUs

    [pipeline]
    max_parallel_synthesis = 2     synthesis worker processes (1-1024); the host budget may admit
                                   fewer at a time
    gpu_queue_depth = 2            synthesized partitions waiting for a GPU, at most (1-4096);
                                   synthesis waits while the queue is full
    witness_batch = 10             partitions of one circuit whose packed witnesses (PoRep) a GPU
                                   worker expands in one witness-program run (1-4096): it takes
                                   those waiting in the GPU queue, so raise gpu_queue_depth with it;
                                   on a GPU also at most as many as fit in vram_fraction of its free
                                   memory
    gpu_witness = true             expand packed witnesses on the GPU that proves them (false: on
                                   the host's cores, the CPU witness program, then uploaded)
    synthesis_threads = 0          compute threads of each synthesis process (0-4096); 0 = the CPUs
                                   this process may use shared out among the max_parallel_synthesis
                                   processes, at least 1 each
    enabled = true                 overlap synthesis with proving; false (curio's "monolithic"): one
                                   partition in flight at a time
    max_gpu_queue_depth = 0        curio's (0-4096): when > 0 sets gpu_queue_depth (curio paces
                                   dispatch to keep that many waiting; cuzk bounds the queue by it)
    synthesis_concurrency = 1      curio's (0-1024), no effect: a semaphore over curio's batch and
                                   PoSt syntheses; cuzk synthesizes in max_parallel_synthesis processes
    synthesis_lookahead = 1        curio's (0-4096), no effect: curio only logs it; gpu_queue_depth
                                   bounds the synthesized partitions waiting
    slot_size = 0                  curio's (0-4096), no effect: curio's slotted path is unreachable

    [memory]
    host_cap                       (not set) a host RAM cap, a size: set it to the limit of any
                                   watchdog the kernel does not know about
    host_margin = "2GiB"           kept free below the host limit (a size >= 0)
    vram_fraction = 0.8            share of each GPU's memory free at engine start that its VRAM
                                   budget may use (a number in (0, 1])
    admission_timeout_s = 1800     seconds a work item waits for room in a budget before it fails
                                   (> 0, at most 10 years; curio's client gives up after 30 min)
    eviction_min_idle_s = 300      seconds a loaded circuit (parameters, tables) must sit idle before
                                   the engine evicts it to make room in the host budget (0-10 years)
    total_budget = "auto"          curio's: a size sets host_cap to it and host_margin to 0 (curio
                                   subtracts no margin from an explicit total); "auto" leaves host_cap
                                   unset and sets host_margin to safety_margin (curio: MemTotal minus
                                   safety_margin)
    safety_margin = "5GiB"         curio's: sets host_margin (no effect with total_budget a size, as
                                   in curio); with total_budget = "auto" and no safety_margin nor
                                   host_margin, host_margin is curio's 5GiB
    eviction_min_idle = "5m"       curio's: sets eviction_min_idle_s ("30s", "5m", "1h" or an integer
                                   number of seconds)
    pinned_budget                  curio's, deprecated there: ignored
    working_memory_budget          curio's, deprecated there: ignored

    [srs]
    param_cache                    (not set) the directory of the Groth16 parameters (.params, .vk),
                                   where cuzk also keeps its own files; unset: cuzk's usual places
                                   ($FIL_PROOFS_PARAMETER_CACHE, else its defaults; curio's default
                                   is /data/zk/params). Relative to the configuration file; ~ expands.
    allow_setup = false            run a Groth16 setup for a circuit without official parameters
                                   (tests and private networks only; never on mainnet)
    preload                        curio's, deprecated there: ignored

    [daemon]
    listen = "unix:///run/curio/cuzk.sock"   the gRPC address: unix:///PATH or HOST:PORT
    status_listen = ""             HOST:PORT of GET /status, /metrics, /healthz, /readyz; "" = off

    [logging]
    level = "info"                 the daemon's log level: trace (= debug), debug, info, warn,
                                   warning or error
    format                         curio's, no effect: parsed but unused in curio too

    [scheduler]                    curio's, no effect: cuzk does not batch sectors into one proving
                                   pass (it expands the witnesses of queued partitions of one circuit
                                   across proofs in one run, pipeline.witness_batch, and never waits
                                   to fill a batch) and orders work by priority, then arrival
    max_batch_size = 1             (0-1024)
    max_batch_wait_ms = 10000      (0 to 10 years)
    sort_by_type = true            (unused in curio too)

    [synthesis]
    threads = 0                    curio's (0-4096), its synthesis pool's total: when > 0 sets
                                   pipeline.synthesis_threads to threads // max_parallel_synthesis
                                   (at least 1); 0 = all CPUs, as synthesis_threads = 0
    partition_workers              curio's, deprecated there: ignored

The host RAM budget is the smallest of memory.host_cap, the cgroup limit and MemTotal, minus
memory.host_margin (cuzk.engine.budget). Sizes are bytes (an integer) or a string with a binary unit
("2GiB", "512M"), below 2^64. Strings are at most 4096 characters, without NUL; a file at most 1 MiB,
nested at most 8 deep. Unknown tables and keys (curio ignores them), wrong types and out-of-range
values raise ConfigError naming the file and the dotted key.

Environment variables override the file: CUZK_<TABLE>_<KEY> in upper case (CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS=4,
CUZK_MEMORY_HOST_CAP=48GiB, CUZK_GPUS_DEVICES=0,1 (empty: []), CUZK_SRS_PARAM_CACHE=/params,
a relative path relative to the current directory), checked as the file's values are (resolve). Every
variable that starts with a table's prefix (CUZK_GPUS_, CUZK_PIPELINE_, CUZK_MEMORY_, CUZK_SRS_, CUZK_DAEMON_,
CUZK_LOGGING_, CUZK_SCHEDULER_, CUZK_SYNTHESIS_) must name a key; cuzk's other variables
(CUZK_CACHE_DIR, CUZK_VRAM_BUDGET, ...) are not configuration.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from cuzk.errors import ConfigError, InputError
from cuzk.util.fileio import irregular_reason, is_regular, open_regular
from cuzk.util.sizes import parse_bytes

GIB = 1 << 30
CURIO_SAFETY_MARGIN = 5 * GIB  # curio's memory.safety_margin when its total_budget is "auto"
MAX_SECONDS = 10 * 365.25 * 86400  # any duration: at most 10 years
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 8  # tables and arrays nested in a file
MAX_TEXT = 4096  # characters of a string value
LOG_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
              "warning": logging.WARNING, "error": logging.ERROR}

CONFIG_ENV = "CUZK_CONFIG"  # the configuration file the process-wide engine reads, when set
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuConfig:
    devices: tuple[int, ...] = ()
    gpu_workers_per_device: int = 2
    gpu_threads: int = 0


@dataclass(frozen=True)
class PipelineConfig:
    max_parallel_synthesis: int = 2
    gpu_queue_depth: int = 2
    witness_batch: int = 10
    gpu_witness: bool = True
    synthesis_threads: int = 0
    enabled: bool = True


@dataclass(frozen=True)
class MemoryConfig:
    host_cap: int | None = None
    host_margin: int = 2 * GIB
    vram_fraction: float = 0.8
    admission_timeout_s: float = 1800.0
    eviction_min_idle_s: float = 300.0


@dataclass(frozen=True)
class SrsConfig:
    param_cache: Path | None = None
    allow_setup: bool = False


@dataclass(frozen=True)
class DaemonConfig:
    listen: str = "unix:///run/curio/cuzk.sock"
    status_listen: str = ""


@dataclass(frozen=True)
class LoggingConfig:
    level: str = "info"


@dataclass(frozen=True)
class EngineConfig:
    """The whole configuration, one frozen dataclass per TOML table (see the module docstring)."""

    gpus: GpuConfig = field(default_factory=GpuConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    srs: SrsConfig = field(default_factory=SrsConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)

    @classmethod
    def default(cls) -> EngineConfig:
        return cls()


# ---------------------------------------------------------------- checks of one value

class _Bad(ValueError):
    """What is wrong with a value, as the end of a message ("must be ...")."""


Parser = Callable[[Any, Path], Any]  # (a TOML value, the directory relative paths start from) -> the value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_text(value: Any) -> bool:
    """A string cuzk takes: at most MAX_TEXT characters, no NUL."""
    return isinstance(value, str) and len(value) <= MAX_TEXT and "\0" not in value


def _integer(low: int, high: int) -> Parser:
    def parse(value: Any, base: Path) -> int:
        if not _is_int(value) or not low <= value <= high:
            raise _Bad(f"must be an integer from {low} to {high}")
        return value
    return parse


def _boolean(value: Any, base: Path) -> bool:
    if not isinstance(value, bool):
        raise _Bad("must be true or false")
    return value


def _size(allow_zero: bool) -> Parser:
    reason = (f"must be a size {'>= 0' if allow_zero else '> 0'} and below 2^64"
              ' (bytes, or a number with K, M, G or T, e.g. "2GiB")')

    def parse(value: Any, base: Path) -> int:
        if not (_is_int(value) or _is_text(value)):
            raise _Bad(reason)
        try:
            size = parse_bytes(value, allow_zero=allow_zero)
        except InputError:
            raise _Bad(reason) from None
        if size >= 1 << 64:
            raise _Bad(reason)
        return size
    return parse


def _total_budget(value: Any, base: Path) -> int | None:
    """curio's memory.total_budget: None for "auto", else a size."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    try:
        return _size(allow_zero=False)(value, base)
    except _Bad as e:
        raise _Bad(f'must be "auto" or {str(e).removeprefix("must be ")}') from None


def _seconds(allow_zero: bool) -> Parser:
    reason = f"must be a number of seconds {'>= 0' if allow_zero else '> 0'}, at most 10 years ({MAX_SECONDS:.0f})"

    def parse(value: Any, base: Path) -> float:
        # compared before any float(): an integer too large for a float is refused, not overflowed
        if not _is_number(value) or not (0 <= value if allow_zero else 0 < value) or not value <= MAX_SECONDS:
            raise _Bad(reason)
        return float(value)
    return parse


def _fraction(value: Any, base: Path) -> float:
    if not _is_number(value) or not 0 < value <= 1:
        raise _Bad("must be a number in (0, 1]")
    return float(value)


_DURATION = re.compile(r"\s*(\d{1,12})\s*([smh]?)\s*", re.ASCII | re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}


def _duration(value: Any, base: Path) -> float:
    """curio's duration: an integer number of seconds, or "30s", "5m", "1h"; in seconds."""
    if _is_int(value):
        seconds = value
    else:
        match = _DURATION.fullmatch(value) if _is_text(value) else None
        seconds = int(match[1]) * _UNIT_SECONDS[match[2].lower()] if match else -1
    if not 0 <= seconds <= MAX_SECONDS:
        raise _Bad('must be a duration: "30s", "5m", "1h" or an integer number of seconds, at most 10 years')
    return float(seconds)


def _devices(value: Any, base: Path) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(_is_int(d) and 0 <= d <= 255 for d in value) \
            or len(set(value)) < len(value):
        raise _Bad("must be a list of distinct GPU ordinals (integers from 0 to 255)")
    return tuple(value)


def _directory(value: Any, base: Path) -> Path:
    if not _is_text(value) or not value.strip():
        raise _Bad(f"must be a directory path (a non-empty string of at most {MAX_TEXT} characters, no NUL)")
    return base / Path(value).expanduser()  # an absolute path stays as it is


def _text(value: Any, base: Path) -> str:
    if not _is_text(value):
        raise _Bad(f"must be a string of at most {MAX_TEXT} characters, no NUL")
    return value


def _texts(value: Any, base: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > 64 or not all(_is_text(v) for v in value):
        raise _Bad(f"must be a list of at most 64 strings of at most {MAX_TEXT} characters")
    return tuple(value)


def _level(value: Any, base: Path) -> str:
    if not isinstance(value, str) or value.lower() not in LOG_LEVELS:
        raise _Bad(f"must be one of {', '.join(LOG_LEVELS)}")
    return value.lower()


_HOST_PORT = re.compile(r"[^\x00-\x20\x7f/]+:(\d{1,5})", re.ASCII)


def _listen(unix: bool, off: bool) -> Parser:
    """A listen address: unix:///PATH (with `unix`), HOST:PORT (port 0-65535), or "" (with `off`)."""
    forms = [*(['""'] if off else []), *(["unix:///PATH"] if unix else []), "HOST:PORT (port 0-65535)"]
    reason = f"must be {', '.join(forms[:-1])}{' or ' if len(forms) > 1 else ''}{forms[-1]}"

    def parse(value: Any, base: Path) -> str:
        if not _is_text(value):
            raise _Bad(reason)
        if off and value == "":
            return value
        if unix and value.startswith("unix:///") and len(value) > len("unix:///"):
            return value
        match = None if value.startswith("unix:") else _HOST_PORT.fullmatch(value)
        if match is None or int(match[1]) > 65535:
            raise _Bad(reason)
        return value
    return parse


# ---------------------------------------------------------------- environment values as TOML ones

def _bool_text(text: str) -> bool | str:
    """"true" / "1" -> True, "false" / "0" -> False (any case); anything else stays text, refused."""
    return {"true": True, "1": True, "false": False, "0": False}.get(text.strip().lower(), text)


def _int_text(text: str) -> int | str:
    """An environment value for an integer key: the integer, or the text for the check to refuse."""
    try:
        return int(text)
    except ValueError:
        return text


def _float_text(text: str) -> float | str:
    """An environment value for a number key: the number, or the text for the check to refuse."""
    try:
        return float(text)
    except ValueError:
        return text


def _list_text(text: str) -> list[int] | str:
    """"0,1" -> [0, 1]; "" -> []."""
    try:
        return [int(part) for part in text.split(",")] if text.strip() else []
    except ValueError:
        return text


def _texts_text(text: str) -> list[str]:
    """"a,b" -> ["a", "b"]; "" -> []."""
    return [part.strip() for part in text.split(",")] if text.strip() else []


def _duration_text(text: str) -> int | str:
    """curio's duration from the environment: digits are seconds, anything else stays text."""
    return _int_text(text) if text.strip().isdigit() else text


# ---------------------------------------------------------------- the schema

class _Key(NamedTuple):
    check: Parser
    from_text: Callable[[str], Any] = str  # an environment value as a TOML one
    curio: str = ""  # for a key of curio's that is no field of cuzk's: what it does in cuzk
    ignored: bool = False  # accepted, checked, then ignored with one warning "<key> <curio>"


_DEPRECATED = "is deprecated in curio, ignored"
_NO_BATCHES = ("has no effect in cuzk: it does not batch sectors into one proving pass (it expands the "
               "witnesses of queued partitions of one circuit across proofs in one run, pipeline.witness_batch, "
               "and never waits to fill a batch)")
_BOOL, _MARGIN = _Key(_boolean, _bool_text), _Key(_size(allow_zero=True))
_COUNT, _QUEUE = _Key(_integer(0, 4096), _int_text), _Key(_integer(1, 4096), _int_text)

# table -> (its dataclass, None for a table of curio's alone; key -> _Key). A key with no `curio` note is
# a field of the dataclass, in the same order.
_TABLES: dict[str, tuple[type | None, dict[str, _Key]]] = {
    "gpus": (GpuConfig, {
        "devices": _Key(_devices, _list_text),
        "gpu_workers_per_device": _Key(_integer(1, 64), _int_text),
        "gpu_threads": _COUNT}),
    "pipeline": (PipelineConfig, {
        "max_parallel_synthesis": _Key(_integer(1, 1024), _int_text),
        "gpu_queue_depth": _QUEUE,
        "witness_batch": _QUEUE,
        "gpu_witness": _BOOL,
        "synthesis_threads": _COUNT,
        "enabled": _BOOL,
        "max_gpu_queue_depth": _COUNT._replace(curio="sets pipeline.gpu_queue_depth when > 0"),
        "synthesis_concurrency": _Key(_integer(0, 1024), _int_text, ignored=True,
                                      curio="has no effect in cuzk: curio's semaphore over its batch and PoSt "
                                            "syntheses; cuzk synthesizes in pipeline.max_parallel_synthesis processes"),
        "synthesis_lookahead": _COUNT._replace(curio="has no effect in cuzk (curio only logs it): "
                                                     "pipeline.gpu_queue_depth bounds the partitions waiting", ignored=True),
        "slot_size": _COUNT._replace(curio="has no effect in cuzk (curio's slotted path is unreachable)", ignored=True)}),
    "memory": (MemoryConfig, {
        "host_cap": _Key(_size(allow_zero=False)),
        "host_margin": _MARGIN,
        "vram_fraction": _Key(_fraction, _float_text),
        "admission_timeout_s": _Key(_seconds(allow_zero=False), _float_text),
        "eviction_min_idle_s": _Key(_seconds(allow_zero=True), _float_text),
        "total_budget": _Key(_total_budget, curio='sets memory.host_cap to a size and memory.host_margin to 0; '
                                                  '"auto" leaves host_cap unset'),
        "safety_margin": _MARGIN._replace(curio="sets memory.host_margin"),
        "eviction_min_idle": _Key(_duration, _duration_text, curio="sets memory.eviction_min_idle_s"),
        "pinned_budget": _MARGIN._replace(curio=_DEPRECATED, ignored=True),
        "working_memory_budget": _MARGIN._replace(curio=_DEPRECATED, ignored=True)}),
    "srs": (SrsConfig, {
        "param_cache": _Key(_directory),
        "allow_setup": _BOOL,
        "preload": _Key(_texts, _texts_text, curio=_DEPRECATED, ignored=True)}),
    "daemon": (DaemonConfig, {
        "listen": _Key(_listen(unix=True, off=False)),
        "status_listen": _Key(_listen(unix=False, off=True))}),
    "logging": (LoggingConfig, {
        "level": _Key(_level),
        "format": _Key(_text, curio="has no effect in cuzk (curio parses it but does not use it)", ignored=True)}),
    "scheduler": (None, {
        "max_batch_size": _Key(_integer(0, 1024), _int_text, curio=_NO_BATCHES, ignored=True),
        "max_batch_wait_ms": _Key(_integer(0, int(MAX_SECONDS * 1000)), _int_text, curio=_NO_BATCHES, ignored=True),
        "sort_by_type": _BOOL._replace(curio="has no effect in cuzk (nor in curio, which does not use it): work is "
                                             "ordered by priority, then arrival", ignored=True)}),
    "synthesis": (None, {
        "threads": _COUNT._replace(curio="sets pipeline.synthesis_threads to threads // "
                                           "pipeline.max_parallel_synthesis (at least 1) when > 0"),
        "partition_workers": _COUNT._replace(curio=_DEPRECATED, ignored=True)}),
}
# curio's keys that are no fields of cuzk's -> what each does in cuzk
CURIO_KEYS = {f"{t}.{k}": key.curio for t, (_, keys) in _TABLES.items() for k, key in keys.items() if key.curio}


def _key(dotted: str) -> _Key:
    table, key = dotted.split(".")
    return _TABLES[table][1][key]


def env_name(dotted: str) -> str:
    """The environment variable that overrides a dotted key: memory.host_cap -> CUZK_MEMORY_HOST_CAP."""
    return "CUZK_" + dotted.replace(".", "_").upper()


def _shown(value: Any) -> str:
    """A value as TOML would write it (near enough), cut to 60 characters."""
    text = str(value) if isinstance(value, float) and not math.isfinite(value) else json.dumps(
        value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:60] + "..."


def _name(key: str) -> str:
    """A table or key name for a message: bare, or quoted and cut when it is not a plain word."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]{1,60}", key) else _shown(key)


# ---------------------------------------------------------------- reading: file, environment

class _Origin(NamedTuple):
    source: str  # the file's path, or "environment"
    name: str  # the dotted key, or the variable

    def shown(self) -> str:
        """Where a value came from, as config show prints it: the file's path, or "env CUZK_..."."""
        return f"env {self.name}" if self.source == "environment" else self.source


_Values = dict[str, tuple[Any, _Origin]]  # dotted key -> (its checked value, where it was set)


def _checked(key: _Key, value: Any, base: Path, origin: _Origin) -> Any:
    try:
        return key.check(value, base)
    except _Bad as e:
        raise ConfigError(origin.source, origin.name, f"{e}, got {_shown(value)}") from None


def _path_text(path: Any) -> str:
    """The configuration file's path as a string; ConfigError for None, bytes, any other non-path
    and a NUL byte."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise ConfigError("configuration", None, f"the file must be a path (str or os.PathLike), got "
                                                 f"{type(path).__name__}")
    if "\0" in text:
        raise ConfigError(_shown(text), None, "is not a path (it contains a NUL byte)")
    return text


def _too_deep(document: dict) -> bool:
    """Whether tables and arrays nest more than MAX_DEPTH deep in `document` (walked without recursion)."""
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _parse_toml(source: str) -> dict[str, Any]:
    """The TOML document in the file `source`, within the limits of the module docstring."""
    try:
        with open_regular(source) as (fd, st), open(fd, "rb", closefd=False) as f:
            if not is_regular(st):  # a FIFO is refused, not waited on
                raise ConfigError(source, None, f"cannot be read ({irregular_reason(st)[1]})")
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ConfigError(source, None, f"cannot be read ({e.strerror or e})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(source, None, f"is larger than {MAX_FILE_BYTES >> 20} MiB")
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(source, None, "is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(source, None, f"is not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(source, None, "is not valid TOML: nested too deeply") from None
    except ValueError as e:  # an integer literal too long for int()
        raise ConfigError(source, None, f"is not valid TOML: {str(e)[:100]}") from None
    if _too_deep(document):
        raise ConfigError(source, None, f"is not valid TOML: nested too deeply (more than {MAX_DEPTH} levels)")
    return document


def _read_file(path: Any) -> _Values:
    """The checked values the TOML file at `path` sets (see load_config)."""
    source = _path_text(path)
    document = _parse_toml(source)
    base = Path(source).expanduser().absolute().parent
    tables = ", ".join(f"[{name}]" for name in _TABLES)
    values: _Values = {}
    for name, table in document.items():
        if name not in _TABLES:
            raise ConfigError(source, _name(name), f"is not a known table (the tables are {tables})")
        if not isinstance(table, dict):
            raise ConfigError(source, name, f"must be a table ([{name}]), got {_shown(table)}")
        keys = _TABLES[name][1]
        for key, value in table.items():
            origin = _Origin(source, f"{name}.{_name(key)}")
            if key not in keys:
                raise ConfigError(source, origin.name, f"is not a known key (the keys of [{name}]: {', '.join(keys)})")
            values[f"{name}.{key}"] = (_checked(keys[key], value, base, origin), origin)
    return values


def _read_env(environ: Mapping[str, str]) -> _Values:
    """The checked values the CUZK_<TABLE>_<KEY> variables set; ConfigError (source "environment",
    key the variable) for an unknown variable or a bad value."""
    values: _Values = {}
    base = Path.cwd()
    for name, (_, keys) in _TABLES.items():
        known = {env_name(f"{name}.{key}"): key for key in keys}
        for var in sorted(v for v in environ if v.startswith(env_name(name) + "_")):
            if var not in known:
                raise ConfigError("environment", var, f"is not a known variable (those of [{name}]: "
                                                      f"{', '.join(known)})")
            key = keys[known[var]]
            origin = _Origin("environment", var)
            values[f"{name}.{known[var]}"] = (_checked(key, key.from_text(environ[var]), base, origin), origin)
    return values


# ---------------------------------------------------------------- curio's keys onto cuzk's fields

class _Fields:
    """The fields' values being settled from the values read, and where each came from."""

    def __init__(self, values: _Values) -> None:
        self.read = values
        self.values = {d: v for d, (v, _) in values.items() if not _key(d).curio}
        self.sources = {d: o.shown() for d, (_, o) in values.items() if not _key(d).curio}

    def value(self, dotted: str) -> Any:
        """A field's value: as set, else its default."""
        table, key = dotted.split(".")
        return self.values.get(dotted, getattr(getattr(EngineConfig.default(), table), key))

    def exclusive(self, curio: str, cuzk: str) -> None:
        """ConfigError naming both when curio's key and cuzk's are both set."""
        if curio in self.read and cuzk in self.read:
            mine, theirs = self.read[curio][1], self.read[cuzk][1]
            where = "" if theirs.source == mine.source else f" ({theirs.shown()})"
            raise ConfigError(mine.source, mine.name, f"and {theirs.name}{where} are both set (curio's key and "
                                                      "cuzk's for one setting): keep one")

    def put(self, dotted: str, value: Any, curio: str) -> None:
        """Set a field from curio's key `curio` (ConfigError when the field is set too)."""
        self.exclusive(curio, dotted)
        origin = self.read[curio][1]
        self.values[dotted] = value
        self.sources[dotted] = origin.shown() if origin.source == "environment" else f"{origin.source} ({curio})"


def _settle_memory(fields: _Fields) -> None:
    """memory.total_budget, safety_margin and eviction_min_idle, as curio means them, onto cuzk's keys."""
    read = fields.read
    fields.exclusive("memory.total_budget", "memory.host_cap")
    budget = read.get("memory.total_budget", (None, None))[0]
    if budget is not None:  # a size: no margin below it, as in curio
        fields.put("memory.host_cap", budget, "memory.total_budget")
        fields.put("memory.host_margin", 0, "memory.total_budget")
        if "memory.safety_margin" in read:
            origin = read["memory.safety_margin"][1]
            log.warning('%s: %s has no effect with memory.total_budget a size (curio subtracts it only from '
                        '"auto")', origin.source, origin.name)
    elif "memory.safety_margin" in read:
        fields.put("memory.host_margin", read["memory.safety_margin"][0], "memory.safety_margin")
    elif "memory.total_budget" in read and "memory.host_margin" not in read:
        fields.put("memory.host_margin", CURIO_SAFETY_MARGIN, "memory.total_budget")
    if "memory.eviction_min_idle" in read:
        fields.put("memory.eviction_min_idle_s", read["memory.eviction_min_idle"][0], "memory.eviction_min_idle")


def _settle_pipeline(fields: _Fields) -> None:
    """synthesis.threads and pipeline.max_gpu_queue_depth, as curio means them, onto cuzk's keys."""
    read = fields.read
    fields.exclusive("synthesis.threads", "pipeline.synthesis_threads")
    threads = read.get("synthesis.threads", (0, None))[0]
    if threads:
        per_process = max(1, threads // fields.value("pipeline.max_parallel_synthesis"))
        fields.put("pipeline.synthesis_threads", per_process, "synthesis.threads")
    depth = read.get("pipeline.max_gpu_queue_depth", (0, None))[0]
    if depth and fields.values.get("pipeline.gpu_queue_depth") != depth:  # set and equal: nothing to do
        fields.put("pipeline.gpu_queue_depth", depth, "pipeline.max_gpu_queue_depth")


def _settle(values: _Values) -> _Fields:
    """The fields `values` set, curio's keys mapped onto cuzk's; one warning per ignored key."""
    for dotted, (_, origin) in values.items():
        if _key(dotted).ignored:
            log.warning("%s: %s %s", origin.source, origin.name, _key(dotted).curio)
    fields = _Fields(values)
    _settle_memory(fields)
    _settle_pipeline(fields)
    return fields


def _build(values: dict[str, Any]) -> EngineConfig:
    tables: dict[str, dict[str, Any]] = {}
    for dotted, value in values.items():
        table, key = dotted.split(".")
        tables.setdefault(table, {})[key] = value
    return EngineConfig(**{name: _TABLES[name][0](**kw) for name, kw in tables.items()})


def load_config(path: str | os.PathLike) -> EngineConfig:
    """The configuration in the TOML file at `path`, every key not in it at its default (the
    environment is not read: see resolve). Raises ConfigError naming the file (and the dotted key)
    when `path` is not a path, or the file cannot be read, is not TOML, or has an unknown table or
    key, a bad value, or one of curio's keys beside the key of cuzk's it sets."""
    return _build(_settle(_read_file(path)).values)


def resolve(path: str | os.PathLike | None = None,
            environ: Mapping[str, str] = os.environ) -> tuple[EngineConfig, dict[str, str]]:
    """The effective configuration: the defaults, under the file at `path` (if any), under the
    CUZK_<TABLE>_<KEY> variables of `environ`; and for every dotted key (cuzk's fields, then curio's
    keys of CURIO_KEYS, table by table) where its value came from: "default", the file's path (with
    the curio key in parentheses for a field it set), or "env CUZK_...". ConfigError names the file
    and key, or the variable."""
    values = _read_file(path) if path is not None else {}
    values.update(_read_env(environ))
    fields = _settle(values)
    sources = {f"{name}.{key}": "default" for name, (_, keys) in _TABLES.items() for key in keys}
    sources.update(fields.sources)
    sources.update({d: origin.shown() for d, (_, origin) in values.items() if d in CURIO_KEYS})
    return _build(fields.values), sources


def override(config: EngineConfig, values: Mapping[str, tuple[str, Any]], source: str) -> EngineConfig:
    """`config` with the fields `values` names (dotted key -> (a name for messages, the value)) set,
    each value checked as the file's are; a ConfigError names `source` and the value's name (a
    command-line flag, say)."""
    changed: dict[str, dict[str, Any]] = {}
    for dotted, (name, value) in values.items():
        table, key = dotted.split(".")
        changed.setdefault(table, {})[key] = _checked(_key(dotted), value, Path.cwd(), _Origin(source, name))
    return replace(config, **{table: replace(getattr(config, table), **kw) for table, kw in changed.items()})
