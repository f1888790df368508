"""A sector directory checked against itself: every damaged copy of a real, seeded 2KiB
sector is refused with a SectorError naming the file (and meta.json field) at fault, before any proof
is built, and the directory is left byte for byte as it was."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cuzk import api
from cuzk.errors import C1ReadError, CuzkError, InputError, SectorError, SectorFileError
from cuzk.porep.graph import parents_cache
from cuzk.porep.seal import Sector, seal
from cuzk.porep.trees import poseidon2_bytes

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
SEED = bytes(range(32))


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    rng = np.random.default_rng(11)
    data = rng.integers(0, 256, (64, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    return seal("StackedDrg2KiBV1_1", tmp_path_factory.mktemp("bad") / "sector", data=data.tobytes(),
                prover_id=rng.bytes(32), sector_id=int(rng.integers(1 << 62)), ticket=rng.bytes(32),
                progress=False).path


@pytest.fixture
def sector(sealed, tmp_path):
    """A fresh copy of the sealed sector to damage."""
    return shutil.copytree(sealed, tmp_path / "sector")


def _snapshot(path):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(path.iterdir())}


def _refused(path, error=SectorFileError):
    """Open, check and prove from the damaged sector: `error`, and nothing in it changed or added."""
    before = _snapshot(path)
    with pytest.raises(error) as info:
        Sector.open(path).check()
    with pytest.raises(error):
        api.as_c1(path, SEED)  # the proving entry point refuses it before building any proof
    assert _snapshot(path) == before
    return info.value


def _meta(path, **changes):
    meta = json.loads((path / "meta.json").read_text())
    meta.update(changes)
    (path / "meta.json").write_text(json.dumps(meta))
    return meta


def _write_at(file, offset, data):
    with open(file, "r+b") as f:
        f.seek(offset)
        f.write(data)


def _npy_data_offset(file):
    with open(file, "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        return f.tell()


def test_intact_sector_passes(sealed):
    before = _snapshot(sealed)
    sector = Sector.open(sealed)
    sector.check()
    assert len(sector.vanilla_proofs(SEED)) == 1 and _snapshot(sealed) == before


# ---------------------------------------------------------------- files present, sizes, dtypes

@pytest.mark.parametrize("name", ["sealed.bin", "data.bin"])
@pytest.mark.parametrize("size", [2047, 1024, 0, 2049], ids=["truncated-by-1", "truncated-half", "emptied", "extended"])
def test_raw_file_of_wrong_size(sector, name, size):
    with open(sector / name, "r+b") as f:
        f.truncate(size)
    e = _refused(sector)
    assert e.path == str(sector / name) and f"{size:,} bytes, expected 2,048" in str(e)


@pytest.mark.parametrize("name", ["meta.json", "sealed.bin", "labels.npy", "tree_r_last.npy"])
def test_missing_file(sector, name):
    (sector / name).unlink()
    assert name in str(_refused(sector, SectorError))


def test_file_replaced_by_a_directory(sector):
    (sector / "tree_c.npy").unlink()
    (sector / "tree_c.npy").mkdir()
    assert "tree_c.npy" in str(_refused(sector, SectorError))


def test_not_a_sector_directory(tmp_path):
    with pytest.raises(SectorError, match="not a sector directory"):
        Sector.open(tmp_path / "none")
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(SectorError):
        Sector.open(tmp_path / "file")
    with pytest.raises(InputError):
        Sector.open(None)


def _truncate(file):
    with open(file, "r+b") as f:
        f.truncate(os.path.getsize(file) // 2)


def _empty(file):
    file.write_bytes(b"")


def _garbage_header(file):
    _write_at(file, 0, b"\x00" * 16)


def _bad_magic_version(file):
    _write_at(file, 6, b"\x09\x00")


def _unparsable_header(file):
    _write_at(file, 10, b"!" * 20)


def _nested_header(file):
    body = b"(" * 3000 + b")" * 3000 + b"\n"
    file.write_bytes(b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body)


def _wrong_dtype(file):
    arr = np.load(file)
    np.save(file, arr.view("<u4"))  # same bytes, a uint32 header


def _fortran_order(file):
    np.save(file, np.asfortranarray(np.load(file)))  # same shape and values, in Fortran order


def _object_array(file):
    np.save(file, np.array([None, "x"], dtype=object), allow_pickle=True)


def _trailing_bytes(file):
    with open(file, "ab") as f:
        f.write(b"\x00" * 32)


DAMAGE = [_truncate, _empty, _garbage_header, _bad_magic_version, _unparsable_header, _nested_header,
          _wrong_dtype, _fortran_order, _object_array, _trailing_bytes]


@pytest.mark.parametrize("name", ["labels.npy", "tree_d.npy", "tree_c.npy", "tree_r_last.npy"])
@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_damaged_npy(sector, name, damage):
    """numpy's ValueError / EOFError / TypeError of a damaged .npy become a SectorFileError naming it."""
    damage(sector / name)
    e = _refused(sector)
    assert e.path == str(sector / name) and len(str(e)) < 400


# ---------------------------------------------------------------- meta.json

@pytest.mark.parametrize("text,match", [
    ("[1, 2]", "<top>: expected an object, got an array of 2"),
    ('"sector"', "<top>: expected an object"),
    ("", "not JSON"),
    ("\xff", "not UTF-8 at byte offset 0"),
    ("{" * 60_000, "nested more than 2 levels deep at byte offset 2"),
    ('{"format": 1, "x": [[[]]]}', "nested more than 2 levels deep at byte offset 20"),
    ('{"format": 1, "sector_id": ' + "9" * 60_000 + "}", "a number of more than 64 digits at byte offset 27"),
    ('{"format": NaN}', "NaN is not JSON"),
    ('{"format": 1, "format": 1}', "duplicate key"),
    (" " * (1 << 17), "more than the 65,536 allowed"),
], ids=["array", "string", "empty", "latin1", "deep", "nested-field", "huge-literal", "nan", "duplicate", "too-large"])
def test_meta_json_not_an_object_within_limits(sector, text, match):
    (sector / "meta.json").write_bytes(text.encode("latin-1"))
    e = _refused(sector, SectorError)
    assert "meta.json" in str(e) and match in str(e) and len(str(e)) < 400


@pytest.mark.parametrize("field,value,match", [
    ("sector_id", 7.5, "expected an integer, got the number 7.5"),
    ("sector_id", 7.0, "expected an integer"),
    ("sector_id", "7", "expected an integer, got the string '7'"),
    ("sector_id", True, "expected an integer, got the boolean true"),
    ("sector_id", None, "expected an integer, got null"),
    ("sector_id", -1, "out of range"),
    ("sector_id", 1 << 64, "out of range"),
    ("sector_id", 10 ** 60, "out of range"),
    ("sector_id", 1e300, "expected an integer"),
    ("format", 2, "unknown sector format 2"),
    ("format", "1", "expected an integer"),
    ("registered_proof", "StackedDrg1KiBV1", "unknown registered seal proof"),
    ("registered_proof", "x" * 60_000, "60,000 characters"),
    ("registered_proof", 5, "expected a proof name, got the integer 5"),
    ("comm_c", "00" * 31, "expected 64 hex digits (32 bytes), got 62 characters"),
    ("comm_c", "00" * 33, "got 66 characters"),
    ("comm_r_last", "zz" * 32, "not hex"),
    ("comm_d", "0x" + "00" * 31, "not hex"),
    ("ticket", ["00"] * 32, "expected 32 bytes in hex, got an array of 32"),
    ("prover_id", {}, "expected 32 bytes in hex, got an object"),
    ("comm_r", R.to_bytes(32, "little").hex(), "not a canonical field element"),
    ("replica_id", (2 ** 256 - 1).to_bytes(32, "little").hex(), "not a canonical field element"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_meta_json_field_refused(sector, field, value, match):
    _meta(sector, **{field: value})
    e = _refused(sector)
    assert e.path == str(sector / "meta.json") and e.field == field and match in e.reason
    assert len(str(e)) < 400  # a huge value is quoted, not echoed


@pytest.mark.parametrize("field", ["format", "registered_proof", "sector_id", "comm_c", "replica_id"])
def test_meta_json_field_missing(sector, field):
    meta = json.loads((sector / "meta.json").read_text())
    del meta[field]
    (sector / "meta.json").write_text(json.dumps(meta))
    e = _refused(sector)
    assert e.field == field and e.reason == "missing"


def test_meta_json_proof_of_another_size(sector):
    """meta.json naming the 8MiB proof: every data file is then of the wrong size."""
    _meta(sector, registered_proof="StackedDrg8MiBV1_1")
    assert "replica_id" in str(_refused(sector))  # the replica_id is derived with another porep_id


def test_meta_json_sector_id_changed(sector):
    meta = json.loads((sector / "meta.json").read_text())
    _meta(sector, sector_id=meta["sector_id"] ^ 1)
    e = _refused(sector)
    assert e.field == "replica_id" and "derived from prover_id, sector_id" in e.reason


def test_comm_r_not_poseidon_of_comm_c_and_comm_r_last(sector):
    _meta(sector, comm_r="00" * 32)
    e = _refused(sector)
    assert e.field == "comm_r" and "Poseidon-2(comm_c, comm_r_last)" in e.reason


# ---------------------------------------------------------------- the stored trees against meta.json

@pytest.mark.parametrize("commitment,tree", [("comm_c", "tree_c.npy"), ("comm_r_last", "tree_r_last.npy")])
def test_commitment_differs_from_stored_tree(sector, commitment, tree):
    """A consistent meta.json (comm_r recomputed) whose comm_c / comm_r_last is not the stored tree's."""
    meta = json.loads((sector / "meta.json").read_text())
    meta[commitment] = "00" * 32
    meta["comm_r"] = poseidon2_bytes(bytes.fromhex(meta["comm_c"]), bytes.fromhex(meta["comm_r_last"])).hex()
    (sector / "meta.json").write_text(json.dumps(meta))
    Sector.open(sector)  # every cheap check passes
    e = _refused(sector)
    assert e.path == str(sector / tree) and e.field == commitment and "root differs" in e.reason


def _set_node(file, index, value: bytes):
    offset = _npy_data_offset(file) if file.suffix == ".npy" else 0
    _write_at(file, offset + 32 * index, value)


@pytest.mark.parametrize("name,index,match", [
    ("tree_d.npy", 0, "tree_d.npy: its leaves are not data.bin"),
    ("data.bin", 5, "tree_d.npy: its leaves are not data.bin"),
    ("sealed.bin", 7, "tree_r_last.npy: its leaves are not sealed.bin"),
    ("tree_r_last.npy", 3, "tree_r_last.npy: its leaves are not sealed.bin"),
    ("tree_d.npy", 64 + 3, "tree_d.npy: level 1 is not the hash of level 0"),
    ("tree_c.npy", 64 + 2, "tree_c.npy: level 1 is not the hash of level 0"),
    ("tree_r_last.npy", 64 + 8, "tree_r_last.npy: level 2 is not the hash of level 1"),
    ("tree_c.npy", 9, "tree_c.npy: its leaves are not the hashes of the label columns"),
    ("labels.npy", 9, "tree_c.npy: its leaves are not the hashes of the label columns"),
    ("labels.npy", 64 + 9, "sealed.bin: is not the last layer's labels + data.bin"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_stored_node_changed(sector, name, index, match):
    _set_node(sector / name, index, bytes(32))  # zero: canonical in every file
    assert match in str(_refused(sector))


@pytest.mark.parametrize("name,blamed,match", [
    ("tree_c.npy", "tree_c.npy", "tree node 4 is not below r"),
    ("tree_r_last.npy", "tree_r_last.npy", "tree node 4 is not below r"),
    ("labels.npy", "labels.npy", "label 4 is not below r"),
    ("sealed.bin", "tree_r_last.npy", "its leaves are not sealed.bin"),
    ("data.bin", "tree_d.npy", "its leaves are not data.bin"),
])
def test_non_canonical_node(sector, name, blamed, match):
    _set_node(sector / name, 4, b"\xff" * 32)
    e = _refused(sector)
    assert e.path == str(sector / blamed) and match in e.reason


# ---------------------------------------------------------------- changed after open

def test_file_changed_after_open_is_refused(sector):
    opened = Sector.open(sector)
    with open(sector / "labels.npy", "r+b") as f:
        f.truncate(100)
    with pytest.raises(SectorFileError, match="changed since the sector was opened"):
        opened.labels()


def test_truncated_after_reading_does_not_crash(sector):
    """Files are read into memory, never mapped: truncating them after use cannot raise SIGBUS."""
    code = f"""
import os
from cuzk.porep.seal import Sector
s = Sector.open({str(sector)!r})
s.check()
for name in os.listdir({str(sector)!r}):
    os.truncate(os.path.join({str(sector)!r}, name), 0)
assert int(s.labels().sum()) > 0 and len(s.vanilla_proofs(bytes(32))) == 1
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "ok"


# ---------------------------------------------------------------- seal's own inputs

@pytest.mark.parametrize("kwargs,error,match", [
    (dict(sector_id=7.5), InputError, "sector_id must be a u64, got 7.5"),
    (dict(sector_id=None), InputError, "sector_id"),
    (dict(sector_id=True), InputError, "sector_id"),
    (dict(sector_id=-1), InputError, "sector_id"),
    (dict(sector_id=1 << 64), InputError, "sector_id"),
    (dict(prover_id=None), InputError, "prover_id"),
    (dict(ticket="ab" * 16), InputError, "ticket"),
    (dict(data=2048), InputError, "sector data must be bytes, a path or None, got int"),
    (dict(data=[0] * 2048), InputError, "got list"),
    (dict(data=b"\x00" * 2047), InputError, "exactly 2048 bytes, got 2047"),
    (dict(proof=None), InputError, "proof must be"),
    (dict(proof=[5]), InputError, "proof must be"),
    (dict(parents_dir=5), InputError, "parents_dir must be an existing directory, got 5"),
    (dict(parents_dir="/nonexistent/cuzk-parents"), InputError, "parents_dir must be an existing directory"),
], ids=lambda v: None if isinstance(v, (dict, type)) else v[:30])
def test_seal_bad_arguments(tmp_path, kwargs, error, match):
    args = dict(proof="StackedDrg2KiBV1_1", prover_id=bytes(32), sector_id=1, ticket=bytes(32)) | kwargs
    with pytest.raises(error, match=match):
        seal(args.pop("proof"), tmp_path / "s", progress=False, **args)
    assert not list(tmp_path.iterdir())


def test_seal_bad_data_file_and_output(tmp_path):
    ids = dict(prover_id=bytes(32), sector_id=1, ticket=bytes(32), progress=False)
    (tmp_path / "short").write_bytes(b"\x00" * 100)
    (tmp_path / "file").write_bytes(b"")
    for data, match in [(tmp_path / "missing", "No such file"), (tmp_path / "short", "100 bytes, must be exactly"),
                        (tmp_path, "not a regular file")]:
        with pytest.raises(InputError, match=match):
            seal(5, tmp_path / "s", data=data, **ids)
    with pytest.raises(SectorError, match="is not a directory"):
        seal(5, tmp_path / "file" / "a" / "s", **ids)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "short"]


def test_every_error_is_typed(sector):
    """The classes of this module are CuzkErrors: the CLI prints them as one line."""
    assert issubclass(SectorFileError, SectorError) and issubclass(SectorError, CuzkError)


@pytest.mark.parametrize("kind", ["missing", "below-a-file", "symlink-loop"])
def test_a_sector_path_that_cannot_be_read_is_typed(tmp_path, kind):
    """as_c1 of a path that is neither a directory nor a readable file: a typed error (an OSError too)
    naming the path, never a raw FileNotFoundError / NotADirectoryError / ELOOP OSError."""
    path = tmp_path / "sector"
    if kind == "below-a-file":
        path.write_bytes(b"x")
        path = path / "x"
    elif kind == "symlink-loop":
        path.symlink_to("sector")
    with pytest.raises(C1ReadError) as e:
        api.as_c1(path, SEED)
    assert isinstance(e.value, OSError) and str(path) in str(e.value)


@pytest.mark.parametrize("value", [10 ** 5000, 2 ** 64, [1], None, 7.5], ids=["huge", "2**64", "list", "None", "7.5"])
def test_proof_ids_are_checked_before_being_formatted(tmp_path, value):
    """seal(proof=...) and parents_cache(...) of a huge int (str() of it raises ValueError), or a value
    that is no id nor name: InputError with a short message, nothing written."""
    with pytest.raises(InputError) as e:
        seal(value, tmp_path / "s", prover_id=bytes(32), sector_id=1, ticket=bytes(32), progress=False)
    assert len(str(e.value)) < 300 and not (tmp_path / "s").exists()
    with pytest.raises(InputError) as e:
        parents_cache(value)
    assert len(str(e.value)) < 300
