"""Every value of the configuration is bounded: each number by the range its key documents (the bound
itself loads, one past it is a ConfigError naming the key), sizes below 2^64, seconds finite and at
most 10 years, strings at most 4096 characters without NUL, the file at most 1 MiB and nested at most
8 deep; the path itself must be a str or os.PathLike without NUL. Nothing else escapes load_config:
no OverflowError, RecursionError, ValueError or TypeError."""
from pathlib import Path

import pytest

from cuzk.engine import config as config_module
from cuzk.engine import config_values
from cuzk.engine.config import MAX_SECONDS, load_config, resolve
from cuzk.errors import ConfigError

# dotted key -> (the lowest value it takes, the highest); a value one past either is refused
INTEGERS = {
    "gpus.gpu_workers_per_device": (1, 64), "gpus.gpu_threads": (0, 4096),
    "pipeline.max_parallel_synthesis": (1, 1024), "pipeline.gpu_queue_depth": (1, 4096),
    "pipeline.witness_batch": (1, 4096), "pipeline.synthesis_threads": (0, 4096),
    "pipeline.max_gpu_queue_depth": (0, 4096), "pipeline.synthesis_concurrency": (0, 1024),
    "pipeline.synthesis_lookahead": (0, 4096), "pipeline.slot_size": (0, 4096),
    "scheduler.max_batch_size": (0, 1024), "scheduler.max_batch_wait_ms": (0, int(MAX_SECONDS * 1000)),
    "synthesis.threads": (0, 4096), "synthesis.partition_workers": (0, 4096),
}
SIZES = {"memory.host_cap": 1, "memory.host_margin": 0, "memory.total_budget": 1, "memory.safety_margin": 0,
         "memory.pinned_budget": 0, "memory.working_memory_budget": 0,
         "memory.vram_budget": (1 << 30) + 1}  # key -> its lowest size (a VRAM cap: above the context's 1 GiB)
SECONDS = {"memory.admission_timeout_s": False, "memory.eviction_min_idle_s": True}  # key -> whether 0 is taken
HUGE = ["1" + "0" * 400, "-" + "9" * 4000, "1e400", "-1e400", "inf", "-inf", "nan", "18446744073709551616",
        '"' + "9" * 4000 + 'T"', '"1e400"', '"18446744073709551616"', '"16777216T"', "[" * 4 + "]" * 4, '"\\u0000"']


def _toml(dotted, value):
    table, key = dotted.split(".")
    return f"[{table}]\n{key} = {value}\n"


def _load(tmp_path, text):
    path = tmp_path / "cuzk.toml"
    path.write_text(text)
    return load_config(path), path


def _refused(tmp_path, text, dotted=None):
    """The ConfigError of loading `text`; it names the file and `dotted`."""
    path = tmp_path / "cuzk.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.source == str(path) and info.value.key == dotted, str(info.value)
    return info.value.reason


def test_every_number_key_is_listed_here():
    numeric = {f"{t}.{k}" for t, (_, keys) in config_module._TABLES.items() for k, key in keys.items()
               if key.from_text in (config_values.int_text, config_values.float_text)}
    assert numeric == set(INTEGERS) | set(SECONDS) | {"memory.vram_fraction"}


@pytest.mark.parametrize("dotted", INTEGERS)
def test_integer_bounds(tmp_path, dotted):
    low, high = INTEGERS[dotted]
    for good in (low, high):
        _load(tmp_path, _toml(dotted, good))
    for bad in (low - 1, high + 1, 2 ** 64, -(2 ** 63) - 1):
        assert _refused(tmp_path, _toml(dotted, bad), dotted) == f"must be an integer from {low} to {high}, got {bad}"


@pytest.mark.parametrize("dotted", SIZES)
def test_sizes_are_below_2_to_the_64(tmp_path, dotted):
    low = SIZES[dotted]
    _load(tmp_path, _toml(dotted, low))
    _load(tmp_path, _toml(dotted, 2 ** 64 - 1))
    _load(tmp_path, _toml(dotted, '"16777215T"'))  # 2^64 - 2^40
    for bad in (2 ** 64, '"16777216T"', '"18446744073709551616"', low - 1, '"' + "9" * 5000 + '"'):
        assert "below 2^64" in _refused(tmp_path, _toml(dotted, bad), dotted)


@pytest.mark.parametrize("dotted", SECONDS)
def test_seconds_are_finite_and_at_most_ten_years(tmp_path, dotted):
    _load(tmp_path, _toml(dotted, MAX_SECONDS))
    _load(tmp_path, _toml(dotted, 315576000))
    for bad in (MAX_SECONDS + 1, "inf", "nan", "-inf", "1e308", "1" + "0" * 400, *(["0"] if not SECONDS[dotted] else [])):
        assert "at most 10 years" in _refused(tmp_path, _toml(dotted, bad), dotted)
    assert _load(tmp_path, _toml(dotted, 0.25))[0].memory.__getattribute__(dotted.split(".")[1]) == 0.25


def test_durations_and_fractions(tmp_path):
    assert _load(tmp_path, _toml("memory.eviction_min_idle", 315576000))[0].memory.eviction_min_idle_s == 315576000.0
    for bad in ("315576001", '"87661h"', '"9999999999999h"', '"' + "9" * 20 + 's"', "1" + "0" * 400):
        assert "at most 10 years" in _refused(tmp_path, _toml("memory.eviction_min_idle", bad), "memory.eviction_min_idle")
    for bad in ("1" + "0" * 400, "nan", "inf", "-0.0", "1.0000001"):
        assert _refused(tmp_path, _toml("memory.vram_fraction", bad), "memory.vram_fraction").startswith(
            "must be a number in (0, 1]")


@pytest.mark.parametrize("dotted", sorted(f"{t}.{k}" for t, (_, keys) in config_module._TABLES.items() for k in keys))
def test_hostile_values_are_config_errors_for_every_key(tmp_path, dotted):
    """Huge, non-finite, overlong and NUL values: each a ConfigError naming the key, or a value in range."""
    for value in HUGE:
        try:
            _load(tmp_path, _toml(dotted, value))
        except ConfigError as e:
            assert e.key == dotted and len(str(e)) < 1000, str(e)


@pytest.mark.parametrize("dotted, checks", [
    ("srs.param_cache", "directory path"), ("daemon.listen", "unix:///PATH"), ("daemon.status_listen", "HOST:PORT"),
    ("logging.format", "a string of at most 4096"), ("logging.level", "must be one of"),
    ("memory.total_budget", "a size"), ("memory.eviction_min_idle", "a duration"),
])
def test_strings_are_at_most_4096_characters_without_nul(tmp_path, dotted, checks):
    long = {"srs.param_cache": "/" + "p" * 4096, "daemon.listen": "unix:///" + "s" * 4096,
            "daemon.status_listen": "h" * 4092 + ":9821", "logging.format": "j" * 4097,
            "logging.level": "i" * 4097, "memory.total_budget": "1" * 4097, "memory.eviction_min_idle": "1" * 4097}[dotted]
    for bad in (long, "a\0b", "unix:///a\0b"):
        reason = _refused(tmp_path, _toml(dotted, f'"{bad}"'.replace("\0", "\\u0000")), dotted)
        assert checks in reason and len(reason) < 400
    assert _refused(tmp_path, _toml("srs.preload", "[" + ", ".join(['"c"'] * 65) + "]"), "srs.preload").startswith(
        "must be a list of at most 64 strings")


def test_a_string_of_4096_characters_loads(tmp_path):
    path = "/" + "p" * 4095
    assert _load(tmp_path, _toml("srs.param_cache", f'"{path}"'))[0].srs.param_cache == Path(path)


@pytest.mark.parametrize("text", [
    "a = " + "[" * 1000 + "]" * 1000,
    "a = " + "{b = " * 1000 + "1" + "}" * 1000,
    "[gpus]\ndevices = " + "[" * 900 + "]" * 900,
    "[gpus]\ndevices = " + "[" * 8 + "]" * 8,
    "[gpus]\ndevices = " + "{a = " * 7 + "1" + "}" * 7,
], ids=["arrays-1000", "tables-1000", "arrays-900", "arrays-8", "inline-tables-7"])
def test_deep_nesting_is_refused(tmp_path, text):
    reason = _refused(tmp_path, text)
    assert reason.startswith("is not valid TOML: nested too deeply")


def test_nesting_within_the_limit_reaches_the_key_check(tmp_path):
    reason = _refused(tmp_path, "[gpus]\ndevices = " + "[" * 6 + "]" * 6, "gpus.devices")
    assert reason.startswith("must be a list of distinct GPU ordinals")


def test_the_file_is_at_most_1_mib(tmp_path):
    filler = "# " + "x" * 98 + "\n"
    _load(tmp_path, filler * ((1 << 20) // len(filler)))
    assert _refused(tmp_path, filler * ((1 << 20) // len(filler) + 1)) == "is larger than 1 MiB"


def test_an_integer_literal_too_long_for_python_is_a_config_error(tmp_path):
    reason = _refused(tmp_path, "[gpus]\ngpu_threads = " + "9" * 5000 + "\n")
    assert reason.startswith("is not valid TOML: ") and len(reason) < 200


@pytest.mark.parametrize("path, message", [
    (None, "configuration: the file must be a path (str or os.PathLike), got NoneType"),
    (b"/etc/cuzk.toml", "configuration: the file must be a path (str or os.PathLike), got bytes"),
    (7, "configuration: the file must be a path (str or os.PathLike), got int"),
    ("/tmp/a\0b.toml", '"/tmp/a\\u0000b.toml": is not a path (it contains a NUL byte)'),
    (Path("/tmp/a\0b.toml"), '"/tmp/a\\u0000b.toml": is not a path (it contains a NUL byte)'),
])
def test_the_path_must_be_a_path(path, message):
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == message
    if path is not None:
        with pytest.raises(ConfigError):
            resolve(path, {})


def test_a_path_like_that_gives_bytes_is_refused():
    class BytesPath:
        def __fspath__(self):
            return b"/etc/cuzk.toml"

    with pytest.raises(ConfigError, match="got BytesPath$"):
        load_config(BytesPath())


def test_a_nul_in_a_path_value_names_the_key(tmp_path):
    assert "no NUL" in _refused(tmp_path, '[srs]\nparam_cache = "/data/\\u0000zk"\n', "srs.param_cache")
    with pytest.raises(ConfigError) as info:
        resolve(None, {"CUZK_SRS_PARAM_CACHE": "/" + "p" * 5000})
    assert info.value.key == "CUZK_SRS_PARAM_CACHE" and "at most 4096 characters" in info.value.reason
