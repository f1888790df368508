"""SnapDeals proved end to end (cuzk.snap.proving) over a 2KiB CC sector updated with data: the
vanilla-to-witness adapter satisfies the circuit (fast); one partition proved on the CPU with cuzk's
own parameters and verified from public data, a tampered proof refused (slow); bad input refused with
typed errors before any proving."""
import dataclasses

import numpy as np
import pytest

import cuzk
from cuzk.errors import InputError, ProofFormatError
from cuzk.ff.fields import Fr
from cuzk.porep import params_cache
from cuzk.porep.params_cache import OfficialParamsMissingError
from cuzk.snap import proving
from cuzk.snap.bincode import write_partition_proof, write_vproof_json
from cuzk.snap.circuit import circuit
from cuzk.snap.errors import SnapVanillaFormatError, SnapVanillaProofError
from cuzk.snap.registry import get_update_proof
from cuzk.snap.vanilla import prove_all

from .sealed import sealed_and_encoded

NAME = "StackedDrg2KiBV1"


@pytest.fixture(scope="module")
def update(tmp_path_factory):
    _, _, u = sealed_and_encoded("StackedDrg2KiBV1_1", tmp_path_factory.mktemp("snap-proving") / "s",
                                 np.random.default_rng(5))
    return u, prove_all(u)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """cuzk's own parameters in a fresh cache, no official ones."""
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cuzk"))
    monkeypatch.setattr(params_cache, "DEFAULT_OFFICIAL_DIR", str(tmp_path / "official"))


def _comms(u):
    return u.comm_r_old, u.comm_r_new, u.comm_d_new


def test_adapter_satisfies_the_circuit(update):
    """The witness adapted from a checked vanilla proof satisfies the circuit in witness mode; its
    public inputs are B4's from the commitments alone; the shape is the registry's."""
    u, vanilla = update
    shape = get_update_proof(NAME).circuit_shape
    public = proving.public_inputs(*_comms(u), 0)
    w = proving.partition_witness(NAME, public, vanilla[0])
    cs = circuit(shape, w, mode="witness")
    witness = cs.witness()
    assert witness.shape[0] == proving.snap_circuit(shape).num_columns
    circuit(shape).assert_satisfied(witness)
    assert Fr.to_ints(witness[1:5]) == public.to_ints(u.proof) == w.public_inputs(shape)
    assert w.comm_c == int.from_bytes(u.comm_c, "little")
    assert len(w.path_d_new) == shape.tree_d_levels and w.partition_path.shape == (shape.partition_bit_len, 4)


def test_adapter_checks_the_vanilla_proof_first(update):
    u, vanilla = update
    public = proving.public_inputs(*_comms(u), 0)
    bad = dataclasses.replace(vanilla[0], apex_leafs=(bytes(32),) + vanilla[0].apex_leafs[1:])
    with pytest.raises(SnapVanillaProofError, match="partition 0"):
        proving.partition_witness(NAME, public, bad)
    with pytest.raises(SnapVanillaProofError):
        proving.partition_witness(NAME, dataclasses.replace(public, comm_d_new=u.comm_r_old), vanilla[0])


def test_vanilla_sources(update):
    u, vanilla = update
    raw = write_partition_proof(vanilla[0], NAME)
    assert proving.vanilla_of(NAME, [raw]) == vanilla == proving.vanilla_of(NAME, write_vproof_json(vanilla, NAME))
    with pytest.raises(SnapVanillaFormatError, match="partition 0"):
        proving.vanilla_of(NAME, [raw[:-1]])
    with pytest.raises(InputError, match="vanilla_proofs: 2 partition proofs"):
        proving.vanilla_of(NAME, [raw, raw])
    with pytest.raises(InputError, match=r"vanilla_proofs\[0\]"):
        proving.vanilla_of(NAME, [3])


def test_bad_input_is_refused_before_proving(update, cache):
    u, vanilla = update
    with pytest.raises(InputError, match="comm_r_new"):
        cuzk.snap_prove(NAME, u.comm_r_old, b"\x01" * 31, u.comm_d_new, vanilla, allow_setup=True)
    with pytest.raises(InputError, match="comm_d_new"):
        cuzk.snap_prove(NAME, u.comm_r_old, u.comm_r_new, b"\xff" * 32, vanilla, allow_setup=True)
    with pytest.raises(OfficialParamsMissingError):
        cuzk.snap_prove(NAME, *_comms(u), vanilla)
    with pytest.raises(InputError, match="proofs: 2 partition proofs"):
        cuzk.snap_verify(NAME, *_comms(u), [bytes(192)] * 2)
    with pytest.raises(ProofFormatError, match="partition 0"):
        cuzk.snap_verify(NAME, *_comms(u), [bytes(191)])


@pytest.mark.slow
def test_2kib_prove_and_verify(update, cache):
    """One partition proved on the CPU with cuzk's own setup; it verifies from the commitments alone,
    not for another comm_r_new; a tampered proof is refused."""
    u, vanilla = update
    proofs = cuzk.snap_prove(NAME, *_comms(u), vanilla, allow_setup=True, backend="cpu")
    assert len(proofs) == 1 and len(proofs[0]) == 192
    assert cuzk.snap_verify(NAME, *_comms(u), proofs)
    assert not cuzk.snap_verify(NAME, u.comm_r_old, u.comm_c, u.comm_d_new, proofs)
    p = proofs[0]
    swapped = p[144:] + p[48:144] + p[:48]  # A and C exchanged: valid points, not a proof
    assert not cuzk.snap_verify(NAME, *_comms(u), [swapped])
    with pytest.raises(ProofFormatError):
        cuzk.snap_verify(NAME, *_comms(u), [p[:48] + bytes(144)])
