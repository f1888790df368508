"""The PoSt payload of a SubmitProof request (../shared/POST_SNAP.md §D1): WINNING_POST and
WINDOW_POST_PARTITION carry their registered proof (curio's Go id, 0..14), sector_size (bytes, 0:
unstated), vanilla_proofs (one bincode FallbackPoStSectorProof per sector), randomness (32 bytes) and
partition_index (WindowPoSt). The journal keeps these fields as one payload: a SubmitProofRequest of
them alone, serialized deterministically, so a resumed job is parsed as a fresh one. miner_id is not
kept: the vanilla proofs already carry the challenged sectors.

Every defect is an InputError subclass naming the field (PoStInputError, UnknownPoStProofError); the
vanilla proofs themselves are read and checked by the engine adapter (cuzk.engine.post)."""
from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError

from cuzk.errors import InputError
from cuzk.post.errors import PoStInputError
from cuzk.post.proving import expect_kind
from cuzk.post.registry import PoStKind, RegisteredPoStProof
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb

KIND_OF = {"winning_post": PoStKind.WINNING, "window_post": PoStKind.WINDOW}


@dataclass(frozen=True)
class PostRequest:
    """A PoSt job's parsed payload: what cuzk.engine.post.submit_post takes."""

    proof: RegisteredPoStProof
    randomness: bytes
    vanilla_proofs: list[bytes]
    partition_index: int


def post_payload(request) -> bytes:
    """The journaled payload of a PoSt SubmitProofRequest: its PoSt fields alone."""
    return pb.SubmitProofRequest(sector_size=request.sector_size, registered_proof=request.registered_proof,
                                 vanilla_proofs=request.vanilla_proofs, randomness=request.randomness,
                                 partition_index=request.partition_index).SerializeToString(deterministic=True)


def parse_post(payload: bytes, kind: str) -> PostRequest:
    """The PostRequest of a journaled PoSt payload of `kind` ("winning_post" or "window_post"): its
    registered proof must be of that kind and, when sector_size is stated, of that size; a WinningPoSt
    has no partition but 0."""
    try:
        req = pb.SubmitProofRequest.FromString(bytes(payload))
    except DecodeError:
        raise InputError(f"payload: not a {kind} request (protobuf)") from None
    p = expect_kind(req.registered_proof, KIND_OF[kind])
    if req.sector_size and req.sector_size != p.sector_size:
        raise PoStInputError("sector_size", f"{req.sector_size} does not match {p.go_name} ({p.sector_size} bytes)")
    if p.kind is PoStKind.WINNING and req.partition_index:
        raise PoStInputError("partition_index", f"WinningPoSt has partition 0 only, got {req.partition_index}")
    return PostRequest(p, req.randomness, list(req.vanilla_proofs), req.partition_index)
