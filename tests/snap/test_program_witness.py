"""The SnapDeals partition circuit's witness program (cuzk.snap.proving.snap_circuit, snap_witness): at
2KiB its expansion on the CPU backend equals the witness-mode synthesis bit for bit, on a seeded
synthetic update (64 one-leaf blocks, and 8 blocks of 8) and on a real encoded update, and satisfies
the PCE (A.w * B.w = C.w); the pack holds the free values the program names, at 8MiB too, where the
partition path makes two more (the apex root and its first sibling) and the apex tree's chained
blocks must run in order (slow: bit for bit, an odd and an even partition, about a minute on 2 cores);
a pack of another shape is refused; the GPU expansion equals the CPU one (marker gpu)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.porep import program_witness
from cuzk.r1cs import first_unsatisfied
from cuzk.snap import proving, synthetic
from cuzk.snap.registry import get_update_proof
from cuzk.snap.synthetic import synthetic_update
from cuzk.snap.witness import free_values

from . import test_proving

update = test_proving.update  # its fixture: a real encoded 2KiB update and its vanilla proofs
NAME = "StackedDrg2KiBV1"


def _witness(u, k: int):
    comms = (u.comm_r_old, u.comm_r_new, u.comm_d_new)
    return proving.partition_witness(u.proof, proving.public_inputs(*comms, k), u.vanilla[k])


def _expanded_equals_synthesized(proof_name: str, w) -> np.ndarray:
    shape = get_update_proof(proof_name).circuit_shape
    circuit = proving.snap_circuit(shape)
    got = proving.snap_witness(shape, w).full(circuit, get_backend("cpu"))
    want = proving.synthesized_witness(shape, w)
    assert got.shape == want.shape == (circuit.num_columns, 4) and got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)
    return got


@pytest.mark.parametrize("max_blocks", [64, 8])
def test_2kib_synthetic_expansion_is_the_synthesized_witness(rng, monkeypatch, max_blocks):
    monkeypatch.setattr(synthetic, "MAX_BLOCKS", max_blocks)
    u = synthetic_update(NAME, rng=rng, progress=False)
    got = _expanded_equals_synthesized(NAME, _witness(u, 0))
    pce = proving.snap_circuit(get_update_proof(NAME).circuit_shape).pce
    assert first_unsatisfied(*pce.to_csr(), got) is None
    assert Fr.to_ints(got[1:5]) == u.public[0].to_ints(u.proof)


def test_2kib_real_update_expansion_is_the_synthesized_witness(update):
    u, vanilla = update
    comms = (u.comm_r_old, u.comm_r_new, u.comm_d_new)
    w = proving.partition_witness(NAME, proving.public_inputs(*comms, 0), vanilla[0])
    _expanded_equals_synthesized(NAME, w)


def test_the_pack_holds_the_programs_free_values(rng):
    """2KiB: 3 + 8 top-level values (no partition path), 33 per challenge; 8MiB: 3 + 128 + 2 + 2 and
    95; the pack is the public inputs with ONE and free_values; snap_witness pickles as a Task's
    witness does."""
    for name, top, per in ((NAME, 11, 33), ("StackedDrg8MiBV1", 135, 95)):
        u = synthetic_update(name, rng=rng, progress=False)
        shape = u.proof.circuit_shape
        k = shape.partitions - 1
        sw = proving.snap_witness(shape, _witness(u, k))
        pack = sw()
        program = proving.snap_circuit(shape).program
        assert program.num_free == (top, per)
        assert pack.plain_free.shape == (top, 4) and pack.block_free.shape == (shape.challenges, per, 4)
        assert Fr.to_ints(pack.inputs) == [1, *u.public[k].to_ints(u.proof)] == [1, *sw.inputs]
        plain, block = free_values(shape, sw.witness)
        assert np.array_equal(plain, pack.plain_free) and np.array_equal(block, pack.block_free)
        program_witness.seeded(proving.snap_circuit(shape).pce, program, [pack])  # fits the layout


def test_a_pack_of_another_shape_is_refused(rng):
    u = synthetic_update(NAME, rng=rng, progress=False)
    shape = u.proof.circuit_shape
    pack = proving.snap_witness(shape, _witness(u, 0))()
    short = dataclasses.replace(pack, block_free=pack.block_free[:, :-1])
    with pytest.raises(InputError, match="do not fit"):
        program_witness.expand(proving.snap_circuit(shape), [short], get_backend("cpu"))


@pytest.mark.slow
def test_8mib_expansion_is_the_synthesized_witness(rng):
    """Partitions 1 (bit 0 set: the apex root right of its sibling) and 2; the apex tree's seven
    chained blocks (64 instances down to 1) run in block order on the CPU."""
    u = synthetic_update("StackedDrg8MiBV1", rng=rng, progress=False)
    for k in (1, 2):
        _expanded_equals_synthesized("StackedDrg8MiBV1", _witness(u, k))


@pytest.mark.gpu
@pytest.mark.parametrize("name", [NAME, "StackedDrg8MiBV1"])
def test_cuda_expansion_is_the_cpu_expansion(rng, name):
    """Two partitions' packs expanded together on the cuda backend (left on the device, then copied)
    equal the CPU backend's expansion, limb for limb."""
    u = synthetic_update(name, rng=rng, progress=False)
    shape = u.proof.circuit_shape
    circuit = proving.snap_circuit(shape)
    packs = [proving.snap_witness(shape, _witness(u, k))() for k in (0, shape.partitions - 1)]
    want = program_witness.expand(circuit, packs, get_backend("cpu"))
    got = program_witness.expand(circuit, packs, get_backend("cuda"), host=True)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
