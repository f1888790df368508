"""`cuzk snap encode|prove|verify`: bad commitments, vanilla proofs, proof files, names and sector
directories exit 2 with one typed line (fast); a 2KiB sector sealed by `cuzk seal`, updated by `cuzk
snap encode`, proved from its snap-vproof.json, written atomically and verified from the printed
commitments, a tampered proof file INVALID (slow)."""
import numpy as np
import pytest

from cuzk.cli import main
from cuzk.porep import params_cache
from cuzk.porep.seal import Sector
from cuzk.snap.encode import decode

from .sealed import random_data

COMM = "11" * 31 + "0a"  # a canonical Fr


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cuzk"))
    monkeypatch.setattr(params_cache, "DEFAULT_OFFICIAL_DIR", str(tmp_path / "official"))


def _comm_args(old=COMM, new=COMM, d=COMM) -> list[str]:
    return ["--comm-r-old", old, "--comm-r-new", new, "--comm-d-new", d]


def _one_line_error(capsys, *words):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cuzk: error: "), err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("comms, words", [(_comm_args(old="zz" * 32), ("--comm-r-old", "not hex")),
                                          (_comm_args(new="ab" * 31), ("--comm-r-new", "62 characters")),
                                          (_comm_args(d="ff" * 32), ("comm_d_new", "canonical"))])
def test_bad_commitments_exit_2(tmp_path, cache, capsys, comms, words):
    vproof = tmp_path / "v.json"
    vproof.write_text("[]")
    assert main(["snap", "prove", str(vproof), "--proof", "StackedDrg2KiBV1", *comms, "-q"]) == 2
    _one_line_error(capsys, *words)


def test_bad_inputs_exit_2(tmp_path, cache, capsys):
    vproof = tmp_path / "v.json"
    assert main(["snap", "prove", str(vproof), "--proof", "0", *_comm_args(), "-q"]) == 2
    _one_line_error(capsys, "VPROOF_JSON", "v.json")
    vproof.write_text('["AAAA"]')
    assert main(["snap", "prove", str(vproof), "--proof", "0", *_comm_args(), "-q"]) == 2
    _one_line_error(capsys, "partition 0", "comm_c")
    assert main(["snap", "prove", str(vproof), "--proof", "StackedDrg3KiBV1", *_comm_args(), "-q"]) == 2
    _one_line_error(capsys, "StackedDrg3KiBV1")
    proof = tmp_path / "p.bin"
    proof.write_bytes(bytes(191))
    assert main(["snap", "verify", str(proof), "--proof", "0", *_comm_args()]) == 2
    _one_line_error(capsys, "PROOF_FILE", "191 bytes")
    assert main(["snap", "encode", str(tmp_path / "nope"), str(proof), "--vproof", str(tmp_path / "v2.json"),
                 "--replica", str(tmp_path / "r")]) == 2
    _one_line_error(capsys, "SECTOR_DIR", "nope")


@pytest.mark.slow
def test_encode_prove_and_verify(tmp_path, cache, capsys):
    sector = tmp_path / "s"
    assert main(["seal", str(sector), "--sector-id", "5", "--ticket", "cd" * 32, "-q"]) == 0
    data = random_data(np.random.default_rng(9), 64).tobytes()
    (tmp_path / "data").write_bytes(data)
    vproof, replica = tmp_path / "snap-vproof.json", tmp_path / "replica"
    capsys.readouterr()
    assert main(["snap", "encode", str(sector), str(tmp_path / "data"), "--vproof", str(vproof),
                 "--replica", str(replica)]) == 0
    printed = dict(line.split() for line in capsys.readouterr().out.splitlines())
    assert printed["proof"] == "StackedDrg2KiBV1"
    assert printed["comm_r_old"] == Sector.open(sector).comm_r.hex()
    assert decode(Sector.open(sector), replica.read_bytes(), bytes.fromhex(printed["comm_d_new"])) == data
    comms = _comm_args(printed["comm_r_old"], printed["comm_r_new"], printed["comm_d_new"])
    out = tmp_path / "proof.bin"
    assert main(["snap", "prove", str(vproof), "--proof", "0", *comms, "--out", str(out),
                 "--allow-setup", "--backend", "cpu", "-q"]) == 0
    assert "wrote 192 bytes" in capsys.readouterr().out and out.stat().st_size == 192
    assert main(["snap", "verify", str(out), "--proof", "StackedDrg2KiBV1", *comms]) == 0
    assert "valid" in capsys.readouterr().out
    proof = out.read_bytes()
    out.write_bytes(proof[144:] + proof[48:144] + proof[:48])  # A and C exchanged
    assert main(["snap", "verify", str(out), "--proof", "0", *comms]) == 1
    assert "INVALID" in capsys.readouterr().out
    out.write_bytes(proof)
    assert main(["snap", "verify", str(out), "--proof", "0", *_comm_args(printed["comm_r_old"], COMM,
                                                                         printed["comm_d_new"])]) == 1
