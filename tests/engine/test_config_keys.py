"""Every key cuzk.example.toml documents (its commented-out ones too: curio's keys, memory.host_cap, ...)
has a behaviour check here that exercises the code that USES the value, not only the parser: BEHAVIOURS
maps each dotted key to its check, and a key documented without one (or a check for a key the file no
longer documents) fails test_every_documented_key_has_a_behaviour_check. Engines run on the CPU backend
with lazily spawned synthesis processes; only two checks start a process (one synthesis process, one
`cuzk daemon`). curio's keys that cuzk ignores are checked for the one warning naming them at load and a
configuration equal to the defaults."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import itertools
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numba
import pytest

import cuzk.backend
import cuzk.backend.cuda
import cuzk.backend.cuda.device as cuda_device
from cuzk.backend import device_backends, get_backend
from cuzk.backend.cuda.memory import resolve_budget
from cuzk.engine import MemoryBudget
from cuzk.engine import config as config_module
from cuzk.engine import porep as porep_module
from cuzk.engine.budget import host_limit
from cuzk.engine.config import LOG_LEVELS, EngineConfig, load_config
from cuzk.engine.accounting import engine_host_bytes, work_bytes
from cuzk.engine.engine import Engine
from cuzk.engine.expansion import expanded
from cuzk.engine.placement import batch_cap
from cuzk.engine.porep import porep_spec_of
from cuzk.engine import processes
from cuzk.engine.processes import synthesis_threads
from cuzk.errors import BudgetTimeoutError, InputError
from cuzk.porep import params_cache, program_witness
from cuzk.porep.params_cache import OfficialParamsMissingError
from cuzk.porep.registry import get_proof
from cuzk.service import run as run_module
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.run import DaemonOptions
from cuzk.util.cache_dirs import params_dir
from engine.test_engine import spec  # tests/ is on the path
from service.test_run import CLI, free_port, get, ready
from service.test_run_config import root_level  # noqa: F401 - a fixture: the root logger's level, restored

EXAMPLE = Path(__file__).resolve().parents[2] / "cuzk.example.toml"
GIB = 1 << 30
PARAMS_ENV = processes.PARAMS_ENV
CONFIG_PREFIXES = tuple(f"CUZK_{table.upper()}_" for table in config_module._TABLES)


# ---------------------------------------------------------------- the keys the example documents

def example_keys() -> dict[str, str]:
    """Every dotted key cuzk.example.toml documents -> its line (`key = value`, uncommented): the keys
    it sets and the commented-out ones (a comment line that is itself a TOML `key = value`)."""
    keys: dict[str, str] = {}
    table = None
    for line in EXAMPLE.read_text().splitlines():
        text = line.strip()
        if m := re.fullmatch(r"\[([A-Za-z0-9_-]+)\]", text):
            table = m[1]
            continue
        text = text[1:].strip() if text.startswith("#") else text
        if table is None or not re.match(r"[A-Za-z_][A-Za-z0-9_]*\s*=", text):
            continue
        try:
            (key, _), = tomllib.loads(text).items()
        except (tomllib.TOMLDecodeError, ValueError):
            continue  # prose that happens to start with "word ="
        keys[f"{table}.{key}"] = text
    return keys


def documented_value(dotted: str):
    """The value the example shows for a key."""
    return next(iter(tomllib.loads(example_keys()[dotted]).values()))


# ---------------------------------------------------------------- helpers

_files = itertools.count()


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, Path)):
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(value)


def write_toml(directory: Path, values: dict) -> Path:
    """A cuzk.toml in its own folder under `directory` setting the dotted keys of `values`."""
    tables: dict[str, list[str]] = {}
    for dotted, value in values.items():
        table, key = dotted.split(".")
        tables.setdefault(table, []).append(f"{key} = {toml_value(value)}")
    folder = directory / f"config{next(_files)}"
    folder.mkdir()
    path = folder / "cuzk.toml"
    path.write_text("".join(f"[{t}]\n" + "\n".join(lines) + "\n" for t, lines in tables.items()))
    return path


def load(directory: Path, values: dict) -> EngineConfig:
    """The configuration a file setting `values` (dotted key -> value) loads to: every check goes
    through the key's documented name."""
    return load_config(write_toml(directory, values))


@contextlib.contextmanager
def engine(config: EngineConfig, budget: MemoryBudget | None | str = "test", **kw):
    """An engine on the CPU backend (its synthesis processes start on first use), closed after. The
    default budget is a 16 GiB test ledger of its own; budget=None: the host's budget from the config."""
    kw.setdefault("backend", "cpu")
    budget = MemoryBudget(1 << 34, "test RAM") if budget == "test" else budget
    with Engine(config, budget=budget, **kw) as e:
        yield e


def slots(e: Engine) -> int:
    """The admission slots (items in flight at once) of an idle engine."""
    return e._slots._value


def tiny_circuit(packed: bool) -> SimpleNamespace:
    """The sizes the sizing functions read of a circuit; `packed`: one with a witness program."""
    return SimpleNamespace(num_inputs=3, num_aux=1000, domain_size=2048, program=object() if packed else None)


def host_total() -> int:
    return host_limit(None).total


def needs_host(bytes_: int) -> None:
    if host_total() < bytes_:
        pytest.skip(f"this machine's host limit {host_total()} is below {bytes_} bytes")


def evicts(config: EngineConfig) -> bool:
    """Whether a reservation that fits only without an idle resident circuit evicts it (as in
    tests/engine/test_residency.py, the circuit preloaded rather than proved: no synthesis process)."""
    with engine(config, MemoryBudget(1 << 34, "test RAM")) as e:
        circuit = e.preload(spec("a")).reservation.bytes
        want = e.budget.free + circuit // 2
        try:
            with e.budget.reserve(want, "a large item", timeout=1.0):
                assert e.resident == [] and e.budget.free == circuit - circuit // 2
                return True
        except BudgetTimeoutError:
            assert e.resident == ["a"]
            return False


class FakeDevice(contextlib.nullcontext):
    """cupy.cuda.Device as the backends use it: its ordinal, and a context that makes it current."""

    def __init__(self, device: int = 0) -> None:
        super().__init__()
        self.id = device


class FakePool:
    """CuPy's default memory pool as a VRAM cap sets it: its limit alone (0: none)."""

    def __init__(self) -> None:
        self.limit = 0

    def set_limit(self, size: int) -> None:
        self.limit = size

    def get_limit(self) -> int:
        return self.limit


def fake_gpus(monkeypatch, count: int = 2, free: int = 1000) -> FakePool:
    """`count` CUDA devices as cuzk.backend sees them, on a machine without any: cupy's device count,
    devices and memory pool, and each device's free memory (`free` bytes), stand-ins; the backends are
    real CudaBackend objects (they touch no GPU until they prove), made fresh for this call, their
    budgets resolved on the stand-ins (CuPy's allocator is left alone: memory.POOL_PEAK's hook needs
    the real one). The pool, whose limit a VRAM cap sets."""
    from cuzk.backend.cuda import CudaBackend
    from cuzk.backend.cuda import backend as cuda_backend
    from cuzk.backend.cuda.memory import POOL_PEAK

    pool = FakePool()
    runtime = SimpleNamespace(getDeviceCount=lambda: count)
    fake_cupy = SimpleNamespace(cuda=SimpleNamespace(runtime=runtime, Device=FakeDevice),
                                get_default_memory_pool=lambda: pool)
    monkeypatch.setattr(cuzk.backend.cuda, "cuda_available", lambda: True)
    monkeypatch.setattr(cuda_device, "cupy", lambda: fake_cupy)
    monkeypatch.setattr(cuda_backend, "cupy", lambda: fake_cupy)
    monkeypatch.setattr(POOL_PEAK, "install", lambda: None)
    monkeypatch.setattr(cuda_device, "free_bytes", lambda device: free)
    monkeypatch.setattr(cuzk.backend, "_cuda_backend_on", functools.cache(lambda d: CudaBackend(device=d)))
    monkeypatch.delenv("CUZK_VRAM_BUDGET", raising=False)
    return pool


def ignored_with_one_warning(dotted: str, tmp_path: Path, caplog) -> None:
    """curio's key that cuzk ignores: loading the example's value warns once, naming the key, and the
    configuration (what the engine and daemon get) is the defaults."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cuzk.engine.config"):
        config = load(tmp_path, {dotted: documented_value(dotted)})
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and dotted in warnings[0], (dotted, warnings)
    assert config == EngineConfig.default(), f"{dotted} changed the configuration: {config}"


# ---------------------------------------------------------------- the daemon, once

@pytest.fixture(scope="module")
def daemon_run(tmp_path_factory) -> dict:
    """One `cuzk daemon` started with a file setting daemon.listen (a unix socket), daemon.status_listen
    and logging.level = "warn": what answered where, then its log once it stopped."""
    tmp = tmp_path_factory.mktemp("daemon")
    sock, port = tmp / "cuzk.sock", free_port()
    path = write_toml(tmp, {"daemon.listen": f"unix://{sock}", "daemon.status_listen": f"127.0.0.1:{port}",
                            "logging.level": "warn"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(CONFIG_PREFIXES)}
    proc = subprocess.Popen([sys.executable, "-c", CLI, "daemon", "--backend", "cpu", "--state-dir",
                             str(tmp / "state"), "--config", str(path)], stderr=subprocess.PIPE, text=True, env=env)
    seen: dict = {"socket": sock, "port": port}
    try:
        stub = ready(sock, proc)
        seen["grpc_status"] = stub.GetStatus(pb.GetStatusRequest(), timeout=5)
        deadline = time.monotonic() + 30
        while (readyz := get(port, "/readyz"))[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        seen["readyz"] = readyz
    finally:
        proc.send_signal(signal.SIGTERM)
        seen["exit"] = proc.wait(60)
    seen["log"] = (tmp / "state" / "daemon.log").read_text()
    return seen


@pytest.fixture
def numba_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


@pytest.fixture
def param_env(monkeypatch):
    """$FIL_PROOFS_PARAMETER_CACHE restored after the test (an engine with srs.param_cache sets it)."""
    monkeypatch.setenv(PARAMS_ENV, "/nonexistent/before-the-test")
    return monkeypatch


# ---------------------------------------------------------------- [daemon], [logging]

def check_daemon_listen(daemon_run):
    """run.py serves gRPC on daemon.listen: GetStatus answers over the configured unix socket."""
    assert daemon_run["grpc_status"].total_proofs_completed == 0
    assert daemon_run["exit"] == 0, daemon_run["log"][-2000:]


def check_daemon_status_listen(daemon_run):
    """run.py starts the HTTP status server on daemon.status_listen: GET /readyz there answers."""
    assert daemon_run["readyz"] == (200, "ready\n"), daemon_run["readyz"]


def check_logging_level(daemon_run, tmp_path, root_level):
    """logging.level is the root logger's level: run.py's _configuration sets it, and the daemon set to
    "warn" writes its INFO lines only until the configuration is read ("starting:"), none after
    ("configuration:", "ready: listening", "stopped")."""
    for level in ("error", "debug"):
        run_module._configuration(DaemonOptions(config=str(write_toml(tmp_path, {"logging.level": level}))))
        assert logging.getLogger().level == LOG_LEVELS[level]
    log = daemon_run["log"]
    assert "INFO cuzk.daemon starting:" in log
    for line in ("configuration:", "ready: listening", "stopped"):
        assert line not in log, f"an INFO line {line!r} was logged with logging.level = warn:\n{log[-2000:]}"


# ---------------------------------------------------------------- [gpus]

def check_gpus_devices(tmp_path, monkeypatch):
    """The engine makes one device per ordinal of gpus.devices ([] = every visible one), through
    cuzk.backend.device_backends, and refuses an ordinal that is not visible; on the CPU backend the
    list is ignored (one CPU device). Without a GPU, cupy's device count is a stand-in (fake_gpus)."""
    with engine(load(tmp_path, {"gpus.devices": [0, 3]})) as e:
        assert [d["device"] for d in e.devices] == ["cpu:0"]
    fake_gpus(monkeypatch, count=2)
    with engine(load(tmp_path, {"gpus.devices": [1]}), backend="cuda") as e:
        assert [d["device"] for d in e.devices] == ["cuda:1"]
        assert [d.backend.device for d in e._devices] == [1]
    with engine(load(tmp_path, {"gpus.devices": []}), backend="cuda") as e:
        assert [d["device"] for d in e.devices] == ["cuda:0", "cuda:1"]
    with pytest.raises(InputError, match="no CUDA device 5"):
        Engine(load(tmp_path, {"gpus.devices": [0, 5]}), backend="cuda", budget=MemoryBudget(1 << 34, "test RAM"))
    monkeypatch.undo()
    if cuda_device.cuda_available():  # the real device count
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
        with pytest.raises(InputError, match=f"no CUDA device {count}"):
            device_backends("cuda", (count,))
        assert [be.device for be in device_backends("cuda", (count - 1,))] == [count - 1]


def check_gpus_gpu_workers_per_device(tmp_path):
    """gpus.gpu_workers_per_device worker threads per device."""
    with engine(load(tmp_path, {"gpus.gpu_workers_per_device": 3})) as e:
        assert e.devices[0]["workers"] == 3 and e.stats()["gpu_workers"]["configured"] == 3
        assert sum(t.name.startswith("cuzk-gpu-cpu:0-") for t in e._threads) == 3


def check_gpus_gpu_threads(tmp_path, monkeypatch, numba_threads):
    """gpus.gpu_threads is numba's thread count of the engine process's host-side work for its GPU
    workers: in the GPU worker threads themselves (numba's thread count is per thread: a new thread
    starts at NUMBA_NUM_THREADS), not in the caller's thread."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba runs one thread here: gpu_threads = 1 changes nothing")
    seen: dict[str, int] = {}
    original = Engine._next_gpu

    def next_gpu(self, dev):  # the first call of each GPU worker, in its own thread
        seen.setdefault(threading.current_thread().name, numba.get_num_threads())
        return original(self, dev)
    monkeypatch.setattr(Engine, "_next_gpu", next_gpu)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    with engine(load(tmp_path, {"gpus.gpu_threads": 1, "gpus.gpu_workers_per_device": 2})):
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS  # the caller's thread is left alone
        deadline = time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(seen) == 2, seen
    assert all(n == 1 for n in seen.values()), (
        f"gpus.gpu_threads = 1 is not the numba thread count of the GPU worker threads: {seen}")


# ---------------------------------------------------------------- [pipeline]

def check_pipeline_enabled(tmp_path):
    """pipeline.enabled = false: one item in flight at a time (one admission slot), whatever the
    synthesis and queue sizes; true: max_parallel_synthesis + gpu_queue_depth."""
    values = {"pipeline.max_parallel_synthesis": 2, "pipeline.gpu_queue_depth": 3}
    with engine(load(tmp_path, {**values, "pipeline.enabled": False})) as e:
        assert slots(e) == 1
    with engine(load(tmp_path, {**values, "pipeline.enabled": True})) as e:
        assert slots(e) == 5


def check_pipeline_max_parallel_synthesis(tmp_path):
    """pipeline.max_parallel_synthesis synthesis processes (the pool's size, what stats report) and as
    many of the admission slots."""
    with engine(load(tmp_path, {"pipeline.max_parallel_synthesis": 3, "pipeline.gpu_queue_depth": 1})) as e:
        assert e.stats()["synthesis_workers"]["configured"] == 3 and e._pool._max_workers == 3
        assert slots(e) == 3 + 1


def check_pipeline_gpu_queue_depth(tmp_path):
    """pipeline.gpu_queue_depth: admission slots beyond the synthesis processes."""
    with engine(load(tmp_path, {"pipeline.max_parallel_synthesis": 1, "pipeline.gpu_queue_depth": 6})) as e:
        assert slots(e) == 1 + 6


def check_pipeline_max_gpu_queue_depth(tmp_path):
    """curio's pipeline.max_gpu_queue_depth > 0 sets the GPU queue's bound (gpu_queue_depth); 0 leaves it."""
    with engine(load(tmp_path, {"pipeline.max_parallel_synthesis": 1, "pipeline.max_gpu_queue_depth": 5})) as e:
        assert slots(e) == 1 + 5
    off = {"pipeline.max_parallel_synthesis": 1,
           "pipeline.max_gpu_queue_depth": documented_value("pipeline.max_gpu_queue_depth")}
    with engine(load(tmp_path, off)) as e:
        assert slots(e) == 1 + EngineConfig.default().pipeline.gpu_queue_depth


def check_pipeline_witness_batch(tmp_path):
    """pipeline.witness_batch: how many packed partitions a GPU worker expands in one run (_batch_cap;
    on a GPU no more than fit in its free memory) and what a device keeps free for them (_work_bytes)."""
    circuit = tiny_circuit(packed=True)
    three, seven = load(tmp_path, {"pipeline.witness_batch": 3}), load(tmp_path, {"pipeline.witness_batch": 7})
    assert batch_cap(three, circuit, None) == 3 and batch_cap(seven, circuit, None) == 7
    assert batch_cap(seven, circuit, 1 << 40) == 7
    witness = 32 * (circuit.num_inputs + circuit.num_aux)
    assert work_bytes(seven, circuit) - work_bytes(three, circuit) == \
        seven.gpus.gpu_workers_per_device * 4 * witness


def check_pipeline_gpu_witness(tmp_path, monkeypatch):
    """pipeline.gpu_witness: packed witnesses expand on the proving backend (true) or on the engine's
    host backend (false: cuzk.engine.expansion.expanded), and on GPUs the item's engine-process bytes follow (the witness is
    in VRAM, or in host memory)."""
    calls = []
    monkeypatch.setattr(program_witness, "expand", lambda circuit, packs, on, host: calls.append(on) or "w")
    for flag in (True, False):
        device = get_backend("cpu")
        with engine(load(tmp_path, {"pipeline.gpu_witness": flag}), backend=[device]) as e:
            assert expanded(tiny_circuit(packed=True), ["pack"], device, e._witness_host) == "w"
            assert calls.pop() is (device if flag else e._witness_host)
    packed = tiny_circuit(packed=True)
    on, off = (load(tmp_path, {"pipeline.gpu_witness": flag}).pipeline.gpu_witness for flag in (True, False))
    assert engine_host_bytes(packed, True, on) == 0
    assert engine_host_bytes(packed, True, off) == 32 * (packed.num_inputs + packed.num_aux)


def check_pipeline_synthesis_threads(tmp_path):
    """pipeline.synthesis_threads: numba's thread count in each synthesis process (the pool's
    initializer), here read back from the engine's one synthesis process; 0 shares the CPUs out."""
    one = load(tmp_path, {"pipeline.synthesis_threads": 1, "pipeline.max_parallel_synthesis": 1})
    assert synthesis_threads(one.pipeline) == 1
    auto = load(tmp_path, {"pipeline.synthesis_threads": 0, "pipeline.max_parallel_synthesis": 1})
    assert synthesis_threads(auto.pipeline) == max(1, len(os.sched_getaffinity(0)))
    with engine(one) as e:
        assert e._pool._initargs == (os.getpid(), 1)
        assert e._pool.submit(numba.get_num_threads).result(timeout=120) == 1


def check_synthesis_threads(tmp_path):
    """curio's synthesis.threads (its pool's total) sets each synthesis process's threads to
    threads // max_parallel_synthesis, what the engine's synthesis processes start with."""
    config = load(tmp_path, {"synthesis.threads": 6, "pipeline.max_parallel_synthesis": 2})
    assert synthesis_threads(config.pipeline) == 3
    with engine(config) as e:
        assert e._pool._initargs == (os.getpid(), 3)
    default = load(tmp_path, {"synthesis.threads": documented_value("synthesis.threads")})
    assert synthesis_threads(default.pipeline) == synthesis_threads(EngineConfig.default().pipeline)


# ---------------------------------------------------------------- [memory]

def host_budget(config: EngineConfig) -> int:
    """The host budget total an engine builds from `config`."""
    with engine(config, budget=None) as e:
        return e.budget.total


def check_memory_host_cap(tmp_path):
    """memory.host_cap caps the engine's host budget: host_limit(cap) minus host_margin."""
    needs_host(4 * GIB)
    cap = 3 * GIB
    config = load(tmp_path, {"memory.host_cap": "3GiB", "memory.host_margin": "1GiB"})
    assert host_budget(config) == host_limit(cap).total - GIB == cap - GIB


def check_memory_host_margin(tmp_path):
    """memory.host_margin is kept free below the host limit."""
    needs_host(5 * GIB)
    config = load(tmp_path, {"memory.host_margin": "3GiB"})
    assert host_budget(config) == host_total() - 3 * GIB


def check_memory_total_budget(tmp_path):
    """curio's memory.total_budget: a size is the host budget, no margin below it; "auto" is the host
    limit less curio's 5 GiB margin."""
    needs_host(7 * GIB)
    assert host_budget(load(tmp_path, {"memory.total_budget": "2GiB"})) == 2 * GIB
    assert documented_value("memory.total_budget") == "auto"
    assert host_budget(load(tmp_path, {"memory.total_budget": "auto"})) == host_total() - 5 * GIB


def check_memory_safety_margin(tmp_path):
    """curio's memory.safety_margin is the margin below the host limit (with total_budget "auto" too)."""
    needs_host(5 * GIB)
    assert host_budget(load(tmp_path, {"memory.safety_margin": "3GiB"})) == host_total() - 3 * GIB
    both = load(tmp_path, {"memory.total_budget": "auto", "memory.safety_margin": "1GiB"})
    assert host_budget(both) == host_total() - GIB


def check_memory_vram_fraction(tmp_path, monkeypatch):
    """memory.vram_fraction: each GPU's VRAM budget is that share of its free memory (the engine hands
    it to its CUDA backends; resolve_budget), and it bounds a witness batch (_batch_cap)."""
    monkeypatch.delenv("CUZK_VRAM_BUDGET", raising=False)
    assert resolve_budget(None, 0, lambda: 1000, 0.25).bytes == 250
    fake_gpus(monkeypatch, count=1, free=1000)
    with engine(load(tmp_path, {"memory.vram_fraction": 0.25}), backend="cuda") as e:
        assert e._devices[0].backend.budget.bytes == 250
    circuit = tiny_circuit(packed=True)
    witness, vectors = 32 * (circuit.num_inputs + circuit.num_aux), 4 * 32 * circuit.domain_size
    free = 2 * vectors + 10 * witness
    caps = {}
    for fraction in (1.0, 0.5):
        config = load(tmp_path, {"memory.vram_fraction": fraction, "pipeline.witness_batch": 4096})
        caps[fraction] = batch_cap(config, circuit, free)
        assert caps[fraction] == max(1, int((fraction * free - vectors) // witness))
    assert caps[1.0] > caps[0.5]


def check_memory_vram_budget(tmp_path, monkeypatch):
    """memory.vram_budget caps each GPU: the engine hands it to its CUDA backends (device_backends,
    use_vram_cap), whose budget is the cap less the CUDA context's 1 GiB and CuPy's pool limited to
    that; it wins over memory.vram_fraction and $CUZK_VRAM_BUDGET. "" (the default) is no cap: the
    fraction of the free memory, the pool unlimited."""
    pool = fake_gpus(monkeypatch, count=1, free=1000)
    monkeypatch.setenv("CUZK_VRAM_BUDGET", "8GiB")
    with engine(load(tmp_path, {"memory.vram_budget": "16GiB", "memory.vram_fraction": 0.25}), backend="cuda") as e:
        budget = e._devices[0].backend.budget
    assert (budget.cap, budget.bytes, pool.limit) == (16 * GIB, 15 * GIB, 15 * GIB)
    assert "memory.vram_budget" in budget.source
    pool = fake_gpus(monkeypatch, count=1, free=1000)  # fresh backends, $CUZK_VRAM_BUDGET unset
    with engine(load(tmp_path, {"memory.vram_budget": "", "memory.vram_fraction": 0.25}), backend="cuda") as e:
        budget = e._devices[0].backend.budget
    assert (budget.cap, budget.bytes, pool.limit) == (None, 250, 0)


def check_memory_admission_timeout_s(tmp_path):
    """memory.admission_timeout_s: a reservation that finds no room fails after that long (here the
    engine's own, with the budget all taken)."""
    for timeout in (0.3, 1.2):
        budget = MemoryBudget(1 << 34, "test RAM")
        with budget.reserve(budget.total - 4096, "everything"):
            t = time.monotonic()
            with pytest.raises(BudgetTimeoutError, match="the engine process"):
                Engine(load(tmp_path, {"memory.admission_timeout_s": timeout}), backend="cpu", budget=budget)
            waited = time.monotonic() - t
        assert timeout <= waited < timeout + 5, (timeout, waited)


def check_memory_eviction_min_idle_s(tmp_path):
    """memory.eviction_min_idle_s: an idle resident circuit is evicted for room once idle that long."""
    assert evicts(load(tmp_path, {"memory.eviction_min_idle_s": 0}))
    assert not evicts(load(tmp_path, {"memory.eviction_min_idle_s": 3600}))


def check_memory_eviction_min_idle(tmp_path):
    """curio's memory.eviction_min_idle (a duration) sets the idle time before eviction."""
    assert evicts(load(tmp_path, {"memory.eviction_min_idle": "0s"}))
    assert documented_value("memory.eviction_min_idle") == "5m"
    assert not evicts(load(tmp_path, {"memory.eviction_min_idle": "5m"}))


# ---------------------------------------------------------------- [srs]

def check_srs_param_cache(tmp_path, param_env):
    """srs.param_cache (relative to the file) becomes $FIL_PROOFS_PARAMETER_CACHE when the engine starts,
    where the official parameters are looked for and cuzk keeps its own files."""
    path = write_toml(tmp_path, {"srs.param_cache": "params"})
    with engine(load_config(path)):
        assert os.environ[PARAMS_ENV] == str(path.parent / "params")
        assert params_cache.official_dir() == params_dir() == path.parent / "params"


def check_srs_allow_setup(tmp_path, param_env):
    """srs.allow_setup: what submit_porep hands the circuit's load (None: the configuration's); without
    it a circuit whose official parameters are missing fails with OfficialParamsMissingError naming the
    file, before its circuit is built."""
    import cuzk
    from cuzk import api

    empty = tmp_path / "empty-params"
    empty.mkdir()
    param_env.setenv(PARAMS_ENV, str(empty))
    param_env.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    proof = get_proof("StackedDrg2KiBV1_1")
    with pytest.raises(OfficialParamsMissingError, match=re.escape(str(empty))):
        porep_spec_of(proof, allow_setup=False).load()
    sector = cuzk.seal("StackedDrg2KiBV1_1", tmp_path / "sector", prover_id=bytes(32), sector_id=1, ticket=bytes(32),
                       progress=False)
    c1, ids = api.as_c1(sector, bytes(range(32)))
    with engine(load(tmp_path, {"srs.allow_setup": False})) as e:  # the real load: refused before building
        with pytest.raises(OfficialParamsMissingError, match=re.escape(str(empty))):
            e.submit_porep(c1, ids=ids).result(timeout=60)
    asked = []

    def recorded(proof, progress=False, allow_setup=False):  # what the engine asks for, then a stop
        asked.append(allow_setup)
        return dataclasses.replace(porep_spec_of(proof, progress, allow_setup), load=stop)

    def stop():
        raise InputError("stopped by the test")
    param_env.setattr(porep_module, "porep_spec_of", recorded)
    for flag in (True, False):
        with engine(load(tmp_path, {"srs.allow_setup": flag})) as e:
            with pytest.raises(InputError, match="stopped by the test"):
                e.submit_porep(c1, ids=ids).result(timeout=60)
    assert asked == [True, False]


# curio's keys that cuzk accepts and ignores with a warning (ignored_with_one_warning checks each)
IGNORED = ["pipeline.synthesis_concurrency", "pipeline.synthesis_lookahead", "pipeline.slot_size",
           "memory.pinned_budget", "memory.working_memory_budget", "srs.preload", "logging.format",
           "scheduler.max_batch_size", "scheduler.max_batch_wait_ms", "scheduler.sort_by_type",
           "synthesis.partition_workers"]

BEHAVIOURS = {
    "daemon.listen": check_daemon_listen,
    "daemon.status_listen": check_daemon_status_listen,
    "gpus.devices": check_gpus_devices,
    "gpus.gpu_workers_per_device": check_gpus_gpu_workers_per_device,
    "gpus.gpu_threads": check_gpus_gpu_threads,
    "pipeline.enabled": check_pipeline_enabled,
    "pipeline.max_parallel_synthesis": check_pipeline_max_parallel_synthesis,
    "pipeline.gpu_queue_depth": check_pipeline_gpu_queue_depth,
    "pipeline.witness_batch": check_pipeline_witness_batch,
    "pipeline.gpu_witness": check_pipeline_gpu_witness,
    "pipeline.synthesis_threads": check_pipeline_synthesis_threads,
    "pipeline.max_gpu_queue_depth": check_pipeline_max_gpu_queue_depth,
    "memory.host_cap": check_memory_host_cap,
    "memory.host_margin": check_memory_host_margin,
    "memory.vram_fraction": check_memory_vram_fraction,
    "memory.vram_budget": check_memory_vram_budget,
    "memory.admission_timeout_s": check_memory_admission_timeout_s,
    "memory.eviction_min_idle_s": check_memory_eviction_min_idle_s,
    "memory.total_budget": check_memory_total_budget,
    "memory.safety_margin": check_memory_safety_margin,
    "memory.eviction_min_idle": check_memory_eviction_min_idle,
    "srs.param_cache": check_srs_param_cache,
    "srs.allow_setup": check_srs_allow_setup,
    "logging.level": check_logging_level,
    "synthesis.threads": check_synthesis_threads,
    **{key: functools.partial(ignored_with_one_warning, key) for key in IGNORED},
}


# ---------------------------------------------------------------- the tests

def test_every_documented_key_has_a_behaviour_check():
    documented = set(example_keys())
    assert documented == set(BEHAVIOURS), (
        f"documented in {EXAMPLE.name} without a behaviour check: {sorted(documented - set(BEHAVIOURS))}; "
        f"checked but not documented: {sorted(set(BEHAVIOURS) - documented)}")


def test_the_documented_keys_are_the_schema():
    schema = {f"{t}.{k}" for t, (_, keys) in config_module._TABLES.items() for k in keys}
    documented = set(example_keys())
    assert documented == schema, (f"in the schema, not in {EXAMPLE.name}: {sorted(schema - documented)}; "
                                  f"in {EXAMPLE.name}, not in the schema: {sorted(documented - schema)}")
    ignored = {f"{t}.{k}" for t, (_, keys) in config_module._TABLES.items() for k, key in keys.items() if key.ignored}
    assert ignored == set(IGNORED)


@pytest.mark.parametrize("key", sorted(example_keys()))
def test_the_documented_line_loads(key, tmp_path):
    """Each line of the example, uncommented alone in a file, loads (its value is in range)."""
    path = tmp_path / "cuzk.toml"
    path.write_text(f"[{key.split('.')[0]}]\n{example_keys()[key]}\n")
    load_config(path)


@pytest.mark.parametrize("key", sorted(BEHAVIOURS))
def test_the_key_has_its_behaviour(key, request):
    check = BEHAVIOURS[key]
    check(**{name: request.getfixturevalue(name) for name in inspect.signature(check).parameters})


@pytest.mark.gpu
def test_a_vram_budget_caps_a_real_gpu(monkeypatch):
    """device_backends(vram_budget=...) on a GPU: the backend's budget is the cap less the CUDA
    context's 1 GiB, CuPy's pool is limited to that (an allocation past it fails) and memory_stats
    reports both (the pool's limit restored to none after)."""
    import cupy

    from cuzk.backend.cuda import CudaBackend

    monkeypatch.setattr(cuzk.backend, "_cuda_backend_on", functools.cache(lambda d: CudaBackend(device=d)))
    monkeypatch.delenv("CUZK_VRAM_BUDGET", raising=False)
    pool = cupy.get_default_memory_pool()
    try:
        with cupy.cuda.Device(0):
            pool.free_all_blocks()
            be, = device_backends("cuda", (0,), vram_budget="4GiB")
            assert (be.budget.cap, be.budget.bytes) == (4 * GIB, 3 * GIB)
            assert pool.get_limit() == 3 * GIB
            block = cupy.empty(GIB, dtype=cupy.uint8)
            with pytest.raises(cupy.cuda.memory.OutOfMemoryError):
                cupy.empty(2 * GIB + (512 << 20), dtype=cupy.uint8)
            stats = be.memory_stats()
            del block
    finally:
        with cupy.cuda.Device(0):
            pool.free_all_blocks()
            pool.set_limit(size=0)
    assert (stats["vram_budget_bytes"], stats["vram_cap_bytes"]) == (3 * GIB, 4 * GIB)
    assert GIB <= stats["vram_pool_bytes"] <= stats["vram_pool_peak_bytes"] <= 3 * GIB
