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
    vram_budget                    (not set; "" the same) a cap on each GPU's whole use, a size above
                                   1 GiB: CuPy's pool limited to it less 1 GiB for the context; the
                                   prover plans within it (the key streamed from host memory when it
                                   does not fit); $CUZK_VRAM_BUDGET sets the same (this key wins)
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

The checks of one value are cuzk.engine.config_values; curio's keys are settled onto cuzk's fields in
cuzk.engine.config_curio.
"""
from __future__ import annotations

import logging
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from cuzk.engine import config_values as checks
from cuzk.engine.config_curio import Fields, settle
from cuzk.engine.config_values import MAX_SECONDS, Origin, Parser, Values, checked, shown
from cuzk.errors import ConfigError
from cuzk.util.fileio import irregular_reason, is_regular, open_regular

GIB = 1 << 30
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 8  # tables and arrays nested in a file
LOG_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
              "warning": logging.WARNING, "error": logging.ERROR}

CONFIG_ENV = "CUZK_CONFIG"  # the configuration file the process-wide engine reads, when set


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

    @property
    def slots(self) -> int:
        """Items an engine holds at once past admission: synthesizing or waiting for a GPU worker (one
        when the pipeline is off)."""
        return self.max_parallel_synthesis + self.gpu_queue_depth if self.enabled else 1


@dataclass(frozen=True)
class MemoryConfig:
    host_cap: int | None = None
    host_margin: int = 2 * GIB
    vram_fraction: float = 0.8
    vram_budget: int | None = None  # bytes; None: no cap
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
_BOOL, _MARGIN = _Key(checks.boolean, checks.bool_text), _Key(checks.size(allow_zero=True))
_COUNT, _QUEUE = _Key(checks.integer(0, 4096), checks.int_text), _Key(checks.integer(1, 4096), checks.int_text)

# table -> (its dataclass, None for a table of curio's alone; key -> _Key). A key with no `curio` note is
# a field of the dataclass, in the same order.
_TABLES: dict[str, tuple[type | None, dict[str, _Key]]] = {
    "gpus": (GpuConfig, {
        "devices": _Key(checks.devices, checks.list_text),
        "gpu_workers_per_device": _Key(checks.integer(1, 64), checks.int_text),
        "gpu_threads": _COUNT}),
    "pipeline": (PipelineConfig, {
        "max_parallel_synthesis": _Key(checks.integer(1, 1024), checks.int_text),
        "gpu_queue_depth": _QUEUE,
        "witness_batch": _QUEUE,
        "gpu_witness": _BOOL,
        "synthesis_threads": _COUNT,
        "enabled": _BOOL,
        "max_gpu_queue_depth": _COUNT._replace(curio="sets pipeline.gpu_queue_depth when > 0"),
        "synthesis_concurrency": _Key(checks.integer(0, 1024), checks.int_text, ignored=True,
                                      curio="has no effect in cuzk: curio's semaphore over its batch and PoSt "
                                            "syntheses; cuzk synthesizes in pipeline.max_parallel_synthesis processes"),
        "synthesis_lookahead": _COUNT._replace(curio="has no effect in cuzk (curio only logs it): "
                                                     "pipeline.gpu_queue_depth bounds the partitions waiting", ignored=True),
        "slot_size": _COUNT._replace(curio="has no effect in cuzk (curio's slotted path is unreachable)", ignored=True)}),
    "memory": (MemoryConfig, {
        "host_cap": _Key(checks.size(allow_zero=False)),
        "host_margin": _MARGIN,
        "vram_fraction": _Key(checks.fraction, checks.float_text),
        "vram_budget": _Key(checks.vram_cap),
        "admission_timeout_s": _Key(checks.seconds(allow_zero=False), checks.float_text),
        "eviction_min_idle_s": _Key(checks.seconds(allow_zero=True), checks.float_text),
        "total_budget": _Key(checks.total_budget, curio='sets memory.host_cap to a size and memory.host_margin to 0; '
                                                         '"auto" leaves host_cap unset'),
        "safety_margin": _MARGIN._replace(curio="sets memory.host_margin"),
        "eviction_min_idle": _Key(checks.duration, checks.duration_text, curio="sets memory.eviction_min_idle_s"),
        "pinned_budget": _MARGIN._replace(curio=_DEPRECATED, ignored=True),
        "working_memory_budget": _MARGIN._replace(curio=_DEPRECATED, ignored=True)}),
    "srs": (SrsConfig, {
        "param_cache": _Key(checks.directory),
        "allow_setup": _BOOL,
        "preload": _Key(checks.strings, checks.strings_text, curio=_DEPRECATED, ignored=True)}),
    "daemon": (DaemonConfig, {
        "listen": _Key(checks.listen(unix=True, off=False)),
        "status_listen": _Key(checks.listen(unix=False, off=True))}),
    "logging": (LoggingConfig, {
        "level": _Key(checks.choice(LOG_LEVELS)),
        "format": _Key(checks.string, curio="has no effect in cuzk (curio parses it but does not use it)",
                       ignored=True)}),
    "scheduler": (None, {
        "max_batch_size": _Key(checks.integer(0, 1024), checks.int_text, curio=_NO_BATCHES, ignored=True),
        "max_batch_wait_ms": _Key(checks.integer(0, int(MAX_SECONDS * 1000)), checks.int_text, curio=_NO_BATCHES,
                                  ignored=True),
        "sort_by_type": _BOOL._replace(curio="has no effect in cuzk (nor in curio, which does not use it): work is "
                                             "ordered by priority, then arrival", ignored=True)}),
    "synthesis": (None, {
        "threads": _COUNT._replace(curio="sets pipeline.synthesis_threads to threads // "
                                           "pipeline.max_parallel_synthesis (at least 1) when > 0"),
        "partition_workers": _COUNT._replace(curio=_DEPRECATED, ignored=True)}),
}
# curio's keys that are no fields of cuzk's -> what each does in cuzk
CURIO_KEYS = {f"{t}.{k}": key.curio for t, (_, keys) in _TABLES.items() for k, key in keys.items() if key.curio}
# those of them that are checked, then ignored with one warning
_IGNORED = frozenset(f"{t}.{k}" for t, (_, keys) in _TABLES.items() for k, key in keys.items() if key.ignored)


def _key(dotted: str) -> _Key:
    table, key = dotted.split(".")
    return _TABLES[table][1][key]


def env_name(dotted: str) -> str:
    """The environment variable that overrides a dotted key: memory.host_cap -> CUZK_MEMORY_HOST_CAP."""
    return "CUZK_" + dotted.replace(".", "_").upper()


def _name(key: str) -> str:
    """A table or key name for a message: bare, or quoted and cut when it is not a plain word."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]{1,60}", key) else shown(key)


# ---------------------------------------------------------------- reading: file, environment

def _path_text(path: Any) -> str:
    """The configuration file's path as a string; ConfigError for None, bytes, any other non-path
    and a NUL byte."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise ConfigError("configuration", None, f"the file must be a path (str or os.PathLike), got "
                                                 f"{type(path).__name__}")
    if "\0" in text:
        raise ConfigError(shown(text), None, "is not a path (it contains a NUL byte)")
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


def _read_file(path: Any) -> Values:
    """The checked values the TOML file at `path` sets (see load_config)."""
    source = _path_text(path)
    document = _parse_toml(source)
    base = Path(source).expanduser().absolute().parent
    tables = ", ".join(f"[{name}]" for name in _TABLES)
    values: Values = {}
    for name, table in document.items():
        if name not in _TABLES:
            raise ConfigError(source, _name(name), f"is not a known table (the tables are {tables})")
        if not isinstance(table, dict):
            raise ConfigError(source, name, f"must be a table ([{name}]), got {shown(table)}")
        keys = _TABLES[name][1]
        for key, value in table.items():
            origin = Origin(source, f"{name}.{_name(key)}")
            if key not in keys:
                raise ConfigError(source, origin.name, f"is not a known key (the keys of [{name}]: {', '.join(keys)})")
            values[f"{name}.{key}"] = (checked(keys[key].check, value, base, origin), origin)
    return values


def _read_env(environ: Mapping[str, str]) -> Values:
    """The checked values the CUZK_<TABLE>_<KEY> variables set; ConfigError (source "environment",
    key the variable) for an unknown variable or a bad value."""
    values: Values = {}
    base = Path.cwd()
    for name, (_, keys) in _TABLES.items():
        known = {env_name(f"{name}.{key}"): key for key in keys}
        for var in sorted(v for v in environ if v.startswith(env_name(name) + "_")):
            if var not in known:
                raise ConfigError("environment", var, f"is not a known variable (those of [{name}]: "
                                                      f"{', '.join(known)})")
            key = keys[known[var]]
            origin = Origin("environment", var)
            values[f"{name}.{known[var]}"] = (checked(key.check, key.from_text(environ[var]), base, origin), origin)
    return values


# ---------------------------------------------------------------- the configuration

def _settle(values: Values) -> Fields:
    """The fields `values` set, curio's keys mapped onto cuzk's; one warning per ignored key."""
    return settle(values, CURIO_KEYS, _IGNORED, EngineConfig.default())


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
        changed.setdefault(table, {})[key] = checked(_key(dotted).check, value, Path.cwd(),
                                                    Origin(source, name))
    return replace(config, **{table: replace(getattr(config, table), **kw) for table, kw in changed.items()})
