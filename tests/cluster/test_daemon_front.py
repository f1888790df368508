"""`cuzk daemon --cluster ADDRESS` (a real process) as the front of the local Ray cluster (conftest):
WindowPoSt jobs (2KiB, two sectors sealed by cuzk, cuzk's own parameters) submitted over curio's gRPC
contract are proved on the fleet and verify; /status and /metrics show every member and `cuzk fleet
status` prints them; the front SIGKILLed with jobs in flight and started again finds the same warm
provers and resumes the jobs from its journal: every one completes and verifies. A front in another
process, joined through Ray Client (ray://, the head's client server), proves on the same provers, and
again after one of them is SIGKILLed and restarted (cluster.client_front)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

import cuzk
from cluster.work import NODES, PROVER, until  # tests/ is on the path
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from post import test_proving
from service import test_post_daemon
from service.test_post_daemon import WINDOW, await_proof, window_request
from service.test_run import CLI, daemon, free_port, get, ready

sectors, rand, window_vanilla = test_proving.sectors, test_proving.rand, test_post_daemon.window_vanilla
pytestmark = pytest.mark.usefixtures("cluster")


@pytest.fixture(scope="module")
def client_port() -> int:
    """The head's Ray Client server (conftest): this module's front in another process joins through it."""
    return free_port()


def front(tmp_path, cluster, port: int) -> subprocess.Popen:
    return daemon(tmp_path, "--cluster", cluster.address, "--cluster-resource", PROVER, "--cluster-heartbeat", "0.5",
                  "--allow-setup", "--listen", f"unix://{tmp_path}/cuzk.sock", "--status-listen", f"127.0.0.1:{port}")


def fleet_doc(port: int) -> dict:
    code, body = get(port, "/status")
    assert code == 200
    return json.loads(body)


def check_window(proof: bytes, sectors, rand) -> None:
    pairs = [(s.sector_id, s.comm_r) for s in sectors]
    assert cuzk.verify_window_post(WINDOW.name, rand, pairs, proof)


def test_the_daemon_fronts_the_fleet_and_resumes_after_a_sigkill(tmp_path, cluster, sectors, rand, window_vanilla):
    port = free_port()
    proc = front(tmp_path, cluster, port)
    try:
        stub = ready(tmp_path / "cuzk.sock", proc, timeout=120)
        stub.SubmitProof(window_request("w-0", rand, window_vanilla), timeout=10)
        got = await_proof(stub, "w-0", 300)
        assert got.status == pb.AwaitProofResponse.COMPLETED, got.error_message
        check_window(got.proof, sectors, rand)

        fleet = until(lambda: (doc := fleet_doc(port)["fleet"])["counts"]["ready"] == NODES and doc, 30, "all ready")
        assert len(fleet["members"]) == NODES and fleet["proofs"] == 1
        assert {row["host"] for row in fleet["members"]} and all(row["pid"] for row in fleet["members"])
        code, metrics = get(port, "/metrics")
        assert code == 200 and f'cuzk_fleet_members{{state="ready"}} {NODES}.0' in metrics
        assert metrics.count("cuzk_fleet_member_up{") == NODES
        shown = subprocess.run([sys.executable, "-c", CLI, "fleet", "status", "--front", f"127.0.0.1:{port}", "--check"],
                               capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.count(" ready ") == NODES and f"{NODES} member(s): {NODES} ready" in shown.stdout
        pids = {row["member"]: row["pid"] for row in fleet["members"]}

        jobs = [f"w-{i}" for i in range(1, 7)]
        for job_id in jobs:
            stub.SubmitProof(window_request(job_id, rand, window_vanilla), timeout=10)
        until(lambda: any("proving" in job["partitions"] for job in fleet_doc(port)["live"]), 60, "a job on the fleet")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

        proc = front(tmp_path, cluster, port)
        stub = ready(tmp_path / "cuzk.sock", proc, timeout=120)
        for job_id in jobs:
            got = await_proof(stub, job_id, 300)
            assert got.status == pb.AwaitProofResponse.COMPLETED, (job_id, got.error_message)
            check_window(got.proof, sectors, rand)
        again = fleet_doc(port)["fleet"]
        assert {row["member"]: row["pid"] for row in again["members"]} == pids  # the same provers, warm
        assert again["restarts"] == 0 and again["failures"] == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()


def test_a_front_joined_through_ray_client_proves_and_rewarms_a_restarted_prover(cluster, client_port):
    run = subprocess.run([sys.executable, "-m", "cluster.client_front", f"ray://127.0.0.1:{client_port}"],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-4000:]
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["ready"] and seen["restarts"] == 1 and seen["state"] == "ready" and seen["proofs"] == 4, seen
