"""The SnapDeals payload of a SubmitProof request (../shared/POST_SNAP.md §D1, §B6): SNAP_DEALS_UPDATE
carries its registered update proof (curio's Go id, 0..4), sector_size (bytes, 0: unstated, as
curio's proofshare sends it), the vanilla proofs (vanilla_proofs: one bincode PartitionProof per
partition, or vanilla_proof: curio's whole snap-vproof.json) and comm_r_old, comm_r_new, comm_d_new
(raw 32 bytes each). The journal keeps these fields as one payload: a SubmitProofRequest of them
alone, serialized deterministically, so a resumed job is parsed as a fresh one. sector_number and
miner_id are not kept: the commitments and vanilla proofs fix the update.

Every defect is an InputError naming the field (UnknownUpdateProofError for registered_proof); the
commitments and vanilla proofs themselves are checked by the engine adapter (cuzk.engine.snap)."""
from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError

from cuzk.errors import InputError
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.snap.errors import UnknownUpdateProofError
from cuzk.snap.registry import RegisteredUpdateProof, get_update_proof


@dataclass(frozen=True)
class SnapRequest:
    """A SnapDeals job's parsed payload: what cuzk.engine.snap.submit_snap takes."""

    proof: RegisteredUpdateProof
    comm_r_old: bytes
    comm_r_new: bytes
    comm_d_new: bytes
    vanilla_proofs: list[bytes] | bytes  # per partition, or snap-vproof.json


def snap_payload(request) -> bytes:
    """The journaled payload of a SnapDeals SubmitProofRequest: its SnapDeals fields alone."""
    return pb.SubmitProofRequest(sector_size=request.sector_size, registered_proof=request.registered_proof,
                                 vanilla_proof=request.vanilla_proof, vanilla_proofs=request.vanilla_proofs,
                                 comm_r_old=request.comm_r_old, comm_r_new=request.comm_r_new,
                                 comm_d_new=request.comm_d_new).SerializeToString(deterministic=True)


def parse_snap(payload: bytes) -> SnapRequest:
    """The SnapRequest of a journaled SnapDeals payload: its registered proof, of sector_size when that
    is stated, and its vanilla proofs in one of the two fields."""
    try:
        req = pb.SubmitProofRequest.FromString(bytes(payload))
    except DecodeError:
        raise InputError("payload: not a snap request (protobuf)") from None
    try:
        p = get_update_proof(req.registered_proof)
    except UnknownUpdateProofError as e:
        raise UnknownUpdateProofError(f"registered_proof: {e}") from None
    if req.sector_size and req.sector_size != p.sector_size:
        raise InputError(f"sector_size: {req.sector_size} does not match {p.name} ({p.sector_size} bytes)")
    if req.vanilla_proof and req.vanilla_proofs:
        raise InputError("vanilla_proof: snap-vproof.json or vanilla_proofs (one per partition), not both")
    vanilla = bytes(req.vanilla_proof) if req.vanilla_proof else list(req.vanilla_proofs)
    return SnapRequest(p, req.comm_r_old, req.comm_r_new, req.comm_d_new, vanilla)
