"""PoSt vanilla proofs of 2KiB sectors sealed by cuzk: generate -> bincode -> read -> verify, the wire
sizes of POST_SNAP.md §A6, WinningPoSt unrolling, padding and public inputs (§A4), and each tampering
refused with the typed error naming the sector, challenge and field."""
import dataclasses
import struct

import numpy as np
import pytest

from cuzk.porep.seal import seal
from cuzk.post.bincode import read_sector_proof, write_sector_proof
from cuzk.post.challenges import sector_challenges
from cuzk.post.checks import (partition_public_inputs, verify_window_partition,
                              verify_winning)
from cuzk.post.errors import PoStInputError, PoStVanillaProofError
from cuzk.post.prove_vanilla import vanilla_proofs
from cuzk.post.proving import partition_witness
from cuzk.post.witness import pad_partition

WINDOW_V1, WINDOW_V1_2, WINNING = 5, 10, 0


@pytest.fixture(scope="module")
def sectors(tmp_path_factory):
    rng = np.random.default_rng(31)
    root = tmp_path_factory.mktemp("post")
    prover = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    return [seal("StackedDrg2KiBV1_1", root / f"s{sid}", prover_id=prover, sector_id=sid,
                 ticket=bytes(rng.integers(0, 256, 32, dtype=np.uint8)), progress=False) for sid in (11, 20, 35)]


@pytest.fixture(scope="module")
def rand():
    b = bytearray(np.random.default_rng(7).integers(0, 256, 32, dtype=np.uint8).tobytes())
    b[31] &= 0x3F
    return bytes(b)


def roundtrip(proof, vps):
    out = []
    for i, vp in enumerate(vps):
        raw = write_sector_proof(vp)
        back = read_sector_proof(raw, proof, i)
        assert back == vp and write_sector_proof(back) == raw
        out.append(back)
    return out


@pytest.mark.parametrize("proof", [WINDOW_V1, WINDOW_V1_2])
def test_window_roundtrip_and_verify(sectors, rand, proof):
    part0 = roundtrip(proof, vanilla_proofs(proof, rand, sectors[:2], 0))
    assert [len(write_sector_proof(v)) for v in part0] == [5680, 5680]
    verify_window_partition(proof, rand, part0, 0)
    part1 = roundtrip(proof, vanilla_proofs(proof, rand, sectors[2:], 1))
    verify_window_partition(proof, rand, part1, 1)
    for v, s in zip(part0, sectors):
        assert v.comm_r == s.comm_r and v.sector_proof.comm_c == s.comm_c and v.sector_proof.comm_r_last == s.comm_r_last
    assert [m.leaf_index() for m in part1[0].sector_proof.inclusion_proofs] == sector_challenges(proof, rand, 35, 2)
    if proof == WINDOW_V1:  # V1_0 challenges depend on the sector's position: partition 1 is not partition 0
        with pytest.raises(PoStVanillaProofError, match=r"sector 0 challenge \d+ leaf index"):
            verify_window_partition(proof, rand, part1, 0)
    else:
        verify_window_partition(proof, rand, part1, 0)


def test_winning_roundtrip_unroll_and_inputs(sectors, rand):
    (vp,) = roundtrip(WINNING, vanilla_proofs(WINNING, rand, sectors[1:2]))
    assert len(write_sector_proof(vp)) == 36816
    verify_winning(WINNING, rand, [vp])
    unrolled = partition_witness(WINNING, rand, [vp]).sectors  # 66 circuit sectors of one challenge
    leaves = [m.leaf_index() for m in vp.sector_proof.inclusion_proofs]
    assert [s.challenges for s in unrolled] == [[leaf] for leaf in leaves] and len(leaves) == 66
    commitments = {(s.comm_r, s.comm_c, s.comm_r_last) for s in unrolled}
    assert commitments == {tuple(int.from_bytes(getattr(sectors[1], c), "little") for c in ("comm_r", "comm_c", "comm_r_last"))}
    inputs = partition_public_inputs(WINNING, rand, [(20, sectors[1].comm_r)])
    comm_r = int.from_bytes(sectors[1].comm_r, "little")
    assert inputs == [x for leaf in leaves for x in (comm_r, leaf)] and len(inputs) == 132
    with pytest.raises(PoStInputError, match="exactly 1"):
        verify_winning(WINNING, rand, [vp, vp])


@pytest.mark.parametrize("proof", [WINDOW_V1, WINDOW_V1_2])
def test_window_public_inputs_padded(sectors, rand, proof):
    vps = vanilla_proofs(proof, rand, sectors[2:], 1)
    inputs = partition_public_inputs(proof, rand, [(35, sectors[2].comm_r)], 1)
    want = [int.from_bytes(sectors[2].comm_r, "little")] + [m.leaf_index() for m in vps[0].sector_proof.inclusion_proofs]
    assert inputs == want + want  # the short partition repeats its last sector verbatim
    full = partition_public_inputs(proof, rand, [(11, sectors[0].comm_r), (20, sectors[1].comm_r)], 0)
    assert len(full) == 22 and full[11] == int.from_bytes(sectors[1].comm_r, "little")
    assert pad_partition(["a"], 3) == ["a", "a", "a"]
    with pytest.raises(PoStInputError):
        pad_partition([], 2)


def _with(vp, **change):
    s = vp.sector_proof
    return dataclasses.replace(vp, sectors=(dataclasses.replace(s, **change),))


def _proof_changed(vp, n, **change):
    proofs = list(vp.sector_proof.inclusion_proofs)
    proofs[n] = dataclasses.replace(proofs[n], **change)
    return _with(vp, inclusion_proofs=tuple(proofs))


def _bump(b: bytes) -> bytes:
    return (int.from_bytes(b, "little") ^ 1).to_bytes(32, "little")


def test_tampering_refused(sectors, rand):
    vps = vanilla_proofs(WINDOW_V1, rand, sectors[:2])
    m = vps[1].sector_proof.inclusion_proofs[3]
    e0 = m.base[0]
    sib = dataclasses.replace(e0, hashes=(_bump(e0.hashes[0]),) + e0.hashes[1:])
    cases = [
        (_proof_changed(vps[1], 3, base=(sib,) + m.base[1:]), "sector 1 challenge 3 inclusion path"),
        (_proof_changed(vps[1], 3, leaf=_bump(m.leaf)), "sector 1 challenge 3 inclusion path"),
        (_proof_changed(vps[1], 3, root=_bump(m.root)), "sector 1 challenge 3 root"),
        (_with(vps[1], comm_c=_bump(vps[1].sector_proof.comm_c)), "sector 1 comm_r"),
        (dataclasses.replace(vps[1], comm_r=_bump(vps[1].comm_r)), "sector 1 comm_r"),
        (_with(vps[1], comm_c=b"\xff" * 32), "sector 1 comm_c / comm_r_last: not a canonical Fr"),
        (dataclasses.replace(vps[1], sector_id=21), r"sector 1 challenge \d+ leaf index"),
    ]
    for bad, msg in cases:
        raw = write_sector_proof(bad)
        with pytest.raises(PoStVanillaProofError, match=msg):
            verify_window_partition(WINDOW_V1, rand, [vps[0], read_sector_proof(raw, WINDOW_V1, 1)])
    other = bytes([rand[0] ^ 1]) + rand[1:]
    with pytest.raises(PoStVanillaProofError, match=r"sector 0 challenge \d+ leaf index"):
        verify_window_partition(WINDOW_V1, other, vps)
    with pytest.raises(PoStVanillaProofError, match=r"sector 0 challenge \d+ leaf index"):
        verify_window_partition(WINDOW_V1, rand, vps[1:])  # sector 20 dropped to position 0 (V1_0)
    verify_window_partition(WINDOW_V1_2, rand, vanilla_proofs(WINDOW_V1_2, rand, sectors[:2])[1:])  # FIP-0061
    with pytest.raises(PoStInputError, match="not a WinningPoSt"):
        verify_winning(WINDOW_V1, rand, vps[:1])


def test_prover_refuses_bad_sector_sets(sectors, rand):
    with pytest.raises(PoStInputError, match="sorted"):
        vanilla_proofs(WINDOW_V1, rand, [sectors[1], sectors[0]])
    with pytest.raises(PoStInputError, match="1 to 2"):
        vanilla_proofs(WINDOW_V1, rand, sectors)
    with pytest.raises(PoStInputError, match="proves 8388608"):
        vanilla_proofs(6, rand, sectors[:1])
    with pytest.raises(PoStInputError, match="randomness"):
        vanilla_proofs(WINDOW_V1, b"\xff" * 32, sectors[:1])


def test_bincode_offsets(sectors, rand):
    (vp,) = vanilla_proofs(WINDOW_V1, rand, sectors[:1])
    raw = write_sector_proof(vp)
    assert struct.unpack_from("<Q", raw, 0)[0] == 11 and raw[8:40] == vp.comm_r
    assert struct.unpack_from("<QQI", raw, 40) == (1, 10, 0)
