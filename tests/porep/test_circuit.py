"""The stacked PoRep circuit: rust-fil-proofs' exact sizes, and a sealed 2KiB sector's partition proof."""
import copy

import numpy as np
import pytest

from cuzk.errors import InputError, SynthesisError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean
from cuzk.porep.c1 import C1Output
from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.circuit import PartitionWitness, StackedShape, circuit, count, create_label, partition_witnesses
from cuzk.porep.labels import expand_label_parents, label_node
from cuzk.porep.public_inputs import partition_public_inputs
from cuzk.porep.seal import seal
from cuzk.porep.trees import fr_to_le
from cuzk.r1cs import ConstraintSystem


# rust-fil-proofs storage-proofs-porep/tests/stacked_circuit.rs: 8 * base-tree-count nodes, 2 layers,
# 1 challenge; the constraint counts and 22 inputs its tests assert
@pytest.mark.parametrize("tree, nodes, constraints", [
    ((8, 0, 0), 8, 1_199_620), ((2, 0, 0), 8, 1_206_212), ((8, 4, 0), 32, 1_296_576),
    ((8, 4, 2), 64, 1_346_982)], ids=["8-0-0", "2-0-0", "8-4-0", "8-4-2"])
def test_counts_match_rust(tree, nodes, constraints):
    shape = StackedShape(nodes, 2, 1, tree)
    stats = count(shape)
    assert stats["num_constraints"] == constraints
    assert stats["num_inputs"] == 22 == shape.num_inputs


def test_create_label_count_and_value(rng):
    """create_label.rs test_create_label: 37 allocated parents, allocated id, constant layer 3 and
    node 22 -> 532,025 constraints; the label equals the CPU label."""
    replica = bytearray(rng.bytes(32))
    replica[31] &= 0x3F
    parents = [bytearray(rng.bytes(32)) for _ in range(14)]
    for p in parents:
        p[31] &= 0x3F
    hashed = expand_label_parents(3, [bytes(p) for p in parents])
    node_be = lambda k: boolean.constant([(22 >> i) & 1 == 1 for i in range(63, -1, -1)], k)  # noqa: E731

    def build(cs, vals):
        k = 1 if vals else None
        bits_of = lambda b: boolean.bytes_to_bits_be(np.frombuffer(b, np.uint8)[None]) if vals else None  # noqa: E731
        bits = [boolean.alloc(cs, 256, bits_of(p)) for p in hashed]
        rid = boolean.alloc(cs, 256, bits_of(bytes(replica)))
        return create_label(cs, rid, bits, 3, node_be(k))

    cs = ConstraintSystem("constraints", replay=True)  # the compressions replayed, as in `circuit`
    build(cs, False)
    assert cs.num_constraints == 532_025
    wcs = ConstraintSystem("witness")
    out = build(wcs, True)
    assert wcs.num_constraints == 532_025 and wcs.num_aux == cs.num_aux
    expected = int.from_bytes(label_node(bytes(replica), 3, 22, hashed), "little")
    assert Fr.to_ints(out.val) == [expected]
    cs.assert_satisfied(wcs.witness())


def test_labels_of_several_layers_in_one_block(rng):
    """Witness mode computes later layers' labels as one block with per-instance layer constants: each
    instance's variables equal those of a run with its layer alone, and the labels the CPU ones."""
    layers = [2, 11]  # the block's constant bits take layer 2's flags, values per instance
    k = len(layers)
    replica = bytes(rng.integers(0, 256, 32, dtype=np.uint8)[:31]) + b"\x01"
    node = int(rng.integers(1, 1 << 30))
    hashed = [[bytes(rng.integers(0, 256, 31, dtype=np.uint8)) + b"\x02" for _ in range(37)] for _ in layers]

    def to_bits(rows):
        return boolean.bytes_to_bits_be(np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), 32))

    def run(idx, layer):
        cs = ConstraintSystem("witness")
        with cs.batch(len(idx)) as blk:
            bits = [boolean.alloc(blk, 256, to_bits([hashed[i][j] for i in idx])) for j in range(37)]
            rid = boolean.alloc(blk, 256, to_bits([replica] * len(idx)))
            node_be = boolean.constant([(node >> i) & 1 == 1 for i in range(63, -1, -1)], len(idx))
            out = create_label(blk, rid, bits, layer, node_be)
        return cs.witness()[1:], out.val

    together, labels = run(list(range(k)), np.array(layers))
    per = together.reshape(k, -1, 4)
    assert Fr.to_ints(labels) == [int.from_bytes(label_node(replica, layer, node, hashed[i]), "little")
                                  for i, layer in enumerate(layers)]
    alone, _ = run([1], 11)
    assert np.array_equal(per[1], alone)


# ---------------------------------------------------------------- a sealed 2KiB sector, through C1

@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    rng = np.random.default_rng()
    data = fr_to_le(Fr.random(64, rng))
    rand32 = lambda: bytes(rng.integers(0, 256, 32, dtype=np.uint8))  # noqa: E731
    sector = seal("StackedDrg2KiBV1_1", tmp_path_factory.mktemp("s") / "sector", data=data.tobytes(),
                  prover_id=rand32(), sector_id=int(rng.integers(1 << 62)), ticket=rand32(), progress=False)
    seed = rand32()
    c1 = C1Output(sector.proof, sector.vanilla_proofs(seed), sector.comm_r, sector.comm_d, sector.replica_id,
                  seed, sector.ticket)
    c1 = C1Output.loads(c1.dumps())  # as C2 gets it
    shape = StackedShape.from_config(c1.config)
    return dict(c1=c1, shape=shape, system=circuit(shape), witness=partition_witnesses(c1)[0])


def test_2kib_partition_is_satisfied(sealed):
    shape, cs, c1 = sealed["shape"], sealed["system"], sealed["c1"]
    assert (shape.nodes, shape.layers, shape.challenges) == (64, 2, 2)
    assert cs.num_inputs == 40 == shape.num_inputs
    w = circuit(shape, sealed["witness"], mode="witness")
    assert (w.num_constraints, w.num_aux, w.num_inputs) == (cs.num_constraints, cs.num_aux, cs.num_inputs)
    witness = w.witness()
    cs.assert_satisfied(witness)
    expected = partition_public_inputs(c1.config, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed, 0)
    assert Fr.to_ints(witness[1:cs.num_inputs]) == expected


def test_tampered_label_is_unsatisfied(sealed):
    """A wrong layer-2 label in a DRG parent's column breaks the column hash and the label."""
    bad = copy.deepcopy(sealed["witness"])
    bad.parent_columns[1, 0, 1] = Fr.add(bad.parent_columns[1, 0, 1:2], Fr.from_ints([1]))[0]
    w = circuit(sealed["shape"], bad, mode="witness")
    assert sealed["system"].first_unsatisfied(w.witness()) is not None


def test_witness_errors(sealed):
    shape, c1 = sealed["shape"], sealed["c1"]
    with pytest.raises(SynthesisError):
        circuit(shape, None, mode="witness")
    one = PartitionWitness.from_vanilla(c1.replica_id, c1.comm_d, c1.comm_r, c1.vanilla_proofs[0][:1])
    with pytest.raises(InputError):
        circuit(shape, one, mode="witness")
    with pytest.raises(InputError):
        PartitionWitness.from_vanilla(c1.replica_id, c1.comm_d, c1.comm_r, [])
    with pytest.raises(InputError):
        StackedShape(64, 3, 2)
    with pytest.raises(InputError):
        StackedShape(64, 2, 2, (8, 8, 2))


@pytest.mark.slow
def test_32gib_partition_count():
    """rust-fil-proofs #1325: 130,278,541 constraints; curio's PCE: 130,169,893 aux, nnz A 309.4 M,
    B 130.3 M, C 282.7 M; 328 inputs (the vk's IC)."""
    stats = count(StackedShape.from_config(PoRepConfig.from_proof("StackedDrg32GiBV1_1")))
    assert stats["num_constraints"] == 130_278_541 and stats["num_inputs"] == 328
    assert stats["num_aux"] == 130_169_893
    assert [round(stats[f"nnz_{m}"] / 1e5) for m in "abc"] == [3094, 1303, 2827]
