"""cuzk.snap.synthetic: a synthetic SnapDeals update (fresh seed per test) passes cuzk.snap's vanilla
checks and its witness satisfies the partition circuit (2KiB); tampering is refused with
SnapVanillaProofError naming the partition, challenge and field; a 32GiB update's partition passes
the checks; a 2KiB update proved on the CPU and verified from its commitments (slow: about 7 minutes
on 2 cores, the key's one-time setup in a fresh cache included)."""
import dataclasses

import numpy as np
import pytest

import cuzk
from cuzk.ff.fields import Fr
from cuzk.porep.trees import poseidon2_bytes
from cuzk.snap import proving, synthetic
from cuzk.snap.circuit import circuit
from cuzk.snap.derive import partition_challenges
from cuzk.snap.errors import SnapVanillaProofError
from cuzk.snap.synthetic import block_levels, synthetic_update
from cuzk.snap.vanilla import verify_partition

NAME = "StackedDrg2KiBV1"


def _comms(u):
    return u.comm_r_old, u.comm_r_new, u.comm_d_new


@pytest.mark.parametrize("max_blocks, levels", [(64, 0), (8, 1)])
def test_2kib_passes_the_checks_and_satisfies_the_circuit(rng, monkeypatch, max_blocks, levels):
    """Leaves one per block (64 blocks), and 8 blocks of 8 leaves (a chain of equal children under each
    block, as every larger size has)."""
    monkeypatch.setattr(synthetic, "MAX_BLOCKS", max_blocks)
    u = synthetic_update(NAME, rng=rng, progress=False)
    assert block_levels(u.proof) == levels
    assert len(u.vanilla) == len(u.public) == 1 and u.comm_r_old != u.comm_r_new
    assert [cp.proof_r_old.node_index for cp in u.vanilla[0].challenge_proofs] == \
        partition_challenges(u.proof, u.comm_r_new, 0)
    root_old = u.vanilla[0].challenge_proofs[0].proof_r_old.root
    assert poseidon2_bytes(u.comm_c, root_old) == u.comm_r_old
    verify_partition(NAME, u.public[0], u.vanilla[0])
    shape = u.proof.circuit_shape
    w = proving.partition_witness(NAME, proving.public_inputs(*_comms(u), 0), u.vanilla[0])
    witness = proving.synthesized_witness(shape, w)
    circuit(shape).assert_satisfied(witness)
    assert Fr.to_ints(witness[1:5]) == u.public[0].to_ints(u.proof)


def test_seeded(rng):
    seed = int(rng.integers(1 << 32))
    one, two = (synthetic_update(NAME, rng=np.random.default_rng(seed), progress=False) for _ in range(2))
    assert one == two
    assert synthetic_update(NAME, rng=np.random.default_rng(seed + 1), progress=False).comm_r_new != one.comm_r_new


def _field_of(proof_id, public, vanilla) -> tuple:
    with pytest.raises(SnapVanillaProofError) as e:
        verify_partition(proof_id, public, vanilla)
    return e.value.partition, e.value.challenge, e.value.field


def test_tampering_is_refused(rng):
    u = synthetic_update(NAME, rng=rng, progress=False)
    public, v = u.public[0], u.vanilla[0]
    n = int(rng.integers(len(v.challenge_proofs)))
    cps = list(v.challenge_proofs)
    cp = cps[n]
    cps[n] = dataclasses.replace(cp, proof_r_new=dataclasses.replace(cp.proof_r_new, leaf=cp.proof_r_old.leaf))
    assert _field_of(NAME, public, dataclasses.replace(v, challenge_proofs=tuple(cps))) == (0, n, "proof_r_new")
    slot = (partition_challenges(u.proof, u.comm_r_new, 0)[0] >> u.proof.circuit_shape.tree_d_levels) % u.proof.apex_leaves
    apex = list(v.apex_leafs)
    apex[slot] = bytes(32)
    assert _field_of(NAME, public, dataclasses.replace(v, apex_leafs=tuple(apex))) == (0, 0, f"apex_leafs[{slot}]")
    other = synthetic_update(NAME, rng=rng, progress=False)
    assert _field_of(NAME, dataclasses.replace(public, comm_d_new=other.comm_d_new), v) == (0, 0, "proof_d_new.root")
    assert _field_of(NAME, dataclasses.replace(public, comm_r_old=other.comm_r_old), v) == (0, 0, "proof_r_old.root")
    assert _field_of(NAME, dataclasses.replace(public, comm_r_new=other.comm_r_new), v)[2] == "proof_r_old.path"


def test_32gib_partition_passes_the_checks(rng):
    """Blocks of 8^6 leaves (2^12 of them, 4 per rho group); a random partition's 86 challenges
    checked. About 5 s on 2 cores."""
    u = synthetic_update("StackedDrg32GiBV1", rng=rng, progress=False)
    assert block_levels(u.proof) == 6 and len(u.vanilla) == 16
    k = int(rng.integers(16))
    verify_partition(u.proof, u.public[k], u.vanilla[k])
    assert u.public[k].k_and_h_select(u.proof) == k + (8 << 4)


@pytest.mark.slow
def test_2kib_prove_and_verify(rng, tmp_path, monkeypatch):
    """Proved on the CPU with cuzk's own parameters (a fresh cache); verified from the commitments."""
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    u = synthetic_update(NAME, rng=rng, progress=False)
    proofs = cuzk.snap_prove(NAME, *_comms(u), list(u.vanilla), allow_setup=True, backend="cpu")
    assert cuzk.snap_verify(NAME, *_comms(u), proofs)
    assert not cuzk.snap_verify(NAME, u.comm_r_old, u.comm_r_old, u.comm_d_new, proofs)
