"""The fallback PoSt circuit: rust-fil-proofs' exact sizes (../shared/POST_SNAP.md §A3), and 2KiB
partitions over real Poseidon trees satisfied, proved and rejected when tampered."""
import copy

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.errors import InputError, SynthesisError, UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.groth16 import prove, setup, verify
from cuzk.porep.trees import MerkleTree, fr_to_le, poseidon2_bytes
from cuzk.post.circuit import circuit, count
from cuzk.post.witness import PartitionWitness, PostShape, SectorWitness, free_values, public_inputs
from cuzk.r1cs.pce import build
from cuzk.r1cs.witness_program import compile_program, hint_matrices, run_cpu, seed

# POST_SNAP.md §A1: sector nodes (size / 32) and TreeR shape per size; Window sectors per partition
SIZES = {"2KiB": (1 << 6, (8, 0, 0), 2), "8MiB": (1 << 18, (8, 0, 0), 2), "512MiB": (1 << 24, (8, 0, 0), 2),
         "32GiB": (1 << 30, (8, 8, 0), 2349), "64GiB": (1 << 31, (8, 8, 2), 2300)}


def shape_of(size: str, kind: str) -> PostShape:
    nodes, tree, window_sectors = SIZES[size]
    return PostShape(nodes, tree, 66, 1) if kind == "Winning" else PostShape(nodes, tree, window_sectors, 10)


# §A3: constraints and public inputs (without ONE) per proof kind and size; 32/64GiB Window are the
# counts rust-fil-proofs states (constants.rs:112-113), the others its cost model's
A3 = [("Winning", "2KiB", 90_750, 132), ("Winning", "8MiB", 230_670, 132), ("Winning", "512MiB", 300_630, 132),
      ("Winning", "32GiB", 370_590, 132), ("Winning", "64GiB", 391_314, 132),
      ("Window", "2KiB", 21_866, 22), ("Window", "8MiB", 64_266, 22), ("Window", "512MiB", 85_466, 22),
      ("Window", "32GiB", 125_279_217, 25_839), ("Window", "64GiB", 129_887_900, 25_300)]


@pytest.mark.parametrize("kind, size, constraints, inputs", A3, ids=[f"{k}-{s}" for k, s, *_ in A3])
def test_counts_match_a3(kind, size, constraints, inputs):
    """Counted from the recorded template: the N sectors are instances of one batch block, which
    lays them out as N sequential copies of the sector's rows (cuzk.r1cs.batch), so the count is
    N times one sector's rows, exactly as rust's sequential synthesis."""
    shape = shape_of(size, kind)
    stats = count(shape)
    assert stats["num_constraints"] == constraints
    assert stats["num_inputs"] == inputs + 1 == shape.num_inputs
    one = count(PostShape(shape.nodes, shape.tree, 1, shape.challenges))
    assert stats["num_constraints"] == shape.sectors * one["num_constraints"]
    assert stats["num_aux"] == shape.sectors * one["num_aux"]


# storage-proofs-post/tests/fallback_circuit.rs:28-53: sectors x challenges over 64 * base-tree-count leaves
@pytest.mark.parametrize("nodes, tree, sectors, challenges, constraints, inputs", [
    (64, (8, 0, 0), 3, 5, 16_869, 19), (256, (8, 4, 0), 3, 5, 22_674, 19), (512, (8, 4, 2), 3, 5, 27_384, 19),
    (64, (8, 0, 0), 2, 5, 11_246, 13)], ids=["8-0-0", "8-4-0", "8-4-2", "2x5"])
def test_counts_match_rust_tests(nodes, tree, sectors, challenges, constraints, inputs):
    stats = count(PostShape(nodes, tree, sectors, challenges))
    assert (stats["num_constraints"], stats["num_inputs"]) == (constraints, inputs)


# ---------------------------------------------------------------- 2KiB partitions over real trees

@pytest.fixture(scope="module")
def module_rng():
    return np.random.default_rng()


def random_sector(rng, shape: PostShape, challenges=None):
    """A TreeR over random leaves, comm_r = Poseidon-2(comm_c, comm_r_last), and the witness of
    `challenges` (random by default); also returns the tree and the challenges."""
    tree = MerkleTree.build("poseidon", Fr.random(shape.nodes, rng), shape.arities)
    comm_c = fr_to_le(Fr.random(1, rng))[0].tobytes()
    if challenges is None:
        challenges = rng.integers(0, shape.nodes, shape.challenges)
    sector = SectorWitness.from_paths(poseidon2_bytes(comm_c, tree.root), comm_c, tree.root, tree.paths(challenges))
    return sector, tree, [int(c) for c in challenges]


def winning_witness(rng, shape: PostShape, challenges=None):
    """WinningPoSt: 66 circuit "sectors" of one challenge each, all the same physical sector."""
    sector, tree, chal = random_sector(rng, PostShape(shape.nodes, shape.tree, 1, 66), challenges)
    c = bytes(fr_to_le(Fr.from_ints([sector.comm_c]))[0])
    return PartitionWitness([SectorWitness.from_paths(poseidon2_bytes(c, tree.root), c, tree.root, tree.paths([j]))
                             for j in chal]), sector, chal


@pytest.fixture(scope="module")
def window(module_rng):
    shape = shape_of("2KiB", "Window")
    sectors = [random_sector(module_rng, shape) for _ in range(shape.sectors)]
    return dict(shape=shape, system=circuit(shape), witness=PartitionWitness([s for s, _, _ in sectors]),
                challenges=[c for _, _, c in sectors])


def assignment(shape, witness):
    return circuit(shape, witness, mode="witness").witness()


def test_window_2kib_is_satisfied(window):
    shape, cs, w = window["shape"], window["system"], window["witness"]
    a, _, _ = cs.to_csr()  # the template expanded: the full 2KiB circuit
    assert a.shape == (21_866, cs.num_inputs + cs.num_aux)
    wcs = circuit(shape, w, mode="witness")
    assert (wcs.num_constraints, wcs.num_inputs, wcs.num_aux) == (cs.num_constraints, cs.num_inputs, cs.num_aux)
    witness = wcs.witness()
    cs.assert_satisfied(witness)
    expected = []
    for sector, chal in zip(w.sectors, window["challenges"]):  # §A4: comm_r, then the leaf indices
        expected += [sector.comm_r, *chal]
    assert Fr.to_ints(witness[1:cs.num_inputs]) == expected == w.public_inputs(shape)


def test_padding_repeats_the_last_sector(window):
    shape, cs, w = window["shape"], window["system"], window["witness"]
    one = PartitionWitness(w.sectors[:1])
    witness = assignment(shape, one)
    cs.assert_satisfied(witness)
    head = [w.sectors[0].comm_r, *window["challenges"][0]]
    assert Fr.to_ints(witness[1:cs.num_inputs]) == head * 2 == one.public_inputs(shape)


@pytest.mark.parametrize("tamper", ["sibling", "comm_r", "leaf"])
def test_tampered_window_is_unsatisfied(window, tamper):
    bad = copy.deepcopy(window["witness"])
    sector = bad.sectors[1]
    if tamper == "sibling":
        sib = sector.path[1].siblings
        sib[3, 2] = Fr.add(sib[3, 2:3], Fr.from_ints([1]))[0]
    elif tamper == "comm_r":
        sector.comm_r = (sector.comm_r + 1) % Fr.modulus
    else:
        sector.leaves[0] = Fr.add(sector.leaves[0:1], Fr.from_ints([1]))[0]
    assert window["system"].first_unsatisfied(assignment(window["shape"], bad)) is not None


def test_winning_2kib_is_satisfied(module_rng):
    shape = shape_of("2KiB", "Winning")
    w, sector, chal = winning_witness(module_rng, shape)
    cs = circuit(shape)
    witness = assignment(shape, w)
    cs.assert_satisfied(witness)
    pub = Fr.to_ints(witness[1:cs.num_inputs])
    assert pub == w.public_inputs(shape) and pub[0::2] == [sector.comm_r] * 66 and pub[1::2] == chal


def test_witness_program_expands_the_packed_witness(window):
    """The PCE of the recorded circuit (one block: the sectors) and its witness program: from ONE, the
    public inputs and `free_values` alone it computes the witness that witness-mode synthesis does."""
    shape, cs, w = window["shape"], window["system"], PartitionWitness(window["witness"].sectors[:1])
    pce = build(cs)
    program = compile_program(pce, hint_matrices(cs, pce))
    assert pce.blocks.shape[0] == 1 and int(pce.blocks[0, 1]) == shape.sectors
    plain, free = free_values(shape, w)
    assert plain.shape == (0, 4) and free.shape == (2, 2 + 10 * (1 + 7 * 2), 4)
    full = seed(pce, program, Fr.from_ints([1, *w.public_inputs(shape)])[None], np.zeros((1, 0, 4), np.uint64),
                [free[None]])
    run_cpu(pce, program, full)
    assert np.array_equal(full[0], assignment(shape, w))


def test_public_inputs_and_errors(window):
    shape, w = window["shape"], window["witness"]
    assert public_inputs(shape, [5], [list(range(10))]) == [5, *range(10)] * 2
    with pytest.raises(InputError):
        public_inputs(shape, [5], [[64] * 10])  # a leaf index outside the sector
    with pytest.raises(InputError):
        public_inputs(shape, [1, 2, 3], [[0] * 10] * 3)  # more sectors than the circuit holds
    with pytest.raises(SynthesisError):
        circuit(shape, None, mode="witness")
    with pytest.raises(InputError):
        circuit(PostShape(64, (8, 0, 0), 2, 9), w, mode="witness")  # 10 challenges per sector given
    with pytest.raises(InputError):
        circuit(shape, PartitionWitness(w.sectors * 2), mode="witness")
    with pytest.raises(InputError):
        PostShape(64, (8, 8, 2), 2, 10)  # 4 base leaves: no oct tree
    with pytest.raises(InputError):
        PostShape(64, (8, 0, 0), 0, 10)


# ---------------------------------------------------------------- Groth16 on the CPU backend

@pytest.mark.slow
@pytest.mark.parametrize("kind", ["Window", "Winning"])
def test_2kib_groth16_proof(module_rng, kind):
    """cuzk's own setup of the circuit; the proof verifies with §A4's public inputs and fails with a
    wrong comm_r; a tampered sibling is refused by the prover's check."""
    shape = shape_of("2KiB", kind)
    if kind == "Window":
        w = PartitionWitness([random_sector(module_rng, shape)[0] for _ in range(shape.sectors)])
    else:
        w = winning_witness(module_rng, shape)[0]
    cs = circuit(shape)
    params = setup(cs, module_rng)
    cpu = get_backend("cpu")
    pub = w.public_inputs(shape)
    proof = prove(params, cs, assignment(shape, w), cpu, check=True)
    assert verify(params.vk, pub, proof)
    assert not verify(params.vk, [(pub[0] + 1) % Fr.modulus, *pub[1:]], proof)
    bad = copy.deepcopy(w)
    bad.sectors[-1].path[0].siblings[0, 0] = Fr.add(bad.sectors[-1].path[0].siblings[0, 0:1], Fr.from_ints([1]))[0]
    with pytest.raises(UnsatisfiedConstraintError):
        prove(params, cs, assignment(shape, bad), cpu, check=True)
