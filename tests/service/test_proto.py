"""The cuzk.v1 gRPC contract: the generated modules match curio's wire contract as the fact sheet
(shared/CUZK_DAEMON.md §1) states it, messages round-trip, and a real gRPC server answers over TCP
and a unix socket with 128 MiB message limits.

The tables below are written from the fact sheet, not read from the generated code, so an edit of
proving.proto that renames, renumbers or retypes anything fails here."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor

from cuzk.service.proto import proving_pb2, proving_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "cuzk" / "service" / "proto"
PROTO = PROTO_ROOT / "cuzk" / "v1" / "proving.proto"

MIB = 1 << 20
MAX_MESSAGE = 128 * MIB
OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE), ("grpc.max_receive_message_length", MAX_MESSAGE)]

PACKAGE = "cuzk.v1"
SERVICE = "ProvingEngine"
# rpc -> (request message, response message). Note the casing: rpc "SRS", messages "Srs".
METHODS = {
    "SubmitProof": ("SubmitProofRequest", "SubmitProofResponse"),
    "AwaitProof": ("AwaitProofRequest", "AwaitProofResponse"),
    "Prove": ("ProveRequest", "ProveResponse"),
    "CancelProof": ("CancelProofRequest", "CancelProofResponse"),
    "GetStatus": ("GetStatusRequest", "GetStatusResponse"),
    "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse"),
    "PreloadSRS": ("PreloadSrsRequest", "PreloadSrsResponse"),
    "EvictSRS": ("EvictSrsRequest", "EvictSrsResponse"),
}

# Field type spelling: a scalar's proto name; "enum X" / "message X" with X the full name;
# a leading "repeated " for repeated fields.
MESSAGES: dict[str, dict[int, tuple[str, str]]] = {
    "SubmitProofRequest": {
        1: ("request_id", "string"),
        2: ("proof_kind", "enum cuzk.v1.ProofKind"),
        3: ("sector_size", "uint64"),
        4: ("registered_proof", "uint64"),
        5: ("priority", "enum cuzk.v1.Priority"),
        10: ("vanilla_proof", "bytes"),
        11: ("vanilla_proofs", "repeated bytes"),
        20: ("sector_number", "uint64"),
        21: ("miner_id", "uint64"),
        22: ("randomness", "bytes"),
        23: ("partition_index", "uint32"),
        30: ("comm_r_old", "bytes"),
        31: ("comm_r_new", "bytes"),
        32: ("comm_d_new", "bytes"),
    },
    "SubmitProofResponse": {
        1: ("job_id", "string"),
        2: ("queue_position", "uint32"),
        3: ("assigned_gpu", "string"),
    },
    "AwaitProofRequest": {
        1: ("job_id", "string"),
        2: ("timeout_ms", "uint64"),
    },
    "AwaitProofResponse": {
        1: ("job_id", "string"),
        2: ("status", "enum cuzk.v1.AwaitProofResponse.Status"),
        3: ("proof", "bytes"),
        4: ("error_message", "string"),
        10: ("queue_wait_ms", "uint64"),
        11: ("srs_load_ms", "uint64"),
        12: ("synthesis_ms", "uint64"),
        13: ("gpu_compute_ms", "uint64"),
        14: ("total_ms", "uint64"),
    },
    "ProveRequest": {1: ("submit", "message cuzk.v1.SubmitProofRequest")},
    "ProveResponse": {1: ("result", "message cuzk.v1.AwaitProofResponse")},
    "CancelProofRequest": {1: ("job_id", "string")},
    "CancelProofResponse": {1: ("was_running", "bool")},
    "GetStatusRequest": {},
    "GetStatusResponse": {
        1: ("gpus", "repeated message cuzk.v1.GPUStatus"),
        2: ("loaded_srs", "repeated message cuzk.v1.SRSStatus"),
        3: ("queues", "repeated message cuzk.v1.QueueStatus"),
        4: ("total_proofs_completed", "uint64"),
        5: ("total_proofs_failed", "uint64"),
        6: ("uptime_seconds", "uint64"),
        7: ("pinned_memory_bytes", "uint64"),
        8: ("pinned_memory_limit_bytes", "uint64"),
    },
    "GPUStatus": {
        1: ("ordinal", "uint32"),
        2: ("name", "string"),
        3: ("vram_total_bytes", "uint64"),
        4: ("vram_free_bytes", "uint64"),
        5: ("current_job_id", "string"),
        6: ("current_proof_kind", "string"),
    },
    "SRSStatus": {
        1: ("circuit_id", "string"),
        2: ("tier", "enum cuzk.v1.SRSStatus.Tier"),
        3: ("size_bytes", "uint64"),
        4: ("ref_count", "uint32"),
    },
    "QueueStatus": {
        1: ("proof_kind", "string"),
        2: ("pending", "uint32"),
        3: ("in_progress", "uint32"),
    },
    "PreloadSrsRequest": {1: ("circuit_id", "string")},
    "PreloadSrsResponse": {1: ("already_loaded", "bool"), 2: ("load_time_ms", "uint64")},
    "EvictSrsRequest": {1: ("circuit_id", "string")},
    "EvictSrsResponse": {1: ("was_loaded", "bool"), 2: ("freed_bytes", "uint64")},
    "GetMetricsRequest": {},
    "GetMetricsResponse": {1: ("prometheus_text", "string")},
}

# Full enum name -> {value name: number}.
ENUMS: dict[str, dict[str, int]] = {
    "cuzk.v1.ProofKind": {"PROOF_KIND_UNSPECIFIED": 0, "POREP_SEAL_COMMIT": 1, "SNAP_DEALS_UPDATE": 2,
                          "WINDOW_POST_PARTITION": 3, "WINNING_POST": 4},
    "cuzk.v1.Priority": {"PRIORITY_UNSPECIFIED": 0, "LOW": 1, "NORMAL": 2, "HIGH": 3, "CRITICAL": 4},
    "cuzk.v1.AwaitProofResponse.Status": {"UNKNOWN": 0, "COMPLETED": 1, "FAILED": 2, "CANCELLED": 3, "TIMEOUT": 4},
    "cuzk.v1.SRSStatus.Tier": {"HOT": 0, "WARM": 1, "COLD": 2},
}

_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string", FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_BOOL: "bool", FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_UINT64: "uint64", FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64", FieldDescriptor.TYPE_SINT32: "sint32",
    FieldDescriptor.TYPE_SINT64: "sint64", FieldDescriptor.TYPE_FIXED32: "fixed32",
    FieldDescriptor.TYPE_FIXED64: "fixed64", FieldDescriptor.TYPE_SFIXED32: "sfixed32",
    FieldDescriptor.TYPE_SFIXED64: "sfixed64", FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_DOUBLE: "double",
}


def _spell(field: FieldDescriptor) -> str:
    if field.type == FieldDescriptor.TYPE_ENUM:
        kind = f"enum {field.enum_type.full_name}"
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        kind = f"message {field.message_type.full_name}"
    else:
        kind = _SCALARS[field.type]
    return f"repeated {kind}" if field.is_repeated else kind


def _all_messages(file_descriptor):
    def walk(message):
        yield message
        for nested in message.nested_types:
            yield from walk(nested)
    for message in file_descriptor.message_types_by_name.values():
        yield from walk(message)


def _all_enums(file_descriptor):
    yield from file_descriptor.enum_types_by_name.values()
    for message in _all_messages(file_descriptor):
        yield from message.enum_types


# --- the contract, by descriptor -------------------------------------------------------------

def test_file_package_and_syntax():
    fd = proving_pb2.DESCRIPTOR
    assert fd.package == PACKAGE
    assert fd.name == "cuzk/v1/proving.proto"
    assert list(fd.dependencies) == []  # no imports, like upstream
    assert fd.GetOptions().go_package == ""


def test_service_and_methods():
    fd = proving_pb2.DESCRIPTOR
    assert list(fd.services_by_name) == [SERVICE]
    service = fd.services_by_name[SERVICE]
    assert service.full_name == f"{PACKAGE}.{SERVICE}"
    got = {m.name: (m.input_type.full_name, m.output_type.full_name) for m in service.methods}
    assert got == {name: (f"{PACKAGE}.{req}", f"{PACKAGE}.{resp}") for name, (req, resp) in METHODS.items()}
    for method in service.methods:  # all unary-unary
        assert not method.client_streaming and not method.server_streaming, method.name


def test_method_paths_in_the_grpc_module():
    channel = grpc.insecure_channel("localhost:1")  # never connected: only the paths are read
    try:
        stub = proving_pb2_grpc.ProvingEngineStub(channel)
        for name in METHODS:
            assert hasattr(stub, name)
    finally:
        channel.close()
    source = (PROTO_ROOT / "cuzk" / "v1" / "proving_pb2_grpc.py").read_text()
    for name in METHODS:
        assert f"'/cuzk.v1.ProvingEngine/{name}'" in source


def test_messages_fields_numbers_types():
    fd = proving_pb2.DESCRIPTOR
    assert set(fd.message_types_by_name) == set(MESSAGES)
    for name, table in MESSAGES.items():
        message = fd.message_types_by_name[name]
        got = {f.number: (f.name, _spell(f)) for f in message.fields}
        assert got == table, name
        assert not message.oneofs, name  # no oneof, no proto3 `optional` (which makes a synthetic oneof)
        for field in message.fields:
            if field.type != FieldDescriptor.TYPE_MESSAGE and not field.is_repeated:
                assert not field.has_presence, f"{name}.{field.name}: proto3 implicit presence expected"
        # nested messages: none upstream (the nested types are enums only)
        assert not message.nested_types, name


def test_enums_values():
    got = {e.full_name: {v.name: v.number for v in e.values} for e in _all_enums(proving_pb2.DESCRIPTOR)}
    assert got == ENUMS
    # the Python accessors agree
    assert proving_pb2.POREP_SEAL_COMMIT == 1 and proving_pb2.WINNING_POST == 4
    assert proving_pb2.CRITICAL == 4
    assert proving_pb2.AwaitProofResponse.COMPLETED == 1
    assert proving_pb2.AwaitProofResponse.Status.Name(4) == "TIMEOUT"
    assert proving_pb2.SRSStatus.Tier.Value("COLD") == 2


def test_wire_bytes_pinned():
    """A few encodings spelled out byte by byte, independent of the descriptors."""
    msg = proving_pb2.SubmitProofRequest(request_id="a", proof_kind=proving_pb2.POREP_SEAL_COMMIT, sector_number=5)
    # field 1 LEN "a"; field 2 varint 1; field 20 varint 5 (tag 160 = a0 01)
    assert msg.SerializeToString() == b"\x0a\x01a\x10\x01\xa0\x01\x05"
    msg = proving_pb2.SubmitProofRequest(comm_d_new=b"\x07" * 32)
    assert msg.SerializeToString() == b"\x82\x02\x20" + b"\x07" * 32  # field 32 LEN: tag 258 = 82 02
    msg = proving_pb2.SubmitProofRequest(vanilla_proofs=[b"x", b"yz"])
    assert msg.SerializeToString() == b"\x5a\x01x\x5a\x02yz"  # field 11 LEN, repeated, not packed
    resp = proving_pb2.AwaitProofResponse(status=proving_pb2.AwaitProofResponse.FAILED, total_ms=300)
    assert resp.SerializeToString() == b"\x10\x02\x70\xac\x02"  # field 2 varint 2; field 14 varint 300


# --- the generated modules are current --------------------------------------------------------

def test_generated_modules_are_current(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools is needed only to regenerate")
    src = tmp_path / "cuzk" / "v1"
    src.mkdir(parents=True)
    shutil.copy(PROTO, src / "proving.proto")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
                    f"--grpc_python_out={tmp_path}", str(src / "proving.proto")], check=True, cwd=tmp_path)
    pb2 = (src / "proving_pb2.py").read_text()
    grpc_mod = (src / "proving_pb2_grpc.py").read_text()
    generated_import = "from cuzk.v1 import proving_pb2 as "
    assert generated_import in grpc_mod
    grpc_mod = grpc_mod.replace(generated_import, "from . import proving_pb2 as ")
    here = PROTO_ROOT / "cuzk" / "v1"
    assert (here / "proving_pb2.py").read_text() == pb2, "regenerate proving_pb2.py (see cuzk/service/proto/__init__.py)"
    assert (here / "proving_pb2_grpc.py").read_text() == grpc_mod, "regenerate proving_pb2_grpc.py"


# --- round trip ---------------------------------------------------------------------------------

def _porep_request() -> proving_pb2.SubmitProofRequest:
    phase1 = json.dumps({"registered_proof": "StackedDrg32GiBV1_1", "comm_d": [1] * 32, "comm_r": [2] * 32,
                         "seed": [3] * 32}).encode()
    wrapper = json.dumps({"SectorNum": 4242, "Phase1Out": base64.b64encode(phase1).decode(),
                          "SectorSize": 34359738368}).encode()
    return proving_pb2.SubmitProofRequest(
        request_id="porep-1000-4242", proof_kind=proving_pb2.POREP_SEAL_COMMIT, sector_size=34359738368,
        registered_proof=8, priority=proving_pb2.NORMAL, vanilla_proof=wrapper, sector_number=4242,
        miner_id=1000)


def test_submit_porep_round_trip():
    req = _porep_request()
    wire = req.SerializeToString()
    back = proving_pb2.SubmitProofRequest.FromString(wire)
    assert back == req
    assert back.proof_kind == proving_pb2.POREP_SEAL_COMMIT
    assert back.priority == proving_pb2.NORMAL
    assert back.sector_size == 34359738368 and back.miner_id == 1000 and back.sector_number == 4242
    wrapper = json.loads(back.vanilla_proof)
    assert wrapper["SectorNum"] == 4242 and wrapper["SectorSize"] == 34359738368
    assert json.loads(base64.b64decode(wrapper["Phase1Out"]))["seed"] == [3] * 32
    assert list(back.vanilla_proofs) == [] and back.comm_r_old == b""
    # wrapped in Prove, it survives as well
    prove = proving_pb2.ProveRequest(submit=req)
    assert proving_pb2.ProveRequest.FromString(prove.SerializeToString()).submit == req
    # an unknown field number (as a newer peer might send) is kept, not an error
    extra = wire + b"\xc8\x01\x01"  # field 25 varint 1: in the 24-29 gap
    assert proving_pb2.SubmitProofRequest.FromString(extra).SerializeToString() == extra


# --- a real server --------------------------------------------------------------------------------

FIXED_STATUS = proving_pb2.GetStatusResponse(
    gpus=[proving_pb2.GPUStatus(ordinal=0, name="NVIDIA H200", vram_total_bytes=150 << 30,
                                vram_free_bytes=140 << 30, current_job_id="", current_proof_kind="")],
    loaded_srs=[proving_pb2.SRSStatus(circuit_id="porep-32g", tier=proving_pb2.SRSStatus.HOT,
                                      size_bytes=48 << 30, ref_count=1)],
    queues=[proving_pb2.QueueStatus(proof_kind="POREP_SEAL_COMMIT", pending=2, in_progress=1)],
    total_proofs_completed=7, total_proofs_failed=1, uptime_seconds=3600,
    pinned_memory_bytes=1 << 30, pinned_memory_limit_bytes=64 << 30)


class _Servicer(proving_pb2_grpc.ProvingEngineServicer):
    """GetStatus answers a fixed status; Prove echoes the vanilla proof back as the proof (so a large
    message crosses both ways); everything else stays UNIMPLEMENTED (the generated default)."""

    def GetStatus(self, request, context):
        return FIXED_STATUS

    def Prove(self, request, context):
        return proving_pb2.ProveResponse(result=proving_pb2.AwaitProofResponse(
            job_id=request.submit.request_id, status=proving_pb2.AwaitProofResponse.COMPLETED,
            proof=request.submit.vanilla_proof, total_ms=1))


def _server(address: str, options=OPTIONS) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=options)
    proving_pb2_grpc.add_ProvingEngineServicer_to_server(_Servicer(), server)
    port = server.add_insecure_port(address)
    assert port != 0, f"could not bind {address}"
    server.start()
    return server, port


@pytest.fixture
def tcp_server():
    server, port = _server("127.0.0.1:0")
    yield f"127.0.0.1:{port}"
    server.stop(grace=None)


@pytest.fixture
def unix_server():
    folder = tempfile.mkdtemp(prefix="cuzk-proto-", dir="/tmp")  # short: sun_path is ~108 bytes
    address = f"unix://{folder}/cuzk.sock"
    server, _ = _server(address)
    yield address
    server.stop(grace=None)
    shutil.rmtree(folder, ignore_errors=True)


def _call_status(target: str) -> None:
    with grpc.insecure_channel(target, options=OPTIONS) as channel:
        stub = proving_pb2_grpc.ProvingEngineStub(channel)
        got = stub.GetStatus(proving_pb2.GetStatusRequest(), timeout=10)
        assert got == FIXED_STATUS
        with pytest.raises(grpc.RpcError) as err:
            stub.CancelProof(proving_pb2.CancelProofRequest(job_id="x"), timeout=10)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_get_status_over_tcp(tcp_server):
    _call_status(tcp_server)


def test_get_status_over_unix_socket(unix_server):
    path = unix_server.removeprefix("unix://")
    assert os.path.exists(path)
    _call_status(unix_server)


def _prove_echo(target: str, size: int, options=OPTIONS) -> proving_pb2.ProveResponse:
    req = _porep_request()
    req.vanilla_proof = os.urandom(size)
    with grpc.insecure_channel(target, options=options) as channel:
        stub = proving_pb2_grpc.ProvingEngineStub(channel)
        resp = stub.Prove(proving_pb2.ProveRequest(submit=req), timeout=60)
    assert resp.result.status == proving_pb2.AwaitProofResponse.COMPLETED
    assert resp.result.proof == req.vanilla_proof
    return resp


@pytest.mark.parametrize("size", [5 * MIB, 60 * MIB])  # past the 4 MiB default; a PoRep C1 is ~51 MB
def test_large_message_passes_with_128_mib_options(tcp_server, size):
    _prove_echo(tcp_server, size)


def test_large_message_over_unix_socket(unix_server):
    _prove_echo(unix_server, 5 * MIB)


def test_default_limit_would_refuse_it():
    """The contrast: with gRPC's default 4 MiB receive limit the same call fails, so the options above
    are what makes the large messages pass."""
    server, port = _server("127.0.0.1:0", options=[])
    try:
        with pytest.raises(grpc.RpcError) as err:
            _prove_echo(f"127.0.0.1:{port}", 5 * MIB, options=[])
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        server.stop(grace=None)
