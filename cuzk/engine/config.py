"""The engine's configuration: frozen dataclasses, loaded from TOML (load_config) or the defaults
(EngineConfig.default()). cuzk.example.toml at the repository root shows every key.

Keys that curio's cuzk daemon has with the same meaning keep its names. Every key, with its default:

    [gpus]
    devices = []                   GPU ordinals to use; [] = every visible GPU (none: the CPU engine)
    gpu_workers_per_device = 2     GPU workers per device (integer >= 1)

    [pipeline]
    max_parallel_synthesis = 2     synthesis worker processes (integer >= 1); the host budget may
                                   admit fewer at a time
    gpu_queue_depth = 2            synthesized partitions waiting for a GPU, at most (integer >= 1);
                                   synthesis waits while the queue is full
    witness_batch = 10             partitions of one circuit whose packed witnesses (PoRep) a GPU
                                   worker expands in one witness-program run (integer >= 1): it
                                   takes those waiting in the GPU queue, so raise gpu_queue_depth
                                   with it; on a GPU also at most as many as fit in vram_fraction
                                   of its free memory
    gpu_witness = true             expand packed witnesses on the GPU that proves them (false: on
                                   the host's cores, the CPU witness program, then uploaded)
    synthesis_threads = 0          compute threads of each synthesis process (integer >= 0); 0 =
                                   the CPUs this process may use shared out among the
                                   max_parallel_synthesis processes, at least 1 each (curio's
                                   synthesis.threads is one pool's total: not the same key)

    [memory]
    host_cap                       (not set) a host RAM cap, bytes or a size such as "48GiB": set it
                                   to the limit of any watchdog the kernel does not know about
    host_margin = "2GiB"           kept free below the host limit (size >= 0)
    vram_fraction = 0.8            share of each GPU's memory free at engine start that its VRAM
                                   budget may use (a number in (0, 1])
    admission_timeout_s = 1800     seconds a work item waits for room in a budget before it fails
                                   (a number > 0; curio's client gives up on a proof after 30 min)

    [srs]
    param_cache                    (not set) the directory of the Groth16 parameters (.params,
                                   .vk), where cuzk also keeps its own files; unset: cuzk's usual
                                   places ($FIL_PROOFS_PARAMETER_CACHE, else its defaults). A
                                   relative path is relative to the configuration file; ~ expands.

The host RAM budget is the smallest of memory.host_cap, the cgroup limit and MemTotal, minus
memory.host_margin (cuzk.engine.budget). curio's memory.total_budget and memory.safety_margin mean
something else (an explicit total replaces MemTotal there, and the margin applies only to "auto"), so
they are refused with a pointer to these keys. Sizes are bytes (an integer) or a string with a
binary unit ("2GiB", "512M"). Unknown tables and keys, wrong types and out-of-range values raise
ConfigError naming the file and the dotted key.

Environment variables override the file: CUZK_<TABLE>_<KEY> in upper case (CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS=4,
CUZK_MEMORY_HOST_CAP=48GiB, CUZK_GPUS_DEVICES=0,1 (empty: []), CUZK_SRS_PARAM_CACHE=/params, a relative
path relative to the current directory), checked as the file's values are (resolve). Every variable
that starts with a table's prefix (CUZK_GPUS_, CUZK_PIPELINE_, CUZK_MEMORY_, CUZK_SRS_) must name a key;
cuzk's other variables (CUZK_CACHE_DIR, CUZK_VRAM_BUDGET, ...) are not configuration.
"""
from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuzk.errors import ConfigError, InputError
from cuzk.util.fileio import irregular_reason, is_regular, open_regular
from cuzk.util.sizes import parse_bytes

GIB = 1 << 30
CURIO_KEYS = {"memory.total_budget": "memory.host_cap", "memory.safety_margin": "memory.host_margin"}

CONFIG_ENV = "CUZK_CONFIG"  # the configuration file the process-wide engine reads, when set


@dataclass(frozen=True)
class GpuConfig:
    devices: tuple[int, ...] = ()
    gpu_workers_per_device: int = 2


@dataclass(frozen=True)
class PipelineConfig:
    max_parallel_synthesis: int = 2
    gpu_queue_depth: int = 2
    witness_batch: int = 10
    gpu_witness: bool = True
    synthesis_threads: int = 0


@dataclass(frozen=True)
class MemoryConfig:
    host_cap: int | None = None
    host_margin: int = 2 * GIB
    vram_fraction: float = 0.8
    admission_timeout_s: float = 1800.0


@dataclass(frozen=True)
class SrsConfig:
    param_cache: Path | None = None


@dataclass(frozen=True)
class EngineConfig:
    """The whole configuration, one frozen dataclass per TOML table (see the module docstring)."""

    gpus: GpuConfig = field(default_factory=GpuConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    srs: SrsConfig = field(default_factory=SrsConfig)

    @classmethod
    def default(cls) -> EngineConfig:
        return cls()


class _Bad(Exception):
    """What is wrong with a value, as the end of a message ("must be ...")."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(minimum: int) -> Callable[[Any, Path], int]:
    def parse(value: Any, base: Path) -> int:
        if not _is_int(value) or value < minimum:
            raise _Bad(f"must be an integer >= {minimum}")
        return value
    return parse


def _boolean(value: Any, base: Path) -> bool:
    if not isinstance(value, bool):
        raise _Bad("must be true or false")
    return value


def _size(allow_zero: bool) -> Callable[[Any, Path], int]:
    reason = (f"must be a size {'>= 0' if allow_zero else '> 0'}"
              ' (bytes, or a number with K, M, G or T, e.g. "2GiB")')

    def parse(value: Any, base: Path) -> int:
        if not (_is_int(value) or isinstance(value, str)):
            raise _Bad(reason)
        try:
            return parse_bytes(value, allow_zero=allow_zero)
        except InputError:
            raise _Bad(reason) from None
    return parse


def _positive(high: float, reason: str) -> Callable[[Any, Path], float]:
    """A finite number in (0, high]."""
    def parse(value: Any, base: Path) -> float:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
                or not 0 < value <= high:
            raise _Bad(reason)
        return float(value)
    return parse


def _devices(value: Any, base: Path) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(_is_int(d) and d >= 0 for d in value) or len(set(value)) < len(value):
        raise _Bad("must be a list of distinct GPU ordinals (integers >= 0)")
    return tuple(value)


def _directory(value: Any, base: Path) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise _Bad("must be a directory path (a non-empty string)")
    return base / Path(value).expanduser()  # an absolute path stays as it is


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


Parser = Callable[[Any, Path], Any]
# table -> (its dataclass, key -> (the check of a TOML value, an environment value as a TOML one))
_SCHEMA: dict[str, tuple[type, dict[str, tuple[Parser, Callable[[str], Any]]]]] = {
    "gpus": (GpuConfig, {"devices": (_devices, _list_text), "gpu_workers_per_device": (_integer(1), _int_text)}),
    "pipeline": (PipelineConfig, {"max_parallel_synthesis": (_integer(1), _int_text),
                                  "gpu_queue_depth": (_integer(1), _int_text),
                                  "witness_batch": (_integer(1), _int_text),
                                  "gpu_witness": (_boolean, _bool_text),
                                  "synthesis_threads": (_integer(0), _int_text)}),
    "memory": (MemoryConfig, {
        "host_cap": (_size(allow_zero=False), str), "host_margin": (_size(allow_zero=True), str),
        "vram_fraction": (_positive(1.0, "must be a number in (0, 1]"), _float_text),
        "admission_timeout_s": (_positive(math.inf, "must be a finite number of seconds > 0"), _float_text)}),
    "srs": (SrsConfig, {"param_cache": (_directory, str)}),
}


def env_name(dotted: str) -> str:
    """The environment variable that overrides a dotted key: memory.host_cap -> CUZK_MEMORY_HOST_CAP."""
    return "CUZK_" + dotted.replace(".", "_").upper()


def _shown(value: Any) -> str:
    """A value as TOML would write it (near enough), cut to 60 characters."""
    text = str(value) if isinstance(value, float) and not math.isfinite(value) else json.dumps(
        value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:60] + "..."


def _read_file(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The checked values the TOML file at `path` sets, per table and key (see load_config)."""
    source = str(path)
    try:
        with open_regular(path) as (fd, st), open(fd, "rb", closefd=False) as f:
            if not is_regular(st):  # a FIFO is refused, not waited on
                raise ConfigError(source, None, f"cannot be read ({irregular_reason(st)[1]})")
            data = tomllib.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise ConfigError(source, None, f"cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise ConfigError(source, None, "is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(source, None, f"is not valid TOML: {e}") from None
    base = Path(path).expanduser().absolute().parent
    tables = ", ".join(f"[{name}]" for name in _SCHEMA)
    sections: dict[str, dict[str, Any]] = {}
    for name, table in data.items():
        if name not in _SCHEMA:
            raise ConfigError(source, name, f"is not a known table (the tables are {tables})")
        if not isinstance(table, dict):
            raise ConfigError(source, name, f"must be a table ([{name}]), got {_shown(table)}")
        keys = _SCHEMA[name][1]
        values = sections.setdefault(name, {})
        for key, value in table.items():
            dotted = f"{name}.{key}"
            if dotted in CURIO_KEYS:
                raise ConfigError(source, dotted, f"is curio's key, with another meaning: use {CURIO_KEYS[dotted]} "
                                                  "(see cuzk.example.toml)")
            if key not in keys:
                raise ConfigError(source, dotted, f"is not a known key (the keys of [{name}]: {', '.join(keys)})")
            try:
                values[key] = keys[key][0](value, base)
            except _Bad as e:
                raise ConfigError(source, dotted, f"{e}, got {_shown(value)}") from None
    return sections


def _read_env(environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The checked values the CUZK_<TABLE>_<KEY> variables set, per table and key; ConfigError
    (source "environment", key the variable) for an unknown variable or a bad value."""
    sections: dict[str, dict[str, Any]] = {}
    base = Path.cwd()
    curio = {env_name(k): env_name(v) for k, v in CURIO_KEYS.items()}
    for name, (_, keys) in _SCHEMA.items():
        known = {env_name(f"{name}.{key}"): key for key in keys}
        for var in sorted(v for v in environ if v.startswith(env_name(name) + "_")):
            if var in curio:
                raise ConfigError("environment", var, f"is curio's key, with another meaning: use {curio[var]}")
            if var not in known:
                raise ConfigError("environment", var, f"is not a known variable (those of [{name}]: "
                                                      f"{', '.join(known)})")
            parse, from_text = keys[known[var]]
            value = from_text(environ[var])
            try:
                sections.setdefault(name, {})[known[var]] = parse(value, base)
            except _Bad as e:
                raise ConfigError("environment", var, f"{e}, got {_shown(value)}") from None
    return sections


def _build(sections: dict[str, dict[str, Any]]) -> EngineConfig:
    return EngineConfig(**{name: _SCHEMA[name][0](**values) for name, values in sections.items()})


def load_config(path: str | os.PathLike) -> EngineConfig:
    """The configuration in the TOML file at `path`, every key not in it at its default (the
    environment is not read: see resolve). Raises ConfigError naming the file (and the dotted key)
    when it cannot be read, is not TOML, or has an unknown table or key or a bad value."""
    return _build(_read_file(path))


def resolve(path: str | os.PathLike | None = None,
            environ: Mapping[str, str] = os.environ) -> tuple[EngineConfig, dict[str, str]]:
    """The effective configuration: the defaults, under the file at `path` (if any), under the
    CUZK_<TABLE>_<KEY> variables of `environ`; and for every dotted key where its value came from:
    "default", the file's path, or "env CUZK_...". ConfigError names the file and key, or the variable."""
    sections = _read_file(path) if path is not None else {}
    sources = {f"{name}.{key}": "default" for name, (_, keys) in _SCHEMA.items() for key in keys}
    sources.update({f"{name}.{key}": str(path) for name, values in sections.items() for key in values})
    for name, values in _read_env(environ).items():
        sections.setdefault(name, {}).update(values)
        sources.update({f"{name}.{key}": f"env {env_name(f'{name}.{key}')}" for key in values})
    return _build(sections), sources
