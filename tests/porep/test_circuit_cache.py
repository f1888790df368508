"""cuzk.porep.circuit_cache for the PoSt and SnapDeals partition circuits (2KiB WindowPoSt, 2KiB update)
and `cuzk pce build|show|verify` with their names: built once and read back equal (PCE and witness
program), loaded after without a rebuild (also by another process), the loaded circuit expanding a
synthetic partition's witness as synthesis does, a damaged file moved aside and rebuilt with one
warning, another shape in another file; a name two registries hold, or none, refused on one line."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.cli import main
from cuzk.cli.pce import cached_circuit
from cuzk.porep import circuit_cache
from cuzk.r1cs import first_unsatisfied
from cuzk.r1cs.pce import build
from cuzk.r1cs.pce_file import read_header
from cuzk.r1cs.witness_program import compile_program, hint_matrices

# family -> (proof name, `cuzk pce` arguments naming it, its file stem, another shape's proof)
FAMILIES = {"post": ("StackedDrgWindow2KiBV1_2", [], "post-64n-r8-0-0-2s-10c", "StackedDrgWinning2KiBV1"),
            "snap": ("StackedDrg2KiBV1", ["--kind", "snap"], "snap-64n-r8-0-0-1p-10c-8a-h1", "StackedDrg8MiBV1")}


def _use(monkeypatch, directory) -> None:
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(directory))


@pytest.fixture(scope="module", params=list(FAMILIES))
def built(request, tmp_path_factory):
    """(family, a directory holding its 2KiB circuit's cache file, the PCE and program compiled directly)."""
    family = request.param
    name, args, _, _ = FAMILIES[family]
    root = tmp_path_factory.mktemp(f"pce-{family}")
    with pytest.MonkeyPatch.context() as mp:
        _use(mp, root)
        cached = cached_circuit(name, args[1] if args else None)
        cached.load(progress=False)
        cs = cached.synthesize()
        pce = build(cs)
        return family, root, pce, compile_program(pce, hint_matrices(cs, pce))


@pytest.fixture
def cache(built, tmp_path, monkeypatch):
    """This test's own copy of the built cache; yields (family, the CachedCircuit)."""
    family, root = built[:2]
    name, args = FAMILIES[family][:2]
    _use(monkeypatch, tmp_path)
    cached = cached_circuit(name, args[1] if args else None)
    shutil.copy(root / cached.path.name, tmp_path)
    return family, cached


def _equal(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for key, arr in want.items():
        np.testing.assert_array_equal(got[key], arr, err_msg=key)
        assert got[key].dtype == arr.dtype, key


def test_stem_names_the_shape(cache):
    family, cached = cache
    assert cached.identity["shape"] == FAMILIES[family][2]
    assert cached.path.name == f"cuzk-{FAMILIES[family][2]}.pce"


def test_load_equals_build_and_does_not_rebuild(built, cache):
    cached = cache[1]
    mtime = cached.path.stat().st_mtime_ns
    refuse = dataclasses.replace(cached, synthesize=lambda: pytest.fail("rebuilt a cached circuit"))
    pce, program = refuse.load(progress=False)
    _equal(pce.to_arrays(), built[2].to_arrays())
    _equal(program.to_arrays(), built[3].to_arrays())
    assert cached.path.stat().st_mtime_ns == mtime


def test_another_process_loads_without_building(cache):
    family, cached = cache
    mtime = cached.path.stat().st_mtime_ns
    name, args = FAMILIES[family][:2]
    done = subprocess.run([sys.executable, "-m", "cuzk.cli", "pce", "build", "--proof", name, *args],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "building" not in done.stderr and str(cached.path) in done.stdout
    assert cached.path.stat().st_mtime_ns == mtime


def _partition(family: str, rng):
    """A synthetic 2KiB partition's packed witness and its witness-mode synthesis."""
    if family == "post":
        from cuzk.post import proving
        from cuzk.post.circuit import circuit
        from cuzk.post.synthetic import synthetic_post

        s = synthetic_post(FAMILIES["post"][0], rng=rng, progress=False)
        pw = proving.post_witness(s.proof, s.randomness, list(s.vanilla))
        return pw, circuit(pw.shape, pw.witness, mode="witness").witness()
    from cuzk.snap import proving
    from cuzk.snap.synthetic import synthetic_update

    u = synthetic_update(FAMILIES["snap"][0], rng=rng, progress=False)
    w = proving.partition_witness(u.proof, u.public[0], u.vanilla[0])
    shape = u.proof.circuit_shape
    return proving.snap_witness(shape, w), proving.synthesized_witness(shape, w)


def test_loaded_circuit_expands_the_synthesized_witness(cache, rng):
    family, cached = cache
    compiled = dataclasses.replace(cached, synthesize=lambda: pytest.fail("rebuilt a cached circuit")).kept()
    assert compiled is cached.kept()  # kept for the process
    pack, want = _partition(family, rng)
    got = pack.full(compiled, get_backend("cpu"))
    np.testing.assert_array_equal(got, want)
    assert first_unsatisfied(*compiled.pce.to_csr(), got) is None


def test_flipped_byte_is_moved_aside_and_rebuilt(built, cache, capsys):
    family, cached = cache
    section = next(s for s in read_header(cached.path).sections if s.name == "wp_steps")
    with open(cached.path, "r+b") as fh:
        fh.seek(section.offset + section.nbytes // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0x10]))
    pce, program = cached.load(progress=True)
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if "warning" in line]
    assert len(warnings) == 1 and "moved it aside" in warnings[0] and "wp_steps" in warnings[0]
    assert any("building the PCE" in line for line in err)
    assert len(list(cached.path.parent.glob(cached.path.name + ".corrupt-*"))) == 1
    _equal(program.to_arrays(), built[3].to_arrays())
    cached.verify()


def test_another_shape_is_another_file(cache):
    family, cached = cache
    other = cached_circuit(FAMILIES[family][3], "snap" if family == "snap" else None)
    assert other.path != cached.path
    assert other.identity["circuit_digest"] != cached.identity["circuit_digest"]
    stale = dataclasses.replace(cached, version="9.9.9")
    assert stale.path == cached.path and stale.identity != cached.identity


def test_cli_build_show_verify(cache, capsys):
    family, cached = cache
    name, args = FAMILIES[family][:2]
    assert main(["pce", "build", "--proof", name, *args]) == 0
    out = capsys.readouterr().out
    assert str(cached.path) in out and f"{cached.verify().num_constraints:,} constraints" in out
    assert main(["pce", "show", "--proof", name, *args]) == 0
    assert "current" in capsys.readouterr().out
    assert main(["pce", "verify", "--proof", name, *args]) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--proof", "StackedDrg2KiBV1"], "--proof 'StackedDrg2KiBV1': names a seal proof and an update proof"),
    (["--proof", "NoSuchProof"], "--proof 'NoSuchProof': unknown registered seal proof, PoSt proof or update proof"),
    (["--proof", "StackedDrgWinning2KiBV1", "--kind", "snap"], "unknown registered update proof"),
])
def test_cli_refuses_an_unknown_or_ambiguous_name(tmp_path, monkeypatch, capsys, argv, message):
    _use(monkeypatch, tmp_path)
    assert main(["pce", "build", *argv]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and message in err[0]
    assert not list(tmp_path.iterdir())


def test_porep_keeps_its_identity():
    """The PoRep file identity is computed as before the cache was shared, so files cached then stay valid."""
    from cuzk.porep import pce_cache
    from cuzk.r1cs.pce_file import FORMAT_VERSION

    modules = ("cuzk/porep/circuit.py", "cuzk/gadgets", "cuzk/r1cs", "cuzk/ff/fields.py", "cuzk/ff/limbs.py")
    version = circuit_cache.cuzk_version()
    params = {"nodes": 64, "layers": 2, "challenges": 2, "tree_r": [8, 0, 0], "cuzk_version": version,
              "pce_format": FORMAT_VERSION, "code": circuit_cache.code_digest(modules)}
    digest = hashlib.sha256(b"cuzk-porep-pce-1 " + json.dumps(params, sort_keys=True).encode()).hexdigest()
    assert pce_cache.identity("StackedDrg2KiBV1_1") == {"shape": "porep-64n-2l-2c-r8-0-0", "cuzk_version": version,
                                                        "circuit_digest": digest}
