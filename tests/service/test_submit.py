"""SubmitProof's acknowledgment and the journal's states: a cold daemon process answers SubmitProof at
once (the circuit loads after the reply); queue positions of waiting jobs count down as the engine
admits the jobs ahead, and the journal says queued until the engine admits a job; without official
parameters (and srs.allow_setup off) a job fails naming the file, PreloadSRS is refused, and /status
says which circuits have official parameters."""
from __future__ import annotations

import subprocess
import sys
import time

import grpc
import numpy as np
import pytest

from cuzk.porep.params_cache import official_files, porep_stem
from cuzk.porep.registry import get_proof
from cuzk.porep.synthetic import synthetic_c1
from cuzk.service.circuits import circuit_lines
from cuzk.service.payload import wrap
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.status import status
from engine.test_engine import spec, tasks  # tests/ is on the path
from service.test_daemon import PROOF, start, stop
from service.test_run import CLI, ready



@pytest.fixture(scope="module")
def c1():
    return synthetic_c1(PROOF, prover_id=bytes(32), sector_id=11, ticket=b"\x05" * 32, seed=b"\x06" * 32,
                        rng=np.random.default_rng(11), progress=False)


def request(c1, n: int) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(request_id=f"porep-{n}", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=wrap(c1, n))


def test_submit_on_a_cold_daemon_process_answers_at_once(tmp_path, c1, monkeypatch):
    """A real daemon that has loaded no circuit: SubmitProof answers within 100 ms; the job then fails
    (no official parameters here, no setup allowed) with the file named, as AwaitProof shows."""
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path / "params"))
    sock = tmp_path / "cuzk.sock"
    proc = subprocess.Popen([sys.executable, "-c", CLI, "daemon", "--backend", "cpu", "--state-dir",
                             str(tmp_path / "state"), "--listen", f"unix://{sock}"], stderr=subprocess.PIPE, text=True)
    try:
        stub = ready(sock, proc)
        t = time.perf_counter()
        job_id = stub.SubmitProof(request(c1, 1), timeout=30).job_id
        seconds = time.perf_counter() - t
        got = stub.AwaitProof(pb.AwaitProofRequest(job_id=job_id, timeout_ms=120_000), timeout=180)
    finally:
        proc.terminate()
        proc.wait(60)
    assert seconds < 0.1, f"SubmitProof took {seconds * 1000:.0f} ms"
    assert got.status == pb.AwaitProofResponse.FAILED
    assert "OfficialParamsMissingError" in got.error_message and str(tmp_path / "params") in got.error_message
    assert "srs.allow_setup" in got.error_message
    log = (tmp_path / "state" / "daemon.log").read_text()
    assert "circuit porep-2k: no official parameters" in log and "its jobs fail unless srs.allow_setup" in log


def test_queue_positions_count_down_as_jobs_ahead_are_admitted(tmp_path, c1):
    """With one partition in flight (pipeline.enabled = false), three jobs behind a running one: their
    positions are 0, 1, 2; the last one's position, asked again by resubmitting its request_id,
    counts down to 0; each job is journaled queued until the engine admits it, then running."""
    service, srv, channel, stub = start(tmp_path, enabled=False)
    engine = service.engine
    # the daemon's PoRep adapter swapped for the engine tests' small circuit, each partition 0.6 s to synthesize
    engine.submit_porep = lambda c1, priority, job_id: engine.submit(spec(), tasks(1, 1, delay=0.6), priority, job_id)
    try:
        first = stub.SubmitProof(request(c1, 1), timeout=10)
        deadline = time.monotonic() + 60
        while service.journal.get(first.job_id).state != "running" and time.monotonic() < deadline:
            time.sleep(0.02)
        positions = [stub.SubmitProof(request(c1, n), timeout=10).queue_position for n in (2, 3, 4)]
        pending = stub.GetStatus(pb.GetStatusRequest(), timeout=10).queues[0].pending
        seen, states = [], set()
        while time.monotonic() < deadline:
            seen.append(stub.SubmitProof(request(c1, 4), timeout=10).queue_position)
            states.add(service.journal.get("porep-4").state)
            if service.journal.get("porep-4").state != "queued":
                break
            time.sleep(0.05)
        for n in (1, 2, 3, 4):
            got = stub.AwaitProof(pb.AwaitProofRequest(job_id=f"porep-{n}", timeout_ms=60_000), timeout=90)
            assert got.status == pb.AwaitProofResponse.COMPLETED, got.error_message
    finally:
        stop(service, srv, channel)
    assert positions == [0, 1, 2] and pending == 3
    assert [p for i, p in enumerate(seen) if i == 0 or p != seen[i - 1]] == [2, 1, 0], seen
    assert "queued" in states


def test_without_official_parameters_jobs_fail_and_preload_is_refused(tmp_path, c1, monkeypatch):
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path / "params"))
    service, srv, channel, stub = start(tmp_path, allow_setup=False)
    try:
        job_id = stub.SubmitProof(request(c1, 5), timeout=10).job_id
        got = stub.AwaitProof(pb.AwaitProofRequest(job_id=job_id, timeout_ms=60_000), timeout=90)
        with pytest.raises(grpc.RpcError) as info:
            stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-2k"), timeout=30)
        doc = status(service)
    finally:
        stop(service, srv, channel)
    wanted = official_files(porep_stem(get_proof(PROOF).sector_size)).params
    assert wanted.parent == tmp_path / "params"
    assert got.status == pb.AwaitProofResponse.FAILED and str(wanted) in got.error_message
    assert "FIL_PROOFS_PARAMETER_CACHE" in got.error_message and "srs.allow_setup" in got.error_message
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION and str(wanted) in info.value.details()
    two = next(c for c in doc["circuits"] if c["circuit_id"] == "porep-2k")
    assert two == {"circuit_id": "porep-2k", "kind": "porep", "proof": "StackedDrg2KiBV1_1", "official": False,
                   "params": str(wanted), "resident": False, "allow_setup": False}
    assert circuit_lines([dict(two, official=True)]) == [f"circuit porep-2k: official parameters {wanted}"]
