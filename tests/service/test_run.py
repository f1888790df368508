"""`cuzk daemon` as a real process: it starts, answers over its unix socket and stops with exit 0 on
SIGTERM; each start-up failure (bad configuration, the state directory locked by another daemon,
the address in use, no GPU for a CUDA daemon, a preloaded circuit's parameters missing or
unreadable, a Ray cluster that cannot be reached) gives its own exit code and a line in the log file
and on stderr."""
from __future__ import annotations

import json
import os
import signal
import socket
import urllib.error
import urllib.request
import subprocess
import sys
import time

import grpc
import pytest

from cuzk.service.daemon import GRPC_OPTIONS
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.proto.cuzk.v1 import proving_pb2_grpc as pb_grpc
from cuzk.service.run import EXIT_CONFIG, EXIT_ENGINE, EXIT_LISTEN, EXIT_LOCKED, EXIT_PARAMS

CLI = "import sys; from cuzk.cli import main; sys.exit(main())"


def daemon(tmp_path, *args: str, state: str = "state") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, "daemon", "--backend", "cpu", "--state-dir",
                             str(tmp_path / state), *args], stderr=subprocess.PIPE, text=True)


def ready(path, proc: subprocess.Popen, timeout: float = 60) -> pb_grpc.ProvingEngineStub:
    deadline = time.monotonic() + timeout
    channel = grpc.insecure_channel(f"unix://{path}", options=GRPC_OPTIONS)
    stub = pb_grpc.ProvingEngineStub(channel)
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            stub.GetStatus(pb.GetStatusRequest(), timeout=1)
            return stub
        except grpc.RpcError:
            time.sleep(0.2)
    raise AssertionError("the daemon did not become ready")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_serves_then_stops_on_sigterm_and_refuses_a_second_daemon(tmp_path):
    sock, port = tmp_path / "cuzk.sock", free_port()
    proc = daemon(tmp_path, "--listen", f"unix://{sock}", "--status-listen", f"127.0.0.1:{port}")
    try:
        stub = ready(sock, proc)
        assert stub.GetStatus(pb.GetStatusRequest(), timeout=5).total_proofs_completed == 0
        deadline = time.monotonic() + 30
        while get(port, "/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert get(port, "/readyz") == (200, "ready\n") and get(port, "/healthz") == (200, "ok\n")
        code, body = get(port, "/status")
        doc = json.loads(body)
        assert code == 200 and doc["ready"] and doc["jobs"]["queued"] == 0 and doc["memory"]["host_budget_bytes"] > 0
        code, body = get(port, "/metrics")
        assert code == 200 and "cuzk_requests_rejected_total" in body and "cuzk_host_budget_bytes" in body
        assert get(port, "/nope")[0] == 404
        second = daemon(tmp_path, "--listen", f"unix://{tmp_path}/other.sock")
        assert second.wait(60) == EXIT_LOCKED
        assert "holds the state directory" in second.stderr.read()
        assert "holds the state directory" in (tmp_path / "state" / "daemon.log").read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    log = (tmp_path / "state" / "daemon.log").read_text()
    assert "ready: listening" in log and "stopped" in log


def test_a_bad_configuration_and_a_busy_port_each_have_their_exit_code(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[pipeline]\nmax_parallel_synthesis = 0\n")
    proc = daemon(tmp_path, "--listen", "127.0.0.1:0", "--config", str(bad))
    assert proc.wait(60) == EXIT_CONFIG
    err = proc.stderr.read()
    assert "max_parallel_synthesis" in err and "max_parallel_synthesis" in (tmp_path / "state" / "daemon.log").read_text()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = daemon(tmp_path, "--listen", f"127.0.0.1:{port}", state="other")
        assert proc.wait(60) == EXIT_LISTEN
        assert f"127.0.0.1:{port}" in proc.stderr.read()


def test_no_gpu_for_a_cuda_daemon_has_its_exit_code(tmp_path):
    from conftest import _gpu_present

    if _gpu_present():
        pytest.skip("this machine has a GPU")
    proc = subprocess.Popen([sys.executable, "-c", CLI, "daemon", "--backend", "cuda", "--state-dir", str(tmp_path / "s"),
                             "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    assert proc.wait(60) == EXIT_ENGINE
    assert "CUDA GPU" in proc.stderr.read() and "CUDA GPU" in (tmp_path / "s" / "daemon.log").read_text()


def test_preloading_a_circuit_without_readable_parameters_has_its_exit_code(tmp_path):
    """--preload checks the circuit's parameter files before the daemon is ready: none at all, or one
    that cannot be read (a directory where the .params file belongs): exit 7 naming the file; an
    unknown circuit id: a configuration error."""
    from cuzk.porep.params_cache import porep_stem

    params = tmp_path / "params"
    params.mkdir()
    env = {**os.environ, "FIL_PROOFS_PARAMETER_CACHE": str(params)}

    def start(state: str, circuit: str) -> tuple[int, str, str]:
        proc = subprocess.Popen([sys.executable, "-c", CLI, "daemon", "--backend", "cpu", "--state-dir",
                                 str(tmp_path / state), "--listen", "127.0.0.1:0", "--preload", circuit],
                                stderr=subprocess.PIPE, text=True, env=env)
        code = proc.wait(120)
        return code, proc.stderr.read(), (tmp_path / state / "daemon.log").read_text()

    stem = porep_stem(2048)
    code, err, log = start("none", "porep-2k")
    assert code == EXIT_PARAMS and f"{stem}.params" in err and "--preload porep-2k" in log
    assert "srs.allow_setup" in err  # cuzk's own parameters are not looked for without it
    (params / f"{stem}.params").mkdir()
    (params / f"{stem}.vk").write_bytes(b"x")
    code, err, log = start("dir", "porep-2k")
    assert code == EXIT_PARAMS and "a directory where a cache file belongs" in err and f"{stem}.params" in log
    code, err, _ = start("bogus", "porep-1t")
    assert code == EXIT_CONFIG and "porep-1t" in err


def test_an_unreachable_cluster_has_the_engines_exit_code(tmp_path):
    pytest.importorskip("ray")
    port = free_port()
    proc = daemon(tmp_path, "--cluster", f"127.0.0.1:{port}", "--listen", f"unix://{tmp_path}/cuzk.sock")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_ENGINE
    assert f"--cluster 127.0.0.1:{port}: cannot reach 127.0.0.1:{port}" in err
    assert f"cannot reach 127.0.0.1:{port}" in (tmp_path / "state" / "daemon.log").read_text()
