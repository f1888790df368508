"""The proving service (cuzk.service.daemon) through a real gRPC server and a client built only from
the .proto's generated stubs: malformed requests (1,000 of them) are each refused by the call (a bad
field) or fail their job (a bad payload) with a typed message, and the server stays up; the queue
positions of waiting jobs count down; a job whose official parameters are missing fails naming the
file (no setup without srs.allow_setup); unknown jobs are NOT_FOUND; a request_id already journaled
attaches to its job and a finished one answers from the journal; status and metrics; a 2KiB proof
through Prove, answered again after a restart from the journal (slow); a job the closing engine
cancels stays unfinished in the journal, a client's cancel is recorded."""
from __future__ import annotations

import base64
import json
import threading
import time

import grpc
import numpy as np
import pytest

from cuzk import errors
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import MemoryConfig, PipelineConfig, SrsConfig
from cuzk.engine.engine import Engine, Job, Priority
from cuzk.engine.porep import porep_spec_of
from cuzk.porep.synthetic import synthetic_c1
from cuzk.service.daemon import GRPC_OPTIONS, ProvingService, _Live, server
from cuzk.service.journal import Journal
from cuzk.service.payload import wrap
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.proto.cuzk.v1 import proving_pb2_grpc as pb_grpc

PROOF = "StackedDrg2KiBV1_1"


@pytest.fixture(scope="module")
def c1():
    return synthetic_c1(PROOF, prover_id=bytes(32), sector_id=5, ticket=b"\x01" * 32, seed=b"\x02" * 32,
                        rng=np.random.default_rng(3), progress=False)


def start(tmp_path, name: str = "state", allow_setup: bool = True, enabled: bool = True):
    config = EngineConfig(pipeline=PipelineConfig(max_parallel_synthesis=1, gpu_queue_depth=1, enabled=enabled),
                          memory=MemoryConfig(admission_timeout_s=60), srs=SrsConfig(allow_setup=allow_setup))
    engine = Engine(config, backend="cpu", budget=MemoryBudget(16 << 30, "test RAM"))
    service = ProvingService(engine, Journal(tmp_path / name))
    srv, _ = server(service, f"unix://{tmp_path}/cuzk.sock")
    channel = grpc.insecure_channel(f"unix://{tmp_path}/cuzk.sock", options=GRPC_OPTIONS)
    return service, srv, channel, pb_grpc.ProvingEngineStub(channel)


def stop(service, srv, channel) -> None:
    channel.close()
    srv.stop(None)
    service.close()
    service.engine.close()
    service.journal.close()


@pytest.fixture
def daemon(tmp_path):
    service, srv, channel, stub = start(tmp_path)
    yield service, stub
    stop(service, srv, channel)


def malformed(c1, rng: np.random.Generator, n: int):
    """n SubmitProofRequests that must each be refused as INVALID_ARGUMENT."""
    good = wrap(c1, 5)
    plain = c1.dumps()
    obj = json.loads(good)
    cases = []
    for i in range(n):
        r = i % 10
        req = pb.SubmitProofRequest(request_id=f"bad-{i}", proof_kind=pb.POREP_SEAL_COMMIT)
        if r == 0:
            req.vanilla_proof = bytes(rng.integers(0, 256, int(rng.integers(1, 400)), dtype=np.uint8))
        elif r == 1:
            req.vanilla_proof = good[:int(rng.integers(1, len(good) - 1))]  # truncated wrapper JSON
        elif r == 2:  # truncated base64 inside an intact wrapper
            cut = dict(obj, Phase1Out=obj["Phase1Out"][:int(rng.integers(1, len(obj["Phase1Out"]) - 4)) | 1])
            req.vanilla_proof = json.dumps(cut).encode()
        elif r == 3:  # fields of the wrong type
            key = ["SectorNum", "SectorSize", "Phase1Out"][i % 3]
            req.vanilla_proof = json.dumps(dict(obj, **{key: ["12", [1], {"a": 1}][i % 3]})).encode()
        elif r == 4:
            req.proof_kind = int(rng.integers(5, 1000))  # not a kind of the contract
            req.vanilla_proof = good
        elif r == 5:
            req.vanilla_proof = b""
        elif r == 6:  # a plain C1 JSON with one field of the wrong size or type
            bad = json.loads(plain)
            bad[["comm_d", "comm_r", "seed", "replica_id", "ticket"][i % 5]] = [1, 2, 3]
            req.vanilla_proof = json.dumps(bad).encode()
        elif r == 7:  # another proof's name
            bad = json.loads(plain)
            bad["registered_proof"] = "StackedDrg3KiBV1_1"
            req.vanilla_proof = base64.b64encode(json.dumps(bad).encode())
        elif r == 8:  # the request's sector size disagrees with the C1's
            req.vanilla_proof, req.sector_size = good, 8 << 20
        else:  # valid base64 of something that is not a C1
            req.vanilla_proof = json.dumps(dict(obj, Phase1Out=base64.b64encode(b"[1,2").decode())).encode()
        cases.append(req)
    return cases


REFUSED_AT_THE_CALL = (4, 5)  # malformed()'s cases whose request fields are wrong: INVALID_ARGUMENT


def test_a_thousand_malformed_requests_fail_as_calls_or_jobs_and_the_daemon_stays_up(daemon, c1):
    """A request with a bad field (kind, empty payload) is refused by the call; a bad payload is
    acknowledged and fails its job, with a typed message naming what is wrong in AwaitProof."""
    service, stub = daemon
    accepted = []
    for i, req in enumerate(malformed(c1, np.random.default_rng(7), 1000)):
        if i % 10 in REFUSED_AT_THE_CALL:
            with pytest.raises(grpc.RpcError) as info:
                stub.SubmitProof(req, timeout=30)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (req.request_id, info.value.details())
            assert info.value.details()
        else:
            assert stub.SubmitProof(req, timeout=30).job_id == req.request_id
            accepted.append(req.request_id)
    for request_id in accepted:
        got = stub.AwaitProof(pb.AwaitProofRequest(job_id=request_id, timeout_ms=30_000), timeout=60)
        assert got.status == pb.AwaitProofResponse.FAILED, (request_id, got.error_message)
        assert issubclass(getattr(errors, got.error_message.split(":")[0]), errors.InputError), got.error_message
    status = stub.GetStatus(pb.GetStatusRequest(), timeout=10)
    assert status.total_proofs_completed == 0 and status.total_proofs_failed == len(accepted) == 800
    metrics = stub.GetMetrics(pb.GetMetricsRequest(), timeout=10).prometheus_text
    assert "cuzk_requests_rejected_total 200.0" in metrics
    assert 'cuzk_proofs_failed_total{kind="porep"} 800.0' in metrics
    assert not service.engine.resident and not service.engine.loading  # no bad payload reached the engine


def test_unknown_jobs_kinds_and_circuits(daemon):
    _, stub = daemon
    for call, req in ((stub.AwaitProof, pb.AwaitProofRequest(job_id="nope", timeout_ms=10)),
                      (stub.CancelProof, pb.CancelProofRequest(job_id="nope"))):
        with pytest.raises(grpc.RpcError) as info:
            call(req, timeout=10)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND and "nope" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-3g"), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "porep-32g" in info.value.details()


def test_a_journaled_request_id_attaches_and_a_finished_one_answers_from_the_journal(daemon, c1):
    service, stub = daemon
    payload = wrap(c1, 5)
    service.journal.submit("porep-1000-5", "porep", payload, 30)  # as a daemon before a restart left it
    service.journal.mark_running("porep-1000-5")
    service.journal.finish("porep-1000-5", b"\x07" * 192)
    req = pb.SubmitProofRequest(request_id="porep-1000-5", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=payload)
    assert stub.SubmitProof(req, timeout=10).job_id == "porep-1000-5"
    got = stub.AwaitProof(pb.AwaitProofRequest(job_id="porep-1000-5"), timeout=10)
    assert got.status == pb.AwaitProofResponse.COMPLETED and got.proof == b"\x07" * 192
    assert stub.Prove(pb.ProveRequest(submit=req), timeout=10).result.proof == b"\x07" * 192
    assert not service.engine.resident  # nothing was proved again
    other = pb.SubmitProofRequest(request_id="porep-1000-5", proof_kind=pb.POREP_SEAL_COMMIT,
                                  vanilla_proof=wrap(c1, 6))
    with pytest.raises(grpc.RpcError) as info:
        stub.SubmitProof(other, timeout=10)
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS and "porep-1000-5" in info.value.details()


@pytest.mark.slow
def test_a_2kib_proof_through_prove_survives_a_restart(tmp_path, c1):
    from cuzk import api

    service, srv, channel, stub = start(tmp_path)
    req = pb.SubmitProofRequest(request_id="porep-7-5", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=wrap(c1, 5))
    result = stub.Prove(pb.ProveRequest(submit=req), timeout=1800).result
    assert result.status == pb.AwaitProofResponse.COMPLETED, result.error_message
    assert len(result.proof) == 192 and api.verify(c1, result.proof)
    stop(service, srv, channel)
    service, srv, channel, stub = start(tmp_path)  # the same state directory
    again = stub.AwaitProof(pb.AwaitProofRequest(job_id="porep-7-5"), timeout=10)
    assert again.status == pb.AwaitProofResponse.COMPLETED and again.proof == result.proof
    stop(service, srv, channel)


def test_finished_results_expire_after_their_time(tmp_path, c1):
    service, srv, channel, stub = start(tmp_path)
    try:
        service.results_ttl_s = 0.2
        service.journal.submit("porep-old", "porep", wrap(c1, 1), 30)
        service.journal.mark_running("porep-old")
        service.journal.finish("porep-old", b"\x01" * 192)
        assert stub.AwaitProof(pb.AwaitProofRequest(job_id="porep-old"), timeout=10).proof == b"\x01" * 192
        stop_event = threading.Event()
        service.run_expiry(stop_event, every_s=0.05)
        time.sleep(0.6)
        stop_event.set()
        with pytest.raises(grpc.RpcError) as info:
            stub.AwaitProof(pb.AwaitProofRequest(job_id="porep-old", timeout_ms=10), timeout=10)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        stop(service, srv, channel)


def test_a_job_the_closing_engine_cancels_stays_journaled_and_a_client_cancel_is_recorded(daemon, c1):
    """A SIGTERMed daemon closes its engine, which cancels the jobs it had queued: those stay unfinished
    in the journal (the next start resumes them); CancelProof on a live job records it cancelled."""
    service, stub = daemon
    spec = porep_spec_of(c1.registered_proof)
    for request_id in ("closing-1", "client-1"):
        service.journal.submit(request_id, "porep", wrap(c1, 5), 30)
        service.journal.mark_running(request_id)
    closing = Job("closing-1", spec, [], Priority.POREP)
    closing.add_done_callback(lambda j: service._finished(service.journal.get("closing-1"), j))
    assert closing.cancel()  # as Engine.close() cancels what it had queued
    assert service.journal.get("closing-1").state == "running"
    assert "closing-1" in [r.request_id for r in service.journal.unfinished()]
    client = Job("client-1", spec, [], Priority.POREP)
    client.add_done_callback(lambda j: service._finished(service.journal.get("client-1"), j))
    with service._lock:
        service._jobs["client-1"] = _Live(service.journal.get("client-1"), 0, client, admitted=True)
    assert stub.CancelProof(pb.CancelProofRequest(job_id="client-1"), timeout=10).was_running
    assert client.cancelled and service.journal.get("client-1").state == "cancelled"


def test_a_damaged_journal_row_is_quarantined_reported_and_never_proved(tmp_path, c1):
    """A job whose payload bytes changed on disk: after the restart it is not resumed but quarantined;
    /status and cuzk_journal_damaged_rows report it, AwaitProof answers FAILED saying why, and its
    request_id is refused (FAILED_PRECONDITION)."""
    import sqlite3

    from cuzk.service.status import status

    with Journal(tmp_path / "state") as journal:
        journal.submit("porep-damaged", "porep", wrap(c1, 7), 30)
    with sqlite3.connect(tmp_path / "state" / "journal.sqlite3") as db:
        db.execute("UPDATE jobs SET payload = ? WHERE request_id = ?", (wrap(c1, 8), "porep-damaged"))
    service, srv, channel, stub = start(tmp_path)
    try:
        assert service.resume() == 0 and not service.engine.resident and not service.live_jobs()
        doc = status(service)
        metrics = stub.GetMetrics(pb.GetMetricsRequest(), timeout=10).prometheus_text
        got = stub.AwaitProof(pb.AwaitProofRequest(job_id="porep-damaged", timeout_ms=1000), timeout=10)
        req = pb.SubmitProofRequest(request_id="porep-damaged", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=wrap(c1, 7))
        with pytest.raises(grpc.RpcError) as info:
            stub.SubmitProof(req, timeout=10)
    finally:
        stop(service, srv, channel)
    assert doc["journal_damaged"]["count"] == 1 and doc["journal_damaged"]["rows"][0]["request_id"] == "porep-damaged"
    assert "cuzk_journal_damaged_rows 1.0" in metrics.splitlines()
    assert got.status == pb.AwaitProofResponse.FAILED and "porep-damaged" in got.error_message
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_a_job_still_starting_when_the_daemon_stops_stays_queued(tmp_path, c1, monkeypatch):
    """A job whose payload is still being checked when the daemon stops is neither started on the
    closing engine nor failed: it stays queued in the journal, and the next start resumes it."""
    from cuzk.service import daemon as daemon_module

    real = daemon_module.parse_porep

    def slow(*args, **kwargs):
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(daemon_module, "parse_porep", slow)
    service, srv, channel, stub = start(tmp_path)
    req = pb.SubmitProofRequest(request_id="porep-stopping", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=wrap(c1, 3))
    stub.SubmitProof(req, timeout=10)
    stop(service, srv, channel)
    with Journal(tmp_path / "state") as again:
        assert again.get("porep-stopping").state == "queued"
        assert [r.request_id for r in again.unfinished()] == ["porep-stopping"]
