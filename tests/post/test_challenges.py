"""PoSt challenges against an independent re-derivation from the text of POST_SNAP.md §A5, and the
properties the spec fixes (range, determinism, V1_0 vs V1_2, Winning = V1_0 with challenges 0..65)."""
import hashlib

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.post.challenges import (challenge_index, check_randomness, leaf_challenge, prover_id_of_miner,
                                  sector_challenges, winning_sector_positions)
from cuzk.post.errors import PoStInputError
from cuzk.porep.registry import ApiVersion

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def spec_leaf(randomness: bytes, sector_id: int, index: int, sector_size: int) -> int:
    h = hashlib.sha256()
    h.update(randomness)
    h.update(sector_id.to_bytes(8, "little"))
    h.update(index.to_bytes(8, "little"))
    return int.from_bytes(h.digest()[:8], "little") % (sector_size // 32)


def rand32(rng) -> bytes:
    b = bytearray(rng.integers(0, 256, 32, dtype=np.uint8).tobytes())
    b[31] &= 0x3F  # curio's mask: always canonical
    return bytes(b)


@pytest.mark.parametrize("pid", [5, 8, 9, 10, 13, 14])
def test_window_matches_spec(pid):
    rng = np.random.default_rng(pid)
    rand, sid, pos = rand32(rng), int(rng.integers(1 << 62)), int(rng.integers(0, 5000))
    size = {5: 2048, 10: 2048, 8: 32 << 30, 13: 32 << 30, 9: 64 << 30, 14: 64 << 30}[pid]
    got = sector_challenges(pid, rand, sid, pos)
    v12 = pid >= 10
    assert got == [spec_leaf(rand, sid, n if v12 else pos * 10 + n, size) for n in range(10)]
    assert all(0 <= c < size // 32 for c in got)
    assert got == sector_challenges(pid, rand, sid, pos)  # deterministic


def test_versions_differ_only_by_sector_position():
    rand, sid = bytes(range(32))[:31] + b"\x01", 77
    v1, v12 = sector_challenges(8, rand, sid, 4), sector_challenges(13, rand, sid, 4)
    assert v1 != v12
    assert sector_challenges(13, rand, sid, 0) == v12 == sector_challenges(13, rand, sid, 2348)
    assert sector_challenges(8, rand, sid, 0) == v12  # index n either way at position 0
    assert challenge_index(ApiVersion.V1_1_0, 3, 10, 2) == 32 and challenge_index(ApiVersion.V1_2_0, 3, 10, 2) == 2


def test_winning_is_66_challenges_indexed_0_to_65():
    rand, sid = rand32(np.random.default_rng(1)), 123456
    got = sector_challenges(3, rand, sid)
    assert len(got) == 66 and got == [spec_leaf(rand, sid, n, 32 << 30) for n in range(66)]
    # the circuit's 66 "sectors" of 1 challenge each (index i * 1 + 0) give the same leaves
    assert [leaf_challenge(rand, sid, challenge_index(ApiVersion.V1_0_0, i, 1, 0), 1 << 30) for i in range(66)] == got


def test_winning_sector_selection_matches_spec():
    rng = np.random.default_rng(2)
    for _ in range(20):
        rand, prover, n = rand32(rng), prover_id_of_miner(int(rng.integers(1, 1 << 40))), int(rng.integers(1, 10**6))
        want = int.from_bytes(hashlib.sha256(prover + rand + bytes(8)).digest()[:8], "little") % n
        assert winning_sector_positions(rand, prover, n) == [want]
    assert winning_sector_positions(rand, prover, 1) == [0]
    with pytest.raises(PoStInputError, match="sector_set_len"):
        winning_sector_positions(rand, prover, 0)


def test_prover_id_leb128():
    assert prover_id_of_miner(0) == bytes(32)
    assert prover_id_of_miner(1000)[:3] == bytes([0xE8, 0x07, 0]) and len(prover_id_of_miner(1000)) == 32
    assert prover_id_of_miner(2 ** 64 - 1)[:11] == b"\xff" * 9 + b"\x01\x00"


@pytest.mark.parametrize("value", [R.to_bytes(32, "little"), b"\xff" * 32, (R + 5).to_bytes(32, "little")])
def test_non_canonical_randomness_refused(value):
    with pytest.raises(PoStInputError, match="randomness: not a canonical Fr"):
        sector_challenges(13, value, 1)
    assert check_randomness((R - 1).to_bytes(32, "little")) == (R - 1).to_bytes(32, "little")


@pytest.mark.parametrize("value", [b"", bytes(31), bytes(33), "00" * 32, None, [0] * 32])
def test_randomness_type_refused(value):
    with pytest.raises(PoStInputError, match="randomness: must be 32 bytes"):
        check_randomness(value)


@pytest.mark.parametrize("sid", [-1, 2 ** 64, True, 1.0, "1"])
def test_sector_id_refused(sid):
    with pytest.raises(InputError, match="sector_id: must be a u64"):
        sector_challenges(13, bytes(32), sid)
