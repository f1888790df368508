"""cuzk.engine.post, the PoSt adapter, without an engine (fast): one circuit spec per registered PoSt
circuit, keyed by its parameter file and loading only with allow_setup when the official file is
missing; one Task per WinningPoSt or WindowPoSt partition, its witness callable picklable (it runs in a
synthesis process) and packing the checked partition's witness; bad vanilla proofs refused before any
Task is made, with typed errors. The proofs through an engine: tests/service/test_post_daemon.py."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from cuzk.engine.post import POST_PRIORITY, post_spec_of, post_tasks
from cuzk.engine.jobs import Priority
from cuzk.ff.fields import Fr
from cuzk.porep.params_cache import OfficialParamsMissingError
from cuzk.post import proving
from cuzk.post.errors import PoStVanillaProofError
from cuzk.post.registry import PoStKind, get_post_proof
from cuzk.post.witness import free_values
from post import test_proving  # tests/ is on the path

sectors, rand, cache = test_proving.sectors, test_proving.rand, test_proving.cache  # its fixtures
WINDOW, WINNING = get_post_proof("StackedDrgWindow2KiBV1_2"), get_post_proof("StackedDrgWinning2KiBV1")


def test_a_spec_per_circuit_loading_cuzk_parameters_only_when_allowed(cache):
    window, winning = post_spec_of(WINDOW), post_spec_of(WINNING)
    assert (window.key, winning.key) == (WINDOW.params_stem, WINNING.params_stem) and window.key != winning.key
    assert post_spec_of(get_post_proof("StackedDrgWindow2KiBV1")).key == window.key  # V1 and V1_2 share it
    with pytest.raises(OfficialParamsMissingError):
        window.load()
    assert POST_PRIORITY == {PoStKind.WINNING: Priority.WINNING_POST, PoStKind.WINDOW: Priority.WINDOW_POST}


@pytest.mark.parametrize("proof", [WINDOW, WINNING], ids=["window", "winning"])
def test_one_task_whose_picklable_witness_packs_the_checked_partition(sectors, rand, proof):
    chosen = sectors if proof is WINDOW else sectors[:1]
    (task,) = post_tasks(proof, rand, [s.path for s in chosen])
    vanilla = proving.vanilla_of(proof, rand, chosen)
    expected = proving.partition_witness(proof, rand, vanilla)
    assert list(task.inputs) == expected.public_inputs(proof.circuit_shape)
    packed = pickle.loads(pickle.dumps(task.synthesize))()
    assert np.array_equal(packed.inputs, Fr.from_ints([1, *task.inputs]))
    plain, per = free_values(proof.circuit_shape, expected)
    assert np.array_equal(packed.plain_free, plain) and np.array_equal(packed.block_free, per)


def test_bad_vanilla_proofs_make_no_task(sectors, rand):
    other = bytes([rand[0] ^ 1]) + rand[1:]
    vanilla = proving.vanilla_of(WINDOW, rand, sectors)
    with pytest.raises(PoStVanillaProofError, match=r"sector 0 challenge \d+ leaf index"):
        post_tasks(WINDOW, other, vanilla)
