"""Synthetic PoSt vanilla proofs (cuzk.post.synthetic, no sealing): they pass cuzk.post.checks for the
randomness and sector ids they were made for, satisfy the partition circuit (2KiB), prove and verify
through cuzk.window_post / winning_post (slow: one CPU setup per circuit), and a tampered sibling is
refused; 8MiB and 32GiB WinningPoSt fast, a full 32GiB WindowPoSt partition (2,349 sectors) slow."""
import dataclasses
import time

import numpy as np
import pytest

import cuzk
from cuzk.post import proving
from cuzk.post.challenges import sector_challenges
from cuzk.post.checks import partition_public_inputs, verify_window_partition, verify_winning
from cuzk.post.circuit import circuit
from cuzk.post.errors import PoStInputError, PoStVanillaProofError
from cuzk.post.registry import PoStKind, get_post_proof
from cuzk.post.synthetic import synthetic_post
from post import test_proving  # tests/ is on the path

WINDOW, WINNING = "StackedDrgWindow2KiBV1_2", "StackedDrgWinning2KiBV1"
cache = test_proving.cache  # its fixture: cuzk's own parameters in a fresh cache


def _check(s):
    """cuzk.post.checks' verdict on the synthetic proofs, and their challenges the derived ones."""
    p = s.proof
    if p.kind is PoStKind.WINNING:
        verify_winning(p, s.randomness, s.vanilla)
    else:
        verify_window_partition(p, s.randomness, s.vanilla, s.partition_index)
    assert s.sector_ids == sorted(set(s.sector_ids))
    for i, v in enumerate(s.vanilla):
        leaves = [m.leaf_index() for m in v.sector_proof.inclusion_proofs]
        assert leaves == sector_challenges(p, s.randomness, v.sector_id, s.partition_index * p.sector_count + i)


@pytest.mark.parametrize("name", [WINDOW, WINNING])
def test_2kib_passes_checks_and_satisfies_the_circuit(rng, name):
    p = get_post_proof(name)
    s = synthetic_post(p, rng=rng, progress=False)
    assert len(s.vanilla) == (2 if p.kind is PoStKind.WINDOW else 1)
    _check(s)
    w = proving.partition_witness(p, s.randomness, s.vanilla)
    inputs = partition_public_inputs(p, s.randomness, s.sectors)
    assert w.public_inputs(p.circuit_shape) == inputs
    circuit(p.circuit_shape).assert_satisfied(test_proving.expanded(p, w, inputs))


def test_seeded_and_partition_aware(rng):
    """The same seed, the same proofs; V1 challenge indices count the sectors of earlier partitions
    (V1_2's do not), so a V1 partition 3's proofs fail as partition 0's."""
    seed, v1 = int(rng.integers(1 << 32)), "StackedDrgWindow2KiBV1"
    a, b = (synthetic_post(v1, rng=np.random.default_rng(seed), partition_index=3, progress=False)
            for _ in range(2))
    assert a == b
    _check(a)
    with pytest.raises(PoStVanillaProofError, match="leaf index"):
        verify_window_partition(v1, a.randomness, a.vanilla, 0)
    short = synthetic_post(WINDOW, rng=rng, randomness=a.randomness, sectors=1, progress=False)
    assert short.randomness == a.randomness and len(short.vanilla) == 1
    _check(short)


def _tampered_sibling(s, sector: int, challenge: int):
    """The proofs with one base-level sibling of one challenge's path replaced by another canonical Fr."""
    v = s.vanilla[sector]
    m = v.sector_proof.inclusion_proofs[challenge]
    level = m.base[0]
    other = bytes([level.hashes[0][0] ^ 1]) + level.hashes[0][1:]
    bad = dataclasses.replace(m, base=(dataclasses.replace(level, hashes=(other,) + level.hashes[1:]),) + m.base[1:])
    proofs = list(v.sector_proof.inclusion_proofs)
    proofs[challenge] = bad
    sp = dataclasses.replace(v.sector_proof, inclusion_proofs=tuple(proofs))
    vanilla = list(s.vanilla)
    vanilla[sector] = dataclasses.replace(v, sectors=(sp,))
    return vanilla


def test_tampered_sibling_is_refused(rng):
    s = synthetic_post(WINDOW, rng=rng, progress=False)
    with pytest.raises(PoStVanillaProofError, match="sector 1 challenge 3 inclusion path"):
        cuzk.window_post(WINDOW, s.randomness, _tampered_sibling(s, 1, 3), allow_setup=True)
    w = synthetic_post(WINNING, rng=rng, progress=False)
    with pytest.raises(PoStVanillaProofError, match="sector 0 challenge 65 inclusion path"):
        cuzk.winning_post(WINNING, w.randomness, _tampered_sibling(w, 0, 65)[0], allow_setup=True)


def test_bad_arguments(rng):
    with pytest.raises(PoStInputError, match="sectors"):
        synthetic_post(WINDOW, rng=rng, sectors=3)
    with pytest.raises(PoStInputError, match="sectors"):
        synthetic_post(WINNING, rng=rng, sectors=2)
    with pytest.raises(PoStInputError, match="partition_index"):
        synthetic_post(WINNING, rng=rng, partition_index=1)
    with pytest.raises(PoStInputError, match="randomness"):
        synthetic_post(WINDOW, rng=rng, randomness=b"\xff" * 32)  # not a canonical Fr


@pytest.mark.parametrize("name", ["StackedDrgWindow8MiBV1_2", "StackedDrgWindow8MiBV1", "StackedDrgWinning32GiBV1"])
def test_larger_shapes_pass_checks(rng, name):
    s = synthetic_post(name, rng=rng, progress=False)
    _check(s)
    depth = len(s.vanilla[0].sector_proof.inclusion_proofs[0].elements)
    assert depth == (10 if "32GiB" in name else 6)


@pytest.mark.slow
def test_window_32gib_full_partition(rng):
    t = time.perf_counter()
    s = synthetic_post("StackedDrgWindow32GiBV1_2", rng=rng, progress=False)
    print(f"synthetic 32GiB WindowPoSt partition: {time.perf_counter() - t:.1f} s")
    assert len(s.vanilla) == 2349 and len(set(s.comm_rs)) == 2349
    _check(s)


@pytest.mark.slow
def test_window_post_proved_and_verified(rng, cache):
    s = synthetic_post(WINDOW, rng=rng, progress=False)
    proof = cuzk.window_post(WINDOW, s.randomness, s.vanilla, allow_setup=True, backend="cpu")
    assert cuzk.verify_window_post(WINDOW, s.randomness, s.sectors, proof)
    other = synthetic_post(WINDOW, rng=rng, progress=False)
    assert not cuzk.verify_window_post(WINDOW, s.randomness, other.sectors, proof)


@pytest.mark.slow
def test_winning_post_proved_and_verified(rng, cache):
    s = synthetic_post(WINNING, rng=rng, progress=False)
    ((sector_id, comm_r),) = s.sectors
    proof = cuzk.winning_post(WINNING, s.randomness, s.vanilla[0], allow_setup=True, backend="cpu")
    assert cuzk.verify_winning_post(WINNING, s.randomness, sector_id, comm_r, proof)
    assert not cuzk.verify_winning_post(WINNING, s.randomness, sector_id + 1, comm_r, proof)
