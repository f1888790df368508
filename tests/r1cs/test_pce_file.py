"""cuzk.r1cs.pce_file: the PCE container round-trips arrays, detects any damaged byte or truncation,
refuses another identity, rebuilds once under concurrency and never dies of SIGBUS."""
import hashlib
import json
import logging
import os
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import cuzk.r1cs.pce_file as F
from cuzk.errors import (InputError, PceFileError, PceFormatError, PceMismatchError, PceNotFoundError,
                         PceReadError)

IDENTITY = {"shape": "StackedDrg2KiBV1", "cuzk_version": "0.1.0", "circuit_digest": "ab" * 32}


def small_arrays(rng) -> dict[str, np.ndarray]:
    """Arrays of every kind of dtype and shape the container takes, empty and 0-d included."""
    return {
        "u64": rng.integers(0, 2**64, (100, 4), dtype=np.uint64),
        "i32": rng.integers(-2**31, 2**31, (7, 3, 2), dtype=np.int32),
        "f64": rng.standard_normal(33),
        "flags": rng.integers(0, 2, (5, 5)).astype(bool),
        "c64": (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64),
        "be_u32": rng.integers(0, 2**32, 10, dtype=np.uint64).astype(">u4"),
        "u8": rng.integers(0, 256, 4097, dtype=np.uint8),
        "empty": np.zeros((0, 4), np.uint32),
        "scalar": np.array(int(rng.integers(0, 2**62)), np.int64),
        "columns": rng.integers(0, 100, (6, 4), dtype=np.uint16).T,  # not C-contiguous
    }


def assert_same(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for name, a in want.items():
        b = got[name]
        assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(b, a), name


def flip(path, offset: int, bit: int) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, bytes([os.pread(fd, 1, offset)[0] ^ (1 << bit)]), offset)
    finally:
        os.close(fd)


@pytest.fixture
def written(tmp_path, rng):
    path, arrays = tmp_path / "c.pce", small_arrays(rng)
    F.write_pce(path, IDENTITY, arrays)
    return path, arrays


def test_round_trip(written, rng, tmp_path):
    path, arrays = written
    got = F.read_pce(path, IDENTITY)
    assert_same(got, arrays)
    assert all(a.flags.c_contiguous and a.flags.writeable and a.flags.owndata for a in got.values())
    big = {"pieces": rng.integers(0, 256, 2 * F.LEAF + 12345, dtype=np.uint8), "tail": np.arange(3)}
    F.write_pce(tmp_path / "big.pce", IDENTITY, big)
    assert_same(F.read_pce(tmp_path / "big.pce", IDENTITY), big)
    F.write_pce(tmp_path / "none.pce", IDENTITY, {})
    assert F.read_pce(tmp_path / "none.pce", IDENTITY) == {}
    assert os.path.getsize(tmp_path / "none.pce") == F.read_header(tmp_path / "none.pce").header_end


def test_the_layout_is_the_documented_one(written):
    """An independent reading of the module docstring's byte layout."""
    path, arrays = written
    data = path.read_bytes()
    magic, version, length = struct.unpack_from("<8sII", data)
    assert magic == b"CUZKPCE\0" and version == 1
    text = data[16:16 + length]
    assert hashlib.blake2b(data[:16 + length], digest_size=32, person=b"cuzk-pce-header").digest() \
        == data[16 + length:48 + length]
    header = json.loads(text)
    assert text == json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    assert header["identity"] == IDENTITY and header["file_size"] == len(data)
    cursor = 48 + length
    for s, (name, a) in zip(header["sections"], arrays.items(), strict=True):
        assert (s["name"], s["dtype"], s["shape"], s["nbytes"]) == (name, a.dtype.str, list(a.shape), a.nbytes)
        assert s["offset"] % 4096 == 0 and 0 <= s["offset"] - cursor < 4096
        assert not any(data[cursor:s["offset"]])
        body = data[s["offset"]:s["offset"] + s["nbytes"]]
        assert body == a.tobytes()
        leaves = b"".join(hashlib.blake2b(body[i:i + F.LEAF], digest_size=32, person=b"cuzk-pce-leaf").digest()
                          for i in range(0, len(body), F.LEAF))
        assert s["checksum"] == hashlib.blake2b(leaves, digest_size=32, person=b"cuzk-pce-section").hexdigest()
        cursor = s["offset"] + s["nbytes"]
    assert cursor == len(data)


def regions(path) -> list[tuple[str, int, int, str | None]]:
    """(what, start, stop, section) of every byte range of a PCE file."""
    header = F.read_header(path)
    out = [("magic", 0, 8, None), ("version", 8, 12, None), ("length", 12, 16, None),
           ("header", 16, header.header_end - 32, None), ("checksum", header.header_end - 32, header.header_end, None)]
    cursor = header.header_end
    for s in header.sections:
        if s.offset > cursor:
            out.append((f"padding before {s.name}", cursor, s.offset, None))
        if s.nbytes:
            out.append((f"section {s.name}", s.offset, s.offset + s.nbytes, s.name))
        cursor = s.offset + s.nbytes
    return out


def test_damage_anywhere_is_detected(written, rng):
    """One bit flipped in every byte of the prefix, header and header checksum, and in the first, last
    and random bytes of every section and padding: a typed error naming the section, never arrays."""
    path, _ = written
    for what, start, stop, section in regions(path):
        every = what in ("magic", "version", "length", "header", "checksum")
        sample = range(start, stop) if every else [start, stop - 1, *rng.integers(start, stop, 8)]
        for offset in sorted(set(map(int, sample))):
            bit = int(rng.integers(8))
            flip(path, offset, bit)
            error = PceMismatchError if what == "version" else PceFormatError
            with pytest.raises(error) as e:
                F.read_pce(path, IDENTITY)
            assert str(path) in str(e.value), (what, offset)
            if section is not None:
                assert e.value.section == section and "checksum" in str(e.value), (what, offset)
            flip(path, offset, bit)
    F.read_pce(path, IDENTITY)


def truncation_points(path) -> list[int]:
    header = F.read_header(path)
    points = {0, 1, 7, 8, 12, 15, 16, 17, header.header_end // 2, header.header_end - 33, header.header_end - 1,
              header.header_end, header.file_size - 1}
    for s in header.sections:
        points |= {s.offset - 1, s.offset, s.offset + s.nbytes // 2, s.offset + s.nbytes - 1}
    return sorted(p for p in points if 0 <= p < header.file_size)


def test_every_truncation_is_detected(written):
    path, _ = written
    data = path.read_bytes()
    for cut in truncation_points(path):
        path.write_bytes(data[:cut])
        with pytest.raises(PceFormatError) as e:
            F.read_pce(path, IDENTITY)
        assert "truncated" in str(e.value) and str(path) in str(e.value), cut
    path.write_bytes(data + b"\0")
    with pytest.raises(PceFormatError, match="bytes after the end"):
        F.read_pce(path, IDENTITY)


def test_damage_in_every_piece_of_a_large_section(tmp_path, rng):
    path = tmp_path / "big.pce"
    F.write_pce(path, IDENTITY, {"pieces": rng.integers(0, 256, 2 * F.LEAF + 100, dtype=np.uint8)})
    [s] = F.read_header(path).sections
    data = path.read_bytes()
    for at in (0, F.LEAF - 1, F.LEAF, 2 * F.LEAF + 99):
        flip(path, s.offset + at, int(rng.integers(8)))
        with pytest.raises(PceFormatError, match="checksum"):
            F.read_pce(path, IDENTITY)
        path.write_bytes(data)
    for cut in (F.LEAF, F.LEAF + 1, 2 * F.LEAF + 99):
        path.write_bytes(data[:s.offset + cut])
        with pytest.raises(PceFormatError, match="truncated"):
            F.read_pce(path, IDENTITY)


@pytest.mark.parametrize("field, value", [("shape", "StackedDrg32GiBV1"), ("cuzk_version", "0.2.0"),
                                          ("circuit_digest", "cd" * 32)])
def test_another_identity_is_refused(written, field, value):
    path, _ = written
    with pytest.raises(PceMismatchError) as e:
        F.read_pce(path, {**IDENTITY, field: value})
    assert e.value.differences == {field: (IDENTITY[field], value)}
    assert field in str(e.value) and repr(value) in str(e.value)


def test_identity_fields_that_differ_in_type_or_presence(tmp_path):
    path = tmp_path / "c.pce"
    F.write_pce(path, {"n": 1, "flag": None}, {})
    for want, differences in (({"n": True, "flag": None}, {"n": (1, True)}),
                              ({"n": 1}, {"flag": (None, F.ABSENT)}),
                              ({"n": 1, "flag": None, "extra": "x"}, {"extra": (F.ABSENT, "x")})):
        with pytest.raises(PceMismatchError) as e:
            F.read_pce(path, want)
        assert e.value.differences == differences
    assert "extra: the file has <absent>, expected 'x'" in str(e.value)


def test_another_format_version_is_refused(written):
    path, _ = written
    data = bytearray(path.read_bytes())
    length = struct.unpack_from("<I", data, 12)[0]
    struct.pack_into("<I", data, 8, 2)
    data[16 + length:48 + length] = hashlib.blake2b(data[:16 + length], digest_size=32,
                                                    person=b"cuzk-pce-header").digest()
    path.write_bytes(bytes(data))
    with pytest.raises(PceMismatchError, match="format version") as e:
        F.read_pce(path, IDENTITY)
    assert e.value.differences == {"format version": (2, 1)}


def test_missing_and_unreadable_paths(tmp_path):
    with pytest.raises(PceNotFoundError) as e:
        F.read_pce(tmp_path / "missing.pce", IDENTITY)
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, PceReadError)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (tmp_path, fifo):
        with pytest.raises(PceReadError, match="not a regular file"):
            F.read_pce(path, IDENTITY)
    (tmp_path / "dir.pce").mkdir()
    built = []
    with pytest.raises(PceReadError):
        F.build_or_load(tmp_path / "dir.pce", IDENTITY, lambda: built.append(1) or {})
    assert not built and (tmp_path / "dir.pce").is_dir()


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_lock_path_that_cannot_be_locked_is_a_typed_error(tmp_path, rng, kind):
    """A directory (or a FIFO: no hang) where `<path>.lock` goes: PceReadError naming the lock file,
    from a write and from a build; nothing is built or written."""
    path, lock = tmp_path / "c.pce", tmp_path / "c.pce.lock"
    if kind == "directory":
        lock.mkdir()
        reason = "Is a directory"
    else:
        os.mkfifo(lock)
        reason = "No such device or address"  # opened without blocking: ENXIO, as no process reads it
    built = []
    calls = (lambda: F.write_pce(path, IDENTITY, small_arrays(rng)),
             lambda: F.build_or_load(path, IDENTITY, lambda: built.append(1) or {}))
    for call in calls:
        with pytest.raises(PceReadError, match=f"^PCE file {lock}: cannot take the lock: {reason}$") as e:
            call()
        assert e.value.path == str(lock)
    assert not built and sorted(os.listdir(tmp_path)) == ["c.pce.lock"]


def test_a_lock_below_a_regular_file_is_a_typed_error(tmp_path, rng):
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(PceReadError, match=f"^PCE file {tmp_path / 'file'}: cannot take the lock: "):
        F.write_pce(tmp_path / "file" / "c.pce", IDENTITY, small_arrays(rng))


@pytest.mark.parametrize("arrays, match", [
    ({"o": np.array([object()])}, "dtype object"),
    ({"s": np.zeros(2, "i4,i4")}, "dtype"),
    ({"t": np.zeros(2, "datetime64[s]")}, "dtype"),
    ({"l": [1, 2]}, "expected a numpy array"),
    ({"": np.zeros(1)}, "non-empty string"),
    ({3: np.zeros(1)}, "non-empty string"),
    ([np.zeros(1)], "expected a mapping"),
])
def test_bad_arrays_are_refused_before_writing(tmp_path, arrays, match):
    with pytest.raises(InputError, match=match):
        F.write_pce(tmp_path / "c.pce", IDENTITY, arrays)
    assert not (tmp_path / "c.pce").exists()


@pytest.mark.parametrize("identity", [{"x": 1.5}, {"x": [1]}, {"": "a"}, {"x": 1 << 64}, ["shape"]])
def test_bad_identities_are_refused(tmp_path, identity):
    with pytest.raises(InputError, match="identity"):
        F.write_pce(tmp_path / "c.pce", identity, {})
    with pytest.raises(InputError, match="identity"):
        F.read_pce(tmp_path / "c.pce", identity)


def test_progress_counts_every_byte(tmp_path, rng):
    arrays = small_arrays(rng)
    seen = []
    F.write_pce(tmp_path / "c.pce", IDENTITY, arrays, progress=seen.append)
    assert sum(seen) == sum(a.nbytes for a in arrays.values())


def damages(path) -> dict[str, object]:
    """Ways to damage a written file: name -> function of the path (sections by name)."""
    header = F.read_header(path)
    out = {"flip magic": lambda p: flip(p, 3, 0), "flip header": lambda p: flip(p, header.header_end // 2, 5),
           "flip header checksum": lambda p: flip(p, header.header_end - 1, 7),
           "truncate in header": lambda p: os.truncate(p, header.header_end - 40),
           "another identity": lambda p: F.write_pce(p, {**IDENTITY, "cuzk_version": "0.0.9"}, {"x": np.zeros(3)}),
           "not a PCE file": lambda p: p.write_bytes(b"")}
    for s in header.sections:
        if s.nbytes:
            out[f"flip {s.name}"] = lambda p, s=s: flip(p, s.offset + s.nbytes - 1, 1)
            out[f"truncate {s.name}"] = lambda p, s=s: os.truncate(p, s.offset + s.nbytes // 2)
    return out


def test_build_or_load_rebuilds_each_damage_once(tmp_path, rng, caplog):
    arrays = small_arrays(rng)
    probe = tmp_path / "probe.pce"
    F.write_pce(probe, IDENTITY, arrays)
    for kind, damage in damages(probe).items():
        folder = tmp_path / kind.replace(" ", "-")
        folder.mkdir()
        path = folder / "c.pce"
        builds, warnings = [], []

        def build():
            builds.append(1)
            return arrays

        assert_same(F.build_or_load(path, IDENTITY, build, warn=warnings.append), arrays)
        damage(path)
        damaged = path.read_bytes()
        assert_same(F.build_or_load(path, IDENTITY, build, warn=warnings.append), arrays)
        assert len(builds) == 2 and len(warnings) == 1, kind
        [aside] = [p for p in folder.iterdir() if p.name not in ("c.pce", "c.pce.lock")]
        tag = "stale" if kind == "another identity" else "corrupt"
        assert aside.name.startswith(f"c.pce.{tag}-") and aside.read_bytes() == damaged, kind
        assert str(path) in warnings[0] and aside.name in warnings[0] and "\n" not in warnings[0]
        assert_same(F.read_pce(path, IDENTITY), arrays)
        assert_same(F.build_or_load(path, IDENTITY, build, warn=warnings.append), arrays)
        assert len(builds) == 2 and len(warnings) == 1
    flip(probe, F.read_header(probe).sections[0].offset, 0)
    with caplog.at_level(logging.WARNING, logger="cuzk.pce"):
        F.build_or_load(probe, IDENTITY, lambda: arrays)
    [record] = caplog.records
    assert "checksum" in record.getMessage() and "u64" in record.getMessage()


def test_a_failing_build_leaves_no_file(tmp_path):
    path = tmp_path / "c.pce"

    def build():
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError, match="build failed"):
        F.build_or_load(path, IDENTITY, build)
    assert sorted(os.listdir(tmp_path)) == ["c.pce.lock"]


def test_pce_path(tmp_path, monkeypatch):
    for name in ("FIL_PROOFS_PARAMETER_CACHE", "CUZK_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert F.pce_path(IDENTITY) == tmp_path / "xdg" / "cuzk" / "params" / "cuzk-StackedDrg2KiBV1.pce"
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "c"))
    assert F.pce_path("v28-stem") == tmp_path / "c" / "params" / "cuzk-v28-stem.pce"
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path / "fil"))
    assert F.pce_path(IDENTITY) == tmp_path / "fil" / "cuzk-StackedDrg2KiBV1.pce"
    for bad in ("", "../up", "a/b", ".hidden", {"digest": "x"}, {"shape": 3}):
        with pytest.raises(InputError, match="stem"):
            F.pce_path(bad)


BUILD_ONCE = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from cuzk.r1cs.pce_file import build_or_load
    path, marker, ready, go = sys.argv[1:5]

    def build():
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(0.5)
        return {"x": np.arange(1 << 20, dtype=np.uint64), "y": np.full((3, 5), 7, np.int32)}

    open(ready, "w").close()
    while not os.path.exists(go):
        time.sleep(0.001)
    arrays = build_or_load(path, {"shape": "race"}, build)
    print(int(arrays["x"].sum()), int(arrays["y"].sum()), arrays["x"].shape[0])
""")


def test_concurrent_builders_build_once_and_leave_one_valid_file(tmp_path):
    folder, marker, go = tmp_path / "cache", tmp_path / "builds", tmp_path / "go"
    path = folder / "race.pce"
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_ONCE, str(path), str(marker), str(tmp_path / f"ready{i}"),
                               str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready{i}").exists() for i in range(3)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.01)
        go.touch()
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-2000:] for _, err in results]
    n = 1 << 20
    assert {out for out, _ in results} == {f"{n * (n - 1) // 2} 105 {n}\n"}
    assert len(marker.read_text().split()) == 1
    assert sorted(os.listdir(folder)) == ["race.pce", "race.pce.lock"]
    got = F.read_pce(path, {"shape": "race"})
    assert np.array_equal(got["x"], np.arange(n, dtype=np.uint64)) and got["y"].sum() == 105


TRUNCATE_WHILE_READING = textwrap.dedent("""
    import os, sys, threading
    import cuzk.r1cs.pce_file as F
    from cuzk.errors import PceFormatError
    path, cut = sys.argv[1], int(sys.argv[2])
    real, lock, done = F.pread_into, threading.Lock(), []

    def pread_into(fd, out, offset):  # every read of the sections runs after the cut
        if offset >= F.ALIGN:
            with lock:
                if not done:
                    os.truncate(path, cut)
                    done.append(cut)
        return real(fd, out, offset)

    F.pread_into = pread_into
    try:
        F.read_pce(path, {"shape": "cut"})
    except PceFormatError as e:
        print("PceFormatError", done == [cut], e.offset, e)
    else:
        print("read everything")
""")


def test_truncated_while_being_read_is_a_typed_error(tmp_path, rng):
    """The file shrinks after it was opened and its header checked: a typed error, not SIGBUS (in a
    subprocess, so that a signal would show as a negative return code)."""
    path = tmp_path / "cut.pce"
    data_arrays = {"a": rng.integers(0, 256, 3 * F.LEAF + 5, dtype=np.uint8), "b": np.arange(1000)}
    F.write_pce(path, {"shape": "cut"}, data_arrays)
    data = path.read_bytes()
    header = F.read_header(path)
    for cut in sorted({header.sections[0].offset, int(rng.integers(F.ALIGN, len(data))), len(data) - 1}):
        path.write_bytes(data)
        proc = subprocess.run([sys.executable, "-c", TRUNCATE_WHILE_READING, str(path), str(cut)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"return code {proc.returncode}: {proc.stderr[-2000:]}"
        words = proc.stdout.split()
        assert words[:3] == ["PceFormatError", "True", str(cut)], proc.stdout
        assert f"{cut:,} bytes left" in proc.stdout and str(path) in proc.stdout


def test_errors_are_pce_file_errors():
    for cls in (PceFormatError, PceMismatchError, PceReadError, PceNotFoundError):
        assert issubclass(cls, PceFileError)
