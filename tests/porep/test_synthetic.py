"""Synthetic C1 (no sealing): vanilla proofs that verify, for small shapes fast and 32/64 GiB slow."""
import time

import numpy as np
import pytest

from cuzk.errors import InputError, VanillaProofError
from cuzk.porep.c1 import C1Output
from cuzk.porep.challenges import all_challenges
from cuzk.porep.public_inputs import partition_public_inputs
from cuzk.porep.synthetic import ZeroTree, synthetic_c1
from cuzk.porep.trees import SHA256, MerkleTree, binary_arities, verify_paths


def _make(name, rng):
    ids = dict(prover_id=bytes(rng.integers(0, 256, 32, dtype=np.uint8)), sector_id=int(rng.integers(1 << 62)),
               ticket=bytes(rng.integers(0, 256, 32, dtype=np.uint8)))
    seed = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    t0 = time.perf_counter()
    c1 = synthetic_c1(name, seed=seed, rng=rng, progress=False, **ids)
    return c1, ids, time.perf_counter() - t0


def _check(c1, ids):
    c1.verify(ids["prover_id"], ids["sector_id"])
    challenges = all_challenges(c1.config, c1.replica_id, c1.seed, c1.comm_r)
    assert [[p.challenge for p in part] for part in c1.vanilla_proofs] == challenges
    for k in range(c1.config.partitions):
        pi = partition_public_inputs(c1.config, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed, k)
        assert pi[3::18] == challenges[k]


def test_zero_tree(rng):
    tree = MerkleTree.build(SHA256, np.zeros((256, 32), np.uint8), binary_arities(256))
    zt = ZeroTree(256)
    assert zt.root == tree.root
    nodes = rng.integers(0, 256, 5)
    assert zt.paths(nodes) == tree.paths(nodes) and verify_paths(zt.paths(nodes)).all()


@pytest.mark.parametrize("name", ["StackedDrg2KiBV1_1", "StackedDrg512MiBV1"])
def test_small_shapes(rng, name):
    c1, ids, _ = _make(name, rng)
    _check(c1, ids)
    back = C1Output.loads(c1.dumps())
    assert back == c1
    while c1.vanilla_proofs[0][0] == c1.vanilla_proofs[0][1]:  # the same challenge drawn twice: no swap to make
        c1, _, _ = _make(name, rng)
    proofs = [list(part) for part in c1.vanilla_proofs]
    proofs[0][0], proofs[0][1] = proofs[0][1], proofs[0][0]
    with pytest.raises(VanillaProofError):
        C1Output(c1.registered_proof, proofs, c1.comm_r, c1.comm_d, c1.replica_id, c1.seed, c1.ticket).verify()


def test_needs_interactive_challenges(rng):
    for name in ("StackedDrg2KiBV1_1_Feat_SyntheticPoRep", "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep"):
        with pytest.raises(InputError):
            _make(name, rng)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["StackedDrg32GiBV1_1", "StackedDrg64GiBV1_1"])
def test_big_shapes(rng, name):
    c1, ids, seconds = _make(name, rng)
    print(f"synthetic C1 {name}: {seconds:.1f} s")
    if "32GiB" in name:
        assert seconds < 60
    _check(c1, ids)
    path = c1.vanilla_proofs[9][17].comm_r_last_proof
    assert len(path.arities) == (10 if "32GiB" in name else 11)
