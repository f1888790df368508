"""PoSt proved end to end (cuzk.post.proving) over 2KiB sectors sealed by cuzk: the vanilla-to-witness
adapter satisfies the circuit (fast); WindowPoSt and WinningPoSt proved on the CPU with cuzk's own
parameters and verified from public data (slow); bad input refused with typed errors before any proving."""
import dataclasses

import numpy as np
import pytest

import cuzk
from cuzk.backend import get_backend
from cuzk.errors import ProofFormatError
from cuzk.ff.fields import Fr
from cuzk.porep import params_cache
from cuzk.porep.params_cache import OfficialParamsMissingError
from cuzk.porep.program_witness import FreeValuesWitness
from cuzk.porep.seal import seal
from cuzk.post import proving
from cuzk.post.bincode import write_sector_proof
from cuzk.post.checks import partition_public_inputs
from cuzk.post.circuit import circuit
from cuzk.post.errors import PoStInputError, PoStVanillaFormatError, PoStVanillaProofError
from cuzk.post.registry import get_post_proof
from cuzk.post.witness import free_values

WINDOW, WINNING = "StackedDrgWindow2KiBV1_2", "StackedDrgWinning2KiBV1"


def expanded(p, w, inputs):
    """The partition's full witness by the circuit's witness program on the CPU backend."""
    pack = FreeValuesWitness(free_values, p.circuit_shape, w, tuple(inputs))
    return pack.full(proving.post_circuit(p.circuit_shape), get_backend("cpu"))


def _rand32(rng) -> bytes:
    """32 random bytes that are a canonical Fr (top two bits cleared)."""
    b = bytearray(rng.integers(0, 256, 32, dtype=np.uint8).tobytes())
    b[31] &= 0x3F
    return bytes(b)


@pytest.fixture(scope="module")
def sectors(tmp_path_factory):
    rng = np.random.default_rng(31)
    root = tmp_path_factory.mktemp("post-proving")
    return [seal("StackedDrg2KiBV1_1", root / f"s{sid}", prover_id=_rand32(rng), sector_id=sid,
                 ticket=_rand32(rng), progress=False) for sid in (11, 20)]


@pytest.fixture(scope="module")
def rand():
    return _rand32(np.random.default_rng(7))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """cuzk's own parameters in a fresh cache, no official ones: one setup per circuit for the module."""
    root = tmp_path_factory.mktemp("post-params")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
        mp.setenv("CUZK_CACHE_DIR", str(root / "cuzk"))
        mp.setattr(params_cache, "DEFAULT_OFFICIAL_DIR", str(root / "official"))
        yield root


def test_window_adapter_satisfies_the_circuit(sectors, rand):
    """The partition witness adapted from checked vanilla proofs, expanded by the witness program from
    the public inputs, is the witness-mode synthesis and satisfies the circuit; its public inputs are
    the ones derived from (sector_id, comm_r) and the randomness alone."""
    p = get_post_proof(WINDOW)
    vanilla = proving.vanilla_of(p, rand, sectors, 0)
    w = proving.partition_witness(p, rand, vanilla, 0)
    inputs = partition_public_inputs(p, rand, [(s.sector_id, s.comm_r) for s in sectors], 0)
    assert w.public_inputs(p.circuit_shape) == inputs and len(inputs) == 22
    full = expanded(p, w, inputs)
    cs = circuit(p.circuit_shape)
    cs.assert_satisfied(full)
    assert np.array_equal(full, circuit(p.circuit_shape, w, mode="witness").witness())
    assert Fr.to_ints(full[1:23]) == inputs


def test_winning_adapter_unrolls_one_sector(sectors, rand):
    p = get_post_proof(WINNING)
    (vanilla,) = proving.vanilla_of(p, rand, [sectors[1].path])
    w = proving.partition_witness(p, rand, [vanilla])
    comm_r = int.from_bytes(sectors[1].comm_r, "little")
    assert len(w.sectors) == 66 and {s.comm_r for s in w.sectors} == {comm_r}
    leaves = [m.leaf_index() for m in vanilla.sector_proof.inclusion_proofs]
    assert [c for s in w.sectors for c in s.challenges] == leaves
    inputs = partition_public_inputs(p, rand, [(20, sectors[1].comm_r)])
    assert w.public_inputs(p.circuit_shape) == inputs
    full = expanded(p, w, inputs)
    circuit(p.circuit_shape).assert_satisfied(full)


def _tampered_leaf(vp):
    s = vp.sector_proof
    m = s.inclusion_proofs[3]
    bad = dataclasses.replace(m, leaf=bytes([m.leaf[0] ^ 1]) + m.leaf[1:])
    proofs = s.inclusion_proofs[:3] + (bad,) + s.inclusion_proofs[4:]
    return dataclasses.replace(vp, sectors=(dataclasses.replace(s, inclusion_proofs=proofs),))


def test_bad_input_is_refused_before_proving(sectors, rand, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("proving went past the input checks")
    monkeypatch.setattr(proving, "load_post_circuit", refuse)
    other = bytes([rand[0] ^ 1]) + rand[1:]
    vanilla = proving.vanilla_of(WINDOW, rand, sectors)
    with pytest.raises(PoStVanillaProofError, match=r"sector 0 challenge \d+ leaf index"):
        cuzk.window_post(WINDOW, other, vanilla, allow_setup=True)  # made for another randomness
    with pytest.raises(PoStVanillaProofError, match="sector 1 challenge 3 inclusion path"):
        cuzk.window_post(WINDOW, rand, [write_sector_proof(vanilla[0]), write_sector_proof(_tampered_leaf(vanilla[1]))])
    with pytest.raises(PoStVanillaFormatError, match="sector 1 at byte offset"):
        cuzk.window_post(WINDOW, rand, [write_sector_proof(vanilla[0]), write_sector_proof(vanilla[1])[:-1]])
    with pytest.raises(PoStInputError, match="randomness"):
        cuzk.window_post(WINDOW, b"\xff" * 32, sectors)  # not a canonical Fr
    with pytest.raises(PoStInputError, match="registered_proof"):
        cuzk.winning_post(WINDOW, rand, sectors[0])
    with pytest.raises(PoStInputError, match="sectors"):
        cuzk.window_post(WINDOW, rand, [sectors[0], 5])
    with pytest.raises(PoStInputError, match="partition_index"):
        cuzk.window_post(WINDOW, rand, sectors, -1)
    with pytest.raises(cuzk.SectorError, match="not a sector directory"):
        cuzk.winning_post(WINNING, rand, sectors[0].path / "missing")
    with pytest.raises(ProofFormatError, match="192 bytes"):
        cuzk.verify_winning_post(WINNING, rand, 11, sectors[0].comm_r, bytes(191))


def test_missing_official_parameters_without_setup(sectors, rand, cache):
    with pytest.raises(OfficialParamsMissingError, match="proof-of-spacetime-fallback"):
        cuzk.window_post(WINDOW, rand, sectors)


@pytest.mark.slow
def test_window_post_proved_and_verified(sectors, rand, cache):
    """2 sectors, one partition: the proof verifies for its public data and fails for another
    randomness, another comm_r or another partition; vanilla bincode bytes prove the same statement."""
    proof = cuzk.window_post(WINDOW, rand, sectors, allow_setup=True, backend="cpu")
    assert len(proof) == 192
    public = [(s.sector_id, s.comm_r) for s in sectors]
    assert cuzk.verify_window_post(WINDOW, rand, public, proof)
    other = bytes([rand[0] ^ 1]) + rand[1:]
    assert not cuzk.verify_window_post(WINDOW, other, public, proof)
    assert not cuzk.verify_window_post(WINDOW, rand, [public[0], (20, sectors[0].comm_r)], proof)
    assert not cuzk.verify_window_post("StackedDrgWindow2KiBV1", rand, public, proof)  # V1 challenges sector 1 elsewhere
    vanilla = [write_sector_proof(v) for v in proving.vanilla_of(WINDOW, rand, sectors[1:], 1)]
    short = cuzk.window_post(WINDOW, rand, vanilla, 1, allow_setup=True, backend="cpu")  # padded partition
    assert cuzk.verify_window_post(WINDOW, rand, public[1:], short, 1)
    assert not cuzk.verify_window_post(WINDOW, rand, public[1:], proof, 1)


@pytest.mark.slow
def test_winning_post_proved_and_verified(sectors, rand, cache):
    proof = cuzk.winning_post(WINNING, rand, sectors[0].path, allow_setup=True, backend="cpu")
    assert len(proof) == 192
    assert cuzk.verify_winning_post(WINNING, rand, 11, sectors[0].comm_r, proof)
    assert not cuzk.verify_winning_post(WINNING, rand, 12, sectors[0].comm_r, proof)
    assert not cuzk.verify_winning_post(WINNING, rand, 11, sectors[1].comm_r, proof)
