"""The daemon's /status and /metrics with the engine's workers, queues and devices and the daemon's
restarts: a real daemon process while a 2KiB proof runs on its one CPU "GPU" worker (killed then,
with its synthesis process, by its process group: the proof would take a minute), a daemon SIGKILLed
under `cuzk supervise` and restarted, an in-process service's idle state through GetMetrics, and a
device's VRAM figures (budget, cap, CuPy's pool) as gauges: from a backend that reports set figures,
and on a GPU from a real capped one."""
from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

import cuzk.backend
from cuzk.backend.cpu import CpuBackend
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import MemoryConfig, PipelineConfig
from cuzk.engine.engine import Engine
from cuzk.porep.synthetic import synthetic_c1
from cuzk.service.daemon import ProvingService
from cuzk.service.journal import Journal
from cuzk.service.payload import wrap
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.status import StatusServer, status
from service.test_daemon import PROOF, start, stop  # tests/ is on the path
from service.test_run import CLI, free_port, get, ready

IDLE_QUEUE = {"loading": 0, "pending": 0, "synthesis": 0, "gpu": 0}
GIB = 1 << 30
# a capped GPU's figures, as cuzk.backend.cuda's memory_stats gives them
VRAM = {"vram_total_bytes": 80 * GIB, "vram_used_bytes": 10 * GIB, "vram_reserved_bytes": 2 * GIB,
        "vram_budget_bytes": 23 * GIB, "vram_cap_bytes": 24 * GIB, "vram_pool_bytes": 5 * GIB,
        "vram_pool_peak_bytes": 7 * GIB, "pinned_bytes": 47 * GIB, "h2d_stream_bytes": 560 * 10**9}


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


class Reporting(CpuBackend):
    """The CPU backend reporting a GPU's memory, the keys of cuzk.backend.cuda's memory_stats with
    figures a test sets: a device whose VRAM the daemon exports, on a machine without a GPU."""

    def __init__(self, stats: dict[str, int]) -> None:
        super().__init__()
        self.stats = stats

    def memory_stats(self) -> dict:
        return {"name": "test GPU", **self.stats}


def gauges(text: str) -> dict[tuple[str, str], float]:
    """The per-device gauges of Prometheus text: (name, device) -> value."""
    return {(s.name, s.labels["device"]): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if "device" in s.labels}


def served(service: ProvingService) -> tuple[dict, str]:
    """/status (parsed) and /metrics of `service`, through its HTTP port."""
    http = StatusServer(service, "127.0.0.1:0")
    try:
        (code, doc), (code2, text) = get(http.port, "/status"), get(http.port, "/metrics")
    finally:
        http.close()
    assert code == code2 == 200
    return json.loads(doc), text


def test_a_devices_vram_in_status_and_metrics(tmp_path):
    """Each device's VRAM figures (Engine.stats, from its backend's memory_stats) are in /status and,
    as cuzk_<key> gauges labelled by device and read at each scrape, in /metrics: the budget the prover
    plans within, the cap, CuPy's pool and its high-water mark beside total, used and reserved."""
    backend = Reporting(dict(VRAM))
    engine = Engine(EngineConfig(pipeline=PipelineConfig(max_parallel_synthesis=1, gpu_queue_depth=1)),
                    backend=[backend], budget=MemoryBudget(16 * GIB, "test RAM"))
    service = ProvingService(engine, Journal(tmp_path / "state"))
    try:
        doc, text = served(service)
        backend.stats.update(vram_pool_bytes=6 * GIB, vram_pool_peak_bytes=9 * GIB)
        later = served(service)[1]
    finally:
        service.close()
        engine.close()
        service.journal.close()
    assert doc["devices"] == [{"device": "cpu:0", "workers": 2, "busy": 0, "circuits": [], "fault": None,
                               "name": "test GPU", **VRAM}]
    assert gauges(text) == {(f"cuzk_{key}", "cpu:0"): float(value) for key, value in VRAM.items()}
    assert "# HELP cuzk_vram_budget_bytes The VRAM budget the prover plans within" in text.splitlines()
    assert "# HELP cuzk_vram_cap_bytes The VRAM cap, 0 without one" in text.splitlines()
    assert gauges(later)[("cuzk_vram_pool_bytes", "cpu:0")] == 6 * GIB
    assert gauges(later)[("cuzk_vram_pool_peak_bytes", "cpu:0")] == 9 * GIB


@pytest.mark.gpu
def test_a_capped_gpu_in_status_and_metrics(tmp_path, monkeypatch):
    """A GPU engine with memory.vram_budget = 4 GiB: its device's budget (3 GiB: the cap less the CUDA
    context's 1 GiB) and cap reach /status and /metrics, with CuPy's pool and its peak (the pool's
    limit restored to none after)."""
    import cupy

    from cuzk.backend.cuda import CudaBackend

    monkeypatch.setattr(cuzk.backend, "_cuda_backend_on", functools.cache(lambda d: CudaBackend(device=d)))
    monkeypatch.delenv("CUZK_VRAM_BUDGET", raising=False)
    config = EngineConfig(memory=MemoryConfig(vram_budget=4 * GIB))
    try:
        engine = Engine(config, backend="cuda", budget=MemoryBudget(16 * GIB, "test RAM"))
        service = ProvingService(engine, Journal(tmp_path / "state"))
        try:
            doc, text = served(service)
        finally:
            service.close()
            engine.close()
            service.journal.close()
    finally:
        for ordinal in range(cupy.cuda.runtime.getDeviceCount()):
            with cupy.cuda.Device(ordinal):
                cupy.get_default_memory_pool().set_limit(size=0)
    device = doc["devices"][0]
    assert (device["vram_budget_bytes"], device["vram_cap_bytes"]) == (3 * GIB, 4 * GIB)
    assert 0 <= device["vram_pool_bytes"] <= device["vram_pool_peak_bytes"]
    found = gauges(text)
    name = device["device"]
    assert found[("cuzk_vram_budget_bytes", name)] == 3 * GIB and found[("cuzk_vram_cap_bytes", name)] == 4 * GIB
    assert {key for key, _ in found} == {f"cuzk_{key}" for key in VRAM}
