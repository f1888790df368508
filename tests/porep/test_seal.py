"""CPU sealing of 2KiB sectors: the sector directory, commitments against references, vanilla proofs
and the vanilla verifier catching a flipped byte in any field of a C1 output."""
import hashlib
import json
import re

import numpy as np
import pytest

from cuzk.errors import C1FormatError, NonCanonicalError, SectorError, VanillaProofError
from cuzk.hashes.poseidon import hash_ints
from cuzk.porep import seal as seal_mod
from cuzk.porep.c1 import C1Output
from cuzk.porep.graph import parents_cache
from cuzk.porep.labels import all_labels
from cuzk.porep.seal import Sector, seal
from cuzk.porep.vanilla import verify_all

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def _random_data(rng, nodes=64):
    data = rng.integers(0, 256, (nodes, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    data[0] = 0
    data[1] = np.frombuffer((R - 1).to_bytes(32, "little"), np.uint8)  # the largest Fr
    return data


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    rng = np.random.default_rng()
    data = _random_data(rng)
    ids = dict(prover_id=bytes(rng.integers(0, 256, 32, dtype=np.uint8)), sector_id=int(rng.integers(1 << 62)),
               ticket=bytes(rng.integers(0, 256, 32, dtype=np.uint8)))
    sector = seal("StackedDrg2KiBV1_1", tmp_path_factory.mktemp("s") / "sector", data=data.tobytes(),
                  progress=False, **ids)
    seed = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    c1 = C1Output(sector.proof, sector.vanilla_proofs(seed), sector.comm_r, sector.comm_d, sector.replica_id,
                  seed, sector.ticket)
    return sector, data, ids, c1


def _sha_root(leaves):
    while len(leaves) > 1:
        leaves = [bytes(hashlib.sha256(leaves[i] + leaves[i + 1]).digest()[:31]
                        + bytes([hashlib.sha256(leaves[i] + leaves[i + 1]).digest()[31] & 0x3F]))
                  for i in range(0, len(leaves), 2)]
    return leaves[0]


def test_sector_directory_and_commitments(sealed):
    sector, data, ids, _ = sealed
    assert sorted(p.name for p in sector.path.iterdir()) == sorted(seal_mod._FILES)
    assert not [p for p in sector.path.parent.iterdir() if p.name.endswith(".tmp")]
    sector = Sector.open(sector.path)
    sector.check()
    assert sector.comm_d == _sha_root([bytes(r) for r in data])
    labels = all_labels(parents_cache("StackedDrg2KiBV1_1"), sector.replica_id, 2)
    assert np.array_equal(sector.labels(), labels)
    ints = lambda b: int.from_bytes(bytes(b), "little")  # noqa: E731
    col_hashes = hash_ints([[ints(labels[0, n]), ints(labels[1, n])] for n in range(64)], 2)
    level = hash_ints([col_hashes[i:i + 8] for i in range(0, 64, 8)], 8)
    assert ints(sector.comm_c) == hash_ints([level], 8)[0]
    replica = [(ints(labels[1, n]) + ints(data[n])) % R for n in range(64)]
    sealed_bytes = (sector.path / "sealed.bin").read_bytes()
    assert [ints(sealed_bytes[32 * n:32 * n + 32]) for n in range(64)] == replica
    level = hash_ints([replica[i:i + 8] for i in range(0, 64, 8)], 8)
    assert ints(sector.comm_r_last) == hash_ints([level], 8)[0]
    assert ints(sector.comm_r) == hash_ints([[ints(sector.comm_c), ints(sector.comm_r_last)]], 2)[0]
    meta = json.loads((sector.path / "meta.json").read_text())
    assert meta["sector_id"] == ids["sector_id"] and meta["registered_proof"] == "StackedDrg2KiBV1_1"


def test_seal_refuses_and_cleans_up(tmp_path, rng, monkeypatch):
    ids = dict(prover_id=bytes(32), sector_id=1, ticket=bytes(32))
    (tmp_path / "taken").mkdir()
    with pytest.raises(SectorError):
        seal(0, tmp_path / "taken", progress=False, **ids)
    bad = _random_data(rng)
    bad[5] = 0xFF
    with pytest.raises(NonCanonicalError):
        seal(0, tmp_path / "x", data=bad.tobytes(), progress=False, **ids)

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(seal_mod.np, "save", boom)
    with pytest.raises(OSError):
        seal(0, tmp_path / "y", progress=False, **ids)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    with pytest.raises(SectorError):
        Sector.open(tmp_path / "taken")


def test_vanilla_proofs_verify(sealed):
    sector, _, ids, c1 = sealed
    verify_all(sector.config, sector.replica_id, sector.comm_d, sector.comm_r, c1.seed, c1.vanilla_proofs)
    c1.verify(ids["prover_id"], ids["sector_id"])
    with pytest.raises(VanillaProofError, match="replica_id"):
        c1.verify(ids["prover_id"], ids["sector_id"] ^ 1)
    with pytest.raises(VanillaProofError):
        verify_all(sector.config, sector.replica_id, sector.comm_d, sector.comm_r, bytes(32), c1.vanilla_proofs)


def _locations(obj, at=()):
    """Every flippable value of a C1 JSON: (path, kind) with kind 'byte' (in a 32-byte array) or 'int'."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in ("_h", "registered_proof"):
                yield from _locations(v, at + (k,))
    elif isinstance(obj, list):
        if len(obj) == 32 and all(isinstance(x, int) for x in obj):
            for j in range(32):
                yield at + (j,), "byte"
        else:
            for j, v in enumerate(obj):
                yield from _locations(v, at + (j,))
    elif isinstance(obj, int):
        yield at, "int"


def _category(loc):
    path, kind = loc
    names = [p for p in path[:-1 if kind == "byte" else None] if isinstance(p, str)]
    return ".".join(names) + ("[]" if kind == "byte" else "")


def _flip_and_check(c1_json, loc, rng, ids):
    path, kind = loc
    obj = json.loads(json.dumps(c1_json))
    target = obj
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] ^= (1 << int(rng.integers(8))) if kind == "byte" else 1
    with pytest.raises((C1FormatError, VanillaProofError)):
        C1Output.from_json(obj, check_paths=False).verify(ids["prover_id"], ids["sector_id"])


def _flip_sample(sealed, rng, per_category):
    _, _, ids, c1 = sealed
    js = c1.to_json()
    by_cat = {}
    for loc in _locations(js):
        by_cat.setdefault(_category(loc), []).append(loc)
    assert len(by_cat) > 30
    picks = [locs[int(i)] for locs in by_cat.values() for i in rng.integers(0, len(locs), per_category)]
    return js, ids, picks


def test_flipped_byte_caught_fast(sealed, rng):
    js, ids, picks = _flip_sample(sealed, rng, 1)
    for j in rng.choice(len(picks), 16, replace=False):
        _flip_and_check(js, picks[j], rng, ids)


@pytest.mark.slow
def test_flipped_byte_caught_every_field(sealed, rng):
    js, ids, picks = _flip_sample(sealed, rng, 3)
    for loc in picks:
        _flip_and_check(js, loc, rng, ids)


def test_c1_path_check_names_the_field(sealed):
    js = sealed[3].to_json()
    proof = js["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]
    proof["replica_column_proofs"]["exp_parents"][3]["inclusion_proof"]["data"]["Single"]["path"]["path"][1][
        "hashes"][2][0] ^= 1
    with pytest.raises(C1FormatError) as e:
        C1Output.from_json(js)
    assert re.fullmatch(r"vanilla_proofs\.StackedDrg2KiBV1\[0\]\[1\]\.replica_column_proofs\.exp_parents\[3\]"
                        r"\.inclusion_proof\.data\.Single\.root", e.value.field)


@pytest.mark.slow
def test_seal_8mib(tmp_path, rng):
    data = rng.integers(0, 256, (1 << 18, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    sector = seal("StackedDrg8MiBV1_1", tmp_path / "s", prover_id=bytes(32), sector_id=5, ticket=bytes(32),
                  data=data.tobytes(), parents_dir=tmp_path)
    sector.check()
    assert sector.comm_d == _sha_root([bytes(r) for r in data])
    seed = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    c1 = C1Output(sector.proof, sector.vanilla_proofs(seed), sector.comm_r, sector.comm_d, sector.replica_id,
                  seed, sector.ticket)
    C1Output.loads(c1.dumps()).verify(bytes(32), 5)
