"""SnapDeals (SNAP_DEALS_UPDATE) through the proving service (cuzk.service.daemon) and its engine,
over a 2KiB CC sector updated with data by cuzk, with a real gRPC server: the request's SnapDeals
fields journaled as one payload and parsed back, curio's snap-vproof.json accepted in vanilla_proof
(fast); an empty request refused by the call, a malformed vanilla proof, another comm_r_new, a
non-canonical commitment or an unknown registered proof failing the job with a typed message, none
reaching the engine (fast); the update proved on the CPU with cuzk's own parameters and the returned
proof (192 bytes per partition, in partition order) verified with cuzk.snap_verify (slow)."""
from __future__ import annotations

import grpc
import pytest

import cuzk
from cuzk.engine.jobs import Priority
from cuzk.errors import InputError
from cuzk.snap.bincode import write_partition_proof, write_vproof_json
from cuzk.snap.errors import UnknownUpdateProofError
from cuzk.snap.registry import get_update_proof
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.snap_payload import parse_snap, snap_payload
from service.test_daemon import start, stop  # tests/ is on the path
from service.test_post_daemon import await_proof
from snap import test_proving

update, cache = test_proving.update, test_proving.cache  # its fixtures: a 2KiB update and its vanilla proofs
SNAP_2K = get_update_proof("StackedDrg2KiBV1")


@pytest.fixture(scope="module")
def vanilla(update):
    return [write_partition_proof(v, SNAP_2K) for v in update[1]]


def snap_request(request_id: str, u, vanilla: list[bytes], **kw) -> pb.SubmitProofRequest:
    """curio's SnapDeals request (../shared/POST_SNAP.md §D1), fields overridden by `kw`."""
    return pb.SubmitProofRequest(**{"request_id": request_id, "proof_kind": pb.SNAP_DEALS_UPDATE, "sector_size": 2048,
                                    "registered_proof": SNAP_2K.id, "vanilla_proofs": vanilla, "sector_number": 7,
                                    "miner_id": 1000, "comm_r_old": u.comm_r_old, "comm_r_new": u.comm_r_new,
                                    "comm_d_new": u.comm_d_new, **kw})


def test_a_snap_request_is_journaled_as_its_snap_fields_and_parsed_back(update, vanilla):
    u, decoded = update
    req = snap_request("s", u, vanilla, priority=pb.NORMAL)
    snap = parse_snap(snap_payload(req))
    assert (snap.proof, snap.comm_r_old, snap.comm_r_new, snap.comm_d_new, snap.vanilla_proofs) == (
        SNAP_2K, u.comm_r_old, u.comm_r_new, u.comm_d_new, vanilla)
    # request_id, miner and sector dropped; proofshare's sector_size 0 is unstated
    assert snap_payload(req) == snap_payload(snap_request("other-id", u, vanilla, miner_id=1, sector_number=9))
    assert parse_snap(snap_payload(snap_request("s", u, vanilla, sector_size=0))).proof == SNAP_2K
    json = write_vproof_json(decoded, SNAP_2K)
    assert parse_snap(snap_payload(snap_request("j", u, [], vanilla_proof=json))).vanilla_proofs == json
    with pytest.raises(InputError, match="vanilla_proof: snap-vproof.json or vanilla_proofs"):
        parse_snap(snap_payload(snap_request("both", u, vanilla, vanilla_proof=json)))
    with pytest.raises(UnknownUpdateProofError, match="registered_proof: unknown registered update proof 99"):
        parse_snap(snap_payload(snap_request("s", u, vanilla, registered_proof=99)))
    with pytest.raises(InputError, match="sector_size: 8388608 does not match StackedDrg2KiBV1"):
        parse_snap(snap_payload(snap_request("s", u, vanilla, sector_size=8 << 20)))
    with pytest.raises(InputError, match="payload: not a snap request"):
        parse_snap(b"\xff\xff\xff")


def test_bad_snap_requests_fail_as_calls_or_jobs_with_typed_messages(tmp_path, update, vanilla):
    u, _ = update
    service, srv, channel, stub = start(tmp_path)
    try:
        with pytest.raises(grpc.RpcError) as info:
            stub.SubmitProof(snap_request("empty", u, []), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert info.value.details() == ("vanilla_proofs is empty: a snap request carries one bincode vanilla proof "
                                        "per partition (or snap-vproof.json in vanilla_proof)")
        bad = {"truncated": (snap_request("truncated", u, [vanilla[0][:-1]]),
                             "SnapVanillaFormatError: snap vanilla proof partition 0 at byte offset"),
               "other-comm-r-new": (snap_request("other-comm-r-new", u, vanilla, comm_r_new=u.comm_r_old),
                                    "SnapVanillaProofError: "),
               "not-canonical": (snap_request("not-canonical", u, vanilla, comm_d_new=b"\xff" * 32),
                                 "NonCanonicalError: comm_d_new"),
               "unknown": (snap_request("unknown", u, vanilla, registered_proof=99),
                           "UnknownUpdateProofError: registered_proof: unknown registered update proof 99")}
        for req, _ in bad.values():
            assert stub.SubmitProof(req, timeout=10).job_id == req.request_id
        for job_id, (_, message) in bad.items():
            got = await_proof(stub, job_id, 30)
            assert got.status == pb.AwaitProofResponse.FAILED and got.error_message.startswith(message), (
                job_id, got.error_message)
        assert not service.engine.resident and not service.engine.loading  # no bad payload reached the engine
        assert service.journal.get("truncated").priority == Priority.SNAP_DEALS == Priority.POREP  # the default
    finally:
        stop(service, srv, channel)


@pytest.mark.slow
def test_a_snap_update_proved_through_the_daemon_and_verified(tmp_path, update, vanilla, cache):
    """The 2KiB update, its default priority (PoRep's), proved and verified from the commitments alone;
    not for another comm_r_new."""
    u, _ = update
    service, srv, channel, stub = start(tmp_path)
    try:
        stub.SubmitProof(snap_request("snap-1000-7", u, vanilla), timeout=10)
        got = await_proof(stub, "snap-1000-7")
        assert got.status == pb.AwaitProofResponse.COMPLETED, got.error_message
        assert len(got.proof) == 192 * SNAP_2K.partitions
        proofs = [got.proof[i:i + 192] for i in range(0, len(got.proof), 192)]
        assert cuzk.snap_verify(SNAP_2K.name, u.comm_r_old, u.comm_r_new, u.comm_d_new, proofs)
        assert not cuzk.snap_verify(SNAP_2K.name, u.comm_r_old, u.comm_c, u.comm_d_new, proofs)
    finally:
        stop(service, srv, channel)
