"""SDR graph and parents cache: official cache digests and file names, graph invariants, Feistel reference,
one node's parents (SdrGraph.parents_of) equal to the kernels."""
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.graph import SdrGraph, feistel_precompute, parents_cache
from cuzk.porep.registry import PROOFS, ApiFeature, ApiVersion, get_proof

MANIFEST = json.loads((Path(__file__).parent.parent / "data" / "parent_cache.json").read_text())


def _digest(proof_id: int) -> str:
    return MANIFEST[SdrGraph.for_proof(proof_id).cache_file_name.removesuffix(".cache")]["digest"]


def test_registered_proofs():
    assert sorted(PROOFS) == list(range(20))
    sizes = [2048, 8 << 20, 512 << 20, 32 << 30, 64 << 30]
    for pid, p in PROOFS.items():
        assert p.sector_size == sizes[pid % 5] and p.nodes == p.sector_size // 32
        assert p.layers == (2 if pid % 5 < 3 else 11)
        assert p.porep_id == pid.to_bytes(8, "little") + bytes(24)
        assert get_proof(p.name) is p and get_proof(pid) is p and get_proof(p) is p
    assert PROOFS[3].name == "StackedDrg32GiBV1" and PROOFS[3].api_version is ApiVersion.V1_0_0
    assert PROOFS[8].name == "StackedDrg32GiBV1_1" and PROOFS[8].partitions == 10
    assert PROOFS[12].feature is ApiFeature.SYNTHETIC_POREP and PROOFS[12].api_version is ApiVersion.V1_2_0
    assert PROOFS[18].name == "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep" and PROOFS[18].partitions == 126
    for bad in (20, -1, "StackedDrg1KiBV1"):
        with pytest.raises(InputError):
            get_proof(bad)


def test_cache_file_names_match_manifest():
    """Every official cache file name is the name we derive for the V1 or V1_1 proof of its size."""
    names = {SdrGraph.for_proof(pid).cache_file_name: PROOFS[pid] for pid in range(10)}
    assert len(MANIFEST) == 10
    for stem, entry in MANIFEST.items():
        assert names[stem + ".cache"].sector_size == entry["sector_size"]


@pytest.mark.parametrize("proof_id", [0, 5, 1, 6])
def test_parents_cache_digest(proof_id):
    cache = parents_cache(proof_id)
    assert cache.shape == (PROOFS[proof_id].nodes, 14) and cache.dtype == np.uint32
    assert hashlib.sha256(cache.astype("<u4").tobytes()).hexdigest() == _digest(proof_id)


@pytest.mark.slow
@pytest.mark.parametrize("proof_id", [2, 7])
def test_parents_cache_digest_512mib(proof_id, tmp_path):
    cache = parents_cache(proof_id, tmp_path)
    path = tmp_path / SdrGraph.for_proof(proof_id).cache_file_name
    assert sorted(tmp_path.iterdir()) == [path]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    assert h.hexdigest() == _digest(proof_id)
    assert cache.shape == (1 << 24, 14)


def test_parents_cache_file(tmp_path):
    first = parents_cache(5, tmp_path)
    path = tmp_path / SdrGraph.for_proof(5).cache_file_name
    assert first.flags.owndata and path.stat().st_size == 64 * 14 * 4  # in memory, never a mapping
    assert sorted(tmp_path.iterdir()) == [path]  # no temporary file left behind
    os.utime(path, (1, 1))
    again = parents_cache(5, tmp_path)  # reused, not rebuilt
    assert path.stat().st_mtime == 1 and np.array_equal(again, first)
    explicit = tmp_path / "sub.cache"
    assert np.array_equal(parents_cache(get_proof(5), explicit), first)
    assert np.frombuffer(explicit.read_bytes(), "<u4").reshape(64, 14).tolist() == first.tolist()


# ---------------------------------------------------------------- invariants on random graphs


def _random_graph(rng, nodes, version) -> SdrGraph:
    return SdrGraph(nodes, rng.bytes(32), version)


@pytest.mark.parametrize("version", list(ApiVersion), ids=lambda v: v.name)
def test_graph_invariants(rng, version):
    nodes = int(rng.integers(100, 5000))
    g = _random_graph(rng, nodes, version)
    par = g.parents()
    base, exp = par[:, :6], par[:, 6:]
    assert not base[:2].any()
    pred = 5 if version is ApiVersion.V1_0_0 else 0
    v = np.arange(2, nodes)
    assert np.array_equal(base[2:, pred], v - 1)
    assert (base[2:] < v[:, None]).all()  # strictly earlier nodes only: a layer is computed in order
    assert (exp < nodes).all()
    lo = int(rng.integers(0, nodes - 10))
    assert np.array_equal(g.parents(lo, lo + 10), par[lo:lo + 10])
    assert np.array_equal(parents_cache(g), par)


def _feistel_permute_reference(n: int, index: int, keys) -> int:
    left_mask, right_mask, half = feistel_precompute(n)

    def encode(x):
        left, right = (x & left_mask) >> half, x & right_mask
        for key in keys[:3]:
            h = hashlib.blake2b(right.to_bytes(8, "big") + key.to_bytes(8, "big")).digest()
            left, right = right, left ^ (int.from_bytes(h[:8], "big") & right_mask)
        return (left << half) | right

    u = encode(index)
    while u >= n:
        u = encode(u)
    return u


@pytest.mark.parametrize("proof_id", [3, 8, 9])
def test_expansion_parents_large_sectors(rng, proof_id):
    """Against a direct (hashlib per round) Feistel, including API 1.0's u32 truncation at 32 GiB."""
    g = SdrGraph.for_proof(proof_id)
    n8 = 8 * g.nodes
    for v in rng.integers(0, g.nodes, 3).tolist():
        expected = []
        for i in range(8):
            u = _feistel_permute_reference(n8, 8 * v + i, g.feistel_keys)
            expected.append(((u & 0xFFFFFFFF) if g.api_version is ApiVersion.V1_0_0 else u) // 8)
        assert g.expansion_parents(v, v + 1)[0].tolist() == expected


def test_expansion_is_a_permutation(rng):
    """All 8n expansion edges (v, i) -> permute(8v + i) hit every index of [0, 8n) exactly once."""
    nodes = int(rng.integers(50, 3000))
    g = _random_graph(rng, nodes, ApiVersion.V1_1_0)
    exp = g.expansion_parents().astype(np.int64)
    counts = np.bincount(exp.ravel(), minlength=nodes)
    assert counts.sum() == 8 * nodes and (counts == 8).all()  # each node is the image of 8 slots


# ---------------------------------------------------------------- one node's parents in Python


@pytest.mark.parametrize("proof_id", [0, 5, 10])  # 2KiB under API 1.0, 1.1 and 1.2
def test_parents_of_equals_the_2kib_cache(proof_id):
    """Every node of the official 2KiB graph: the Python derivation equals the kernels' cache."""
    g = SdrGraph.for_proof(proof_id)
    cache = parents_cache(proof_id)
    assert [g.parents_of(v) for v in range(g.nodes)] == cache.tolist()


@pytest.mark.parametrize("nodes", [1 << 18, 1 << 24])
@pytest.mark.parametrize("version", list(ApiVersion), ids=lambda v: v.name)
def test_parents_of_equals_the_kernels(rng, nodes, version):
    g = _random_graph(rng, nodes, version)
    for v in [0, 1, 2, nodes - 1, *rng.integers(0, nodes, 6).tolist()]:
        assert g.parents_of(v) == g.parents(v, v + 1)[0].tolist()


def test_parents_of_large_sectors(rng):
    """32 GiB (API 1.0: the u32 truncation) and 64 GiB graphs, a few random nodes."""
    for proof_id in (3, 9):
        g = SdrGraph.for_proof(proof_id)
        for v in rng.integers(0, g.nodes, 2).tolist():
            assert g.parents_of(v) == g.parents(v, v + 1)[0].tolist()


def test_graph_for_config():
    assert SdrGraph.for_config(PoRepConfig.from_proof(8)) == SdrGraph.for_proof(8)


def test_bad_graph_inputs():
    with pytest.raises(InputError):
        SdrGraph(0, bytes(32), ApiVersion.V1_1_0)
    with pytest.raises(InputError):
        SdrGraph(1 << 32, bytes(32), ApiVersion.V1_1_0)
    with pytest.raises(InputError):
        SdrGraph(64, bytes(31), ApiVersion.V1_1_0)
    with pytest.raises(InputError):
        SdrGraph(64, bytes(32), "1.1.0")
    with pytest.raises(InputError):
        SdrGraph(64, bytes(32), ApiVersion.V1_1_0).parents(10, 65)
    with pytest.raises(InputError):
        SdrGraph(64, bytes(32), ApiVersion.V1_1_0).parents_of(64)
