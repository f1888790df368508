"""A Python client of the proving service (any cuzk.v1.ProvingEngine: cuzk daemon or curio's), and
what `cuzk submit | await | status | metrics` run.

    with Client("unix:///run/curio/cuzk.sock") as client:
        job = client.submit(Path("c1.json").read_bytes(), request_id="porep-1000-5")
        proof = client.await_proof(job, timeout_s=600)   # bytes, 192 per partition
A refused request raises DaemonError (its gRPC code and the daemon's message); a job that failed or
was cancelled raises ProofFailedError; an AwaitProof that timed out raises TimeoutError.
"""
from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict

from cuzk.errors import CuzkError
from cuzk.service.daemon import GRPC_OPTIONS
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.proto.cuzk.v1 import proving_pb2_grpc as pb_grpc


class DaemonError(CuzkError):
    """The daemon refused a request: `code` is the gRPC status code's name (INVALID_ARGUMENT, ...)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"the daemon answered {code}: {message}")


class ProofFailedError(CuzkError):
    """The job ended without a proof (FAILED or CANCELLED), with the daemon's message."""


class Client:
    """A connection to a proving service at `address` (unix:///path or host:port), 128 MiB messages."""

    def __init__(self, address: str = "unix:///run/curio/cuzk.sock", timeout_s: float | None = 30.0) -> None:
        self.address, self.timeout_s = address, timeout_s
        self._channel = grpc.insecure_channel(address, options=GRPC_OPTIONS)
        self._stub = pb_grpc.ProvingEngineStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request, timeout_s: float | None = None):
        try:
            return getattr(self._stub, method)(request, timeout=timeout_s if timeout_s is not None else self.timeout_s)
        except grpc.RpcError as e:
            raise DaemonError(e.code().name, e.details() or "") from None

    def submit(self, payload: bytes, request_id: str = "", priority: int = 0) -> str:
        """Queue a PoRep proof of a C1 (curio's wrapper JSON or a plain C1 JSON); its job id."""
        req = pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.POREP_SEAL_COMMIT, priority=priority,
                                    vanilla_proof=payload)
        return self._call("SubmitProof", req).job_id

    def await_proof(self, job_id: str, timeout_s: float = 0) -> bytes:
        """The job's proof, waiting up to timeout_s (0: as long as it takes)."""
        req = pb.AwaitProofRequest(job_id=job_id, timeout_ms=int(timeout_s * 1000))
        out = self._call("AwaitProof", req, timeout_s + 30 if timeout_s else None)
        return _proof(out)

    def prove(self, payload: bytes, request_id: str = "", timeout_s: float | None = None) -> bytes:
        """Submit and wait (curio's client calls only this)."""
        req = pb.ProveRequest(submit=pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.POREP_SEAL_COMMIT,
                                                          vanilla_proof=payload))
        return _proof(self._call("Prove", req, timeout_s).result)

    def cancel(self, job_id: str) -> bool:
        return self._call("CancelProof", pb.CancelProofRequest(job_id=job_id)).was_running

    def status(self) -> dict[str, Any]:
        return MessageToDict(self._call("GetStatus", pb.GetStatusRequest()), preserving_proto_field_name=True)

    def metrics(self) -> str:
        return self._call("GetMetrics", pb.GetMetricsRequest()).prometheus_text


def _proof(out) -> bytes:
    if out.status == pb.AwaitProofResponse.COMPLETED:
        return out.proof
    if out.status == pb.AwaitProofResponse.TIMEOUT:
        raise TimeoutError(f"job {out.job_id} has not finished yet")
    state = pb.AwaitProofResponse.Status.Name(out.status)
    raise ProofFailedError(f"job {out.job_id} {state.lower()}: {out.error_message or 'no message'}")
