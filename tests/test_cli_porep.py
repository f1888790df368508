"""`cuzk seal / prove / verify / demo`: files written, exit statuses (0 valid, 1 invalid, 2 typed error
with a one-line message), and `cuzk demo`: the real 2KiB seal -> prove -> verify on the CPU, in CI."""
import hashlib
import json

import numpy as np
import pytest

from cuzk import api
from cuzk.porep import params_cache
from cuzk.backend import get_backend
from cuzk.cli import main
from cuzk.cli.porep import demo_data
from cuzk.ff.fields import Fr
from cuzk.groth16 import as_circuit, write_vk
from cuzk.porep.c1 import C1Output
from cuzk.r1cs import ConstraintSystem

SEED, TICKET = "ab" * 32, "cd" * 32


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cuzk"))
    monkeypatch.setattr(params_cache, "DEFAULT_OFFICIAL_DIR", str(tmp_path / "official"))


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """A sector and its C1 made by `cuzk seal --seed`, with the command's output."""
    out = tmp_path_factory.mktemp("cli") / "sector"
    data = out.parent / "data.bin"
    data.write_bytes(demo_data())
    assert main(["seal", str(out), "--data", str(data), "--ticket", TICKET, "--seed", SEED, "--sector-id", "9",
                 "-q"]) == 0
    return out


def test_seal_writes_sector_and_c1(sealed):
    c1 = C1Output.read(sealed / "c1.json")
    sector = api.Sector.open(sealed)
    assert c1.seed == bytes.fromhex(SEED) and c1.ticket == bytes.fromhex(TICKET) == sector.ticket
    assert c1.comm_r == sector.comm_r and sector.sector_id == 9
    assert (sealed / "data.bin").read_bytes() == demo_data()
    c1.verify(sector.prover_id, sector.sector_id)


def test_demo_data_is_canonical():
    data = demo_data()
    assert len(data) == 2048 and data == demo_data()
    ints = [int.from_bytes(data[i:i + 32], "little") for i in range(0, 2048, 32)]
    assert all(v < Fr.modulus for v in ints) and len(set(ints)) == 64


def test_seal_errors(tmp_path, sealed, capsys):
    with pytest.raises(SystemExit) as info:
        main(["seal", str(tmp_path / "s"), "--proof", "StackedDrg32GiBV1_1"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["seal", str(tmp_path / "s"), "--ticket", "xyz"])
    capsys.readouterr()
    assert main(["seal", str(sealed), "-q"]) == 2  # exists
    err = capsys.readouterr().err
    assert err.startswith("cuzk: error:") and "already exists" in err and err.count("\n") == 1


def test_prove_refuses_a_tampered_c1(sealed, tmp_path, capsys):
    obj = json.loads((sealed / "c1.json").read_text())
    obj["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["comm_r_last_proof"]["data"]["Single"]["leaf"][0] ^= 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(obj))
    assert main(["prove", "--c1", str(bad), "--backend", "cpu", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cuzk: error: C1 field") and err.count("\n") == 1
    assert not (tmp_path / "bad.proof").exists()


def test_prove_writes_the_proof(sealed, tmp_path, monkeypatch, capsys):
    """The command's plumbing (output file, summary, -v timings) around prove_c1."""
    calls = []

    def fake_prove_c1(source, *, backend, progress):
        calls.append((str(source), backend, progress))
        return api.ProveResult(bytes(range(192)), [None], params_cache.cuzk_files("x"), False,
                               {"vanilla": 0.5, "total": 2.0})
    monkeypatch.setattr(api, "prove_c1", fake_prove_c1)
    out = tmp_path / "p.bin"
    assert main(["prove", "--c1", str(sealed / "c1.json"), "--out", str(out), "--backend", "cpu", "-v", "-q"]) == 0
    assert out.read_bytes() == bytes(range(192)) and calls == [(str(sealed / "c1.json"), "cpu", False)]
    text = capsys.readouterr().out
    assert "192 bytes" in text and "vanilla" in text and "total" in text
    assert main(["prove", "--c1", str(sealed / "c1.json")]) == 0  # default name beside the C1
    assert (sealed / "c1.proof").read_bytes() == bytes(range(192))
    assert not list(sealed.glob(".*.tmp"))


def test_verify_exit_statuses(sealed, tmp_path, cache, capsys):
    """A proof of a small circuit carrying the C1's public inputs, checked with its own vk."""
    c1 = C1Output.read(sealed / "c1.json")
    (inputs,) = api.public_inputs(c1)
    cs = ConstraintSystem()
    x = Fr.from_ints(inputs)
    xc, yc = cs.alloc_input_many(x), cs.alloc_many(Fr.sqr(x))
    cs.enforce_many((xc[:, None], [1]), (xc[:, None], [1]), (yc[:, None], [1]), len(inputs))
    circuit = as_circuit(cs)
    loaded = params_cache.load_or_generate("cli-small", circuit, progress=False)
    (proof,) = api.prove_partitions(loaded, circuit, [cs.witness()], [inputs], get_backend("cpu"))
    good, swapped, short = tmp_path / "good", tmp_path / "swapped", tmp_path / "short"
    raw = proof.to_bytes()
    good.write_bytes(raw)
    swapped.write_bytes(raw[144:] + raw[48:144] + raw[:48])
    short.write_bytes(raw[:100])
    write_vk(tmp_path / "small.vk", loaded.vk)
    args = ["verify", "--c1", str(sealed / "c1.json"), "--vk", str(tmp_path / "small.vk"), "--proof"]
    assert main(args + [str(good)]) == 0
    assert "proof is valid" in capsys.readouterr().out
    assert main(args + [str(swapped)]) == 1
    assert "INVALID" in capsys.readouterr().out
    assert main(args + [str(short)]) == 2
    assert "192" in capsys.readouterr().err
    # no vk given and none in the (empty) caches: a typed error naming where it looked
    assert main(["verify", "--c1", str(sealed / "c1.json"), "--proof", str(good)]) == 2
    assert "no verifying key" in capsys.readouterr().err
    own = params_cache.cuzk_files(params_cache.porep_stem(2048))  # cuzk's own 2KiB vk, found by name
    write_vk(own.vk, loaded.vk)
    record = {"stem": own.stem, "circuit_digest": "ab" * 32,  # find_vk needs a record of this .vk
              "vk_sha256": hashlib.sha256(own.vk.read_bytes()).hexdigest()}
    record["record_sha256"] = params_cache._record_sha256(record)
    own.meta.write_text(json.dumps(record))
    assert main(["verify", "--c1", str(sealed / "c1.json"), "--proof", str(good)]) == 0
    assert f"valid (checked with cuzk's own verifying key {own.vk})" in capsys.readouterr().out


def test_demo(capsys):
    """`cuzk demo` end to end on the CPU: a 2KiB sector sealed, proven and verified (normal parameter
    cache: the first run, as in CI, runs the 2^22 setup; about 11 minutes on 2 cores, the only
    long test that CI runs, because the issue asks for this path in CI)."""
    assert main(["demo", "--backend", "cpu", "-q"]) == 0
    out = capsys.readouterr().out
    assert "[4/4] verified: proof is valid" in out and "demo passed" in out
    assert np.all([f"[{i}/4]" in out for i in range(1, 5)])
