"""cuzk.engine.config: defaults, the example file, environment overrides (resolve), and a ConfigError
naming the file and key (or the variable) for each kind of bad input. curio's keys: test_config_curio;
the limits on numbers, strings, paths and the file itself: test_config_limits."""
import dataclasses
import logging
import os
from pathlib import Path

import pytest

from cuzk.engine import config as config_module
from cuzk.engine.config import (CURIO_KEYS, DaemonConfig, EngineConfig, GpuConfig, LoggingConfig, MemoryConfig,
                                PipelineConfig, SrsConfig, env_name, load_config, resolve)
from cuzk.errors import ConfigError

GIB = 1 << 30
EXAMPLE = Path(__file__).resolve().parents[2] / "cuzk.example.toml"
DOTTED = [f"{table}.{key}" for table, (_, keys) in config_module._TABLES.items() for key in keys]
FIELDS = [dotted for dotted in DOTTED if dotted not in CURIO_KEYS]
SIZE = '(bytes, or a number with K, M, G or T, e.g. "2GiB")'
VRAM_CAP = ('must be "" (no cap) or a size above 1.00 GiB and below 2^64 (bytes, or a number with K, M, G or T, '
            'e.g. "16GiB")')


def _load(tmp_path, text):
    path = tmp_path / "cuzk.toml"
    path.write_text(text)
    return load_config(path)


def _error(tmp_path, text):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, text)
    prefix = f"{tmp_path / 'cuzk.toml'}: "
    assert str(info.value).startswith(prefix)
    return str(info.value)[len(prefix):], info.value


def test_defaults():
    config = EngineConfig.default()
    assert config == EngineConfig(GpuConfig((), 2, 0), PipelineConfig(2, 2, 10, True, 0, True),
                                  MemoryConfig(None, 2 * GIB, 0.8, None, 1800.0, 300.0), SrsConfig(None, False),
                                  DaemonConfig("unix:///run/curio/cuzk.sock", ""), LoggingConfig("info"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.memory.host_cap = 1


def test_schema_matches_the_dataclasses_and_every_key_is_documented():
    for name, (cls, keys) in config_module._TABLES.items():
        own = [key for key in keys if f"{name}.{key}" not in CURIO_KEYS]
        if cls is None:
            assert own == [] and not hasattr(EngineConfig.default(), name), name
            continue
        assert [f.name for f in dataclasses.fields(cls)] == own, name
        assert getattr(EngineConfig.default(), name) == cls()
    example = EXAMPLE.read_text()
    for dotted in DOTTED:
        table, key = dotted.split(".")
        assert f"[{table}]" in config_module.__doc__ and f"\n    {key}" in config_module.__doc__, dotted
        assert f"\n[{table}]\n" in example and (f"\n{key} = " in example or f"\n# {key} = " in example), dotted
    for dotted in CURIO_KEYS:  # the docstring marks each of curio's own keys (or its table) as curio's
        key = dotted.split(".")[1]
        doc_line = config_module.__doc__.split(f"\n    {key} ")[1].split("\n")[0]
        assert "curio's" in doc_line or dotted.startswith("scheduler."), dotted


def test_the_example_file_is_the_defaults_and_its_commented_keys_load(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        assert load_config(EXAMPLE) == EngineConfig.default()
    assert caplog.records == []
    assert _load(tmp_path, "") == EngineConfig.default()
    text = EXAMPLE.read_text().replace('# host_cap = "48GiB"', 'host_cap = "48GiB"').replace(
        '# param_cache = "/var/tmp/filecoin-proof-parameters"', 'param_cache = "/var/tmp/filecoin-proof-parameters"')
    config = _load(tmp_path, text)
    assert config.memory == MemoryConfig(host_cap=48 * GIB)
    assert config.srs.param_cache == Path("/var/tmp/filecoin-proof-parameters")


def test_a_full_file(tmp_path):
    config = _load(tmp_path, """
[gpus]
devices = [1, 0]
gpu_workers_per_device = 3
gpu_threads = 8
[pipeline]
max_parallel_synthesis = 12
gpu_queue_depth = 4
witness_batch = 6
gpu_witness = false
synthesis_threads = 5
enabled = false
[memory]
host_cap = 51539607552
host_margin = "1.5G"
vram_fraction = 1
vram_budget = "24GiB"
admission_timeout_s = 2.5
eviction_min_idle_s = 0
[srs]
param_cache = "params"
allow_setup = true
[daemon]
listen = "0.0.0.0:9820"
status_listen = "127.0.0.1:9821"
[logging]
level = "WARN"
""")
    assert config == EngineConfig(GpuConfig((1, 0), 3, 8), PipelineConfig(12, 4, 6, False, 5, False),
                                  MemoryConfig(48 * GIB, 3 * GIB // 2, 1.0, 24 * GIB, 2.5, 0.0),
                                  SrsConfig(tmp_path / "params", True), DaemonConfig("0.0.0.0:9820", "127.0.0.1:9821"),
                                  LoggingConfig("warn"))
    assert _load(tmp_path, '[memory]\nhost_margin = 0\n').memory.host_margin == 0
    for cap, parsed in (('"16GiB"', 16 * GIB), ("17179869184", 16 * GIB), ('""', None), ('"1.5G"', 3 * GIB // 2)):
        assert _load(tmp_path, f"[memory]\nvram_budget = {cap}\n").memory.vram_budget == parsed, cap
    assert _load(tmp_path, '[srs]\nparam_cache = "~/p"\n').srs.param_cache == Path.home() / "p"
    assert _load(tmp_path, '[daemon]\nlisten = "unix:///tmp/x.sock"\n').daemon.listen == "unix:///tmp/x.sock"
    assert _load(tmp_path, '[daemon]\nlisten = "[::1]:0"\n').daemon.listen == "[::1]:0"


@pytest.mark.parametrize("text, message", [
    ('[pipeline]\nmax_parallel_synthesis = "two"\n',
     'pipeline.max_parallel_synthesis must be an integer from 1 to 1024, got "two"'),
    ("[pipeline]\nmax_parallel_synthesis = 0\n", "pipeline.max_parallel_synthesis must be an integer from 1 to 1024, got 0"),
    ("[pipeline]\ngpu_queue_depth = 1.5\n", "pipeline.gpu_queue_depth must be an integer from 1 to 4096, got 1.5"),
    ("[pipeline]\nwitness_batch = 0\n", "pipeline.witness_batch must be an integer from 1 to 4096, got 0"),
    ("[pipeline]\ngpu_witness = 1\n", "pipeline.gpu_witness must be true or false, got 1"),
    ('[pipeline]\nenabled = "yes"\n', 'pipeline.enabled must be true or false, got "yes"'),
    ("[gpus]\ngpu_workers_per_device = true\n", "gpus.gpu_workers_per_device must be an integer from 1 to 64, got true"),
    ("[gpus]\ngpu_threads = -1\n", "gpus.gpu_threads must be an integer from 0 to 4096, got -1"),
    ("[gpus]\ndevices = 0\n", "gpus.devices must be a list of distinct GPU ordinals (integers from 0 to 255), got 0"),
    ("[gpus]\ndevices = [0, 0]\n",
     "gpus.devices must be a list of distinct GPU ordinals (integers from 0 to 255), got [0, 0]"),
    ("[gpus]\ndevices = [-1]\n", "gpus.devices must be a list of distinct GPU ordinals (integers from 0 to 255), got [-1]"),
    ('[memory]\nhost_cap = "-1GiB"\n', f'memory.host_cap must be a size > 0 and below 2^64 {SIZE}, got "-1GiB"'),
    ("[memory]\nhost_cap = 0\n", f"memory.host_cap must be a size > 0 and below 2^64 {SIZE}, got 0"),
    ("[memory]\nhost_margin = -5\n", f"memory.host_margin must be a size >= 0 and below 2^64 {SIZE}, got -5"),
    ('[memory]\nhost_margin = "lots"\n', f'memory.host_margin must be a size >= 0 and below 2^64 {SIZE}, got "lots"'),
    ("[memory]\nhost_cap = 4.5e10\n", f"memory.host_cap must be a size > 0 and below 2^64 {SIZE}, got 45000000000.0"),
    ("[memory]\nvram_fraction = 1.2\n", "memory.vram_fraction must be a number in (0, 1], got 1.2"),
    ("[memory]\nvram_fraction = 0\n", "memory.vram_fraction must be a number in (0, 1], got 0"),
    ('[memory]\nvram_fraction = "80%"\n', 'memory.vram_fraction must be a number in (0, 1], got "80%"'),
    ('[memory]\nvram_budget = "lots"\n', f'memory.vram_budget {VRAM_CAP}, got "lots"'),
    ("[memory]\nvram_budget = -1\n", f"memory.vram_budget {VRAM_CAP}, got -1"),
    ("[memory]\nvram_budget = 0\n", f"memory.vram_budget {VRAM_CAP}, got 0"),
    ('[memory]\nvram_budget = "1GiB"\n', f'memory.vram_budget {VRAM_CAP}, got "1GiB"'),  # all of it the context's
    ("[memory]\nvram_budget = 1.5e10\n", f"memory.vram_budget {VRAM_CAP}, got 15000000000.0"),
    ("[memory]\nadmission_timeout_s = inf\n",
     "memory.admission_timeout_s must be a number of seconds > 0, at most 10 years (315576000), got inf"),
    ("[memory]\nadmission_timeout_s = -1\n",
     "memory.admission_timeout_s must be a number of seconds > 0, at most 10 years (315576000), got -1"),
    ("[memory]\neviction_min_idle_s = -0.5\n",
     "memory.eviction_min_idle_s must be a number of seconds >= 0, at most 10 years (315576000), got -0.5"),
    ('[srs]\nparam_cache = ""\n',
     'srs.param_cache must be a directory path (a non-empty string of at most 4096 characters, no NUL), got ""'),
    ("[srs]\nparam_cache = 7\n",
     "srs.param_cache must be a directory path (a non-empty string of at most 4096 characters, no NUL), got 7"),
    ('[srs]\nallow_setup = "true"\n', 'srs.allow_setup must be true or false, got "true"'),
    ('[daemon]\nlisten = ""\n', 'daemon.listen must be unix:///PATH or HOST:PORT (port 0-65535), got ""'),
    ('[daemon]\nlisten = "unix:///"\n', 'daemon.listen must be unix:///PATH or HOST:PORT (port 0-65535), got "unix:///"'),
    ('[daemon]\nlisten = "unix:80"\n', 'daemon.listen must be unix:///PATH or HOST:PORT (port 0-65535), got "unix:80"'),
    ('[daemon]\nlisten = "0.0.0.0"\n', 'daemon.listen must be unix:///PATH or HOST:PORT (port 0-65535), got "0.0.0.0"'),
    ('[daemon]\nlisten = "0.0.0.0:65536"\n',
     'daemon.listen must be unix:///PATH or HOST:PORT (port 0-65535), got "0.0.0.0:65536"'),
    ('[daemon]\nlisten = "my host:1"\n', 'daemon.listen must be unix:///PATH or HOST:PORT (port 0-65535), got "my host:1"'),
    ("[daemon]\nlisten = 9820\n", "daemon.listen must be unix:///PATH or HOST:PORT (port 0-65535), got 9820"),
    ('[daemon]\nstatus_listen = "unix:///tmp/s"\n',
     'daemon.status_listen must be "" or HOST:PORT (port 0-65535), got "unix:///tmp/s"'),
    ('[logging]\nlevel = "verbose"\n',
     'logging.level must be one of trace, debug, info, warn, warning, error, got "verbose"'),
])
def test_bad_values(tmp_path, text, message):
    got, error = _error(tmp_path, text)
    assert got == message
    assert error.key == message.split()[0] and isinstance(error, ValueError)


KEYS_OF = {table: ", ".join(keys) for table, (_, keys) in config_module._TABLES.items()}
TABLES = "[gpus], [pipeline], [memory], [srs], [daemon], [logging], [scheduler], [synthesis]"


@pytest.mark.parametrize("text, message", [
    ("[pipeline]\nmax_parallel_synthesys = 2\n",
     f"pipeline.max_parallel_synthesys is not a known key (the keys of [pipeline]: {KEYS_OF['pipeline']})"),
    ('[daemon]\nlisen = "x"\n', "daemon.lisen is not a known key (the keys of [daemon]: listen, status_listen)"),
    ('[scheduler]\nmax_batch = 2\n',
     "scheduler.max_batch is not a known key (the keys of [scheduler]: max_batch_size, max_batch_wait_ms, sort_by_type)"),
    ("[proofs]\nx = 1\n", f"proofs is not a known table (the tables are {TABLES})"),
    ("devices = [0]\n", f"devices is not a known table (the tables are {TABLES})"),
    ('"a b\\nc" = 1\n', f'"a b\\nc" is not a known table (the tables are {TABLES})'),
    ("gpus = 2\n", "gpus must be a table ([gpus]), got 2"),
    ("[logging]\n" + "x" * 100 + " = 1\n",
     f'logging.{chr(34)}{"x" * 59}... is not a known key (the keys of [logging]: level, format)'),
])
def test_unknown_tables_and_keys(tmp_path, text, message):
    assert _error(tmp_path, text)[0] == message


def test_files_that_cannot_be_loaded(tmp_path):
    got, error = _error(tmp_path, "[pipeline\n")
    assert got.startswith("is not valid TOML: ") and "line 1" in got and error.key is None
    (tmp_path / "cuzk.toml").write_bytes(b"[gpus]\ndevices = [\xff]\n")
    with pytest.raises(ConfigError, match=r"cuzk.toml: is not UTF-8 text$"):
        load_config(tmp_path / "cuzk.toml")
    with pytest.raises(ConfigError, match=r"missing.toml: cannot be read \(No such file or directory\)$"):
        load_config(tmp_path / "missing.toml")


# ---- environment overrides (resolve) ------------------------------------------------------------

def test_resolve_defaults_and_sources():
    config, sources = resolve(None, {})
    assert config == EngineConfig.default()
    assert sources == {dotted: "default" for dotted in DOTTED}
    assert list(sources) == DOTTED  # table by table, cuzk's fields then curio's keys
    assert resolve(None, {"CUZK_CACHE_DIR": "/c", "CUZK_VRAM_BUDGET": "1G", "CUZK_TEST_SEED": "1",
                          "CUZK_FUZZ_SEED": "2", "CUZK_GPU_THREADS": "32",
                          "PIPELINE_MAX_PARALLEL_SYNTHESIS": "x"}) == (config, sources)


def test_env_overrides_the_file_and_says_where_each_value_came_from(tmp_path):
    path = tmp_path / "cuzk.toml"
    path.write_text('[pipeline]\nmax_parallel_synthesis = 3\ngpu_queue_depth = 5\n[memory]\nhost_margin = "1G"\n'
                    '[daemon]\nlisten = "0.0.0.0:9820"\n')
    config, sources = resolve(path, {
        "CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS": "4", "CUZK_MEMORY_HOST_CAP": "48GiB", "CUZK_GPUS_DEVICES": "0, 1",
        "CUZK_GPUS_GPU_THREADS": "16", "CUZK_MEMORY_VRAM_FRACTION": "0.5", "CUZK_MEMORY_ADMISSION_TIMEOUT_S": "60",
        "CUZK_MEMORY_VRAM_BUDGET": "17179869184",
        "CUZK_MEMORY_EVICTION_MIN_IDLE_S": "30", "CUZK_SRS_PARAM_CACHE": "p", "CUZK_SRS_ALLOW_SETUP": "1",
        "CUZK_PIPELINE_WITNESS_BATCH": "3", "CUZK_PIPELINE_GPU_WITNESS": "False", "CUZK_PIPELINE_ENABLED": "false",
        "CUZK_PIPELINE_SYNTHESIS_THREADS": "2", "CUZK_DAEMON_LISTEN": "unix:///tmp/c.sock",
        "CUZK_DAEMON_STATUS_LISTEN": "127.0.0.1:0", "CUZK_LOGGING_LEVEL": "debug"})
    assert config == EngineConfig(GpuConfig((0, 1), 2, 16), PipelineConfig(4, 5, 3, False, 2, False),
                                  MemoryConfig(48 * GIB, GIB, 0.5, 16 * GIB, 60.0, 30.0), SrsConfig(Path.cwd() / "p", True),
                                  DaemonConfig("unix:///tmp/c.sock", "127.0.0.1:0"), LoggingConfig("debug"))
    assert {d: s for d, s in sources.items() if s != "default"} == {
        "gpus.devices": "env CUZK_GPUS_DEVICES", "gpus.gpu_threads": "env CUZK_GPUS_GPU_THREADS",
        "pipeline.max_parallel_synthesis": "env CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS",
        "pipeline.gpu_queue_depth": str(path), "pipeline.witness_batch": "env CUZK_PIPELINE_WITNESS_BATCH",
        "pipeline.gpu_witness": "env CUZK_PIPELINE_GPU_WITNESS",
        "pipeline.synthesis_threads": "env CUZK_PIPELINE_SYNTHESIS_THREADS",
        "pipeline.enabled": "env CUZK_PIPELINE_ENABLED",
        "memory.host_cap": "env CUZK_MEMORY_HOST_CAP", "memory.host_margin": str(path),
        "memory.vram_fraction": "env CUZK_MEMORY_VRAM_FRACTION", "memory.vram_budget": "env CUZK_MEMORY_VRAM_BUDGET",
        "memory.admission_timeout_s": "env CUZK_MEMORY_ADMISSION_TIMEOUT_S",
        "memory.eviction_min_idle_s": "env CUZK_MEMORY_EVICTION_MIN_IDLE_S",
        "srs.param_cache": "env CUZK_SRS_PARAM_CACHE", "srs.allow_setup": "env CUZK_SRS_ALLOW_SETUP",
        "daemon.listen": "env CUZK_DAEMON_LISTEN", "daemon.status_listen": "env CUZK_DAEMON_STATUS_LISTEN",
        "logging.level": "env CUZK_LOGGING_LEVEL"}
    assert load_config(path) == EngineConfig(pipeline=PipelineConfig(3, 5), memory=MemoryConfig(host_margin=GIB),
                                             daemon=DaemonConfig("0.0.0.0:9820"))


def test_every_key_has_its_variable():
    assert [env_name(d) for d in FIELDS] == [
        "CUZK_GPUS_DEVICES", "CUZK_GPUS_GPU_WORKERS_PER_DEVICE", "CUZK_GPUS_GPU_THREADS",
        "CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS", "CUZK_PIPELINE_GPU_QUEUE_DEPTH", "CUZK_PIPELINE_WITNESS_BATCH",
        "CUZK_PIPELINE_GPU_WITNESS", "CUZK_PIPELINE_SYNTHESIS_THREADS", "CUZK_PIPELINE_ENABLED",
        "CUZK_MEMORY_HOST_CAP", "CUZK_MEMORY_HOST_MARGIN", "CUZK_MEMORY_VRAM_FRACTION",
        "CUZK_MEMORY_VRAM_BUDGET", "CUZK_MEMORY_ADMISSION_TIMEOUT_S", "CUZK_MEMORY_EVICTION_MIN_IDLE_S", "CUZK_SRS_PARAM_CACHE",
        "CUZK_SRS_ALLOW_SETUP", "CUZK_DAEMON_LISTEN", "CUZK_DAEMON_STATUS_LISTEN", "CUZK_LOGGING_LEVEL"]
    assert resolve(None, {"CUZK_GPUS_DEVICES": ""})[0].gpus.devices == ()


PIPELINE_VARS = ", ".join(env_name(f"pipeline.{key}") for key in config_module._TABLES["pipeline"][1])


@pytest.mark.parametrize("var, value, message", [
    ("CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS", "two", 'must be an integer from 1 to 1024, got "two"'),
    ("CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS", "9" * 5000, f'must be an integer from 1 to 1024, got "{"9" * 59}...'),
    ("CUZK_PIPELINE_GPU_QUEUE_DEPTH", "0", "must be an integer from 1 to 4096, got 0"),
    ("CUZK_PIPELINE_WITNESS_BATCH", "ten", 'must be an integer from 1 to 4096, got "ten"'),
    ("CUZK_PIPELINE_GPU_WITNESS", "yes", 'must be true or false, got "yes"'),
    ("CUZK_PIPELINE_ENABLED", "on", 'must be true or false, got "on"'),
    ("CUZK_GPUS_DEVICES", "0,a", 'must be a list of distinct GPU ordinals (integers from 0 to 255), got "0,a"'),
    ("CUZK_GPUS_DEVICES", "1,1", "must be a list of distinct GPU ordinals (integers from 0 to 255), got [1, 1]"),
    ("CUZK_GPUS_GPU_THREADS", "5000", "must be an integer from 0 to 4096, got 5000"),
    ("CUZK_MEMORY_HOST_CAP", "lots", f'must be a size > 0 and below 2^64 {SIZE}, got "lots"'),
    ("CUZK_MEMORY_VRAM_FRACTION", "80%", 'must be a number in (0, 1], got "80%"'),
    ("CUZK_MEMORY_VRAM_BUDGET", "lots", f'{VRAM_CAP}, got "lots"'),
    ("CUZK_MEMORY_ADMISSION_TIMEOUT_S", "inf", "must be a number of seconds > 0, at most 10 years (315576000), got inf"),
    ("CUZK_MEMORY_ADMISSION_TIMEOUT_S", "nan", "must be a number of seconds > 0, at most 10 years (315576000), got nan"),
    ("CUZK_SRS_PARAM_CACHE", " ",
     'must be a directory path (a non-empty string of at most 4096 characters, no NUL), got " "'),
    ("CUZK_SRS_ALLOW_SETUP", "maybe", 'must be true or false, got "maybe"'),
    ("CUZK_DAEMON_LISTEN", "nowhere", 'must be unix:///PATH or HOST:PORT (port 0-65535), got "nowhere"'),
    ("CUZK_LOGGING_LEVEL", "loud", 'must be one of trace, debug, info, warn, warning, error, got "loud"'),
    ("CUZK_SCHEDULER_MAX_BATCH_SIZE", "-1", "must be an integer from 0 to 1024, got -1"),
    ("CUZK_SYNTHESIS_THREADS", "4097", "must be an integer from 0 to 4096, got 4097"),
    ("CUZK_PIPELINE_FOO", "1", f"is not a known variable (those of [pipeline]: {PIPELINE_VARS})"),
    ("CUZK_PIPELINE_max_parallel_synthesis", "1", f"is not a known variable (those of [pipeline]: {PIPELINE_VARS})"),
    ("CUZK_DAEMON_ADDRESS", "x", "is not a known variable (those of [daemon]: CUZK_DAEMON_LISTEN, "
                                 "CUZK_DAEMON_STATUS_LISTEN)"),
    ("CUZK_LOGGING_", "x", "is not a known variable (those of [logging]: CUZK_LOGGING_LEVEL, CUZK_LOGGING_FORMAT)"),
    ("CUZK_SCHEDULER_WAIT", "x", "is not a known variable (those of [scheduler]: CUZK_SCHEDULER_MAX_BATCH_SIZE, "
                                 "CUZK_SCHEDULER_MAX_BATCH_WAIT_MS, CUZK_SCHEDULER_SORT_BY_TYPE)"),
    ("CUZK_SYNTHESIS_WORKERS", "x", "is not a known variable (those of [synthesis]: CUZK_SYNTHESIS_THREADS, "
                                    "CUZK_SYNTHESIS_PARTITION_WORKERS)"),
])
def test_bad_env_values_name_the_variable(var, value, message):
    with pytest.raises(ConfigError) as info:
        resolve(None, {var: value})
    assert str(info.value) == f"environment: {var} {message}"
    assert (info.value.source, info.value.key) == ("environment", var)


def test_a_bad_file_is_reported_before_the_environment(tmp_path):
    path = tmp_path / "cuzk.toml"
    path.write_text("[pipeline]\ngpu_queue_depth = 0\n")
    with pytest.raises(ConfigError, match=r"cuzk.toml: pipeline.gpu_queue_depth must be"):
        resolve(path, {"CUZK_PIPELINE_FOO": "1"})


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ConfigError, match=r"fifo: cannot be read \(not a regular file\)$"):
        load_config(tmp_path / "fifo")
    with pytest.raises(ConfigError, match=r"cannot be read \(Is a directory\)$"):
        load_config(tmp_path)
