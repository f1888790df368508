"""`cuzk post winning|window` over sector directories made by `cuzk seal`: a bad sector directory or
randomness exits 2 with one typed line, as does `cuzk post verify` for a proof file of the wrong
length or a sector set without a key (fast); WindowPoSt proved end to end, the proof written
atomically and verified from public data and by `cuzk post verify` (exit 0), a changed proof or
another randomness INVALID (exit 1) (slow)."""
import pytest

import cuzk
from cuzk.cli import main
from cuzk.porep import params_cache
from cuzk.porep.seal import Sector

RAND = "11" * 31 + "0a"  # a canonical Fr: its top byte (little-endian) is below r's


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """Two 2KiB sectors sealed by `cuzk seal` (ids 3 and 9)."""
    root = tmp_path_factory.mktemp("cli-post")
    for sid in (3, 9):
        assert main(["seal", str(root / f"s{sid}"), "--sector-id", str(sid), "--ticket", "cd" * 32, "-q"]) == 0
    return [root / "s3", root / "s9"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cuzk"))
    monkeypatch.setattr(params_cache, "DEFAULT_OFFICIAL_DIR", str(tmp_path / "official"))


def _one_line_error(capsys, *words):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cuzk: error: ")
    for w in words:
        assert w in err
    return err


@pytest.mark.parametrize("randomness, words", [("zz" * 32, ("--randomness", "not hex")),
                                               ("ab" * 31, ("--randomness", "62 characters")),
                                               ("ff" * 32, ("randomness", "canonical Fr"))])
def test_bad_randomness_exits_2(sealed, cache, capsys, randomness, words):
    assert main(["post", "winning", str(sealed[0]), "--randomness", randomness, "-q"]) == 2
    _one_line_error(capsys, *words)


def test_bad_sector_directory_exits_2(sealed, cache, tmp_path, capsys):
    assert main(["post", "window", str(sealed[0]), str(tmp_path / "nope"), "--randomness", RAND, "-q"]) == 2
    _one_line_error(capsys, "sector", "nope")
    (tmp_path / "empty").mkdir()
    assert main(["post", "window", str(tmp_path / "empty"), "--randomness", RAND, "-q"]) == 2
    _one_line_error(capsys, "empty", "missing")


def test_missing_parameters_without_allow_setup_exit_2(sealed, cache, capsys):
    assert main(["post", "winning", str(sealed[1]), "--randomness", RAND, "-q"]) == 2
    _one_line_error(capsys, "no official parameters", "proof-of-spacetime")


def test_verify_refuses_a_bad_proof_file_or_a_missing_key(sealed, cache, tmp_path, capsys):
    short = tmp_path / "short.proof"
    short.write_bytes(bytes(191))
    assert main(["post", "verify", "window", str(short), *map(str, sealed), "--randomness", RAND]) == 2
    _one_line_error(capsys, "PROOF_FILE", "191 bytes", "192")
    assert main(["post", "verify", "window", str(tmp_path / "none.proof"), *map(str, sealed), "--randomness",
                 RAND]) == 2
    _one_line_error(capsys, "PROOF_FILE", "none.proof")
    zero = tmp_path / "zero.proof"
    zero.write_bytes(bytes(192))
    assert main(["post", "verify", "winning", str(zero), str(sealed[0]), "--randomness", RAND]) == 2
    _one_line_error(capsys, "proof-of-spacetime")  # no key in the empty cache: named, not a crash
    assert main(["post", "verify", "winning", str(zero), str(sealed[0]), "--randomness", RAND, "--proof",
                 "StackedDrgWindow2KiBV1_2"]) == 2
    _one_line_error(capsys, "registered_proof", "not a WinningPoSt proof")


@pytest.mark.slow
def test_window_post_end_to_end(sealed, cache, tmp_path, capsys):
    out = tmp_path / "window.proof"
    assert main(["post", "window", *map(str, sealed), "--randomness", RAND, "--allow-setup", "--backend", "cpu",
                 "--out", str(out), "-q"]) == 0
    assert "StackedDrgWindow2KiBV1_2 proof, verified" in capsys.readouterr().out
    proof = out.read_bytes()
    sectors = [Sector.open(p) for p in sealed]
    public = [(s.sector_id, s.comm_r) for s in sectors]
    randomness = bytes.fromhex(RAND)
    assert len(proof) == 192 and cuzk.verify_window_post("StackedDrgWindow2KiBV1_2", randomness, public, proof)
    assert main(["post", "window", *map(str, sealed), "--randomness", RAND, "--allow-setup", "--backend", "cpu",
                 "-q"]) == 0
    printed = bytes.fromhex(capsys.readouterr().out.strip())  # Groth16 proofs are randomized: verify, not compare
    assert len(printed) == 192 and cuzk.verify_window_post("StackedDrgWindow2KiBV1_2", randomness, public, printed)
    verify = ["post", "verify", "window", str(out), *map(str, sealed), "--randomness", RAND]
    assert main(verify) == 0 and "StackedDrgWindow2KiBV1_2 proof is valid" in capsys.readouterr().out
    assert main(verify[:-1] + ["22" * 31 + "0a"]) == 1 and "INVALID" in capsys.readouterr().out
    out.write_bytes(printed[:48] + proof[48:])  # another proof's A with this one's B and C
    assert main(verify) == 1 and "INVALID" in capsys.readouterr().out
