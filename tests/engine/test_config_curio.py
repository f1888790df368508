"""curio's cuzk.toml loads unchanged into cuzk's configuration: each of curio's keys where it should
go, one warning for each key cuzk cannot honour, and an error naming both keys where one of curio's
and the key of cuzk's it sets are both set (file, environment, or one of each)."""
import logging
from pathlib import Path

import pytest

from cuzk.engine.config import (CURIO_KEYS, DaemonConfig, EngineConfig, GpuConfig, LoggingConfig, MemoryConfig,
                                PipelineConfig, SrsConfig, load_config, override, resolve)
from cuzk.engine.config_curio import CURIO_SAFETY_MARGIN
from cuzk.errors import ConfigError

GIB = 1 << 30

# curio's example cuzk.toml (CUZK_DAEMON.md section 2): every key at the example's values, the keys the
# example leaves out at curio's defaults, and the deprecated keys curio still accepts.
CURIO_TOML = """
[daemon]
listen = "0.0.0.0:9820"
status_listen = ""

[srs]
param_cache = "/data/zk/params"
preload = ["porep-32g"]

[memory]
total_budget = "auto"
safety_margin = "5GiB"
eviction_min_idle = "5m"
pinned_budget = "64GiB"
working_memory_budget = "128GiB"

[gpus]
devices = []
gpu_threads = 32
gpu_workers_per_device = 2

[scheduler]
max_batch_size = 1
max_batch_wait_ms = 10000
sort_by_type = true

[synthesis]
threads = 0
partition_workers = 7

[pipeline]
enabled = true
synthesis_lookahead = 1
synthesis_concurrency = 1
max_parallel_synthesis = 18
slot_size = 0
max_gpu_queue_depth = 0

[logging]
level = "info"
format = "json"
"""
WARNED = {  # key -> the end of its warning
    "srs.preload": "is deprecated in curio, ignored",
    "memory.pinned_budget": "is deprecated in curio, ignored",
    "memory.working_memory_budget": "is deprecated in curio, ignored",
    "scheduler.max_batch_size": "has no effect in cuzk: it does not batch sectors",
    "scheduler.max_batch_wait_ms": "has no effect in cuzk: it does not batch sectors",
    "scheduler.sort_by_type": "has no effect in cuzk (nor in curio",
    "synthesis.partition_workers": "is deprecated in curio, ignored",
    "pipeline.synthesis_lookahead": "has no effect in cuzk (curio only logs it)",
    "pipeline.synthesis_concurrency": "has no effect in cuzk: curio's semaphore",
    "pipeline.slot_size": "has no effect in cuzk (curio's slotted path is unreachable)",
    "logging.format": "has no effect in cuzk (curio parses it but does not use it)",
}


def _write(tmp_path, text):
    path = tmp_path / "cuzk.toml"
    path.write_text(text)
    return path


def _warnings(caplog, path):
    """The config module's warnings, each as (dotted key, the rest), in order."""
    prefix = f"{path}: "
    out = []
    for record in caplog.records:
        assert record.name == "cuzk.engine.config" and record.levelno == logging.WARNING
        message = record.getMessage()
        assert message.startswith(prefix), message
        key, _, rest = message[len(prefix):].partition(" ")
        out.append((key, rest))
    return out


def test_curios_example_loads_with_each_value_where_it_goes(tmp_path, caplog):
    path = _write(tmp_path, CURIO_TOML)
    with caplog.at_level(logging.WARNING, logger="cuzk.engine.config"):
        config = load_config(path)
    assert config == EngineConfig(
        gpus=GpuConfig(devices=(), gpu_workers_per_device=2, gpu_threads=32),
        pipeline=PipelineConfig(max_parallel_synthesis=18, enabled=True),  # threads 0: synthesis_threads 0
        memory=MemoryConfig(host_cap=None, host_margin=5 * GIB, eviction_min_idle_s=300.0),
        srs=SrsConfig(param_cache=Path("/data/zk/params")),
        daemon=DaemonConfig(listen="0.0.0.0:9820", status_listen=""),
        logging=LoggingConfig(level="info"))
    warnings = _warnings(caplog, path)
    assert [key for key, _ in warnings] == list(WARNED)  # in the file's order
    for key, rest in warnings:  # one each, saying why
        assert rest.startswith(WARNED[key]), (key, rest)


def test_curios_keys_are_shown_with_where_they_went(tmp_path, caplog):
    path = _write(tmp_path, CURIO_TOML)
    _, sources = resolve(path, {})
    assert sources["memory.host_margin"] == f"{path} (memory.safety_margin)"
    assert sources["memory.eviction_min_idle_s"] == f"{path} (memory.eviction_min_idle)"
    assert sources["memory.host_cap"] == "default"
    assert sources["gpus.gpu_threads"] == str(path) and sources["daemon.listen"] == str(path)
    assert all(sources[key] == str(path) for key in CURIO_KEYS)  # the example sets every one of them
    assert sources["pipeline.synthesis_threads"] == sources["pipeline.gpu_queue_depth"] == "default"


def test_a_total_budget_size_is_the_cap_with_no_margin(tmp_path, caplog):
    path = _write(tmp_path, CURIO_TOML.replace('total_budget = "auto"', 'total_budget = "256GiB"'))
    with caplog.at_level(logging.WARNING, logger="cuzk.engine.config"):
        config, sources = resolve(path, {})
    assert config.memory == MemoryConfig(host_cap=256 * GIB, host_margin=0, eviction_min_idle_s=300.0)
    assert sources["memory.host_cap"] == sources["memory.host_margin"] == f"{path} (memory.total_budget)"
    assert ("memory.safety_margin", 'has no effect with memory.total_budget a size (curio subtracts it only from '
                                    '"auto")') in _warnings(caplog, path)


@pytest.mark.parametrize("memory, expected", [
    ('total_budget = "auto"', MemoryConfig(host_margin=CURIO_SAFETY_MARGIN)),  # curio's default margin
    ('total_budget = "AUTO"\nhost_margin = "1GiB"', MemoryConfig(host_margin=GIB)),
    ('total_budget = "auto"\nsafety_margin = 0', MemoryConfig(host_margin=0)),
    ('safety_margin = "3GiB"', MemoryConfig(host_margin=3 * GIB)),  # total_budget's default is "auto"
    ("total_budget = 1073741824", MemoryConfig(host_cap=GIB, host_margin=0)),
    ('eviction_min_idle = "30s"', MemoryConfig(eviction_min_idle_s=30.0)),
    ('eviction_min_idle = "1h"', MemoryConfig(eviction_min_idle_s=3600.0)),
    ('eviction_min_idle = " 2M "', MemoryConfig(eviction_min_idle_s=120.0)),
    ('eviction_min_idle = "45"', MemoryConfig(eviction_min_idle_s=45.0)),
    ("eviction_min_idle = 0", MemoryConfig(eviction_min_idle_s=0.0)),
])
def test_curios_memory_keys(tmp_path, memory, expected):
    assert load_config(_write(tmp_path, f"[memory]\n{memory}\n")).memory == expected


@pytest.mark.parametrize("text, expected", [
    ("[synthesis]\nthreads = 96\n[pipeline]\nmax_parallel_synthesis = 6\n", PipelineConfig(6, synthesis_threads=16)),
    ("[synthesis]\nthreads = 5\n", PipelineConfig(synthesis_threads=2)),  # 5 // 2 processes
    ("[synthesis]\nthreads = 1\n[pipeline]\nmax_parallel_synthesis = 8\n", PipelineConfig(8, synthesis_threads=1)),
    ("[synthesis]\nthreads = 0\n", PipelineConfig()),
    ("[pipeline]\nmax_gpu_queue_depth = 12\n", PipelineConfig(gpu_queue_depth=12)),
    ("[pipeline]\nmax_gpu_queue_depth = 12\ngpu_queue_depth = 12\n", PipelineConfig(gpu_queue_depth=12)),
    ("[pipeline]\nmax_gpu_queue_depth = 0\ngpu_queue_depth = 7\n", PipelineConfig(gpu_queue_depth=7)),
    ("[pipeline]\nenabled = false\n", PipelineConfig(enabled=False)),
])
def test_curios_pipeline_keys(tmp_path, text, expected):
    assert load_config(_write(tmp_path, text)).pipeline == expected


def test_synthesis_threads_follow_max_parallel_synthesis_from_the_environment(tmp_path):
    path = _write(tmp_path, "[synthesis]\nthreads = 64\n")
    config, sources = resolve(path, {"CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS": "4"})
    assert config.pipeline == PipelineConfig(4, synthesis_threads=16)
    assert sources["pipeline.synthesis_threads"] == f"{path} (synthesis.threads)"
    config, sources = resolve(None, {"CUZK_SYNTHESIS_THREADS": "64", "CUZK_MEMORY_TOTAL_BUDGET": "8GiB",
                                     "CUZK_MEMORY_EVICTION_MIN_IDLE": "90"})
    assert (config.pipeline.synthesis_threads, config.memory.host_cap, config.memory.host_margin,
            config.memory.eviction_min_idle_s) == (32, 8 * GIB, 0, 90.0)
    assert sources["pipeline.synthesis_threads"] == "env CUZK_SYNTHESIS_THREADS"
    assert sources["memory.host_margin"] == "env CUZK_MEMORY_TOTAL_BUDGET"
    assert sources["synthesis.threads"] == "env CUZK_SYNTHESIS_THREADS"


BOTH = "are both set (curio's key and cuzk's for one setting): keep one"


@pytest.mark.parametrize("text, message", [
    ('[memory]\ntotal_budget = "64GiB"\nhost_cap = "64GiB"\n', "memory.total_budget and memory.host_cap"),
    ('[memory]\ntotal_budget = "auto"\nhost_cap = "64GiB"\n', "memory.total_budget and memory.host_cap"),
    ('[memory]\ntotal_budget = "64GiB"\nhost_margin = "1GiB"\n', "memory.total_budget and memory.host_margin"),
    ('[memory]\nsafety_margin = "5GiB"\nhost_margin = "1GiB"\n', "memory.safety_margin and memory.host_margin"),
    ('[memory]\neviction_min_idle = "5m"\neviction_min_idle_s = 300\n',
     "memory.eviction_min_idle and memory.eviction_min_idle_s"),
    ("[synthesis]\nthreads = 32\n[pipeline]\nsynthesis_threads = 4\n",
     "synthesis.threads and pipeline.synthesis_threads"),
    ("[synthesis]\nthreads = 0\n[pipeline]\nsynthesis_threads = 4\n",
     "synthesis.threads and pipeline.synthesis_threads"),
    ("[pipeline]\nmax_gpu_queue_depth = 8\ngpu_queue_depth = 4\n",
     "pipeline.max_gpu_queue_depth and pipeline.gpu_queue_depth"),
])
def test_curios_key_beside_cuzks_is_an_error_naming_both(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: {message} {BOTH}"
    assert info.value.key == message.split()[0]


def test_a_conflict_across_the_file_and_the_environment_names_both(tmp_path):
    path = _write(tmp_path, '[memory]\ntotal_budget = "64GiB"\n')
    with pytest.raises(ConfigError) as info:
        resolve(path, {"CUZK_MEMORY_HOST_CAP": "32GiB"})
    assert str(info.value) == f"{path}: memory.total_budget and CUZK_MEMORY_HOST_CAP (env CUZK_MEMORY_HOST_CAP) {BOTH}"
    with pytest.raises(ConfigError) as info:
        resolve(None, {"CUZK_SYNTHESIS_THREADS": "8", "CUZK_PIPELINE_SYNTHESIS_THREADS": "2"})
    assert str(info.value) == f"environment: CUZK_SYNTHESIS_THREADS and CUZK_PIPELINE_SYNTHESIS_THREADS {BOTH}"


@pytest.mark.parametrize("text, message", [
    ('[memory]\ntotal_budget = "half"\n',
     'memory.total_budget must be "auto" or a size > 0 and below 2^64 (bytes, or a number with K, M, G or T, '
     'e.g. "2GiB"), got "half"'),
    ('[memory]\ntotal_budget = 0\n', 'memory.total_budget must be "auto" or a size > 0 and below 2^64 (bytes, or a '
                                     'number with K, M, G or T, e.g. "2GiB"), got 0'),
    ('[memory]\nsafety_margin = "-1G"\n', 'memory.safety_margin must be a size >= 0 and below 2^64 (bytes, or a number '
                                          'with K, M, G or T, e.g. "2GiB"), got "-1G"'),
    ('[memory]\neviction_min_idle = "5d"\n', 'memory.eviction_min_idle must be a duration: "30s", "5m", "1h" or an '
                                             'integer number of seconds, at most 10 years, got "5d"'),
    ('[memory]\neviction_min_idle = -1\n', 'memory.eviction_min_idle must be a duration: "30s", "5m", "1h" or an '
                                           'integer number of seconds, at most 10 years, got -1'),
    ('[memory]\neviction_min_idle = 1.5\n', 'memory.eviction_min_idle must be a duration: "30s", "5m", "1h" or an '
                                            'integer number of seconds, at most 10 years, got 1.5'),
    ('[memory]\npinned_budget = "lots"\n', 'memory.pinned_budget must be a size >= 0 and below 2^64 (bytes, or a number '
                                           'with K, M, G or T, e.g. "2GiB"), got "lots"'),
    ("[srs]\npreload = 1\n", "srs.preload must be a list of at most 64 strings of at most 4096 characters, got 1"),
    ("[logging]\nformat = 1\n", "logging.format must be a string of at most 4096 characters, no NUL, got 1"),
    ('[scheduler]\nsort_by_type = "yes"\n', 'scheduler.sort_by_type must be true or false, got "yes"'),
    ("[scheduler]\nmax_batch_size = 1025\n", "scheduler.max_batch_size must be an integer from 0 to 1024, got 1025"),
    ("[scheduler]\nmax_batch_wait_ms = -1\n",
     "scheduler.max_batch_wait_ms must be an integer from 0 to 315576000000, got -1"),
    ("[pipeline]\nsynthesis_concurrency = 2000\n",
     "pipeline.synthesis_concurrency must be an integer from 0 to 1024, got 2000"),
    ("[pipeline]\nmax_gpu_queue_depth = 4097\n", "pipeline.max_gpu_queue_depth must be an integer from 0 to 4096, got 4097"),
    ("[synthesis]\npartition_workers = -2\n", "synthesis.partition_workers must be an integer from 0 to 4096, got -2"),
])
def test_curios_keys_are_checked_even_where_ignored(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: {message}"


def test_an_ignored_key_from_the_environment_is_warned_naming_the_variable(caplog):
    with caplog.at_level(logging.WARNING, logger="cuzk.engine.config"):
        config, sources = resolve(None, {"CUZK_SCHEDULER_MAX_BATCH_SIZE": "4", "CUZK_SRS_PRELOAD": "porep-32g,porep-2k"})
    assert config == EngineConfig.default()
    assert sources["scheduler.max_batch_size"] == "env CUZK_SCHEDULER_MAX_BATCH_SIZE"
    assert [r.getMessage() for r in caplog.records] == [
        "environment: CUZK_SRS_PRELOAD is deprecated in curio, ignored",
        f"environment: CUZK_SCHEDULER_MAX_BATCH_SIZE {CURIO_KEYS['scheduler.max_batch_size']}"]


def test_override_checks_each_value_and_names_it():
    config = override(EngineConfig.default(), {"srs.allow_setup": ("--allow-setup", True),
                                               "daemon.listen": ("--listen", "127.0.0.1:0"),
                                               "logging.level": ("--log-level", "DEBUG")}, "command line")
    assert (config.srs, config.daemon, config.logging) == (SrsConfig(allow_setup=True), DaemonConfig("127.0.0.1:0"),
                                                           LoggingConfig("debug"))
    assert config.pipeline == PipelineConfig()
    with pytest.raises(ConfigError) as info:
        override(config, {"daemon.status_listen": ("--status-listen", "9821")}, "command line")
    assert str(info.value) == 'command line: --status-listen must be "" or HOST:PORT (port 0-65535), got "9821"'
