"""The `cuzk` command: version, the built-in selftest, config show and the timeline commands."""
import json
import os
import tomllib

import pytest

from cuzk import __version__
from cuzk.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_selftest_passes_on_cpu(capsys):
    assert main(["selftest", "--backend", "cpu", "--log-n", "4"]) == 0
    out = capsys.readouterr().out
    assert "5/5 checks passed" in out
    assert out.count(" ok ") == 5


def test_unknown_backend_is_rejected(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["selftest", "--backend", "tpu"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("value, message", [
    ("-3", "must be from 2 to 12, got -3"), ("0", "must be from 2 to 12, got 0"), ("1", "must be from 2 to 12, got 1"),
    ("13", "must be from 2 to 12, got 13"), ("9" * 5000, "not an integer: "), ("4.5", "not an integer: '4.5'"),
])
def test_selftest_log_n_is_bounded(capsys, value, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["selftest", "--backend", "cpu", "--log-n", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"cuzk selftest: error: argument --log-n: {message}") and len(err[-1]) < 300


# ---- engine: config show, timeline summary and plot ----------------------------------------------

@pytest.fixture
def no_config_env(monkeypatch):
    from cuzk.engine.config import _TABLES, env_name

    for var in [v for v in os.environ if v.startswith(tuple(env_name(table) + "_" for table in _TABLES))]:
        monkeypatch.delenv(var)
    return monkeypatch


def test_config_show_defaults(no_config_env, capsys):
    from cuzk.engine.config import CURIO_KEYS

    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    curio = [f"# {dotted}  # default; curio's key: {note}" for dotted, note in CURIO_KEYS.items()]
    lines = out.splitlines()
    assert [line for line in lines if "curio's key" not in line] == """\
gpus.devices = []  # default
gpus.gpu_workers_per_device = 2  # default
gpus.gpu_threads = 0  # default
pipeline.max_parallel_synthesis = 2  # default
pipeline.gpu_queue_depth = 2  # default
pipeline.witness_batch = 10  # default
pipeline.gpu_witness = true  # default
pipeline.synthesis_threads = 0  # default
pipeline.enabled = true  # default
# memory.host_cap (not set)  # default
memory.host_margin = 2147483648  # default
memory.vram_fraction = 0.8  # default
# memory.vram_budget (not set)  # default
memory.admission_timeout_s = 1800.0  # default
memory.eviction_min_idle_s = 300.0  # default
# srs.param_cache (not set)  # default
srs.allow_setup = false  # default
daemon.listen = "unix:///run/curio/cuzk.sock"  # default
daemon.status_listen = ""  # default
logging.level = "info"  # default
""".splitlines()
    assert [line for line in lines if "curio's key" in line] == curio  # every one of curio's keys
    assert lines.index("# pipeline.max_gpu_queue_depth  # default; curio's key: sets pipeline.gpu_queue_depth when > 0") \
        == lines.index("pipeline.enabled = true  # default") + 1  # under its table
    assert lines[-1] == f"# synthesis.partition_workers  # default; curio's key: {CURIO_KEYS['synthesis.partition_workers']}"


def test_config_show_file_and_env(no_config_env, tmp_path, capsys):
    path = tmp_path / "cuzk.toml"
    path.write_text('[pipeline]\nmax_parallel_synthesis = 3\ngpu_queue_depth = 5\n[srs]\nparam_cache = "p"\n')
    no_config_env.setenv("CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS", "4")
    no_config_env.setenv("CUZK_GPUS_DEVICES", "0,1")
    no_config_env.setenv("CUZK_MEMORY_HOST_CAP", "48GiB")
    no_config_env.setenv("CUZK_DAEMON_LISTEN", "0.0.0.0:9820")
    assert main(["config", "show", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert tomllib.loads(out) == {  # TOML with dotted keys; the unset ones and curio's keys are comments
        "gpus": {"devices": [0, 1], "gpu_workers_per_device": 2, "gpu_threads": 0},
        "pipeline": {"max_parallel_synthesis": 4, "gpu_queue_depth": 5, "witness_batch": 10, "gpu_witness": True,
                     "synthesis_threads": 0, "enabled": True},
        "memory": {"host_cap": 48 << 30, "host_margin": 2 << 30, "vram_fraction": 0.8, "admission_timeout_s": 1800.0,
                   "eviction_min_idle_s": 300.0},
        "srs": {"param_cache": str(tmp_path / "p"), "allow_setup": False},
        "daemon": {"listen": "0.0.0.0:9820", "status_listen": ""},
        "logging": {"level": "info"}}
    lines = out.splitlines()
    assert "gpus.devices = [0, 1]  # env CUZK_GPUS_DEVICES" in lines
    assert "pipeline.max_parallel_synthesis = 4  # env CUZK_PIPELINE_MAX_PARALLEL_SYNTHESIS" in lines
    assert f"pipeline.gpu_queue_depth = 5  # {path}" in lines
    assert "memory.host_cap = 51539607552  # env CUZK_MEMORY_HOST_CAP" in lines
    assert f'srs.param_cache = "{tmp_path / "p"}"  # {path}' in lines
    assert 'daemon.listen = "0.0.0.0:9820"  # env CUZK_DAEMON_LISTEN' in lines


def test_config_show_of_curios_keys(no_config_env, tmp_path, capsys, caplog):
    """A key of curio's that sets one of cuzk's: the field's value and source name it; the key itself is
    a comment with its source and what it does; an ignored key is also warned (stderr)."""
    from cuzk.engine.config import CURIO_KEYS

    path = tmp_path / "cuzk.toml"
    path.write_text('[memory]\ntotal_budget = "64GiB"\neviction_min_idle = "1h"\n[synthesis]\nthreads = 8\n'
                    '[scheduler]\nmax_batch_size = 2\n')
    assert main(["config", "show", "--config", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"memory.host_cap = {64 << 30}  # {path} (memory.total_budget)" in lines
    assert f"memory.host_margin = 0  # {path} (memory.total_budget)" in lines
    assert f"memory.eviction_min_idle_s = 3600.0  # {path} (memory.eviction_min_idle)" in lines
    assert f"pipeline.synthesis_threads = 4  # {path} (synthesis.threads)" in lines
    assert f"# memory.total_budget  # {path}; curio's key: {CURIO_KEYS['memory.total_budget']}" in lines
    assert f"# scheduler.max_batch_size  # {path}; curio's key: {CURIO_KEYS['scheduler.max_batch_size']}" in lines
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: scheduler.max_batch_size {CURIO_KEYS['scheduler.max_batch_size']}"]


@pytest.mark.parametrize("env, config, message", [
    ({"CUZK_PIPELINE_FOO": "1"}, None, "environment: CUZK_PIPELINE_FOO is not a known variable"),
    ({"CUZK_MEMORY_HOST_CAP": "lots"}, None, 'environment: CUZK_MEMORY_HOST_CAP must be a size > 0'),
    ({}, "[pipeline]\nfoo = 1\n", "cuzk.toml: pipeline.foo is not a known key"),
    ({}, "[pipeline", "cuzk.toml: is not valid TOML"),
    ({}, '[memory]\ntotal_budget = "1G"\nhost_cap = "1G"\n', "cuzk.toml: memory.total_budget and memory.host_cap are "
                                                             "both set"),
    ({}, "[gpus]\ngpu_workers_per_device = 65\n", "cuzk.toml: gpus.gpu_workers_per_device must be an integer from 1 to 64"),
    ({"CUZK_LOGGING_LEVEL": "loud"}, None, "environment: CUZK_LOGGING_LEVEL must be one of"),
])
def test_config_show_errors_are_one_line(no_config_env, tmp_path, capsys, env, config, message):
    for var, value in env.items():
        no_config_env.setenv(var, value)
    args = ["config", "show"]
    if config is not None:
        (tmp_path / "cuzk.toml").write_text(config)
        args += ["--config", str(tmp_path / "cuzk.toml")]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("cuzk: error: ") and message in err


TIMELINE = [("a", 0, "queued", 0, 0), ("a", 0, "admitted", 0, 1), ("a", 0, "synthesis_start", 0.5, 1),
            ("a", 0, "synthesis_end", 1, 1), ("a", 0, "gpu_start", 1.5, 1), ("a", 0, "gpu_end", 2.5, 0),
            ("b", 0, "queued", 1, 0), ("b", 0, "admitted", 2.5, 2), ("b", 0, "synthesis_start", 2.5, 2),
            ("b", 0, "synthesis_end", 3, 2), ("b", 0, "gpu_start", 3, 2), ("b", 0, "gpu_end", 4, 0)]


def _timeline(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"t": 500 + t, "job": job, "partition": k, "event": event,
                                        "host_reserved": gib << 30}) + "\n" for job, k, event, t, gib in TIMELINE))
    return path


def test_timeline_summary(tmp_path, capsys):
    path = _timeline(tmp_path)
    assert main(["timeline", "summary", str(path)]) == 0
    assert capsys.readouterr().out == f"""\
{path}: 12 events over 4.000 s, 2 job(s)
GPU busy 2.000 s (50.0% of the span); at most 1 waiting for a GPU; peak host reserved 2.00 GiB
job              partitions proved  queued at    done at    seconds
a                         1      1      0.000      2.500      2.500
b                         1      1      1.000      4.000      3.000
"""


def test_timeline_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path, out = _timeline(tmp_path), tmp_path / "t.png"
    assert main(["timeline", "plot", str(path), "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"{out}: 12 events of {path}\n"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_timeline_errors_are_one_line(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text('{"t": 1}\n')
    assert main(["timeline", "summary", str(path)]) == 2
    assert capsys.readouterr().err == f'cuzk: error: {path}: line 1: has no "job"\n'
    assert main(["timeline", "plot", str(_timeline(tmp_path)), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"cuzk: error: --out {tmp_path}: is a directory\n"
