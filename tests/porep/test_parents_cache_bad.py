"""A parents cache is checked against its digest before any use: the official one for the
graphs rust-fil-proofs lists, else the record cuzk wrote beside the file. A file of the right size but
the wrong content, the wrong size, a damaged record or a path that is no regular file is a
ParentsCacheError, nothing is built over it and seal writes no sector; the cache is read into memory,
so a file truncated while a process uses it cannot kill that process with SIGBUS."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuzk.errors import ParentsCacheError
from cuzk.porep import graph as graph_mod
from cuzk.porep.graph import DIGEST_SUFFIX, OFFICIAL_DIGESTS, SdrGraph, parents_cache
from cuzk.porep.seal import seal

MANIFEST = json.loads((Path(__file__).parent.parent / "data" / "parent_cache.json").read_text())
OFFICIAL = 5  # StackedDrg2KiBV1_1: in the official manifest
UNLISTED = 10  # StackedDrg2KiBV1_1_Feat_SyntheticPoRep: its own porep_id, no official digest
IDS = dict(prover_id=bytes(32), sector_id=1, ticket=bytes(32), progress=False)


def _file(proof, directory):
    return directory / SdrGraph.for_proof(proof).cache_file_name


def _flip(path, offset=100):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 1]))


def test_official_digests_are_the_manifest():
    assert OFFICIAL_DIGESTS == {stem: entry["digest"] for stem, entry in MANIFEST.items()}


def test_built_cache_is_owned_memory_and_recorded_only_without_official_digest(tmp_path):
    official = parents_cache(OFFICIAL, tmp_path)
    unlisted = parents_cache(UNLISTED, tmp_path)
    assert official.flags.owndata and unlisted.flags.owndata
    record = _file(UNLISTED, tmp_path).with_name(_file(UNLISTED, tmp_path).name + DIGEST_SUFFIX)
    assert sorted(tmp_path.iterdir()) == sorted([_file(OFFICIAL, tmp_path), _file(UNLISTED, tmp_path), record])
    digest = hashlib.sha256(_file(UNLISTED, tmp_path).read_bytes()).hexdigest()
    assert record.read_text() == f"{digest}  {_file(UNLISTED, tmp_path).name}\n"  # sha256sum's format
    assert np.array_equal(parents_cache(UNLISTED, tmp_path), unlisted)


@pytest.mark.parametrize("proof,source", [(OFFICIAL, "official"), (UNLISTED, "recorded")])
def test_right_size_wrong_content(tmp_path, proof, source):
    parents_cache(proof, tmp_path)
    path = _file(proof, tmp_path)
    _flip(path)
    before = path.read_bytes()
    with pytest.raises(ParentsCacheError, match=f"wrong content: SHA256 .* the {source} digest is"):
        parents_cache(proof, tmp_path)
    with pytest.raises(ParentsCacheError) as info:
        seal(proof, tmp_path / "sector", parents_dir=tmp_path, **IDS)
    assert info.value.path == str(path) and "delete it to have it rebuilt" in str(info.value)
    assert not (tmp_path / "sector").exists() and path.read_bytes() == before  # nothing built over it


def test_unrecorded_file_is_checked_against_a_fresh_build(tmp_path):
    """A cache from elsewhere (no record, no official digest): compared with a fresh build, then recorded."""
    fresh = parents_cache(UNLISTED, tmp_path)
    path = _file(UNLISTED, tmp_path)
    record = path.with_name(path.name + DIGEST_SUFFIX)
    record.unlink()
    assert np.array_equal(parents_cache(UNLISTED, tmp_path), fresh) and record.is_file()
    record.unlink()
    _flip(path)
    with pytest.raises(ParentsCacheError, match="the freshly built digest"):
        parents_cache(UNLISTED, tmp_path)
    assert not record.exists()


@pytest.mark.parametrize("content", [b"", b"zz\n", b"0" * 63 + b"\n", b"A" * 64 + b"  x\n"],
                         ids=["empty", "not-hex", "short", "uppercase"])
def test_damaged_digest_record(tmp_path, content):
    parents_cache(UNLISTED, tmp_path)
    path = _file(UNLISTED, tmp_path)
    record = path.with_name(path.name + DIGEST_SUFFIX)
    record.write_bytes(content)
    with pytest.raises(ParentsCacheError, match="digest record is damaged") as info:
        parents_cache(UNLISTED, tmp_path)
    assert info.value.path == str(record)


@pytest.mark.parametrize("size", [0, 1000, 64 * 56 + 1], ids=["emptied", "truncated", "extended"])
def test_wrong_size(tmp_path, size):
    parents_cache(OFFICIAL, tmp_path)
    path = _file(OFFICIAL, tmp_path)
    with open(path, "r+b") as f:
        f.truncate(size)
    with pytest.raises(ParentsCacheError, match=f"{size:,} bytes, expected 3,584"):
        parents_cache(OFFICIAL, tmp_path)
    with pytest.raises(ParentsCacheError):
        seal(OFFICIAL, tmp_path / "sector", parents_dir=tmp_path, **IDS)
    assert path.stat().st_size == size and not (tmp_path / "sector").exists()


def test_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")  # must not block on open
    with pytest.raises(ParentsCacheError, match="not a regular file"):
        parents_cache(OFFICIAL, tmp_path / "fifo")
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(ParentsCacheError, match="cannot be written"):
        parents_cache(OFFICIAL, tmp_path / "f" / "x.cache")


def test_truncated_while_being_read(tmp_path, monkeypatch):
    parents_cache(OFFICIAL, tmp_path)
    monkeypatch.setattr(graph_mod, "pread_into", lambda fd, buf, offset: len(buf) // 2)
    with pytest.raises(ParentsCacheError, match="truncated while being read: it ends at byte 1,792 of 3,584"):
        parents_cache(OFFICIAL, tmp_path)


def test_truncated_after_open_does_not_crash(tmp_path):
    """In a subprocess: a mapped file truncated under the process dies with SIGBUS on the next access.
    The cache is in memory, so using it after the truncation works, and a new open is refused."""
    parents_cache(OFFICIAL, tmp_path)
    code = f"""
import os
from cuzk.errors import ParentsCacheError
from cuzk.porep.graph import parents_cache
from cuzk.porep.labels import all_labels
from cuzk.porep.seal import seal
cache = parents_cache({OFFICIAL}, {str(tmp_path)!r})
path = os.path.join({str(tmp_path)!r}, os.listdir({str(tmp_path)!r})[0])
os.truncate(path, 0)
total = int(cache.sum())
labels = all_labels(cache, bytes(32), 2)
try:
    seal({OFFICIAL}, {str(tmp_path / "sector")!r}, prover_id=bytes(32), sector_id=1, ticket=bytes(32),
         parents_dir={str(tmp_path)!r}, progress=False)
except ParentsCacheError as e:
    print("refused", total > 0, labels.shape)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode >= 0, f"killed by signal {-done.returncode}"
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "refused True (2, 64, 32)" and not (tmp_path / "sector").exists()
