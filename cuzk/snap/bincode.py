"""bincode 1.3 (legacy defaults) form of SnapDeals PartitionProof, and curio's snap-vproof.json
(../shared/POST_SNAP.md §B6; rust-fil-proofs `storage-proofs-update/src/vanilla.rs:168-255`,
`storage-proofs-core/src/merkle/proof.rs` ProofData; curio `lib/ffi/snap_funcs.go:350-380`).

    PartitionProof = comm_c [32] | apex_leafs Vec<[32]> | challenge_proofs Vec<ChallengeProof>
    ChallengeProof = proof_r_old MerkleProof | proof_d_new MerkleProof (SHA256, Single) | proof_r_new
A Vec is a u64 LE length then its elements; MerkleProof (variant by the TreeR shape) as cuzk.porep.bincode
reads and writes it. Sizes: 2KiB 15,064 B, 8MiB 43,864 B, 32GiB 561,768 B.
snap-vproof.json is Go's json.Marshal([][]byte): a JSON array of standard base64 strings, one per partition.
"""
from __future__ import annotations

import base64
import binascii
import json

from cuzk.porep.bincode import Cursor, ProofData, pack_u64, write_merkle_proof
from cuzk.porep.trees import POSEIDON, SHA256, MerklePath, binary_arities, level_arities
from cuzk.snap.errors import SnapVanillaFormatError
from cuzk.snap.registry import RegisteredUpdateProof, get_update_proof
from cuzk.snap.vanilla import ChallengeProof, PartitionProof

VPROOF_MAX_BYTES = 64 << 20  # 16 x 561,768 B of 32GiB proofs is 12 MiB as base64


def read_partition_proof(data: bytes, proof: RegisteredUpdateProof | int | str,
                         partition: int | None = None) -> PartitionProof:
    """Decode one bincode PartitionProof of update proof `proof`, checking its shape as it goes;
    SnapVanillaFormatError names `partition` and the byte offset of a fault."""
    p = get_update_proof(proof)
    cur = Cursor(data, lambda at, reason: SnapVanillaFormatError(partition, at, reason))
    r_ar, d_ar = level_arities(p.nodes, p.tree_shape), binary_arities(p.nodes)
    r_variant = ProofData.of_shape(p.tree_shape)
    comm_c = cur.take(32, "comm_c")
    cur.uint(8, "apex_leafs length", equal=p.apex_leaves)
    apex = tuple(cur.take(32, f"apex_leafs[{n}]") for n in range(p.apex_leaves))
    cur.uint(8, "challenge_proofs length", equal=p.challenges)
    cps = tuple(ChallengeProof(cur.merkle_proof(f"challenge {n} proof_r_old", POSEIDON, r_ar, r_variant),
                               cur.merkle_proof(f"challenge {n} proof_d_new", SHA256, d_ar, ProofData.SINGLE),
                               cur.merkle_proof(f"challenge {n} proof_r_new", POSEIDON, r_ar, r_variant))
                for n in range(p.challenges))
    cur.finish()
    return PartitionProof(comm_c, apex, cps)


def _write_merkle(m: MerklePath, variant: ProofData) -> bytes:
    return write_merkle_proof(variant, m.root, m.leaf, m.siblings, m.indices)


def write_partition_proof(proof: PartitionProof, p: RegisteredUpdateProof | int | str) -> bytes:
    """The bincode bytes of a PartitionProof (as rust's bincode::serialize writes them)."""
    r_variant = ProofData.of_shape(get_update_proof(p).tree_shape)
    out = [proof.comm_c, pack_u64(len(proof.apex_leafs)), *proof.apex_leafs, pack_u64(len(proof.challenge_proofs))]
    for cp in proof.challenge_proofs:
        out += [_write_merkle(cp.proof_r_old, r_variant), _write_merkle(cp.proof_d_new, ProofData.SINGLE),
                _write_merkle(cp.proof_r_new, r_variant)]
    return b"".join(out)


def read_vproof_json(text: bytes | str, proof: RegisteredUpdateProof | int | str) -> list[PartitionProof]:
    """Decode curio's snap-vproof.json: exactly one base64 PartitionProof per partition, in order."""
    p = get_update_proof(proof)
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if not isinstance(text, (bytes, bytearray, memoryview)):
        raise SnapVanillaFormatError(None, 0, f"expected JSON bytes or str, got {type(text).__name__}")
    if len(text) > VPROOF_MAX_BYTES:
        raise SnapVanillaFormatError(None, VPROOF_MAX_BYTES, f"{len(text):,} bytes, more than {VPROOF_MAX_BYTES:,}")
    try:
        items = json.loads(bytes(text).decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SnapVanillaFormatError(None, e.start, "not UTF-8") from None
    except json.JSONDecodeError as e:
        raise SnapVanillaFormatError(None, e.pos, f"not JSON: {e.msg}") from None
    except RecursionError:
        raise SnapVanillaFormatError(None, 0, "JSON nested too deeply") from None
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise SnapVanillaFormatError(None, 0, "expected a JSON array of base64 strings")
    if len(items) != p.partitions:
        raise SnapVanillaFormatError(None, 0, f"{len(items)} partition proofs, {p.name} has {p.partitions}")
    out = []
    for k, item in enumerate(items):
        try:
            raw = base64.b64decode(item.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError) as e:
            raise SnapVanillaFormatError(k, 0, f"not standard base64: {e}") from None
        out.append(read_partition_proof(raw, p, k))
    return out


def write_vproof_json(proofs: list[PartitionProof], p: RegisteredUpdateProof | int | str) -> bytes:
    """snap-vproof.json as Go's json.Marshal([][]byte) writes it."""
    return json.dumps([base64.b64encode(write_partition_proof(x, p)).decode() for x in proofs],
                      separators=(",", ":")).encode()
