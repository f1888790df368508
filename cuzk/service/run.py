"""`cuzk daemon`: start-up, serving and shutdown of the proving service, each failure a one-line
error in the log file (opened first) and on stderr, with its own exit code:

    EXIT_CONFIG 2   the configuration does not validate (ConfigError names the file and key, or the
                    command-line flag)
    EXIT_LOCKED 3   another daemon holds the state directory (a lock file, flock'ed)
    EXIT_STATE  4   the state directory or its journal cannot be used
    EXIT_LISTEN 5   the address cannot be bound (in use, invalid)
    EXIT_ENGINE 6   the engine cannot start (no GPU when one is required, no Ray cluster at --cluster, ...)
    EXIT_PARAMS 7   a circuit to preload (--preload) has no parameter file, or one that cannot be read
                    or loaded
SIGTERM / SIGINT stop taking requests and exit 0 once the server has stopped: every accepted job is in
the journal, and the next start resumes the ones that had not finished. A second signal exits at once.
The daemon is ready (/readyz, and before it serves any request) once the engine has started on its
backend (the GPUs found) and every --preload circuit's parameters are loaded.

The configuration is the file --config names, else DEFAULT_CONFIG (curio's default) when it exists,
else the defaults; under the CUZK_<TABLE>_<KEY> variables (cuzk.engine.config.resolve); under the
command line: --listen, --status-listen, --log-level, --allow-setup and --vram-budget set daemon.listen,
daemon.status_listen, logging.level, srs.allow_setup and memory.vram_budget. logging.level is the root
logger's level.
"""
from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cuzk.engine.config import EngineConfig

DEFAULT_CONFIG = Path("/data/zk/cuzk.toml")
DEFAULT_STATE_DIR = Path("/var/lib/cuzk")
EXIT_CONFIG, EXIT_LOCKED, EXIT_STATE, EXIT_LISTEN, EXIT_ENGINE, EXIT_PARAMS = 2, 3, 4, 5, 6, 7
log = logging.getLogger("cuzk.daemon")


@dataclass(frozen=True)
class DaemonOptions:
    """The command line; None for a value the configuration gives (module docstring)."""

    listen: str | None = None
    state_dir: Path = DEFAULT_STATE_DIR
    config: str | None = None
    backend: str = "auto"
    log_file: Path | None = None
    status_listen: str | None = None
    results_ttl_s: float = 7 * 86400
    preload: tuple[str, ...] = ()  # circuit ids (cuzk.service.circuits.CIRCUITS) loaded before ready
    allow_setup: bool = False  # True: srs.allow_setup on, whatever the configuration says
    log_level: str | None = None
    vram_budget: str | None = None  # a size: memory.vram_budget ("": no cap)
    cluster: str | None = None  # a Ray cluster's address ("auto", HOST:PORT, ray://HOST:PORT): prove on its fleet
    cluster_resource: str = "GPU"  # the node resource each prover claims one unit of
    cluster_heartbeat_s: float = 5.0


class StartupError(Exception):
    """A start-up failure: its exit code and one-line message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _open_log(options: DaemonOptions) -> None:
    path = options.log_file or options.state_dir / "daemon.log"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def _lock(state_dir: Path):
    f = open(state_dir / "daemon.lock", "a+")  # noqa: SIM115 - held for the daemon's life
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "?"
        f.close()
        raise StartupError(EXIT_LOCKED, f"another daemon (pid {holder}) holds the state directory {state_dir}") from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f


def run(options: DaemonOptions) -> int:
    """Start the daemon and serve until a signal; the exit code (module docstring)."""
    try:
        _open_log(options)
    except OSError as e:
        print(f"cuzk: cannot open the daemon log in {options.state_dir}: {e}", file=sys.stderr)
        return EXIT_STATE
    try:
        return _serve(options)
    except StartupError as e:
        log.error("start-up failed: %s", e)
        print(f"cuzk: {e}", file=sys.stderr)
        return e.code


def _serve(options: DaemonOptions) -> int:
    from cuzk.errors import ConfigError, CuzkError, InputError
    from cuzk.service.daemon import ProvingService, server
    from cuzk.service.journal import Journal, JournalError
    from cuzk.service.status import StatusServer

    log.info("starting: pid %d, state %s", os.getpid(), options.state_dir)
    config = _configuration(options)
    lock = _lock(options.state_dir)
    try:
        journal = Journal(options.state_dir)
    except (JournalError, OSError) as e:
        raise StartupError(EXIT_STATE, str(e)) from None
    try:
        engine = _engine(config, options)
    except ConfigError as e:
        raise StartupError(EXIT_CONFIG, str(e)) from None
    except CuzkError as e:
        raise StartupError(EXIT_ENGINE, f"the engine cannot start: {e}") from None
    try:
        _preload(engine, options.preload)
    except StartupError:
        engine.close()
        raise
    service = ProvingService(engine, journal, options.results_ttl_s)
    try:
        srv, port = server(service, config.daemon.listen)
    except InputError as e:
        engine.close()
        raise StartupError(EXIT_LISTEN, str(e)) from None
    status_server = None
    if config.daemon.status_listen:
        try:
            status_server = StatusServer(service, config.daemon.status_listen)
        except InputError as e:
            srv.stop(None)
            engine.close()
            raise StartupError(EXIT_LISTEN, str(e)) from None
    journal.record_start(os.getpid(), _version())
    resumed = service.resume()
    service.ready.set()
    log.info("ready: listening on %s%s%s, %d unfinished job(s) resumed", config.daemon.listen,
             f" (port {port})" if port else "", f", status on port {status_server.port}" if status_server else "",
             resumed)
    stopping = threading.Event()
    service.expire_results()
    service.run_expiry(stopping)

    def on_signal(signum, frame) -> None:
        if stopping.is_set():
            log.warning("second signal %d: exiting at once", signum)
            os._exit(128 + signum)
        log.info("signal %d: no new requests; stopping (accepted jobs are journaled)", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # Python runs a signal's handler in the main thread, between bytecodes: a wait without a timeout
    # never returns when the kernel delivers the signal to another thread (the CUDA backend starts
    # threads of its own, and SIGTERM then went unanswered until SIGKILL), so the main thread wakes up
    # to look.
    while not stopping.wait(0.25):
        pass
    srv.stop(grace=5).wait()
    service.close()
    if status_server is not None:
        status_server.close()
    engine.close()
    journal.close()
    lock.close()
    log.info("stopped")
    return 0


def _engine(config: EngineConfig, options: DaemonOptions):
    """The daemon's engine: an Engine on this host's devices, or under --cluster a ClusterEngine on
    the Ray cluster's provers (one per unit of --cluster-resource; the daemon waits for the first)."""
    if options.cluster is None:
        from cuzk.engine.engine import Engine

        return Engine(config, backend=options.backend)
    from cuzk.cluster.front import ClusterEngine, ClusterOptions

    beat = options.cluster_heartbeat_s
    engine = ClusterEngine(config, ClusterOptions(options.cluster, options.cluster_resource, options.backend,
                                                  heartbeat_s=beat, stale_after_s=3 * beat))
    if not engine.wait_ready():
        log.warning("cluster %s: no prover is ready yet (nodes with the %s resource); jobs wait for one",
                    options.cluster, options.cluster_resource)
    return engine


def _config_file(option: str | None) -> str | None:
    """The configuration file to read: --config, else DEFAULT_CONFIG when it exists (one that cannot
    be looked at is read, to fail with its reason), else None: the defaults."""
    if option is not None:
        return option
    try:
        DEFAULT_CONFIG.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        pass
    return str(DEFAULT_CONFIG)


def _configuration(options: DaemonOptions) -> EngineConfig:
    """The effective configuration (module docstring), logged with where it came from; the root
    logger at its logging.level. StartupError EXIT_CONFIG naming the file and key, the variable, or
    the flag, for a bad one."""
    from cuzk.engine.config import LOG_LEVELS, override, resolve
    from cuzk.errors import ConfigError

    path = _config_file(options.config)
    flags = {"daemon.listen": ("--listen", options.listen),
             "daemon.status_listen": ("--status-listen", options.status_listen),
             "logging.level": ("--log-level", options.log_level),
             "srs.allow_setup": ("--allow-setup", True if options.allow_setup else None),
             "memory.vram_budget": ("--vram-budget", options.vram_budget)}
    given = {dotted: flag for dotted, flag in flags.items() if flag[1] is not None}
    try:
        config, sources = resolve(path)
        config = override(config, given, "command line")
    except ConfigError as e:
        raise StartupError(EXIT_CONFIG, str(e)) from None
    logging.getLogger().setLevel(LOG_LEVELS[config.logging.level])
    overrides = sorted({s.removeprefix("env ") for s in sources.values() if s.startswith("env ")})
    overrides += [name for name, _ in given.values()]
    log.info("configuration: %s%s", path if path is not None else f"the defaults (no --config, no {DEFAULT_CONFIG})",
             f"; overridden by {', '.join(overrides)}" if overrides else "")
    return config


def _preload(engine, circuit_ids: tuple[str, ...]) -> None:
    """Load each circuit's parameters into the engine (a circuit id of cuzk.service.circuits: PoRep,
    WindowPoSt, WinningPoSt or SnapDeals): the official ones, or cuzk's own where srs.allow_setup lets
    them stand in (never generated here); StartupError EXIT_CONFIG for an unknown id, naming the valid
    ones, EXIT_PARAMS naming the circuit and the file for one that is missing or unreadable."""
    from cuzk.errors import CuzkError
    from cuzk.porep.params_cache import find_params
    from cuzk.service.circuits import CIRCUITS, unknown

    for cid in circuit_ids:
        refusal = unknown(cid)
        if refusal is not None:
            raise StartupError(EXIT_CONFIG, f"--preload {cid}: {refusal}")
        circuit = CIRCUITS[cid]
        try:
            allow = engine.config.srs.allow_setup
            files = find_params(circuit.stem, allow_own=allow)
            log.info("preloading %s from %s", cid, files.describe())
            engine.warm(circuit.spec(allow))
        except CuzkError as e:
            raise StartupError(EXIT_PARAMS, f"--preload {cid}: {e}") from None


def _version() -> str:
    from cuzk.porep.pce_cache import cuzk_version

    return cuzk_version()
