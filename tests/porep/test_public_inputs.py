"""Public inputs of a partition: the layout generate_public_inputs gives, and its size in the circuit."""
import pytest

from cuzk.errors import InputError
from cuzk.porep.challenges import PoRepConfig, partition_challenges
from cuzk.porep.circuit import StackedShape
from cuzk.porep.graph import SdrGraph
from cuzk.porep.public_inputs import (PER_CHALLENGE_INPUTS, challenge_inputs, commitment_to_fr,
                                      partition_public_inputs)


def test_layout(rng):
    config = PoRepConfig.from_proof("StackedDrg2KiBV1_1")
    rid, comm_d, comm_r, seed = (bytes(rng.integers(0, 256, 31, dtype="u1")) + b"\x00" for _ in range(4))
    values = partition_public_inputs(config, rid, comm_d, comm_r, seed, 0)
    challenges = partition_challenges(config, rid, seed, comm_r, 0)
    graph = SdrGraph.for_config(config)
    assert values[:3] == [int.from_bytes(x, "little") for x in (rid, comm_d, comm_r)]
    assert len(values) == 3 + PER_CHALLENGE_INPUTS * len(challenges)
    for i, c in enumerate(challenges):
        row = values[3 + PER_CHALLENGE_INPUTS * i: 3 + PER_CHALLENGE_INPUTS * (i + 1)]
        assert row == [c, *graph.parents_of(c), c, c, c]
    assert challenge_inputs(graph, challenges) == values[3:]
    assert StackedShape.from_config(config).num_inputs == 1 + len(values)  # ONE in front


def test_commitment_to_fr():
    assert commitment_to_fr((5).to_bytes(32, "little"), "comm_d") == 5
    with pytest.raises(InputError, match="comm_r"):
        commitment_to_fr(bytes(31), "comm_r")
    with pytest.raises(InputError, match="replica_id"):
        commitment_to_fr(b"\xff" * 32, "replica_id")
