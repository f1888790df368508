"""The daemon's /status and /metrics with the engine's workers, queues and devices and the daemon's
restarts: a real daemon process while a 2KiB proof runs on its one CPU "GPU" worker (killed then,
with its synthesis process, by its process group: the proof would take a minute), a daemon SIGKILLed
under `cuzk supervise` and restarted, and an in-process service's idle state through GetMetrics."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from cuzk.porep.synthetic import synthetic_c1
from cuzk.service.payload import wrap
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.status import status
from service.test_daemon import PROOF, start, stop  # tests/ is on the path
from service.test_run import CLI, free_port, get, ready

IDLE_QUEUE = {"loading": 0, "pending": 0, "synthesis": 0, "gpu": 0}


@pytest.fixture(scope="module")
def c1():
    return synthetic_c1(PROOF, prover_id=bytes(32), sector_id=9, ticket=b"\x03" * 32, seed=b"\x04" * 32,
                        rng=np.random.default_rng(9), progress=False)


def poll(port: int, ok, timeout: float = 30) -> dict:
    """The first /status document that satisfies ok (the daemon may be starting, or restarting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            code, body = get(port, "/status")
            if code == 200 and ok(doc := json.loads(body)):
                return doc
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("/status never matched")


def test_a_running_proof_in_status_and_metrics(tmp_path, c1):
    sock, port, config = tmp_path / "cuzk.sock", free_port(), tmp_path / "cuzk.toml"
    config.write_text("[pipeline]\nmax_parallel_synthesis = 1\n[gpus]\ngpu_workers_per_device = 1\n"
                      "[srs]\nallow_setup = true\n")
    proc = subprocess.Popen([sys.executable, "-c", CLI, "daemon", "--backend", "cpu", "--state-dir", str(tmp_path / "state"),
                             "--listen", f"unix://{sock}", "--status-listen", f"127.0.0.1:{port}", "--config", str(config)],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stub = ready(sock, proc)
        req = pb.SubmitProofRequest(request_id="porep-9-5", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=wrap(c1, 9))
        stub.SubmitProof(req, timeout=30)  # answered at once; the circuit loads (a setup on a cold cache) after
        doc = poll(port, lambda d: any("proving" in job["partitions"] for job in d["live"]), timeout=1200)
        code, metrics = get(port, "/metrics")
    finally:
        with contextlib.suppress(ProcessLookupError):  # the daemon, its synthesis process and resource tracker
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert doc["live"] == [{"job_id": "porep-9-5", "partitions": ["proving"]}] and doc["jobs"]["running"] == 1
    assert doc["workers"] == {"synthesis": {"configured": 1, "busy": 0}, "gpu": {"configured": 1, "busy": 1}}
    assert doc["queue"] == IDLE_QUEUE
    assert len(doc["resident_circuits"]) == 1 and 0 < doc["memory"]["host_used_bytes"] < doc["memory"]["host_budget_bytes"]
    assert doc["devices"] == [{"device": "cpu:0", "workers": 1, "busy": 1, "circuits": doc["resident_circuits"],
                               "fault": None}]  # no VRAM on the CPU
    assert doc["restarts"] == {"count": 0, "last_exit": None}
    assert code == 200
    for line in ('cuzk_workers{kind="gpu",state="busy"} 1.0', 'cuzk_workers{kind="synthesis",state="configured"} 1.0',
                 'cuzk_queue_depth{stage="pending"} 0.0', 'cuzk_queue_depth{stage="gpu"} 0.0',
                 'cuzk_jobs{state="running"} 1.0', "cuzk_daemon_restarts_total 0.0"):
        assert line in metrics.splitlines(), line
    assert "cuzk_vram" not in metrics


def test_restarts_count_the_daemon_starts_and_give_the_last_exit(tmp_path):
    state, sock, port = tmp_path / "state", tmp_path / "cuzk.sock", free_port()
    sup = subprocess.Popen([sys.executable, "-c", CLI, "supervise", "--state-dir", str(state), "--backoff", "0.1", "--",
                            sys.executable, "-c", CLI, "daemon", "--backend", "cpu", "--state-dir", str(state),
                            "--listen", f"unix://{sock}", "--status-listen", f"127.0.0.1:{port}"],
                           stderr=subprocess.PIPE, text=True)
    try:
        first = poll(port, lambda d: d["ready"])
        pid = int((state / "daemon.lock").read_text())
        os.kill(pid, signal.SIGKILL)
        second = poll(port, lambda d: d["ready"] and d["restarts"]["count"] == 1)
        metrics = get(port, "/metrics")[1]
    finally:
        sup.send_signal(signal.SIGTERM)
    assert sup.wait(60) == 0
    assert first["restarts"] == {"count": 0, "last_exit": None}
    last = second["restarts"]["last_exit"]
    assert last["pid"] == pid and last["signal"] == signal.SIGKILL and last["code"] is None
    assert "SIGKILL" in last["reason"] and last["at"] > 0
    assert "cuzk_daemon_restarts_total 1.0" in metrics.splitlines()


def test_an_idle_service_through_get_metrics(tmp_path):
    service, srv, channel, stub = start(tmp_path)
    try:
        text = stub.GetMetrics(pb.GetMetricsRequest(), timeout=10).prometheus_text
        doc = status(service)
    finally:
        stop(service, srv, channel)
    assert doc["workers"] == {"synthesis": {"configured": 1, "busy": 0}, "gpu": {"configured": 2, "busy": 0}}
    assert doc["queue"] == IDLE_QUEUE and doc["restarts"] == {"count": 0, "last_exit": None}  # no start journaled
    for line in ('cuzk_workers{kind="gpu",state="configured"} 2.0', 'cuzk_queue_depth{stage="synthesis"} 0.0',
                 "cuzk_daemon_restarts_total 0.0"):
        assert line in text.splitlines(), line
