"""`cuzk daemon`'s configuration: curio's command line (-c/--config with its default file, -l/--listen,
--status-listen, --log-level, --allow-setup, --state-dir's default) and cuzk's --vram-budget, the
flags folded into the EngineConfig the engine gets, and any bad configuration (file, variable or
flag) exiting EXIT_CONFIG with one line naming the key before anything is bound."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from cuzk.cli import build_parser
from cuzk.engine.config import DaemonConfig, EngineConfig, LoggingConfig
from cuzk.service import run as run_module
from cuzk.service.daemon import GRPC_OPTIONS
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.proto.cuzk.v1 import proving_pb2_grpc as pb_grpc
from cuzk.service.run import EXIT_CONFIG, DaemonOptions, StartupError

CLI = "import sys; from cuzk.cli import main; sys.exit(main())"


@pytest.fixture
def root_level():
    """The root logger's level, restored after a test that lets the daemon set it."""
    level = logging.getLogger().level
    yield
    logging.getLogger().setLevel(level)


@pytest.fixture
def clean_env(monkeypatch):
    for var in [v for v in os.environ if v.startswith(("CUZK_DAEMON_", "CUZK_LOGGING_", "CUZK_SRS_", "CUZK_MEMORY_"))]:
        monkeypatch.delenv(var)
    return monkeypatch


def test_curios_command_line_parses():
    args = build_parser().parse_args(["daemon", "-c", "/data/zk/cuzk.toml"])
    assert (args.config, args.listen, args.status_listen, args.log_level, args.allow_setup, args.state_dir) == (
        "/data/zk/cuzk.toml", None, None, None, False, "/var/lib/cuzk")
    args = build_parser().parse_args(["daemon", "--config", "c.toml", "-l", "0.0.0.0:9820", "--status-listen",
                                      "0.0.0.0:9821", "--log-level", "debug", "--allow-setup", "--state-dir", "s"])
    assert (args.config, args.listen, args.status_listen, args.log_level, args.allow_setup, args.state_dir) == (
        "c.toml", "0.0.0.0:9820", "0.0.0.0:9821", "debug", True, "s")
    assert build_parser().parse_args(["daemon"]).vram_budget is None
    assert build_parser().parse_args(["daemon", "--vram-budget", "24GiB"]).vram_budget == "24GiB"
    assert DaemonOptions().state_dir == Path("/var/lib/cuzk") == run_module.DEFAULT_STATE_DIR


def test_the_default_config_file_is_read_when_it_exists(tmp_path, monkeypatch):
    monkeypatch.setattr(run_module, "DEFAULT_CONFIG", tmp_path / "zk" / "cuzk.toml")
    assert run_module._config_file(None) is None
    assert run_module._config_file("mine.toml") == "mine.toml"
    (tmp_path / "zk").mkdir()
    (tmp_path / "zk" / "cuzk.toml").write_text("")
    assert run_module._config_file(None) == str(tmp_path / "zk" / "cuzk.toml")
    monkeypatch.setattr(run_module, "DEFAULT_CONFIG", tmp_path / "zk" / "cuzk.toml" / "below-a-file")
    assert run_module._config_file(None) is None


def test_the_flags_are_folded_into_the_engine_config(tmp_path, clean_env, monkeypatch, root_level, caplog):
    monkeypatch.setattr(run_module, "DEFAULT_CONFIG", tmp_path / "absent.toml")
    path = tmp_path / "cuzk.toml"
    path.write_text('[daemon]\nlisten = "0.0.0.0:9820"\nstatus_listen = "0.0.0.0:9821"\n[logging]\nlevel = "warn"\n'
                    "[srs]\nallow_setup = false\n")
    with caplog.at_level(logging.INFO, logger="cuzk.daemon"):
        config = run_module._configuration(DaemonOptions(config=str(path)))
    assert (config.daemon, config.logging, config.srs.allow_setup) == (
        DaemonConfig("0.0.0.0:9820", "0.0.0.0:9821"), LoggingConfig("warn"), False)
    assert logging.getLogger().level == logging.WARNING
    assert f"configuration: {path}" in caplog.messages
    caplog.clear()
    clean_env.setenv("CUZK_DAEMON_STATUS_LISTEN", "127.0.0.1:0")
    with caplog.at_level(logging.INFO, logger="cuzk.daemon"):
        config = run_module._configuration(DaemonOptions(listen="unix:///tmp/c.sock", config=str(path),
                                                         allow_setup=True, log_level="DEBUG"))
    assert (config.daemon, config.logging, config.srs.allow_setup) == (
        DaemonConfig("unix:///tmp/c.sock", "127.0.0.1:0"), LoggingConfig("debug"), True)
    assert logging.getLogger().level == logging.DEBUG
    assert caplog.messages == [f"configuration: {path}; overridden by CUZK_DAEMON_STATUS_LISTEN, --listen, "
                               "--log-level, --allow-setup"]
    caplog.clear()
    clean_env.delenv("CUZK_DAEMON_STATUS_LISTEN")
    with caplog.at_level(logging.INFO, logger="cuzk.daemon"):
        config = run_module._configuration(DaemonOptions(status_listen=""))
    assert config == EngineConfig.default()
    assert caplog.messages == [f"configuration: the defaults (no --config, no {tmp_path / 'absent.toml'}); "
                               "overridden by --status-listen"]


def test_vram_budget_overrides_memory_vram_budget(tmp_path, clean_env, monkeypatch, root_level, caplog):
    """--vram-budget sets memory.vram_budget over the file and $CUZK_MEMORY_VRAM_BUDGET; "" lifts the cap."""
    monkeypatch.setattr(run_module, "DEFAULT_CONFIG", tmp_path / "absent.toml")
    path = tmp_path / "cuzk.toml"
    path.write_text('[memory]\nvram_budget = "8GiB"\n')
    assert run_module._configuration(DaemonOptions(config=str(path))).memory.vram_budget == 8 << 30
    clean_env.setenv("CUZK_MEMORY_VRAM_BUDGET", "12GiB")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cuzk.daemon"):
        config = run_module._configuration(DaemonOptions(config=str(path), vram_budget="24GiB"))
    assert config.memory.vram_budget == 24 << 30
    assert caplog.messages == [f"configuration: {path}; overridden by CUZK_MEMORY_VRAM_BUDGET, --vram-budget"]
    assert run_module._configuration(DaemonOptions(config=str(path), vram_budget="")).memory.vram_budget is None


@pytest.mark.parametrize("options, message", [
    (DaemonOptions(listen="nowhere"), 'command line: --listen must be unix:///PATH or HOST:PORT (port 0-65535), '
                                      'got "nowhere"'),
    (DaemonOptions(status_listen="unix:///s"), 'command line: --status-listen must be "" or HOST:PORT (port 0-65535), '
                                               'got "unix:///s"'),
    (DaemonOptions(log_level="loud"), 'command line: --log-level must be one of trace, debug, info, warn, warning, '
                                      'error, got "loud"'),
    (DaemonOptions(config="a\0b"), '"a\\u0000b": is not a path (it contains a NUL byte)'),
    (DaemonOptions(vram_budget="lots"), 'command line: --vram-budget must be "" (no cap) or a size above 1.00 GiB and '
                                        'below 2^64 (bytes, or a number with K, M, G or T, e.g. "16GiB"), got "lots"'),
])
def test_a_bad_flag_is_a_configuration_error(clean_env, root_level, options, message):
    with pytest.raises(StartupError) as info:
        run_module._configuration(options)
    assert (info.value.code, str(info.value)) == (EXIT_CONFIG, message)


def _daemon(tmp_path, *args: str, state: str = "state", env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, "daemon", "--backend", "cpu", "--state-dir",
                             str(tmp_path / state), *args], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


@pytest.mark.parametrize("text, named", [
    ("[memory]\nadmission_timeout_s = 1e300\n", "memory.admission_timeout_s must be a number of seconds"),
    ("[memory]\nadmission_timeout_s = " + "9" * 400 + "\n", "memory.admission_timeout_s must be a number of seconds"),
    ('[memory]\nhost_cap = "99999999T"\n', "memory.host_cap must be a size > 0 and below 2^64"),
    ('[srs]\nparam_cache = "/data/\\u0000zk"\n', "srs.param_cache must be a directory path"),
    ("[gpus]\ngpu_workers_per_device = 1000\n", "gpus.gpu_workers_per_device must be an integer from 1 to 64"),
    ("[pipeline]\nwitness_batch = 100000\n", "pipeline.witness_batch must be an integer from 1 to 4096"),
    ('[memory]\ntotal_budget = "64GiB"\nhost_cap = "64GiB"\n', "memory.total_budget and memory.host_cap are both set"),
    ('[daemon]\nlisten = "nowhere"\n', "daemon.listen must be unix:///PATH or HOST:PORT"),
    ('[logging]\nlevel = "loud"\n', "logging.level must be one of"),
    ("[daemon]\nlisten_addr = 1\n", "daemon.listen_addr is not a known key"),
    ("a = " + "[" * 1000 + "]" * 1000 + "\n", "is not valid TOML: nested too deeply"),
], ids=["seconds-1e300", "seconds-400-digits", "size-2^64", "nul-path", "gpu-workers", "witness-batch", "conflict",
        "listen", "level", "unknown-key", "nesting"])
def test_a_bad_configuration_exits_2_naming_the_key(tmp_path, text, named):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    proc = _daemon(tmp_path, "-c", str(bad), "--listen", "127.0.0.1:0")
    assert proc.wait(120) == EXIT_CONFIG
    err = proc.stderr.read()
    assert "Traceback" not in err, err
    assert err.splitlines()[-1].startswith(f"cuzk: {bad}: {named}"), err
    assert named in (tmp_path / "state" / "daemon.log").read_text()
    assert not (tmp_path / "state" / "daemon.lock").exists()  # failed before taking the state directory


@pytest.mark.parametrize("args, env, named", [
    (["--listen", "nowhere"], {}, "command line: --listen must be"),
    (["--log-level", "loud"], {}, "command line: --log-level must be one of"),
    (["--status-listen", "9821"], {}, "command line: --status-listen must be"),
    (["--vram-budget", "0"], {}, "command line: --vram-budget must be"),
    (["-c", "/nonexistent/cuzk.toml"], {}, "/nonexistent/cuzk.toml: cannot be read (No such file or directory)"),
    ([], {"CUZK_DAEMON_LISTEN": "nowhere"}, "environment: CUZK_DAEMON_LISTEN must be"),
    ([], {"CUZK_SCHEDULER_MAX_BATCH_SIZE": "-1"}, "environment: CUZK_SCHEDULER_MAX_BATCH_SIZE must be"),
], ids=["listen", "log-level", "status-listen", "vram-budget", "missing-file", "env-listen", "env-scheduler"])
def test_a_bad_flag_or_variable_exits_2_naming_it(tmp_path, args, env, named):
    proc = _daemon(tmp_path, *args, env=env)
    assert proc.wait(120) == EXIT_CONFIG
    err = proc.stderr.read()
    assert "Traceback" not in err and err.splitlines()[-1].startswith(f"cuzk: {named}"), err


def test_curios_file_serves_on_its_listen_address(tmp_path):
    """A curio-style file gives the daemon its addresses; --allow-setup and --log-level apply; the log
    says where the configuration came from and warns of each key cuzk ignores."""
    sock = tmp_path / "cuzk.sock"
    path = tmp_path / "cuzk.toml"
    path.write_text(f'[daemon]\nlisten = "unix://{sock}"\n[memory]\ntotal_budget = "auto"\n[scheduler]\n'
                    "max_batch_size = 1\n[pipeline]\nmax_parallel_synthesis = 1\n")
    proc = _daemon(tmp_path, "-c", str(path), "--allow-setup", "--log-level", "debug")
    try:
        stub = pb_grpc.ProvingEngineStub(grpc.insecure_channel(f"unix://{sock}", options=GRPC_OPTIONS))
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the daemon did not become ready"
            try:
                stub.GetStatus(pb.GetStatusRequest(), timeout=1)
                break
            except grpc.RpcError:
                time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    log = (tmp_path / "state" / "daemon.log").read_text()
    assert f"configuration: {path}; overridden by --log-level, --allow-setup" in log
    assert f"{path}: scheduler.max_batch_size has no effect in cuzk" in log
    assert f"ready: listening on unix://{sock}" in log
