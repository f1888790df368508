"""SnapDeals vanilla partition proofs of a 2KiB sector: they verify, tampering is caught with the
partition / challenge / field named, public inputs (B4), bincode sizes (B6) and snap-vproof.json."""
import base64
import dataclasses
import json

import numpy as np
import pytest

from cuzk.snap.bincode import read_partition_proof, read_vproof_json, write_partition_proof, write_vproof_json
from cuzk.snap.errors import SnapVanillaFormatError, SnapVanillaProofError
from cuzk.snap.vanilla import prove_all, public_inputs, verify_partition

from .sealed import sealed_and_encoded


@pytest.fixture(scope="module")
def proved(tmp_path_factory):
    _, _, u = sealed_and_encoded("StackedDrg2KiBV1_1", tmp_path_factory.mktemp("snapv") / "s",
                                 np.random.default_rng(4))
    return u, public_inputs(u)[0], prove_all(u)[0]


def test_proof_verifies_and_public_inputs(proved):
    u, pub, proof = proved
    verify_partition(0, pub, proof)
    ints = pub.to_ints(u.proof)
    assert ints[0] == 1 and ints[1:] == [int.from_bytes(c, "little") for c in (u.comm_r_old, u.comm_d_new,
                                                                                  u.comm_r_new)]
    assert len(proof.challenge_proofs) == 10 and len(proof.apex_leafs) == 8


def _flip(b: bytes) -> bytes:
    return bytes([b[0] ^ 1]) + b[1:]


def test_tampering_is_named(proved):
    _, pub, proof = proved
    cp = proof.challenge_proofs[3]
    cases = {
        "apex_leafs[": dataclasses.replace(proof, apex_leafs=tuple(
            _flip(a) for a in proof.apex_leafs)),
        "proof_r_new": dataclasses.replace(proof, challenge_proofs=proof.challenge_proofs[:3] + (
            dataclasses.replace(cp, proof_r_new=dataclasses.replace(cp.proof_r_new, leaf=_flip(cp.proof_r_new.leaf))),)
            + proof.challenge_proofs[4:]),
        "proof_r_old.root": dataclasses.replace(proof, comm_c=_flip(proof.comm_c)),
    }
    for field, bad in cases.items():
        with pytest.raises(SnapVanillaProofError, match=f"partition 0 .*{field[:8]}") as e:
            verify_partition(0, pub, bad)
        assert e.value.partition == 0 and e.value.field.startswith(field)
    with pytest.raises(SnapVanillaProofError, match="challenge 0 proof_r_old.path"):
        verify_partition(0, dataclasses.replace(pub, comm_r_new=proof.comm_c), proof)  # other challenges
    with pytest.raises(SnapVanillaProofError, match="challenge_proofs"):
        verify_partition(0, pub, dataclasses.replace(proof, challenge_proofs=proof.challenge_proofs[:9]))


def test_bincode_round_trip_and_size(proved):
    _, pub, proof = proved
    raw = write_partition_proof(proof, 0)
    assert len(raw) == 15_064  # §B6
    assert read_partition_proof(raw, 0) == proof
    with pytest.raises(SnapVanillaFormatError, match="partition 2 at byte offset 15064"):
        read_partition_proof(raw + b"\0", 0, 2)
    with pytest.raises(SnapVanillaFormatError, match="offset 32: apex_leafs length is 9, expected 8"):
        read_partition_proof(raw[:32] + (9).to_bytes(8, "little") + raw[40:], 0)
    with pytest.raises(SnapVanillaFormatError, match=r"offset \d+: truncated: challenge \d+ proof_\w+ .* needs"):
        read_partition_proof(raw[:1000], 0)


def test_vproof_json(proved):
    _, pub, proof = proved
    text = write_vproof_json([proof], 0)
    assert json.loads(text) == [base64.b64encode(write_partition_proof(proof, 0)).decode()]
    assert read_vproof_json(text, 0) == [proof]
    for bad, match in [(b"[", "not JSON"), (b"{}", "array"), (b'["!!"]', "partition 0 .*base64"),
                       (b"[]", "0 partition proofs"), (b'["AAAA"]', "partition 0 at byte offset 0"),
                       (b"\xff", "UTF-8")]:
        with pytest.raises(SnapVanillaFormatError, match=match):
            read_vproof_json(bad, 0)
