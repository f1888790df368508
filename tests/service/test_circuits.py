"""The daemon's circuit ids (cuzk.service.circuits) beyond PoRep, through a real gRPC server on the CPU:
each id names its kind, registered proof, resident key and parameter files (curio's ids and the small
sizes; SnapDeals checked without loading, its 2KiB setup being slow here); PreloadSRS of wpost-2k and
winning-2k with srs.allow_setup makes them resident and GetStatus lists them in loaded_srs, EvictSRS
drops them, an unknown id is INVALID_ARGUMENT naming the valid ones; GetStatus has one queue per
proof kind (curio's names) counted from the journal; `cuzk daemon --preload wpost-2k` as a real
process starts with it resident, and an unknown --preload id is a configuration error."""
from __future__ import annotations

import signal

import grpc
import pytest

from cuzk.engine.post import post_spec_of
from cuzk.engine.snap import snap_spec_of
from cuzk.porep.params_cache import official_dir, porep_stem
from cuzk.porep.proving import circuit_identity
from cuzk.porep.registry import get_proof
from cuzk.post.registry import PoStKind, get_post_proof
from cuzk.service.circuits import CIRCUITS, QUEUE_NAMES, unknown
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.run import EXIT_CONFIG
from cuzk.service.status import status
from service.test_daemon import start, stop  # tests/ is on the path
from service.test_run import daemon, ready

CURIO = ("porep-32g", "porep-64g", "wpost-32g", "winning-32g", "snap-32g", "snap-64g")


def loaded(stub) -> set[str]:
    return {s.circuit_id for s in stub.GetStatus(pb.GetStatusRequest(), timeout=10).loaded_srs}


def test_every_id_names_its_kind_proof_key_and_parameter_files():
    assert set(CURIO) <= set(CIRCUITS) and len(CIRCUITS) == 20
    assert {cid.split("-")[0] for cid in CIRCUITS} == {"porep", "wpost", "winning", "snap"}
    window = CIRCUITS["wpost-32g"]
    p = get_post_proof(window.proof)
    assert (window.kind, window.proof, p.go_name, p.kind) == ("window_post", "StackedDrgWindow32GiBV1_2",
                                                               "StackedDrgWindow32GiBV1_1", PoStKind.WINDOW)
    assert get_post_proof("StackedDrgWindow32GiBV1").params_stem == window.stem  # V1 shares V1_2's parameters
    winning = CIRCUITS["winning-2k"]
    assert (winning.kind, winning.proof) == ("winning_post", "StackedDrgWinning2KiBV1")
    assert winning.key == post_spec_of(winning.proof).key == get_post_proof(winning.proof).params_stem == winning.stem
    for cid, size in (("snap-2k", "2KiB"), ("snap-32g", "32GiB"), ("snap-64g", "64GiB")):
        snap = CIRCUITS[cid]
        assert (snap.kind, snap.proof) == ("snap", f"StackedDrg{size}V1")
        assert snap.key == snap_spec_of(snap.proof).key == snap.stem
        assert snap.stem.startswith("v28-empty-sector-update-")
        assert snap.official.params == official_dir() / f"{snap.stem}.params"
    porep = CIRCUITS["porep-64g"]
    assert (porep.kind, porep.proof) == ("porep", "StackedDrg64GiBV1_1")
    assert porep.key == circuit_identity(get_proof(porep.proof))[0] and porep.stem == porep_stem(64 << 30)
    assert len({c.key for c in CIRCUITS.values()}) == len({c.stem for c in CIRCUITS.values()}) == 20
    assert unknown("wpost-32g") is None
    refusal = unknown("wpost-3g")
    assert "'wpost-3g'" in refusal and all(cid in refusal for cid in CURIO)


def test_status_queues_per_proof_kind_from_the_journal(tmp_path):
    service, srv, channel, stub = start(tmp_path)
    journal = service.journal
    try:  # journaled only (as a daemon before a restart left them): nothing reaches the engine
        kinds = ["porep", "porep", "snap", "window_post", "window_post", "window_post", "winning_post"]
        for n, kind in enumerate(kinds):
            journal.submit(f"job-{n}", kind, b"payload %d" % n, 30)
        journal.mark_running("job-1")
        journal.mark_running("job-4")
        journal.finish("job-4", b"\x01" * 192)
        journal.mark_running("job-5")
        journal.fail("job-6", "no")
        got = stub.GetStatus(pb.GetStatusRequest(), timeout=10)
    finally:
        stop(service, srv, channel)
    assert [(q.proof_kind, q.pending, q.in_progress) for q in got.queues] == [
        ("porep-c2", 1, 1), ("snap-update", 1, 0), ("window-post", 1, 1), ("winning-post", 0, 0)]
    assert list(QUEUE_NAMES.values()) == ["porep-c2", "snap-update", "window-post", "winning-post"]
    assert (got.total_proofs_completed, got.total_proofs_failed) == (1, 1)


def test_preload_and_evict_post_circuits(tmp_path):
    """wpost-2k and winning-2k loaded with cuzk's own parameters (srs.allow_setup), listed in loaded_srs
    and on the status page, evicted; unknown ids refused by both calls."""
    service, srv, channel, stub = start(tmp_path)
    try:
        first = [stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id=cid), timeout=600).already_loaded
                 for cid in ("wpost-2k", "winning-2k")]
        again = stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="wpost-2k"), timeout=60).already_loaded
        both = loaded(stub)
        resident = {c["circuit_id"] for c in status(service)["circuits"] if c["resident"]}
        kinds = {c["circuit_id"]: c["kind"] for c in status(service)["circuits"]}
        evicted = stub.EvictSRS(pb.EvictSrsRequest(circuit_id="wpost-2k"), timeout=10)
        one = loaded(stub)
        twice = stub.EvictSRS(pb.EvictSrsRequest(circuit_id="wpost-2k"), timeout=10).was_loaded
        stub.EvictSRS(pb.EvictSrsRequest(circuit_id="winning-2k"), timeout=10)
        none = loaded(stub)
        refused = []
        for call, req in ((stub.PreloadSRS, pb.PreloadSrsRequest(circuit_id="wpost-3g")),
                          (stub.EvictSRS, pb.EvictSrsRequest(circuit_id="window-2k"))):
            with pytest.raises(grpc.RpcError) as info:
                call(req, timeout=10)
            details = info.value.details()
            refused.append((info.value.code(), "wpost-32g" in details and "snap-64g" in details))
    finally:
        stop(service, srv, channel)
    assert first == [False, False] and again is True
    assert both == resident == {"wpost-2k", "winning-2k"} and kinds["wpost-2k"] == "window_post"
    assert evicted.was_loaded and one == {"winning-2k"} and twice is False and none == set()
    assert refused == [(grpc.StatusCode.INVALID_ARGUMENT, True)] * 2


def test_a_daemon_process_preloads_a_window_post_circuit(tmp_path):
    """`cuzk daemon --preload wpost-2k --allow-setup`: ready with it resident (cuzk's own parameters,
    made here first: --preload never generates any); `--preload wpost-3g` exits with EXIT_CONFIG
    naming the valid ids."""
    CIRCUITS["wpost-2k"].spec(allow_setup=True).load()  # cuzk's own parameters, generated when missing
    sock = tmp_path / "cuzk.sock"
    proc = daemon(tmp_path, "--listen", f"unix://{sock}", "--allow-setup", "--preload", "wpost-2k")
    try:
        stub = ready(sock, proc, timeout=300)
        resident = loaded(stub)
    finally:
        proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    assert resident == {"wpost-2k"}
    assert "preloading wpost-2k from " in (tmp_path / "state" / "daemon.log").read_text()
    bad = daemon(tmp_path, "--listen", "127.0.0.1:0", "--preload", "wpost-3g", state="bad")
    assert bad.wait(120) == EXIT_CONFIG
    err = bad.stderr.read()
    assert "--preload wpost-3g" in err and "wpost-2k" in err and "snap-64g" in err
