"""rust-fil-proofs' seal regression records (v16): replica_id, challenges, public inputs and proof
decoding for every record. The official verifying keys are not shipped; when FIL_PROOFS_PARAMETER_CACHE
holds them, see test_official_params.test_records_verify (skipped otherwise)."""
import hashlib

import numpy as np
import pytest

from cuzk.ec.curves import G1, G2
from cuzk.ff.fields import Fr
from cuzk.porep.challenges import (PoRepConfig, interactive_challenges, synthetic_challenge,
                                   synthetic_indexes)
from cuzk.porep.graph import SdrGraph
from cuzk.porep.labels import replica_id
from cuzk.porep.registry import ApiFeature
from cuzk.porep.public_inputs import partition_public_inputs
from cuzk.ec.encoding import decode

from ._records import load_records


@pytest.fixture(scope="module")
def records():
    return load_records()


def test_record_fields(records):
    assert len(records) == 448
    sizes = {r["porep_config"]["sector_size"] for r in records}
    assert sizes == {2048, 8 << 20, 512 << 20, 32 << 30, 64 << 30}
    for r in records:
        assert set(r) == {"porep_config", "comm_r", "comm_d", "prover_id", "sector_id", "ticket",
                          "seed", "proof"}
        assert len(r["proof"]) == 192 * r["porep_config"]["partitions"]


def test_replica_challenges_public_inputs(records):
    for r in records:
        cfg = PoRepConfig.from_json(r["porep_config"])
        comm_d, comm_r, seed = bytes(r["comm_d"]), bytes(r["comm_r"]), bytes(r["seed"])
        rid = replica_id(bytes(r["prover_id"]), r["sector_id"], bytes(r["ticket"]), comm_d, cfg.porep_id)
        digest = hashlib.sha256(bytes(r["prover_id"]) + r["sector_id"].to_bytes(8, "big") + bytes(r["ticket"])
                                + comm_d + cfg.porep_id).digest()
        assert rid[:31] == digest[:31] and rid[31] == digest[31] & 0x3F
        graph = SdrGraph.for_config(cfg)
        n = cfg.challenges_per_partition
        for k in range(cfg.partitions):
            pi = partition_public_inputs(cfg, rid, comm_d, comm_r, seed, k, graph)
            assert len(pi) == 3 + 18 * n  # the vk's IC: 40 points (small sizes), 328 (32/64 GiB)
            assert pi[:3] == [int.from_bytes(v, "little") for v in (rid, comm_d, comm_r)]
            assert all(0 <= v < Fr.modulus for v in pi)
            cs = pi[3::18]
            if cfg.feature is ApiFeature.SYNTHETIC_POREP:
                picks = synthetic_indexes(cfg.nodes, rid, seed, n, k)
                assert cs == [synthetic_challenge(cfg.nodes, rid, comm_r, i) for i in picks]
                if cfg.nodes == 64:  # the whole synthetic set is small: selected from it
                    assert set(cs) <= {synthetic_challenge(64, rid, comm_r, i) for i in range(64)}
            else:
                assert cs == interactive_challenges(cfg.nodes, rid, seed, n, k)
            for i, c in enumerate(cs):
                row = pi[3 + 18 * i: 3 + 18 * (i + 1)]
                assert 1 <= c < cfg.nodes and row[15] == row[16] == row[17] == c
                assert all(p < c for p in row[1:7]) and all(p < cfg.nodes for p in row[7:15])


def test_proofs_decode_to_subgroup_points(records):
    proofs = b"".join(bytes(r["proof"]) for r in records)
    parts = np.frombuffer(proofs, np.uint8).reshape(-1, 192)
    a_c = decode(G1, parts[:, np.r_[0:48, 144:192]].tobytes())
    b = decode(G2, parts[:, 48:144].tobytes())
    assert len(a_c) == 2 * len(parts) and len(b) == len(parts)
    assert a_c.reshape(len(a_c), -1).any(axis=1).all() and b.reshape(len(b), -1).any(axis=1).all()
