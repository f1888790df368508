"""cuzk.seal / prove / verify: C1 sources, typed errors before proving, the verified per-partition prove
loop and proof verification against a sector's public values.

The 2KiB partition circuit has 2,687,921 constraints (domain 2^22): its CPU setup and prove take far
longer than CI allows, so the full seal -> prove -> verify run is marked slow. CI runs every step of
it on small circuits instead: prove_partitions (the loop prove_c1 runs per partition) on a circuit
whose public inputs are a real 2KiB sector's, and verify() of the resulting proof bytes.
"""
import dataclasses
import json

import numpy as np
import pytest

import cuzk
from cuzk import api
from cuzk.porep import params_cache
from cuzk.backend import get_backend
from cuzk.errors import (C1FormatError, InputError, ProofFormatError, ProofVerificationError,
                         UnsatisfiedConstraintError, VanillaProofError)
from cuzk.ff.fields import Fr
from cuzk.groth16 import as_circuit, setup
from cuzk.porep.public_inputs import commitment_to_fr
from cuzk.porep.trees import fr_to_le
from cuzk.r1cs.example import squares_circuit


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    rng = np.random.default_rng()
    rand32 = lambda: bytes(rng.integers(0, 256, 32, dtype=np.uint8))  # noqa: E731
    data = fr_to_le(Fr.random(64, rng)).tobytes()
    sector = cuzk.seal("StackedDrg2KiBV1_1", tmp_path_factory.mktemp("api") / "sector", data=data,
                       prover_id=rand32(), sector_id=int(rng.integers(1 << 62)), ticket=rand32(), progress=False)
    seed = rand32()
    c1, ids = api.as_c1(sector, seed)
    return dict(sector=sector, seed=seed, c1=c1, ids=ids, other_seed=rand32())


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cuzk"))
    monkeypatch.setattr(params_cache, "DEFAULT_OFFICIAL_DIR", str(tmp_path / "official"))
    return tmp_path


@pytest.fixture
def no_proving(monkeypatch):
    """Fail the test if proving gets as far as the circuit or the parameters."""
    def refuse(*args, **kwargs):
        raise AssertionError("proving went past the input checks")
    monkeypatch.setattr(api, "partition_circuit", refuse)
    monkeypatch.setattr(api, "load_or_generate", refuse)


def test_public_exports():
    assert cuzk.prove is api.prove and cuzk.verify is api.verify and cuzk.seal is api.seal
    assert cuzk.Sector is api.Sector and issubclass(cuzk.ProofVerificationError, cuzk.CuzkError)


def test_as_c1_sources(sealed, tmp_path):
    sector, seed, c1 = sealed["sector"], sealed["seed"], sealed["c1"]
    assert sealed["ids"] == (sector.prover_id, sector.sector_id)
    assert (c1.comm_r, c1.comm_d, c1.replica_id, c1.seed) == (sector.comm_r, sector.comm_d, sector.replica_id, seed)
    path = tmp_path / "c1.json"
    c1.write(path)
    from_file, ids = api.as_c1(path)
    assert ids is None and from_file.dumps() == c1.dumps()
    assert api.as_c1(sector.path, seed)[0].dumps() == c1.dumps()
    assert api.as_c1(c1, seed)[0] is c1
    with pytest.raises(InputError, match="seed"):
        api.as_c1(sector)
    with pytest.raises(InputError, match="seed"):
        api.as_c1(c1, sealed["other_seed"])
    with pytest.raises(InputError):
        api.as_c1(42)


def test_public_inputs_head(sealed):
    c1 = sealed["c1"]
    (inputs,) = api.public_inputs(c1)
    assert len(inputs) == 3 + 18 * 2
    assert inputs[:3] == [commitment_to_fr(v, "") for v in (c1.replica_id, c1.comm_d, c1.comm_r)]


def test_tampered_label_is_refused_before_proving(sealed, no_proving):
    c1 = sealed["c1"]
    p = c1.vanilla_proofs[0][1]
    rows = list(p.drg_parents[2].rows)
    rows[1] = bytes([rows[1][0] ^ 1]) + rows[1][1:]
    bad_col = dataclasses.replace(p.drg_parents[2], rows=tuple(rows))
    bad = dataclasses.replace(p, drg_parents=p.drg_parents[:2] + (bad_col,) + p.drg_parents[3:])
    tampered = dataclasses.replace(c1, vanilla_proofs=[[c1.vanilla_proofs[0][0], bad]])
    with pytest.raises(VanillaProofError) as info:
        api.prove_c1(tampered, progress=False)
    assert info.value.partition == 0 and info.value.challenge == 1


def test_tampered_path_in_json_is_refused(sealed, tmp_path, no_proving):
    obj = json.loads(sealed["c1"].dumps())
    proof = obj["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]
    proof["comm_d_proofs"]["data"]["Single"]["path"]["path"][2]["hashes"][0][5] ^= 1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(C1FormatError, match="comm_d_proofs"):
        cuzk.prove(path, progress=False)


def test_sector_replica_id_is_checked(sealed, no_proving):
    other = dataclasses.replace(sealed["sector"], sector_id=sealed["sector"].sector_id + 1)
    with pytest.raises(VanillaProofError, match="replica_id"):
        cuzk.prove(other, sealed["seed"], progress=False)


@pytest.fixture(scope="module")
def small(sealed):
    """A small circuit carrying the sealed sector's public inputs, its parameters and a second vk."""
    inputs = api.public_inputs(sealed["c1"])
    cs = squares_circuit(inputs[0])
    circuit = as_circuit(cs)
    return dict(inputs=inputs, circuit=circuit, witness=cs.witness(), other=setup(circuit))


def test_prove_partitions_and_verify(sealed, small, cache):
    loaded = params_cache.load_or_generate("small", small["circuit"], progress=False)
    timings = {}
    (proof,) = api.prove_partitions(loaded, small["circuit"], [small["witness"]], small["inputs"],
                                    get_backend("cpu"), timings)
    assert {"prove.0.check", "prove.0.total", "verify.0"} <= set(timings)
    raw = proof.to_bytes()
    sector, seed = sealed["sector"], sealed["seed"]
    assert api.verify(sealed["c1"], raw, vk=loaded.vk)
    assert cuzk.verify(sector, raw, seed, vk=loaded.files.vk)
    assert cuzk.verify(sector.path, raw, seed, vk=loaded.vk)
    assert not api.verify(sector, raw, sealed["other_seed"], vk=loaded.vk)  # other challenges
    assert not api.verify(sector, raw, seed, vk=small["other"].vk)
    swapped = raw[144:] + raw[48:144] + raw[:48]  # C || B || A: valid points, wrong proof
    assert not api.verify(sector, swapped, seed, vk=loaded.vk)
    with pytest.raises(ProofFormatError):
        api.verify(sector, raw + raw, seed, vk=loaded.vk)
    with pytest.raises(ProofFormatError):
        api.verify(sector, b"\0" * 192, seed, vk=loaded.vk)
    with pytest.raises(InputError, match="seed"):
        api.verify(sector, raw, vk=loaded.vk)


def test_prove_partitions_errors(small, cache):
    loaded = params_cache.load_or_generate("small", small["circuit"], progress=False)
    circuit, w, inputs, cpu = small["circuit"], small["witness"], small["inputs"], get_backend("cpu")
    wrong = [inputs[0][:3] + [inputs[0][3] + 1] + inputs[0][4:]]
    with pytest.raises(InputError, match="public inputs"):
        api.prove_partitions(loaded, circuit, [w], wrong, cpu)
    bad = w.copy()
    bad[-1] = Fr.add(bad[-1:], Fr.ones(1))[0]
    with pytest.raises(UnsatisfiedConstraintError, match="partition 0"):
        api.prove_partitions(loaded, circuit, [bad], inputs, cpu)
    mismatched = params_cache.LoadedParams(loaded.params, small["other"].vk, loaded.files, False)
    with pytest.raises(ProofVerificationError) as info:
        api.prove_partitions(mismatched, circuit, [w], inputs, cpu)
    assert info.value.partition == 0


@pytest.mark.slow
def test_2kib_seal_prove_verify(tmp_path, monkeypatch):
    """The whole path on the real 2KiB circuit (CPU). Uses the normal parameter cache: the first run
    generates cuzk's own parameters (a setup at 2^22: long on a CPU), later runs reuse them."""
    rng = np.random.default_rng()
    rand32 = lambda: bytes(rng.integers(0, 256, 32, dtype=np.uint8))  # noqa: E731
    sector = cuzk.seal("StackedDrg2KiBV1_1", tmp_path / "sector", data=fr_to_le(Fr.random(64, rng)).tobytes(),
                       prover_id=rand32(), sector_id=7, ticket=rand32(), progress=False)
    seed = rand32()
    first = api.prove_c1(sector, seed, backend="cpu", progress=False)
    assert len(first.proof) == 192 and cuzk.verify(sector, first.proof, seed)
    c1, _ = api.as_c1(sector, seed)
    c1.write(tmp_path / "c1.json")
    assert cuzk.verify(tmp_path / "c1.json", first.proof)

    def no_setup(*args, **kwargs):
        raise AssertionError("the second prove ran a setup")
    monkeypatch.setattr(params_cache, "setup", no_setup)
    second = api.prove_c1(tmp_path / "c1.json", backend="cpu", progress=False)
    assert not second.generated_params and second.params == first.params
    assert second.proof != first.proof and cuzk.verify(sector, second.proof, seed)  # fresh blinding


def test_prove_builds_the_pce_on_first_use_and_says_so(sealed, cache, monkeypatch, capsys):
    """A fresh cache: prove() builds the partition circuit's PCE, says so on stderr, caches it beside
    the parameters; the next process-level load reads it (no second build message)."""
    from cuzk.porep import pce_cache

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(api, "load_or_generate", stop)  # the setup is not this test's business
    from cuzk.porep import program_witness

    monkeypatch.setattr(program_witness, "_LOADED", {})
    with pytest.raises(Stop):
        api.prove_c1(sealed["c1"], backend="cpu", progress=True)
    err = capsys.readouterr().err
    path = pce_cache.path_of("StackedDrg2KiBV1_1")
    assert "building the PCE of the porep-64n-2l-2c-r8-0-0 partition circuit once" in err and str(path) in err
    assert path.is_file()
    program_witness._LOADED.clear()
    with pytest.raises(Stop):
        api.prove_c1(sealed["c1"], backend="cpu", progress=True)
    assert "building the PCE" not in capsys.readouterr().err
    assert api.partition_circuit(sealed["c1"].config).num_constraints == 2_687_921


@pytest.mark.slow
def test_cuzk_prove_runs_on_the_process_wide_engine(sealed, monkeypatch):
    """cuzk.prove hands the C1 to the process-wide engine: the proof verifies, and a second proof in
    the process reuses the resident circuit and parameters (no second load, no setup)."""
    from cuzk.engine.default import default_engine
    from cuzk.engine.porep import porep_spec_of

    first = cuzk.prove(sealed["sector"], sealed["seed"], backend="cpu", progress=False)
    assert len(first) == 192 and cuzk.verify(sealed["sector"], first, sealed["seed"])
    engine = default_engine("cpu")
    assert default_engine("cpu") is engine and len(engine.resident) == 1
    spec = porep_spec_of(sealed["c1"].registered_proof, allow_setup=True)
    resident = engine.preload(spec)

    def no_setup(*args, **kwargs):
        raise AssertionError("the second prove ran a setup")
    monkeypatch.setattr(params_cache, "setup", no_setup)
    second = cuzk.prove(sealed["c1"], backend="cpu", progress=False)
    assert second != first and cuzk.verify(sealed["c1"], second)
    assert engine.preload(spec) is resident and len(engine.resident) == 1
