"""cuzk.engine.snap, the SnapDeals adapter, without an engine (fast): one circuit spec per registered
update proof, keyed by its parameter file and loading only with allow_setup when the official file is
missing; one Task per partition, its witness callable picklable (it runs in a synthesis process) and
returning the checked partition's packed witness, which the circuit's witness program (as the GPU
worker runs it, cuzk.engine.expansion) expands to the synthesized full witness; bad vanilla
proofs or commitments refused before any Task is made, with typed errors. The proofs through an
engine: tests/service/test_snap_daemon.py."""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.engine.expansion import expanded
from cuzk.engine.snap import snap_spec_of, snap_tasks
from cuzk.errors import InputError
from cuzk.porep.params_cache import OfficialParamsMissingError
from cuzk.porep.program_witness import PackedWitness
from cuzk.snap import proving
from cuzk.snap.bincode import write_partition_proof, write_vproof_json
from cuzk.snap.errors import SnapVanillaFormatError, SnapVanillaProofError
from cuzk.snap.registry import get_update_proof
from snap import test_proving  # tests/ is on the path

update, cache = test_proving.update, test_proving.cache  # its fixtures: a 2KiB update and its vanilla proofs
SNAP_2K = get_update_proof("StackedDrg2KiBV1")


def test_a_spec_per_update_proof_loading_cuzk_parameters_only_when_allowed(cache):
    spec = snap_spec_of(SNAP_2K)
    assert spec.key == SNAP_2K.params_stem and snap_spec_of(0).key == spec.key
    assert snap_spec_of("StackedDrg8MiBV1").key != spec.key
    with pytest.raises(OfficialParamsMissingError):
        spec.load()


def test_a_task_per_partition_whose_picklable_witness_expands_to_the_checked_full_witness(update):
    u, vanilla = update
    comms = (u.comm_r_old, u.comm_r_new, u.comm_d_new)
    (task,) = snap_tasks(SNAP_2K, *comms, [write_partition_proof(v, SNAP_2K) for v in vanilla])
    public = proving.public_inputs(*comms, 0)
    assert list(task.inputs) == public.to_ints(SNAP_2K)
    shape = get_update_proof(SNAP_2K).circuit_shape
    expected = proving.synthesized_witness(shape, proving.partition_witness(SNAP_2K, public, vanilla[0]))
    packed = pickle.loads(pickle.dumps(task.synthesize))()
    assert isinstance(packed, PackedWitness)
    (got,) = expanded(proving.snap_circuit(shape), [packed], get_backend("cpu"))
    assert np.array_equal(got, expected)
    (from_json,) = snap_tasks(SNAP_2K, *comms, write_vproof_json(vanilla, SNAP_2K))  # curio's snap-vproof.json
    assert list(from_json.inputs) == list(task.inputs)


def test_bad_vanilla_proofs_or_commitments_make_no_task(update):
    u, vanilla = update
    raw = write_partition_proof(vanilla[0], SNAP_2K)
    with pytest.raises(SnapVanillaFormatError, match="partition 0"):
        snap_tasks(SNAP_2K, u.comm_r_old, u.comm_r_new, u.comm_d_new, [raw[:-1]])
    with pytest.raises(SnapVanillaProofError, match="partition 0"):
        bad = dataclasses.replace(vanilla[0], apex_leafs=(bytes(32),) + vanilla[0].apex_leafs[1:])
        snap_tasks(SNAP_2K, u.comm_r_old, u.comm_r_new, u.comm_d_new, [bad])
    with pytest.raises(InputError, match="comm_r_new"):
        snap_tasks(SNAP_2K, u.comm_r_old, b"\x01" * 31, u.comm_d_new, vanilla)
    with pytest.raises(InputError, match="vanilla_proofs: 2 partition proofs"):
        snap_tasks(SNAP_2K, u.comm_r_old, u.comm_r_new, u.comm_d_new, [raw, raw])
