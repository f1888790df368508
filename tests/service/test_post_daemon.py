"""WinningPoSt and WindowPoSt through the proving service (cuzk.service.daemon) and its engine, over
2KiB sectors sealed by cuzk, with a real gRPC server: the request's PoSt fields journaled as one
payload and parsed back (fast); an empty vanilla_proofs refused by the call, a malformed vanilla proof,
another randomness or a registered proof of the other kind failing the job with a typed message, none
reaching the engine (fast); a WindowPoSt partition and a WinningPoSt proved on the CPU with cuzk's own
parameters and verified, and a WinningPoSt submitted behind queued PoRep and WindowPoSt jobs admitted
before them, WindowPoSt before PoRep (slow)."""
from __future__ import annotations

import time

import grpc
import numpy as np
import pytest

import cuzk
from cuzk.errors import InputError
from cuzk.groth16 import partition
from cuzk.post import proving
from cuzk.post.bincode import write_sector_proof
from cuzk.post.errors import PoStInputError, UnknownPoStProofError
from cuzk.post.registry import get_post_proof
from cuzk.service.post_payload import parse_post, post_payload
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from engine.test_batch import PROVE, Gate  # tests/ is on the path
from post import test_proving
from service.test_daemon import start, stop

sectors, rand = test_proving.sectors, test_proving.rand  # the fixtures: 2 sealed 2KiB sectors, a randomness
WINDOW, WINNING = get_post_proof("StackedDrgWindow2KiBV1_2"), get_post_proof("StackedDrgWinning2KiBV1")


@pytest.fixture(scope="module")
def window_vanilla(sectors, rand):
    return [write_sector_proof(v) for v in proving.vanilla_of(WINDOW, rand, sectors)]


@pytest.fixture(scope="module")
def winning_vanilla(sectors, rand):
    return [write_sector_proof(v) for v in proving.vanilla_of(WINNING, rand, sectors[:1])]


def window_request(request_id: str, rand: bytes, vanilla: list[bytes], **kw) -> pb.SubmitProofRequest:
    """curio's WindowPoSt request (../shared/POST_SNAP.md §D1), fields overridden by `kw`."""
    return pb.SubmitProofRequest(**{"request_id": request_id, "proof_kind": pb.WINDOW_POST_PARTITION,
                                    "sector_size": 2048, "registered_proof": WINDOW.id, "vanilla_proofs": vanilla,
                                    "miner_id": 1000, "randomness": rand, "partition_index": 0, **kw})


def winning_request(request_id: str, rand: bytes, vanilla: list[bytes], **kw) -> pb.SubmitProofRequest:
    """curio's WinningPoSt request, fields overridden by `kw`."""
    return pb.SubmitProofRequest(**{"request_id": request_id, "proof_kind": pb.WINNING_POST, "sector_size": 2048,
                                    "registered_proof": WINNING.id, "vanilla_proofs": vanilla, "miner_id": 1000,
                                    "randomness": rand, **kw})


def await_proof(stub, job_id: str, timeout_s: float = 600):
    return stub.AwaitProof(pb.AwaitProofRequest(job_id=job_id, timeout_ms=int(timeout_s * 1000)),
                           timeout=timeout_s + 30)


def test_a_post_request_is_journaled_as_its_post_fields_and_parsed_back(rand, window_vanilla):
    req = window_request("w", rand, window_vanilla, priority=pb.HIGH)
    post = parse_post(post_payload(req), "window_post")
    assert (post.proof, post.randomness, post.vanilla_proofs, post.partition_index) == (WINDOW, rand,
                                                                                       window_vanilla, 0)
    assert post_payload(req) == post_payload(window_request("other-id", rand, window_vanilla))  # miner, id dropped
    with pytest.raises(PoStInputError, match="registered_proof: StackedDrgWindow2KiBV1_2 is not a WinningPoSt"):
        parse_post(post_payload(req), "winning_post")
    with pytest.raises(UnknownPoStProofError, match="99"):
        parse_post(post_payload(window_request("w", rand, window_vanilla, registered_proof=99)), "window_post")
    with pytest.raises(PoStInputError, match="sector_size: 8388608 does not match"):
        parse_post(post_payload(window_request("w", rand, window_vanilla, sector_size=8 << 20)), "window_post")
    with pytest.raises(PoStInputError, match="partition_index: WinningPoSt has partition 0 only, got 2"):
        parse_post(post_payload(winning_request("n", rand, window_vanilla[:1], partition_index=2)), "winning_post")
    with pytest.raises(InputError, match="payload: not a window_post request"):
        parse_post(b"\xff\xff\xff", "window_post")


def test_bad_post_requests_fail_as_calls_or_jobs_with_typed_messages(tmp_path, rand, window_vanilla,
                                                                     winning_vanilla):
    service, srv, channel, stub = start(tmp_path)
    try:
        with pytest.raises(grpc.RpcError) as info:
            stub.SubmitProof(window_request("empty", rand, []), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert info.value.details() == "vanilla_proofs is empty: a window_post request carries one bincode " \
                                       "vanilla proof per sector"
        other = bytes([rand[0] ^ 1]) + rand[1:]
        bad = {"truncated": window_request("truncated", rand, [window_vanilla[0], window_vanilla[1][:-1]]),
               "other-randomness": winning_request("other-randomness", other, winning_vanilla),
               "not-canonical": winning_request("not-canonical", b"\xff" * 32, winning_vanilla),
               "kind": winning_request("kind", rand, winning_vanilla, registered_proof=WINDOW.id)}
        for req in bad.values():
            assert stub.SubmitProof(req, timeout=10).job_id == req.request_id
        got = {job_id: await_proof(stub, job_id, 30) for job_id in bad}
        assert {r.status for r in got.values()} == {pb.AwaitProofResponse.FAILED}
        assert got["truncated"].error_message.startswith("PoStVanillaFormatError: PoSt vanilla proof sector 1 "
                                                         "at byte offset")
        assert got["other-randomness"].error_message.startswith("PoStVanillaProofError: sector 0 challenge 0 "
                                                                "leaf index: proves leaf")
        assert got["not-canonical"].error_message.startswith("PoStInputError: randomness:")
        assert got["kind"].error_message == ("PoStInputError: registered_proof: StackedDrgWindow2KiBV1_2 is not "
                                             "a WinningPoSt proof")
        assert not service.engine.resident and not service.engine.loading  # no bad payload reached the engine
    finally:
        stop(service, srv, channel)


def wait_for(what, condition, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def admitted(engine, job_id: str) -> bool:
    return any(ev["job"] == job_id and ev["event"] == "admitted" for ev in engine.timeline)


@pytest.mark.slow
def test_post_proofs_through_the_daemon_verified_and_winning_admitted_first(tmp_path, sectors, rand, window_vanilla,
                                                                           winning_vanilla, monkeypatch):
    """A WindowPoSt partition (2 sectors) and a WinningPoSt proved and verified (their circuits then
    resident and calibrated). Then, with the engine's two slots held (GPU workers stopped in a proof)
    and a third job taken by the dispatcher, waiting for a slot: PoRep, WindowPoSt and WinningPoSt submitted
    in that order at their kinds' default priorities are admitted WinningPoSt, then WindowPoSt, PoRep
    still waiting behind them (cancelled there, so that its proof costs nothing)."""
    from cuzk.porep.synthetic import synthetic_c1
    from cuzk.service.payload import wrap

    service, srv, channel, stub = start(tmp_path)
    engine = service.engine
    try:
        for req in (window_request("window-0", rand, window_vanilla), winning_request("winning-0", rand,
                                                                                      winning_vanilla)):
            stub.SubmitProof(req, timeout=10)
        window, winning = await_proof(stub, "window-0"), await_proof(stub, "winning-0")
        assert window.status == winning.status == pb.AwaitProofResponse.COMPLETED, (window.error_message,
                                                                                    winning.error_message)
        assert len(window.proof) == len(winning.proof) == 192
        pairs = [(s.sector_id, s.comm_r) for s in sectors]
        assert cuzk.verify_window_post(WINDOW.name, rand, pairs, window.proof)
        assert not cuzk.verify_window_post(WINDOW.name, rand, pairs[::-1], window.proof)
        assert cuzk.verify_winning_post(WINNING.name, rand, *pairs[0], winning.proof)

        stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-2k"), timeout=600)
        gate = Gate(PROVE)
        monkeypatch.setattr(partition, "prove", gate)
        gate.let(0)
        holds = ("hold-1", "hold-2")  # the engine's two slots (max_parallel_synthesis + gpu_queue_depth)
        for job_id in holds:
            stub.SubmitProof(window_request(job_id, rand, window_vanilla), timeout=10)
        # each held by a GPU worker in the gate, or synthesized and waiting for one
        wait_for("the slots full", lambda: gate.entered + engine.stats()["queue"]["gpu"] == len(holds))
        stub.SubmitProof(window_request("hold-dispatcher", rand, window_vanilla), timeout=10)
        wait_for("hold-dispatcher taken by the dispatcher", lambda: engine.stats()["queue"]["pending"] == 1)
        c1 = synthetic_c1("StackedDrg2KiBV1_1", prover_id=bytes(32), sector_id=5, ticket=b"\x01" * 32,
                          seed=b"\x02" * 32, rng=np.random.default_rng(3), progress=False)
        for req in (pb.SubmitProofRequest(request_id="porep", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=wrap(c1)),
                    window_request("window", rand, window_vanilla), winning_request("winning", rand, winning_vanilla)):
            stub.SubmitProof(req, timeout=10)
        wait_for("all three pending", lambda: engine.stats()["queue"]["pending"] == 4)
        gate.let(len(holds) + 1)  # the held jobs' proofs; the next ones stop in the gate, holding both slots
        wait_for("winning and window admitted", lambda: admitted(engine, "winning") and admitted(engine, "window"))
        order = [ev["job"] for ev in engine.timeline if ev["event"] == "admitted"]
        assert order[-3:] == ["hold-dispatcher", "winning", "window"] and not admitted(engine, "porep")
        assert stub.CancelProof(pb.CancelProofRequest(job_id="porep"), timeout=10).was_running is False
        gate.let(None)
        for job_id in (*holds, "hold-dispatcher", "winning", "window"):
            got = await_proof(stub, job_id)
            assert got.status == pb.AwaitProofResponse.COMPLETED and len(got.proof) == 192, got.error_message
        assert await_proof(stub, "porep", 10).status == pb.AwaitProofResponse.CANCELLED
        assert not admitted(engine, "porep")  # cancelled while it waited behind them: never synthesized
    finally:
        stop(service, srv, channel)
