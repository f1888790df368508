"""SnapDeals encode / decode of sectors sealed by cuzk: the encoding equation against Python ints,
the commitments, Poseidon_GR's tag and the round trip (2KiB fast, 8MiB slow)."""

import numpy as np
import pytest

import cuzk.hashes.poseidon as poseidon
from cuzk.errors import InputError, NonCanonicalError
from cuzk.ff.fields import Fr
from cuzk.hashes.poseidon import hash_ints
from cuzk.snap.derive import GR_TAG, partition_challenges, poseidon_gr
from cuzk.snap.encode import decode, encode

from .sealed import R, random_data, sealed_and_encoded


def _ints(b: bytes) -> list[int]:
    return [int.from_bytes(b[i:i + 32], "little") for i in range(0, len(b), 32)]


def _gr_reference(a: int, b: int) -> int:
    """The plain permutation (hash_reference) with the domain tag 2^40."""
    return poseidon.hash_reference([a, b], 2, GR_TAG)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return sealed_and_encoded("StackedDrg2KiBV1_1", tmp_path_factory.mktemp("snap") / "s",
                              np.random.default_rng(2))


def test_poseidon_gr_is_the_tag_2_40_permutation():
    pairs = [(0, 0), (5, 7), (R - 1, 123456789)]
    got = Fr.to_ints(poseidon_gr(Fr.from_ints([x for pr in pairs for x in pr]).reshape(-1, 2, 4)))
    assert got == [_gr_reference(a, b) for a, b in pairs]
    assert got[1] != hash_ints([[5, 7]], 2)[0]  # not the Merkle-tag hash


def test_encoding_matches_python_ints(small):
    sector, data, u = small
    old = _ints((sector.path / "sealed.bin").read_bytes())
    phi = _gr_reference(_ints(u.comm_d_new)[0], _ints(sector.comm_r)[0])
    rhos = [_gr_reference(phi, high) for high in (0, 1)]  # 2KiB: h = 1, high = node >> 5
    want = [(o + d * rhos[n >> 5]) % R for n, (o, d) in enumerate(zip(old, _ints(data.tobytes())))]
    assert _ints(u.replica) == want
    level = hash_ints([want[i:i + 8] for i in range(0, 64, 8)], 8)
    assert _ints(u.comm_r_last_new)[0] == hash_ints([level], 8)[0]
    assert _ints(u.comm_r_new)[0] == hash_ints([[_ints(sector.comm_c)[0], _ints(u.comm_r_last_new)[0]]], 2)[0]
    assert u.comm_d_new != sector.comm_d and u.data == data.tobytes()


def test_challenges_match_python_ints(small):
    _, _, u = small
    digest = _gr_reference(_ints(u.comm_r_new)[0], 0)
    want = [(digest >> (6 * i)) & 63 for i in range(10)]  # rb = 6, 42 per digest, partition 0
    assert partition_challenges(u.proof, u.comm_r_new, 0) == want


def test_round_trip_2kib(small):
    sector, data, u = small
    assert decode(sector, u.replica, u.comm_d_new) == data.tobytes()
    assert decode(sector, u.replica, sector.comm_d) != data.tobytes()  # another comm_d, another phi


def test_refuses_bad_data(small, rng):
    sector = small[0]
    with pytest.raises(InputError, match="2,048 bytes"):
        encode(sector, bytes(2047))
    with pytest.raises(InputError):
        encode(sector, "not bytes")
    bad = random_data(rng, 64)
    bad[5] = 0xFF
    with pytest.raises(NonCanonicalError):
        encode(sector, bad.tobytes())
    with pytest.raises(InputError, match="comm_d_new"):
        decode(sector, small[2].replica, b"short")


@pytest.mark.slow
def test_round_trip_8mib(tmp_path):
    sector, data, u = sealed_and_encoded("StackedDrg8MiBV1_1", tmp_path / "s", np.random.default_rng(3))
    assert decode(sector, u.replica, u.comm_d_new) == data.tobytes()
    assert u.proof.partitions == 4
    from cuzk.snap.bincode import read_vproof_json, write_vproof_json
    from cuzk.snap.vanilla import prove_all, public_inputs, verify_partition
    proofs = read_vproof_json(write_vproof_json(prove_all(u), 1), 1)
    for pub, proof in zip(public_inputs(u), proofs):
        verify_partition(1, pub, proof)
        assert pub.to_ints(u.proof)[0] == 32 + pub.k
