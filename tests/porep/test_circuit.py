"""The stacked PoRep circuit: rust-fil-proofs' exact sizes, and a sealed 2KiB sector's partition proof."""
import numpy as np
import pytest

from cuzk.errors import InputError, SynthesisError
from cuzk.fields import Fr
from cuzk.gadgets import boolean as B
from cuzk.gadgets import sha256 as H
from cuzk.gadgets.poseidon import hash_many
from cuzk.porep import circuit as C
from cuzk.porep.challenges import PoRepConfig, partition_challenges
from cuzk.porep.circuit_replay import replay
from cuzk.porep.graph import SdrGraph
from cuzk.porep.labels import all_labels, expand_label_parents, label_node
from cuzk.porep.public_inputs import partition_public_inputs
from cuzk.porep.trees import (POSEIDON, SHA256, MerkleTree, binary_arities, fr_from_le, fr_to_le,
                              level_arities, poseidon2_bytes)
from cuzk.r1cs import ConstraintSystem


# rust-fil-proofs storage-proofs-porep/tests/stacked_circuit.rs: 8 * base-tree-count nodes, 2 layers,
# 1 challenge; the constraint counts and 22 inputs its tests assert
@pytest.mark.parametrize("tree, nodes, constraints", [
    ((8, 0, 0), 8, 1_199_620), ((2, 0, 0), 8, 1_206_212), ((8, 4, 0), 32, 1_296_576),
    ((8, 4, 2), 64, 1_346_982)], ids=["8-0-0", "2-0-0", "8-4-0", "8-4-2"])
def test_counts_match_rust(tree, nodes, constraints):
    shape = C.StackedShape(nodes, 2, 1, tree)
    stats = C.count(shape)
    assert stats["num_constraints"] == constraints
    assert stats["num_inputs"] == 22 == shape.num_inputs


def test_create_label_count_and_value():
    """create_label.rs test_create_label: 37 allocated parents, allocated id, constant layer 3 and
    node 22 -> 532,025 constraints; the label equals the CPU label."""
    rng = np.random.default_rng()
    replica = bytearray(rng.bytes(32))
    replica[31] &= 0x3F
    parents = [bytearray(rng.bytes(32)) for _ in range(14)]
    for p in parents:
        p[31] &= 0x3F
    hashed = expand_label_parents(3, [bytes(p) for p in parents])
    node_be = lambda k: B.constant([(22 >> i) & 1 == 1 for i in range(63, -1, -1)], k)  # noqa: E731

    def build(cs, vals):
        k = 1 if vals else None
        bits = [B.alloc(cs, 256, B.bytes_to_bits_be(np.frombuffer(p, np.uint8)[None]) if vals else None)
                for p in hashed]
        rid = B.alloc(cs, 256, B.bytes_to_bits_be(np.frombuffer(bytes(replica), np.uint8)[None]) if vals else None)
        return C.create_label(cs, rid, bits, 3, node_be(k))

    cs = ConstraintSystem("constraints")
    build(cs, False)
    assert cs.num_constraints == 532_025
    wcs = ConstraintSystem("witness")
    out = build(wcs, True)
    assert wcs.num_constraints == 532_025 and wcs.num_aux == cs.num_aux
    expected = int.from_bytes(label_node(bytes(replica), 3, 22, hashed), "little")
    assert Fr.to_ints(out.val) == [expected]
    cs.assert_satisfied(wcs.witness())


@pytest.mark.parametrize("const_frac", [0.0, 0.3])
def test_replayed_compression_equals_gadget(const_frac):
    """Replaying a recorded compression gives the gadget's own rows, variables and outputs."""
    rng = np.random.default_rng()
    const = rng.random(512) < const_frac
    neg = np.where(const, rng.random(512) < 0.5, rng.random(512) < 0.2)
    state = B.concat(H.iv(None))

    def block(cs):
        cs.alloc_many(3)  # some variables before the block's
        var = np.full(512, -1, np.int64)
        var[~const] = B.alloc(cs, int((~const).sum())).var
        return B.Bits(var, neg, None)

    direct = ConstraintSystem("constraints")
    out1 = B.concat(H.compression(direct, block(direct), H.iv(None)))
    name = f"test_compression_{rng.integers(1 << 62)}"
    first = ConstraintSystem("constraints")  # records
    replay(name, C._compression_flat, first, [block(first), state])
    replayed = ConstraintSystem("constraints")  # stamps the recording
    out2 = replay(name, C._compression_flat, replayed, [block(replayed), state])
    assert replayed.stats() == direct.stats()
    assert np.array_equal(out1.var, out2.var) and np.array_equal(out1.neg, out2.neg)
    for m1, m2 in zip(direct.to_csr(), replayed.to_csr()):
        assert np.array_equal(m1.indptr, m2.indptr) and np.array_equal(m1.indices, m2.indices)
        assert np.array_equal(m1.values(), m2.values())


# ---------------------------------------------------------------- a sealed 2KiB sector

def seal_2kib(rng):
    """Seal a random 2KiB V1_1 sector in memory: labels, tree_d, tree_c, tree_r_last and commitments."""
    config = PoRepConfig.from_proof(5)
    graph = SdrGraph.for_proof(5)
    parents = graph.parents()
    nodes, layers = config.nodes, config.layers
    data = fr_to_le(Fr.random(nodes, rng))
    replica_id = bytearray(rng.bytes(32))
    replica_id[31] &= 0x3F
    replica_id = bytes(replica_id)
    labels = all_labels(parents, replica_id, layers)
    label_fr = np.stack([fr_from_le(labels[i]) for i in range(layers)], axis=1)  # (nodes, layers, 4)
    arities = level_arities(nodes, (8, 0, 0))
    tree_d = MerkleTree.build(SHA256, data, binary_arities(nodes))
    tree_c = MerkleTree.build(POSEIDON, hash_many(label_fr, layers), arities)
    tree_r = MerkleTree.build(POSEIDON, Fr.add(label_fr[:, -1], fr_from_le(data)), arities)
    comm_r = poseidon2_bytes(tree_c.root, tree_r.root)
    return dict(config=config, graph=graph, parents=parents, replica_id=replica_id, label_fr=label_fr,
                tree_d=tree_d, tree_c=tree_c, tree_r=tree_r, comm_r=comm_r)


def partition_witness(s, challenges, label_fr=None):
    label_fr = s["label_fr"] if label_fr is None else label_fr
    par = s["parents"][challenges].astype(np.int64)  # (K, 14)
    return C.PartitionWitness.from_paths(
        s["replica_id"], s["tree_d"].root, s["comm_r"], s["tree_r"].root, s["tree_c"].root, challenges,
        s["tree_d"].paths(challenges), label_fr[par], [s["tree_c"].paths(p) for p in par],
        s["tree_r"].paths(challenges), s["tree_c"].paths(challenges))


@pytest.fixture(scope="module")
def sealed():
    rng = np.random.default_rng()
    s = seal_2kib(rng)
    seed = rng.bytes(32)
    s["seed"] = seed
    s["challenges"] = partition_challenges(s["config"], s["replica_id"], seed, s["comm_r"], 0)
    s["shape"] = C.StackedShape.from_config(s["config"])
    s["system"] = C.circuit(s["shape"])  # constraint mode
    return s


def test_2kib_partition_is_satisfied(sealed):
    shape, cs = sealed["shape"], sealed["system"]
    assert (shape.nodes, shape.layers, shape.challenges) == (64, 2, 2)
    assert cs.num_inputs == 40
    w = C.circuit(shape, partition_witness(sealed, sealed["challenges"]), mode="witness")
    assert (w.num_constraints, w.num_aux, w.num_inputs) == (cs.num_constraints, cs.num_aux, cs.num_inputs)
    witness = w.witness()
    cs.assert_satisfied(witness)
    expected = partition_public_inputs(sealed["config"], sealed["replica_id"], sealed["tree_d"].root,
                                       sealed["comm_r"], sealed["seed"], 0, sealed["graph"])
    assert Fr.to_ints(witness[1:cs.num_inputs]) == expected


def test_tampered_label_is_unsatisfied(sealed):
    """A wrong label in one parent column (layer 2) breaks the column hash / label chain."""
    label_fr = sealed["label_fr"].copy()
    c = sealed["challenges"][1]
    parent = int(sealed["parents"][c, 0])
    label_fr[parent, 1] = Fr.add(label_fr[parent, 1], Fr.from_ints([1]))[0]
    w = C.circuit(sealed["shape"], partition_witness(sealed, sealed["challenges"], label_fr), mode="witness")
    assert sealed["system"].first_unsatisfied(w.witness()) is not None


def test_witness_errors(sealed):
    shape = sealed["shape"]
    with pytest.raises(SynthesisError):
        C.circuit(shape, None, mode="witness")
    bad = partition_witness(sealed, sealed["challenges"][:1])
    with pytest.raises(InputError):
        C.circuit(shape, bad, mode="witness")
    with pytest.raises(InputError):
        C.StackedShape(64, 3, 2)
    with pytest.raises(InputError):
        C.StackedShape(64, 2, 2, (8, 8, 2))
