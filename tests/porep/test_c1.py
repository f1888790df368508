"""C1 JSON (filecoin-ffi SealCommitPhase1Output): exact serde field names, round trips, typed errors."""
import json

import numpy as np
import pytest

from cuzk.errors import C1FormatError
from cuzk.ff.fields import Fr
from cuzk.porep import c1 as c1_mod
from cuzk.porep.c1 import C1Output, vanilla_key
from cuzk.porep.registry import get_proof
from cuzk.porep.synthetic import synthetic_c1
from cuzk.porep.trees import POSEIDON, MerkleTree


@pytest.fixture(scope="module")
def c1():
    rng = np.random.default_rng()
    return synthetic_c1("StackedDrg2KiBV1", prover_id=bytes(32), sector_id=3, ticket=bytes([9] * 32),
                        seed=bytes(rng.integers(0, 256, 32, dtype=np.uint8)), rng=rng, progress=False)


def test_field_names(c1):
    js = c1.to_json()
    assert list(js) == ["registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"]
    assert js["registered_proof"] == "StackedDrg2KiBV1" and list(js["vanilla_proofs"]) == ["StackedDrg2KiBV1"]
    p = js["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]
    assert list(p) == ["comm_d_proofs", "comm_r_last_proof", "replica_column_proofs", "labeling_proofs",
                       "encoding_proof"]
    assert list(p["comm_d_proofs"]["data"]["Single"]) == ["root", "leaf", "path"]
    assert list(p["comm_d_proofs"]["data"]["Single"]["path"]["path"][0]) == ["hashes", "index"]
    assert list(p["replica_column_proofs"]) == ["c_x", "drg_parents", "exp_parents"]
    assert p["replica_column_proofs"]["c_x"]["column"]["_h"] is None
    assert list(p["replica_column_proofs"]["c_x"]) == ["column", "inclusion_proof"]
    assert list(p["labeling_proofs"][0]) == ["parents", "layer_index", "node"] == list(p["encoding_proof"])
    assert all(isinstance(x, int) for x in js["comm_r"]) and len(js["comm_r"]) == 32


def test_round_trip(c1, tmp_path):
    back = C1Output.loads(c1.dumps())
    assert back == c1
    back.verify()
    c1.write(tmp_path / "c1.json")
    assert C1Output.read(tmp_path / "c1.json") == c1
    assert [p.name for p in tmp_path.iterdir()] == ["c1.json"]


@pytest.mark.parametrize("shape", [(8, 8, 0), (8, 8, 2)], ids=["sub", "top"])
def test_sub_and_top_proofs(rng, shape):
    arities = (8, 8) + tuple(a for a in shape[1:] if a)
    n = int(np.prod(arities))
    tree = MerkleTree.build(POSEIDON, Fr.random(n, rng), arities)
    path = tree.path(int(rng.integers(n)))
    js = c1_mod._path_json(path, shape)
    variant = "Top" if shape[2] else "Sub"
    assert list(js["data"]) == [variant]
    keys = ["base_proof", "sub_proof"] + (["top_proof"] if shape[2] else []) + ["root", "leaf"]
    assert list(js["data"][variant]) == keys
    assert len(js["data"][variant]["sub_proof"]["path"]) == 1
    reader = c1_mod._Reader()
    assert reader.merkle(js, "p", POSEIDON, arities, shape) == path
    reader.check_roots()


def _mutate(js, path, fn):
    obj = json.loads(json.dumps(js))
    target = obj
    for p in path[:-1]:
        target = target[p]
    fn(target, path[-1])
    return obj


P = ["vanilla_proofs", "StackedDrg2KiBV1", 0, 1]


@pytest.mark.parametrize("path,fn,field", [
    (["registered_proof"], lambda t, k: t.__setitem__(k, "StackedDrg4KiBV1"), "registered_proof"),
    (["comm_d"], lambda t, k: t.__delitem__(k), "comm_d"),
    (["seed"], lambda t, k: t[k].pop(), "seed"),
    (["ticket"], lambda t, k: t[k].__setitem__(0, 256), "ticket"),
    (["vanilla_proofs", "StackedDrg2KiBV1"], lambda t, k: t.__setitem__("StackedDrg8MiBV1", t.pop(k)),
     "vanilla_proofs"),
    (["vanilla_proofs", "StackedDrg2KiBV1", 0], lambda t, k: t[k].pop(), "vanilla_proofs.StackedDrg2KiBV1[0]"),
    (P + ["replica_column_proofs", "c_x", "column", "rows"], lambda t, k: t.__delitem__(k),
     "vanilla_proofs.StackedDrg2KiBV1[0][1].replica_column_proofs.c_x.column.rows"),
    (P + ["replica_column_proofs", "drg_parents"], lambda t, k: t[k].pop(),
     "vanilla_proofs.StackedDrg2KiBV1[0][1].replica_column_proofs.drg_parents"),
    (P + ["labeling_proofs", 1, "parents", 36], lambda t, k: t[k].append(0),
     "vanilla_proofs.StackedDrg2KiBV1[0][1].labeling_proofs[1].parents[36]"),
    (P + ["encoding_proof", "node"], lambda t, k: t.__setitem__(k, -1),
     "vanilla_proofs.StackedDrg2KiBV1[0][1].encoding_proof.node"),
    (P + ["comm_d_proofs", "data"], lambda t, k: t.__setitem__(k, {"Sub": t[k]["Single"]}),
     "vanilla_proofs.StackedDrg2KiBV1[0][1].comm_d_proofs.data"),
    (P + ["comm_d_proofs", "data", "Single", "path", "path", 2, "index"], lambda t, k: t.__setitem__(k, 2),
     "vanilla_proofs.StackedDrg2KiBV1[0][1].comm_d_proofs.data.Single.path.path[2].index"),
    (P + ["comm_r_last_proof", "data", "Single", "leaf", 3], lambda t, k: t.__setitem__(k, t[k] ^ 1),
     "vanilla_proofs.StackedDrg2KiBV1[0][1].comm_r_last_proof.data.Single.root"),
    (P + ["comm_r_last_proof", "data", "Single", "path", "path", 0, "hashes", 0], lambda t, k: t.__setitem__(
        k, [255] * 32), "vanilla_proofs.StackedDrg2KiBV1[0][1].comm_r_last_proof.data.Single"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_c1_names_the_field(c1, path, fn, field):
    with pytest.raises(C1FormatError) as e:
        C1Output.from_json(_mutate(c1.to_json(), path, fn))
    assert e.value.field == field


def test_not_json():
    with pytest.raises(C1FormatError):
        C1Output.loads("{")
    with pytest.raises(C1FormatError):
        C1Output.from_json([])


def test_vanilla_keys():
    assert vanilla_key(get_proof("StackedDrg32GiBV1_1_Feat_SyntheticPoRep")) == "StackedDrg32GiBV1"
    assert vanilla_key(get_proof(19)) == "StackedDrg64GiBV1"
