"""Parameter discovery and cuzk's own parameter cache: names, directories, reuse, staleness, locking."""
import json
import logging
import threading

import numpy as np
import pytest

from cuzk.porep import params_cache as P
from cuzk.errors import CuzkError, ParamsCacheError, ParamsNotFoundError
from cuzk.groth16 import as_circuit, read_vk, setup, write_params, write_vk
from cuzk.groth16.synthetic import synthetic_circuit
from tests.permission_shim import deny_read

OFFICIAL_2KIB = ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-"
                 "032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cuzk cache and an empty official directory (no FIL_PROOFS_PARAMETER_CACHE)."""
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cuzk"))
    monkeypatch.setattr(P, "DEFAULT_OFFICIAL_DIR", str(tmp_path / "official"))
    return tmp_path


@pytest.fixture
def count_setups(monkeypatch):
    calls = []

    def counted(circuit, rng=None):
        calls.append(circuit.num_constraints)
        return setup(circuit, rng)

    monkeypatch.setattr(P, "setup", counted)
    return calls


def small_circuit(rng, rows=61):
    return as_circuit(synthetic_circuit(rows, 2, rng))


def test_official_names():
    """rust-fil-proofs' parameters.json names: 2KiB above; every registered size has one."""
    assert P.porep_stem(2048) == OFFICIAL_2KIB
    assert P.porep_stem(32 << 30).startswith("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-")
    assert P.porep_stem(64 << 30).split("-sha256_hasher-")[0].endswith("8-8-2")
    assert all(len(P.porep_stem(size).rsplit("-", 1)[1]) == 64 for size in P.OFFICIAL)
    with pytest.raises(ParamsNotFoundError):
        P.porep_stem(4096)


def test_cuzk_files_carry_the_marker(cache):
    own = P.cuzk_files(OFFICIAL_2KIB)
    assert own.stem == "cuzk-" + OFFICIAL_2KIB and not own.official
    assert own.params.name == f"cuzk-{OFFICIAL_2KIB}.params" and own.vk.suffix == ".vk"
    assert P.official_files(OFFICIAL_2KIB).official


def test_directories(tmp_path, monkeypatch):
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    monkeypatch.delenv("CUZK_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert P.cuzk_dir() == tmp_path / "xdg" / "cuzk" / "params"
    assert str(P.official_dir()) == "/var/tmp/filecoin-proof-parameters"
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "c"))
    assert P.cuzk_dir() == tmp_path / "c" / "params"
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path / "fil"))
    assert P.cuzk_dir() == P.official_dir() == tmp_path / "fil"


def test_generate_once_then_reuse(cache, count_setups, rng, capsys):
    circuit = small_circuit(rng)
    first = P.load_or_generate("test-stem", circuit, rng=rng)
    assert first.generated and count_setups == [circuit.num_constraints]
    err = capsys.readouterr().err
    assert "Groth16 setup" in err and str(first.files.params) in err
    own = P.cuzk_files("test-stem")
    assert first.files == own and own.params.is_file() and own.vk.is_file()
    meta = json.loads(own.meta.read_text())
    assert meta["generator"] == "cuzk" and meta["circuit_digest"] == circuit.digest()
    assert meta["constraints"] == circuit.num_constraints

    again = P.load_or_generate("test-stem", circuit)
    assert not again.generated and count_setups == [circuit.num_constraints]  # no second setup
    assert again.vk == first.vk and again.params.lengths() == first.params.lengths()
    assert np.array_equal(again.params.h, first.params.h)
    vk, files = P.find_vk("test-stem")
    assert vk == first.vk and files == own


def test_own_parameters_need_allow_setup_and_are_announced_once(cache, count_setups, rng, caplog, monkeypatch):
    """Without allow_setup a missing official file is refused, naming it, and no setup runs; with it,
    cuzk's own stand in and one warning per process says they are not the chain's."""
    monkeypatch.setattr(P, "_WARNED", set())
    circuit = small_circuit(rng)
    with pytest.raises(P.OfficialParamsMissingError, match="srs.allow_setup") as err:
        P.load_or_generate("announced", circuit, allow_setup=False, progress=False)
    assert str(P.official_files("announced").params) in str(err.value) and count_setups == []
    with caplog.at_level(logging.WARNING, logger="cuzk.params"):
        P.load_or_generate("announced", circuit, progress=False)
        P.load_or_generate("announced", circuit, progress=False)
    warnings = [r for r in caplog.records if "not on chain" in r.getMessage()]
    assert len(warnings) == 1 and len(count_setups) == 1


def test_other_circuit_or_missing_meta_regenerates(cache, count_setups, rng):
    a, b = small_circuit(rng), small_circuit(rng)
    assert a.digest() != b.digest()
    P.load_or_generate("stem", a, progress=False)
    second = P.load_or_generate("stem", b, progress=False)  # same name, another circuit: stale
    assert second.generated and len(count_setups) == 2
    assert len(second.vk.ic) == b.num_inputs
    P.cuzk_files("stem").meta.unlink()  # e.g. a setup cut short before .meta landed
    assert P.load_or_generate("stem", b, progress=False).generated and len(count_setups) == 3


def test_official_files_win(cache, count_setups, monkeypatch, rng):
    """Files under the official name are used as they are, with no setup and no digest check."""
    circuit = small_circuit(rng)
    params = setup(circuit, rng)
    official = cache / "fil"
    official.mkdir()
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(official))
    write_params(official / f"{OFFICIAL_2KIB}.params", params)
    write_vk(official / f"{OFFICIAL_2KIB}.vk", params.vk)
    loaded = P.load_or_generate(OFFICIAL_2KIB, circuit)
    assert loaded.files.official and not loaded.generated and count_setups == []
    assert loaded.vk == params.vk
    vk, files = P.find_vk(OFFICIAL_2KIB)
    assert files.official and vk == params.vk


def test_find_vk_without_any(cache):
    with pytest.raises(ParamsNotFoundError, match="no verifying key"):
        P.find_vk(OFFICIAL_2KIB)


@pytest.mark.parametrize("meta", ["", "{", "[]", "{}", '{"circuit_digest": false}', '{"circuit_digest": "ab"}',
                                  "STEM-ONLY"], ids=["empty", "truncated", "array", "no-digest", "digest-false",
                                                     "digest-short", "no-stem"])
def test_find_vk_needs_a_valid_meta(cache, rng, meta):
    """A .vk of cuzk's own is used only with a .meta record (its stem and a 64-hex-digit circuit digest)."""
    first = P.load_or_generate("v", small_circuit(rng), progress=False)
    own = P.cuzk_files("v")
    assert P.find_vk("v") == (first.vk, own)
    own.meta.write_text(json.dumps({"stem": own.stem}) if meta == "STEM-ONLY" else meta)
    with pytest.raises(ParamsNotFoundError, match="is stale"):
        P.find_vk("v")
    own.meta.unlink()
    with pytest.raises(ParamsNotFoundError, match="is stale"):
        P.find_vk("v")


def test_a_changed_record_or_vk_is_stale(cache, rng):
    """One changed character of the .meta record (still valid JSON and hex), or another .vk beside
    it, makes cuzk's own entry stale: find_vk refuses it and load_or_generate makes it again."""
    circuit = small_circuit(rng)
    P.load_or_generate("w", circuit, progress=False)
    own = P.cuzk_files("w")
    text = own.meta.read_text()
    digest = json.loads(text)["circuit_digest"]
    own.meta.write_text(text.replace(digest, ("0" if digest[0] != "0" else "1") + digest[1:]))
    with pytest.raises(ParamsNotFoundError, match="is stale"):
        P.find_vk("w")
    again = P.load_or_generate("w", circuit, progress=False)
    assert P.find_vk("w") == (again.vk, own)
    other = P.load_or_generate("x", small_circuit(rng), progress=False)
    own.vk.write_bytes(P.cuzk_files("x").vk.read_bytes())
    with pytest.raises(ParamsNotFoundError, match="is stale"):
        P.find_vk("w")
    assert other.vk != again.vk


def test_concurrent_callers_share_one_setup(cache, count_setups, rng):
    """Two concurrent callers: the lock makes the second wait and reuse the first's files."""
    circuit = small_circuit(rng)
    results, errors = [], []

    def run():
        try:
            results.append(P.load_or_generate("shared", circuit, progress=False))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(count_setups) == 1
    assert sorted(r.generated for r in results) == [False, True]
    assert read_vk(P.cuzk_files("shared").vk) == results[0].vk == results[1].vk
    assert not list((cache / "cuzk" / "params").glob("*.tmp"))


# ---------------------------------------------------------------- a broken cache: typed errors, nothing written

def entries(directory):
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "[1, 2]", '{"circuit_digest": ' + "1" * 5000 + "}",
                                  '{"circuit_digest": NaN}', "\udcff"], ids=["deep", "array", "huge", "nan", "utf8"])
def test_malformed_meta_means_stale(cache, count_setups, rng, text):
    """A .meta that is too deep, not an object, or not JSON: no RecursionError; the files are regenerated."""
    circuit = small_circuit(rng)
    P.load_or_generate("m", circuit, progress=False)
    own = P.cuzk_files("m")
    own.meta.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert P.read_meta(own) is None
    assert P.load_or_generate("m", circuit, progress=False).generated and len(count_setups) == 2
    assert P.read_meta(own)["circuit_digest"] == circuit.digest()


@pytest.mark.parametrize("ext", ["params", "vk", "meta", "lock"])
def test_a_directory_in_an_entry_is_reported_and_nothing_is_touched(cache, count_setups, rng, ext):
    """A directory where a cache file belongs: ParamsCacheError naming it, before any setup, and the
    entry (here a stale one, made for another circuit) is left exactly as it was."""
    P.load_or_generate("d", small_circuit(rng), progress=False)
    own = P.cuzk_files("d")
    own.path(ext).unlink()
    own.path(ext).mkdir()
    before = {p.name: p.read_bytes() for p in own.directory.iterdir() if p.is_file()}
    with pytest.raises(ParamsCacheError, match=f"parameter cache {own.path(ext)}: a directory where a cache file"):
        P.load_or_generate("d", small_circuit(rng), progress=False)
    assert len(count_setups) == 1
    assert {p.name: p.read_bytes() for p in own.directory.iterdir() if p.is_file()} == before
    assert own.path(ext).is_dir()
    if ext in ("vk", "meta"):
        with pytest.raises(ParamsCacheError, match=str(own.path(ext))):
            P.find_vk("d")


def test_a_directory_in_the_official_cache(cache, count_setups, monkeypatch, rng):
    official = cache / "fil"
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(official))
    (official / f"{OFFICIAL_2KIB}.params").mkdir(parents=True)
    with pytest.raises(ParamsCacheError, match=f"{OFFICIAL_2KIB}.params: a directory"):
        P.load_or_generate(OFFICIAL_2KIB, small_circuit(rng), progress=False)
    assert count_setups == [] and entries(official) == [f"{OFFICIAL_2KIB}.params"]
    (official / f"{OFFICIAL_2KIB}.vk").mkdir()
    with pytest.raises(ParamsCacheError, match=f"{OFFICIAL_2KIB}.vk: a directory"):
        P.find_vk(OFFICIAL_2KIB)


def test_a_cache_directory_that_is_a_file(cache, count_setups, rng):
    (cache / "cuzk").write_text("not a directory")
    with pytest.raises(ParamsCacheError, match="Not a directory"):
        P.load_or_generate("f", small_circuit(rng), progress=False)
    (cache / "cuzk").unlink()
    (cache / "cuzk").mkdir()
    (cache / "cuzk" / "params").write_text("not a directory")
    with pytest.raises(ParamsCacheError, match="params: not a directory"):
        P.load_or_generate("f", small_circuit(rng), progress=False)
    assert count_setups == [] and entries(cache / "cuzk") == ["params"]


def test_a_failed_write_leaves_no_entry(cache, monkeypatch, rng):
    def no_space(path, vk):
        raise OSError(28, "No space left on device", str(path))
    monkeypatch.setattr(P, "write_vk", no_space)
    with pytest.raises(ParamsCacheError, match="vk: No space left on device"):
        P.load_or_generate("w", small_circuit(rng), progress=False)
    assert entries(cache / "cuzk" / "params") == ["cuzk-w.lock"]


def test_an_interrupted_setup_leaves_no_stale_entry(cache, monkeypatch, rng):
    P.load_or_generate("i", small_circuit(rng), progress=False)

    def interrupted(circuit, rng=None):
        raise KeyboardInterrupt
    monkeypatch.setattr(P, "setup", interrupted)
    with pytest.raises(KeyboardInterrupt):
        P.load_or_generate("i", small_circuit(rng), progress=False)  # another circuit: a new setup
    assert entries(cache / "cuzk" / "params") == ["cuzk-i.lock"]


def test_an_unreadable_entry_is_a_typed_error(cache, count_setups, rng, monkeypatch):
    """Unreadable files of a matching entry (mode 0, injected so that it holds for root too): a typed
    error naming the file, no setup over them."""
    circuit = small_circuit(rng)
    P.load_or_generate("u", circuit, progress=False)
    own = P.cuzk_files("u")
    for path in (own.meta, own.params, own.vk):
        with monkeypatch.context() as m:
            deny_read(m, path)
            with pytest.raises(CuzkError, match=str(path)) as e:
                P.load_or_generate("u", circuit, progress=False)
        assert "Permission denied" in str(e.value)
    assert len(count_setups) == 1
