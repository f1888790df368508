"""cuzk.engine.config: defaults, the example file, environment overrides (resolve), and a ConfigError
naming the file and key (or the variable) for each kind of bad input."""
import dataclasses
import os
from pathlib import Path

import pytest

from cuzk.engine import config as config_module
from cuzk.engine.config import (EngineConfig, GpuConfig, MemoryConfig, PipelineConfig, SrsConfig, env_name,
                                load_config, resolve)
from cuzk.errors import ConfigError

GIB = 1 << 30
EXAMPLE = Path(__file__).resolve().parents[2] / "cuzk.example.toml"
DOTTED = [f"{table}.{key}" for table, (_, keys) in config_module._SCHEMA.items() for key in keys]


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
    assert config == EngineConfig(GpuConfig((), 2), PipelineConfig(2, 2), MemoryConfig(None, 2 * GIB, 0.8, 1800.0),
                                  SrsConfig(None))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.memory.host_cap = 1


def test_schema_matches_the_dataclasses_and_every_key_is_documented():
    for name, (cls, keys) in config_module._SCHEMA.items():
        assert [f.name for f in dataclasses.fields(cls)] == list(keys), name
        assert getattr(EngineConfig.default(), name) == cls()
    example = EXAMPLE.read_text()
    for dotted in DOTTED:
        table, key = dotted.split(".")
        assert f"[{table}]" in config_module.__doc__ and f"    {key}" in config_module.__doc__, dotted
        assert f"\n{key} = " in example or f"\n# {key} = " in example, dotted


def test_the_example_file_is_the_defaults_and_its_commented_keys_load(tmp_path):
    assert load_config(EXAMPLE) == EngineConfig.default()
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
[pipeline]
max_parallel_synthesis = 12
gpu_queue_depth = 4
witness_batch = 6
gpu_witness = false
[memory]
host_cap = 51539607552
host_margin = "1.5G"
vram_fraction = 1
admission_timeout_s = 2.5
[srs]
param_cache = "params"
""")
    assert config == EngineConfig(GpuConfig((1, 0), 3), PipelineConfig(12, 4, 6, False),
                                  MemoryConfig(48 * GIB, 3 * GIB // 2, 1.0, 2.5), SrsConfig(tmp_path / "params"))
    assert _load(tmp_path, '[memory]\nhost_margin = 0\n').memory.host_margin == 0
    assert _load(tmp_path, '[srs]\nparam_cache = "~/p"\n').srs.param_cache == Path.home() / "p"


@pytest.mark.parametrize("text, message", [
    ('[pipeline]\nmax_parallel_synthesis = "two"\n',
     'pipeline.max_parallel_synthesis must be an integer >= 1, got "two"'),
    ("[pipeline]\nmax_parallel_synthesis = 0\n", "pipeline.max_parallel_synthesis must be an integer >= 1, got 0"),
    ("[pipeline]\ngpu_queue_depth = 1.5\n", "pipeline.gpu_queue_depth must be an integer >= 1, got 1.5"),
    ("[pipeline]\nwitness_batch = 0\n", "pipeline.witness_batch must be an integer >= 1, got 0"),
    ("[pipeline]\ngpu_witness = 1\n", "pipeline.gpu_witness must be true or false, got 1"),
    ("[gpus]\ngpu_workers_per_device = true\n", "gpus.gpu_workers_per_device must be an integer >= 1, got true"),
    ("[gpus]\ndevices = 0\n", "gpus.devices must be a list of distinct GPU ordinals (integers >= 0), got 0"),
    ("[gpus]\ndevices = [0, 0]\n", "gpus.devices must be a list of distinct GPU ordinals (integers >= 0), got [0, 0]"),
    ("[gpus]\ndevices = [-1]\n", "gpus.devices must be a list of distinct GPU ordinals (integers >= 0), got [-1]"),
    ('[memory]\nhost_cap = "-1GiB"\n',
     'memory.host_cap must be a size > 0 (bytes, or a number with K, M, G or T, e.g. "2GiB"), got "-1GiB"'),
    ("[memory]\nhost_cap = 0\n",
     'memory.host_cap must be a size > 0 (bytes, or a number with K, M, G or T, e.g. "2GiB"), got 0'),
    ("[memory]\nhost_margin = -5\n",
     'memory.host_margin must be a size >= 0 (bytes, or a number with K, M, G or T, e.g. "2GiB"), got -5'),
    ('[memory]\nhost_margin = "lots"\n',
     'memory.host_margin must be a size >= 0 (bytes, or a number with K, M, G or T, e.g. "2GiB"), got "lots"'),
    ("[memory]\nhost_cap = 4.5e10\n",
     'memory.host_cap must be a size > 0 (bytes, or a number with K, M, G or T, e.g. "2GiB"), got 45000000000.0'),
    ("[memory]\nvram_fraction = 1.2\n", "memory.vram_fraction must be a number in (0, 1], got 1.2"),
    ("[memory]\nvram_fraction = 0\n", "memory.vram_fraction must be a number in (0, 1], got 0"),
    ('[memory]\nvram_fraction = "80%"\n', 'memory.vram_fraction must be a number in (0, 1], got "80%"'),
    ("[memory]\nadmission_timeout_s = inf\n",
     "memory.admission_timeout_s must be a finite number of seconds > 0, got inf"),
    ("[memory]\nadmission_timeout_s = -1\n",
     "memory.admission_timeout_s must be a finite number of seconds > 0, got -1"),
    ('[srs]\nparam_cache = ""\n', 'srs.param_cache must be a directory path (a non-empty string), got ""'),
    ("[srs]\nparam_cache = 7\n", "srs.param_cache must be a directory path (a non-empty string), got 7"),
])
def test_bad_values(tmp_path, text, message):
    got, error = _error(tmp_path, text)
    assert got == message
    assert error.key == message.split()[0] and isinstance(error, ValueError)


@pytest.mark.parametrize("text, message", [
    ("[pipeline]\nmax_parallel_synthesys = 2\n",
     "pipeline.max_parallel_synthesys is not a known key (the keys of [pipeline]: max_parallel_synthesis, "
     "gpu_queue_depth, witness_batch, gpu_witness, synthesis_threads)"),
    ("[daemon]\nlisten = \"x\"\n", "daemon is not a known table (the tables are [gpus], [pipeline], [memory], [srs])"),
    ("devices = [0]\n", "devices is not a known table (the tables are [gpus], [pipeline], [memory], [srs])"),
    ("gpus = 2\n", "gpus must be a table ([gpus]), got 2"),
    ('[memory]\ntotal_budget = "auto"\n',
     "memory.total_budget is curio's key, with another meaning: use memory.host_cap (see cuzk.example.toml)"),
    ('[memory]\nsafety_margin = "5GiB"\n',
     "memory.safety_margin is curio's key, with another meaning: use memory.host_margin (see cuzk.example.toml)"),
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
    assert resolve(None, {"CUZK_CACHE_DIR": "/c", "CUZK_VRAM_BUDGET": "1G", "CUZK_TEST_SEED": "1",
                          "CUZK_FUZZ_SEED": "2", "PIPELINE_MAX_PARALLEL_SYNTHESIS": "x"}) == (config, sources)


def test_env_overrides_the_file_and_says_where_each_value_came_from(tmp_path):
    path = tmp_path / "cuzk.toml"
    path.write_text('[pipeline]\nmax_parallel_synthesis = 3\ngpu_queue_depth = 5\n[memory]\nhost_margin = "1G"\n')
    config, sources = resolve(path, {"CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS": "4", "CUZK_MEMORY_HOST_CAP": "48GiB",
                                     "CUZK_GPUS_DEVICES": "0, 1", "CUZK_MEMORY_VRAM_FRACTION": "0.5",
                                     "CUZK_MEMORY_ADMISSION_TIMEOUT_S": "60", "CUZK_SRS_PARAM_CACHE": "p",
                                     "CUZK_PIPELINE_WITNESS_BATCH": "3", "CUZK_PIPELINE_GPU_WITNESS": "False",
                                     "CUZK_PIPELINE_SYNTHESIS_THREADS": "2"})
    assert config == EngineConfig(GpuConfig((0, 1), 2), PipelineConfig(4, 5, 3, False, 2),
                                  MemoryConfig(48 * GIB, GIB, 0.5, 60.0), SrsConfig(Path.cwd() / "p"))
    assert sources == {
        "gpus.devices": "env CUZK_GPUS_DEVICES", "gpus.gpu_workers_per_device": "default",
        "pipeline.max_parallel_synthesis": "env CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS",
        "pipeline.gpu_queue_depth": str(path), "pipeline.witness_batch": "env CUZK_PIPELINE_WITNESS_BATCH",
        "pipeline.gpu_witness": "env CUZK_PIPELINE_GPU_WITNESS",
        "pipeline.synthesis_threads": "env CUZK_PIPELINE_SYNTHESIS_THREADS",
        "memory.host_cap": "env CUZK_MEMORY_HOST_CAP", "memory.host_margin": str(path),
        "memory.vram_fraction": "env CUZK_MEMORY_VRAM_FRACTION",
        "memory.admission_timeout_s": "env CUZK_MEMORY_ADMISSION_TIMEOUT_S",
        "srs.param_cache": "env CUZK_SRS_PARAM_CACHE"}
    assert load_config(path) == EngineConfig(pipeline=PipelineConfig(3, 5), memory=MemoryConfig(host_margin=GIB))


def test_every_key_has_its_variable():
    assert [env_name(d) for d in DOTTED] == [
        "CUZK_GPUS_DEVICES", "CUZK_GPUS_GPU_WORKERS_PER_DEVICE", "CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS",
        "CUZK_PIPELINE_GPU_QUEUE_DEPTH", "CUZK_PIPELINE_WITNESS_BATCH", "CUZK_PIPELINE_GPU_WITNESS",
        "CUZK_PIPELINE_SYNTHESIS_THREADS", "CUZK_MEMORY_HOST_CAP", "CUZK_MEMORY_HOST_MARGIN", "CUZK_MEMORY_VRAM_FRACTION",
        "CUZK_MEMORY_ADMISSION_TIMEOUT_S", "CUZK_SRS_PARAM_CACHE"]
    assert resolve(None, {"CUZK_GPUS_DEVICES": ""})[0].gpus.devices == ()


@pytest.mark.parametrize("var, value, message", [
    ("CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS", "two", 'must be an integer >= 1, got "two"'),
    ("CUZK_PIPELINE_GPU_QUEUE_DEPTH", "0", "must be an integer >= 1, got 0"),
    ("CUZK_PIPELINE_WITNESS_BATCH", "ten", 'must be an integer >= 1, got "ten"'),
    ("CUZK_PIPELINE_GPU_WITNESS", "yes", 'must be true or false, got "yes"'),
    ("CUZK_GPUS_DEVICES", "0,a", 'must be a list of distinct GPU ordinals (integers >= 0), got "0,a"'),
    ("CUZK_GPUS_DEVICES", "1,1", "must be a list of distinct GPU ordinals (integers >= 0), got [1, 1]"),
    ("CUZK_MEMORY_HOST_CAP", "lots",
     'must be a size > 0 (bytes, or a number with K, M, G or T, e.g. "2GiB"), got "lots"'),
    ("CUZK_MEMORY_VRAM_FRACTION", "80%", 'must be a number in (0, 1], got "80%"'),
    ("CUZK_MEMORY_ADMISSION_TIMEOUT_S", "inf", "must be a finite number of seconds > 0, got inf"),
    ("CUZK_SRS_PARAM_CACHE", " ", 'must be a directory path (a non-empty string), got " "'),
    ("CUZK_PIPELINE_FOO", "1", "is not a known variable (those of [pipeline]: CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS, "
                               "CUZK_PIPELINE_GPU_QUEUE_DEPTH, CUZK_PIPELINE_WITNESS_BATCH, CUZK_PIPELINE_GPU_WITNESS, "
                               "CUZK_PIPELINE_SYNTHESIS_THREADS)"),
    ("CUZK_PIPELINE_max_parallel_synthesis", "1", "is not a known variable (those of [pipeline]: "
     "CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS, CUZK_PIPELINE_GPU_QUEUE_DEPTH, CUZK_PIPELINE_WITNESS_BATCH, "
     "CUZK_PIPELINE_GPU_WITNESS, CUZK_PIPELINE_SYNTHESIS_THREADS)"),
    ("CUZK_MEMORY_TOTAL_BUDGET", "auto", "is curio's key, with another meaning: use CUZK_MEMORY_HOST_CAP"),
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
