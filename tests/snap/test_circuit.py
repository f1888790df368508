"""The EmptySectorUpdate circuit: rust-fil-proofs' exact sizes (../shared/POST_SNAP.md §B5), and a
2KiB partition over real trees (a CC replica updated with data, §B3) satisfied, tampered, proved."""
import copy

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.errors import InputError, SynthesisError, UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.groth16 import prove, setup, verify
from cuzk.hashes.poseidon import hash_many
from cuzk.porep.circuit import levels_from_paths
from cuzk.porep.trees import MerkleTree, binary_arities, fr_from_le, fr_to_le
from cuzk.snap.circuit import circuit, count
from cuzk.snap.derive import partition_challenges, poseidon_gr
from cuzk.snap.registry import UPDATE_PROOFS
from cuzk.snap.witness import PartitionWitness, SnapShape

SMALL_HS, HS = (1,) * 6, (7, 8, 9, 10, 11, 12)
# §B1 / constants.rs: nodes, TreeR shape, partitions, challenges, apex leaves, hs, h_default = hs[3];
# §B5: constraints per partition (rust's asserted counts; 8MiB / 512MiB / 64GiB from its exact model)
B5 = {"1KiB": (SnapShape(32, (8, 4, 0), 1, 10, 8, SMALL_HS, 1), 1_248_389),
      "2KiB": (SnapShape(64, (8, 0, 0), 1, 10, 8, SMALL_HS, 1), 1_705_039),
      "4KiB": (SnapShape(128, (8, 2, 0), 1, 10, 8, SMALL_HS, 1), 2_165_109),
      "8KiB": (SnapShape(256, (8, 4, 0), 1, 10, 8, SMALL_HS, 1), 2_620_359),
      "16KiB": (SnapShape(512, (8, 8, 0), 2, 10, 128, SMALL_HS, 1), 6_300_021),
      "32KiB": (SnapShape(1024, (8, 8, 2), 2, 10, 128, SMALL_HS, 1), 6_760_091),
      "8MiB": (SnapShape(1 << 18, (8, 0, 0), 4, 10, 128, HS, 10), 10_007_503),
      "512MiB": (SnapShape(1 << 24, (8, 0, 0), 16, 86, 128, HS, 10), 57_450_479),
      "32GiB": (SnapShape(1 << 30, (8, 8, 0), 16, 86, 128, HS, 10), 81_049_499),
      "64GiB": (SnapShape(1 << 31, (8, 8, 2), 16, 86, 128, HS, 10), 85_006_101)}
SHA_HASH2, GR, DIGEST = 45_379, 311, 568  # §B5 model: SHA256 hash2, Poseidon_GR, one digest's rows


@pytest.mark.parametrize("size", B5)
def test_counts_match_b5(size):
    """Counted from templates: the C challenges are one batch block and each apex-tree row another,
    laid out as sequential copies of one recorded instance (cuzk.r1cs.batch), so the count is
    exactly rust's sequential synthesis; the §B5 model splits it the same way."""
    shape, constraints = B5[size]
    stats = count(shape)
    assert stats["num_constraints"] == constraints
    assert stats["num_inputs"] == shape.num_inputs == 5
    pbl, p = shape.partition_bit_len, shape.tree_d_levels
    fixed = 947 + pbl + (shape.apex_leaves - 1) * SHA_HASH2 + pbl * (SHA_HASH2 + 2) + 1 + shape.digests * DIGEST
    per_challenge = (constraints - fixed) // shape.challenges
    assert fixed + shape.challenges * per_challenge == constraints
    assert per_challenge - p * (SHA_HASH2 + 2) - (shape.apex_leaves - 1) - 13 - GR - 2 - 1 > 0  # the two TreeR paths


@pytest.mark.parametrize("p", UPDATE_PROOFS.values(), ids=lambda p: p.name)
def test_registered_sizes_have_b5_shapes(p):
    assert p.circuit_shape == B5[p.name.removeprefix("StackedDrg").removesuffix("V1")][0]


def test_shape_errors():
    with pytest.raises(InputError):
        SnapShape(64, (8, 0, 0), 3, 10, 8, SMALL_HS, 1)  # partitions not a power of two
    with pytest.raises(InputError):
        SnapShape(64, (8, 0, 0), 1, 10, 8, SMALL_HS, 2)  # h not in hs
    with pytest.raises(InputError):
        SnapShape(64, (8, 8, 2), 1, 10, 8, SMALL_HS, 1)  # TreeR shape does not fit
    assert B5["32GiB"][0].k_and_h_select(3) == 3 + 128 and B5["8MiB"][0].k_and_h_select(1) == 33
    assert B5["2KiB"][0].k_and_h_select(0) == 1  # §B4
    with pytest.raises(InputError):
        B5["2KiB"][0].k_and_h_select(1)


# ---------------------------------------------------------------- a 2KiB partition over real trees

def _ints(a: np.ndarray) -> list[int]:
    return Fr.to_ints(a)


def _gr(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return poseidon_gr(np.stack([np.broadcast_to(first, second.shape), second], axis=1))


def updated_sector(rng, p, k: int = 0) -> tuple[SnapShape, PartitionWitness]:
    """A CC replica (random labels) updated with random data (§B3): new = old + data * rho(c >> (bits - h));
    partition k's shape and witness from the three trees."""
    shape = p.circuit_shape
    n, a, depth = shape.nodes, shape.apex_leaves, shape.tree_d_levels
    old = Fr.random(n, rng)
    data = rng.integers(0, 256, (n, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    tree_d = MerkleTree.build("sha256", data, binary_arities(n))
    comm_c = Fr.random(1, rng)
    trees, comm_rs = [], []
    for replica in (old, None):
        if replica is None:  # the new replica, encoded under phi = Poseidon_GR(comm_d_new, comm_r_old)
            phi = _gr(fr_from_le(np.frombuffer(tree_d.root, np.uint8)), comm_rs[0])
            rho = _gr(phi, Fr.from_ints(np.arange(n) >> (shape.challenge_bit_len - shape.h)))
            replica = Fr.add(old, Fr.mul(fr_from_le(data), rho))
        trees.append(MerkleTree.build("poseidon", replica, shape.tree_r_arities))
        comm_rs.append(hash_many(np.stack([comm_c, trees[-1].values[-1]], axis=1), 2))
    (r_old, r_new), (comm_r_old, comm_r_new) = trees, [_ints(c)[0] for c in comm_rs]
    chal = partition_challenges(p, bytes(fr_to_le(comm_rs[1])[0]), k)
    d_paths = tree_d.paths(chal)
    above = d_paths[0].siblings[depth + shape.apex_bit_len:]  # the apex root's path up to comm_d_new
    w = PartitionWitness(k, comm_r_old, _ints(fr_from_le(np.frombuffer(tree_d.root, np.uint8)))[0], comm_r_new,
                         _ints(comm_c)[0], _ints(r_old.values[-1])[0], _ints(r_new.values[-1])[0],
                         fr_from_le(tree_d.values[depth][k * a:(k + 1) * a]),
                         fr_from_le(np.frombuffer(b"".join(s[0] for s in above), np.uint8)).reshape(-1, 4),
                         r_old.values[0][chal], fr_from_le(data[chal]), levels_from_paths(r_old.paths(chal)),
                         levels_from_paths(r_new.paths(chal)), levels_from_paths(d_paths)[:depth])
    return shape, w


@pytest.fixture(scope="module")
def snap2k():
    shape, w = updated_sector(np.random.default_rng(7), UPDATE_PROOFS[0])
    return dict(shape=shape, system=circuit(shape), witness=w)


def assignment(shape, w):
    return circuit(shape, w, mode="witness").witness()


def test_2kib_is_satisfied(snap2k):
    shape, cs, w = snap2k["shape"], snap2k["system"], snap2k["witness"]
    witness = assignment(shape, w)
    assert witness.shape[0] == cs.num_inputs + cs.num_aux
    cs.assert_satisfied(witness)
    assert _ints(witness[1:cs.num_inputs]) == w.public_inputs(shape) == [1, w.comm_r_old, w.comm_d_new, w.comm_r_new]


@pytest.mark.parametrize("tamper", ["data", "apex", "comm_d_new"])
def test_tampered_2kib_is_unsatisfied(snap2k, tamper):
    bad = copy.deepcopy(snap2k["witness"])
    one = Fr.from_ints([1])
    if tamper == "data":  # the encoding new = old + data * rho no longer meets TreeRNew
        bad.leaf_d_new[3] = Fr.add(bad.leaf_d_new[3:4], one)[0]
    elif tamper == "apex":
        bad.apex_leaves[5] = Fr.add(bad.apex_leaves[5:6], one)[0]
    else:  # phi, hence every rho, changes
        bad.comm_d_new = (bad.comm_d_new + 1) % Fr.modulus
    assert snap2k["system"].first_unsatisfied(assignment(snap2k["shape"], bad)) is not None


def test_witness_errors(snap2k):
    shape, w = snap2k["shape"], snap2k["witness"]
    with pytest.raises(SynthesisError):
        circuit(shape, None, mode="witness")
    bad = copy.deepcopy(w)
    bad.apex_leaves = bad.apex_leaves[:4]
    with pytest.raises(InputError):
        circuit(shape, bad, mode="witness")
    bad = copy.deepcopy(w)
    bad.k = 1
    with pytest.raises(InputError):
        circuit(shape, bad, mode="witness")


@pytest.mark.slow
def test_2kib_groth16_proof(snap2k):
    """cuzk's own setup; the proof verifies with §B4's inputs, not with another comm_r_new; a tampered
    witness is refused by the prover's check."""
    shape, cs, w = snap2k["shape"], snap2k["system"], snap2k["witness"]
    rng = np.random.default_rng(11)
    params = setup(cs, rng)
    cpu = get_backend("cpu")
    pub = w.public_inputs(shape)
    proof = prove(params, cs, assignment(shape, w), cpu, check=True)
    assert verify(params.vk, pub, proof)
    assert not verify(params.vk, [*pub[:3], (pub[3] + 1) % Fr.modulus], proof)
    bad = copy.deepcopy(w)
    bad.leaf_r_old[0] = Fr.add(bad.leaf_r_old[0:1], Fr.from_ints([1]))[0]
    with pytest.raises(UnsatisfiedConstraintError):
        prove(params, cs, assignment(shape, bad), cpu, check=True)
