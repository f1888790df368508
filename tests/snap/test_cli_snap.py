"""`cuzk snap prove|verify`: bad commitments, vanilla proofs, proof files and names exit 2 with one
typed line (fast); a 2KiB update proved from its snap-vproof.json, written atomically and verified from
the commitments, a tampered proof file INVALID (slow)."""
import numpy as np
import pytest

from cuzk.cli import main
from cuzk.porep import params_cache
from cuzk.snap.bincode import write_vproof_json
from cuzk.snap.vanilla import prove_all

from .sealed import sealed_and_encoded

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


@pytest.mark.slow
def test_prove_and_verify(tmp_path, cache, capsys):
    _, _, u = sealed_and_encoded("StackedDrg2KiBV1_1", tmp_path / "s", np.random.default_rng(9))
    vproof = tmp_path / "snap-vproof.json"
    vproof.write_bytes(write_vproof_json(prove_all(u), u.proof))
    comms = _comm_args(u.comm_r_old.hex(), u.comm_r_new.hex(), u.comm_d_new.hex())
    out = tmp_path / "proof.bin"
    assert main(["snap", "prove", str(vproof), "--proof", u.proof.name, *comms, "--out", str(out),
                 "--allow-setup", "--backend", "cpu", "-q"]) == 0
    assert "wrote 192 bytes" in capsys.readouterr().out and out.stat().st_size == 192
    assert main(["snap", "verify", str(out), "--proof", u.proof.name, *comms]) == 0
    assert "valid" in capsys.readouterr().out
    data = out.read_bytes()
    out.write_bytes(data[144:] + data[48:144] + data[:48])  # A and C exchanged
    assert main(["snap", "verify", str(out), "--proof", u.proof.name, *comms]) == 1
    assert "INVALID" in capsys.readouterr().out
    wrong = _comm_args(u.comm_r_old.hex(), u.comm_c.hex(), u.comm_d_new.hex())
    out.write_bytes(data)
    assert main(["snap", "verify", str(out), "--proof", u.proof.name, *wrong]) == 1
