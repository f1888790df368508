"""PoRep challenges: interactive, synthetic (rust's hard-coded vectors), non-interactive; configs."""
import hashlib

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.porep.challenges import (PoRepConfig, all_challenges, interactive_challenges, ni_challenges,
                                   partition_challenges, synthetic_challenge, synthetic_porep_challenges)
from cuzk.porep.registry import PROOFS, ApiFeature, ApiVersion


def test_synthetic_against_rust_hardcoded():
    rid, comm_r = (55).to_bytes(32, "little"), (101).to_bytes(32, "little")
    assert [synthetic_challenge(1 << 10, rid, comm_r, i, 21) for i in range(21)] == [
        178, 297, 869, 211, 875, 477, 94, 781, 124, 332, 856, 801, 176, 692, 429, 691, 290, 204, 986,
        210, 973]
    assert synthetic_porep_challenges(1 << 10, rid, comm_r, bytes([1] * 32), 10, 0, 21) == [
        176, 781, 801, 986, 290, 211, 692, 856, 986, 332]


def test_synthetic_partitions_are_one_stream(rng):
    rid, comm_r, seed = (bytes(rng.integers(0, 256, 32, dtype=np.uint8)) for _ in range(3))
    whole = synthetic_porep_challenges(1 << 30, rid, comm_r, seed, 36, 0)
    parts = [c for k in range(4) for c in synthetic_porep_challenges(1 << 30, rid, comm_r, seed, 9, k)]
    assert whole == parts
    assert all(1 <= c < 1 << 30 for c in whole)


def test_interactive_formula(rng):
    rid, seed = bytes(rng.integers(0, 256, 32, dtype=np.uint8)), bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    got = interactive_challenges(1 << 30, rid, seed, 18, 3)
    j = 3 * 18 + 5
    digest = hashlib.sha256(rid + seed + j.to_bytes(4, "little")).digest()
    assert got[5] == int.from_bytes(digest, "little") % ((1 << 30) - 1) + 1
    whole = interactive_challenges(1 << 30, rid, seed, 180, 0)
    assert whole == [c for k in range(10) for c in interactive_challenges(1 << 30, rid, seed, 18, k)]
    assert all(1 <= c < 64 for c in interactive_challenges(64, rid, seed, 50, 0))
    ni = ni_challenges(64, rid, seed, 2, 1)
    tag = b"filecoin.io|PoRep|1|NonInteractive|1"
    assert ni[0] == int.from_bytes(hashlib.sha256(tag + rid + seed + (2).to_bytes(4, "little")).digest(),
                                   "little") % 63 + 1


def test_configs():
    for p in PROOFS.values():
        cfg = PoRepConfig.from_proof(p)
        assert cfg.challenges_per_partition * cfg.partitions >= cfg.minimum_challenges
        assert cfg.challenges_per_partition in (2, 18)
    cfg = PoRepConfig.from_proof("StackedDrg32GiBV1_1")
    assert (cfg.layers, cfg.partitions, cfg.challenges_per_partition) == (11, 10, 18)
    assert PoRepConfig.from_json({"sector_size": 2048, "partitions": 1, "porep_id": [5] + [0] * 31,
                                  "api_version": "V1_2_0", "api_features": ["SyntheticPoRep"]}).feature
    with pytest.raises(InputError):
        PoRepConfig.from_json({"sector_size": 2048, "partitions": 1, "porep_id": [0] * 32,
                               "api_version": "V9"})
    with pytest.raises(InputError):
        partition_challenges(cfg, bytes(32), None, None, 0)
    with pytest.raises(InputError):
        all_challenges(PoRepConfig.from_proof(12), bytes(32), bytes(32), None)


def test_minimum_challenges_and_layers():
    """filecoin-proofs constants.rs: 2 (small sizes) or 176 interactive minimum challenges, 26 or 2253
    non-interactive; 2 or 11 layers. An unregistered sector size is refused."""
    small, big = (2, 26, 2), (176, 2253, 11)
    want = {2048: small, 8 << 20: small, 512 << 20: small, 32 << 30: big, 64 << 30: big}
    for p in PROOFS.values():
        cfg = PoRepConfig.from_proof(p)
        interactive, non_interactive, layers = want[p.sector_size]
        ni = p.feature is ApiFeature.NON_INTERACTIVE_POREP
        assert cfg.minimum_challenges == (non_interactive if ni else interactive)
        assert cfg.layers == p.layers == layers
    with pytest.raises(InputError):
        PoRepConfig(4096, 1, bytes(32), ApiVersion.V1_1_0)
