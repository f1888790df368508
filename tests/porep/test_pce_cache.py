"""cuzk.porep.pce_cache and `cuzk pce build|show|verify` on the 2KiB partition circuit: built once, loaded
after, checked end to end, a damaged or stale file reported and rebuilt."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from cuzk.cli import main
from cuzk.porep import pce_cache
from cuzk.r1cs.pce_file import read_header, read_pce, write_pce

PROOF = "StackedDrg2KiBV1_1"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A cache directory holding the 2KiB PCE, and the PCE as built."""
    root = tmp_path_factory.mktemp("pce-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
        mp.setenv("CUZK_CACHE_DIR", str(root))
        pce = pce_cache.load_or_build(PROOF, progress=False)
    return root, pce


@pytest.fixture
def cache(built, tmp_path, monkeypatch):
    """This test's own copy of the built cache (FIL_PROOFS_PARAMETER_CACHE); yields the PCE path."""
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path))
    shutil.copy(built[0] / "params" / pce_cache.path_of(PROOF).name, tmp_path)
    return pce_cache.path_of(PROOF)


def test_identity_names_the_shape():
    ident = pce_cache.identity(PROOF)
    assert ident["shape"] == "porep-64n-2l-2c-r8-0-0"
    assert ident == pce_cache.identity("StackedDrg2KiBV1")  # one circuit shape, one file
    assert ident["circuit_digest"] != pce_cache.identity("StackedDrg8MiBV1_1")["circuit_digest"]


def test_load_equals_build_and_does_not_rebuild(built, cache, monkeypatch):
    monkeypatch.setattr(pce_cache, "build", lambda cs: pytest.fail("rebuilt a cached PCE"))
    loaded = pce_cache.load_or_build(PROOF)
    want = built[1].to_arrays()
    got = loaded.to_arrays()
    assert list(got) == list(want)
    for name, arr in want.items():
        np.testing.assert_array_equal(got[name], arr, err_msg=name)
        assert got[name].dtype == arr.dtype, name


def test_cli_build_show_verify(cache, capsys):
    assert main(["pce", "build", "--proof", PROOF]) == 0
    out = capsys.readouterr().out
    assert str(cache) in out and "2,687,921 constraints" in out and f"{cache.stat().st_size:,} bytes" in out
    assert main(["pce", "show", "--proof", PROOF]) == 0
    out = capsys.readouterr().out
    assert "current" in out and "porep-64n-2l-2c-r8-0-0" in out and "a_tpl_vars" in out
    assert main(["pce", "verify", "--proof", PROOF]) == 0
    assert "valid" in capsys.readouterr().out


def test_cli_absent_and_unknown(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path))
    for command in ("show", "verify"):
        assert main(["pce", command, "--proof", PROOF]) == 1
        assert len(capsys.readouterr().out.splitlines()) == 1
    assert main(["pce", "show", "--proof", "NoSuchProof"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "unknown registered seal proof" in err[0]


def test_flipped_byte_is_invalid_and_rebuilt(cache, capsys):
    section = next(s for s in read_header(cache).sections if s.name == "a_tpl_vars")
    with open(cache, "r+b") as fh:
        fh.seek(section.offset + section.nbytes // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0x10]))
    assert main(["pce", "verify", "--proof", PROOF]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "INVALID" in out[0] and "a_tpl_vars" in out[0] and "checksum" in out[0]
    pce_cache.load_or_build(PROOF, progress=True)
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if "warning" in line]
    assert len(warnings) == 1 and "moved it aside" in warnings[0]
    assert any("building the PCE" in line for line in err)
    assert main(["pce", "verify", "--proof", PROOF]) == 0
    assert len(list(cache.parent.glob(cache.name + ".corrupt-*"))) == 1


def test_wrong_arrays_digest_is_invalid(cache, capsys):
    ident = pce_cache.identity(PROOF)
    arrays = read_pce(cache, ident)
    arrays[pce_cache.SHA256_SECTION][0] ^= 1
    write_pce(cache, ident, arrays)
    assert main(["pce", "verify", "--proof", PROOF]) == 1
    assert "SHA-256" in capsys.readouterr().out


def test_another_version_is_stale(cache, monkeypatch, capsys):
    monkeypatch.setattr(pce_cache, "cuzk_version", lambda: "9.9.9")
    assert main(["pce", "show", "--proof", PROOF]) == 0
    assert "STALE" in capsys.readouterr().out
    assert main(["pce", "verify", "--proof", PROOF]) == 1
    out = capsys.readouterr().out
    assert "cuzk_version" in out and "9.9.9" in out


def test_to_csr_equals_the_circuit(built):
    from cuzk.porep.circuit import circuit

    want = circuit(pce_cache.shape_of(PROOF)).to_csr()[0]
    got = built[1].to_csr()[0]
    for field in ("indptr", "indices", "coeff_ids", "coeffs"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
