"""cuzk.util.atomic: complete content or the old file, never a part, and no temporary left behind."""
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from cuzk.util.atomic import atomic_dir, atomic_path, atomic_write
from tests.permission_shim import deny_create


def test_bytes_and_chunks_are_written(tmp_path):
    path = tmp_path / "f.bin"
    atomic_write(path, b"hello")
    assert path.read_bytes() == b"hello"
    atomic_write(path, (bytes([i]) * 1000 for i in range(5)), mode=0o600)
    assert path.read_bytes() == b"".join(bytes([i]) * 1000 for i in range(5))
    assert path.stat().st_mode & 0o777 == 0o600
    assert os.listdir(tmp_path) == ["f.bin"]


def test_a_failing_writer_leaves_the_target_intact(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")

    def chunks():
        yield b"new" * 1000
        raise RuntimeError("cut short")

    with pytest.raises(RuntimeError, match="cut short"):
        atomic_write(path, chunks())
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_concurrent_writers_each_leave_a_complete_file(tmp_path):
    path = tmp_path / "f.bin"
    size, chunk = 4 << 20, 64 << 10
    torn = []

    def writer(byte: int) -> None:
        for _ in range(8):
            atomic_write(path, (bytes([byte]) * chunk for _ in range(size // chunk)))

    def reader(stop: threading.Event) -> None:
        while not stop.is_set():
            if path.exists():
                data = path.read_bytes()
                if len(data) != size or data.count(data[:1]) != size:
                    torn.append(len(data))

    stop = threading.Event()
    check = threading.Thread(target=reader, args=(stop,))
    check.start()
    writers = [threading.Thread(target=writer, args=(b,)) for b in b"abcd"]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    check.join()
    data = path.read_bytes()
    assert not torn and len(data) == size and data.count(data[:1]) == size and data[:1] in b"abcd"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_errors_are_oserrors_about_the_target(tmp_path):
    missing = tmp_path / "no" / "such" / "f.bin"
    with pytest.raises(FileNotFoundError) as e:
        atomic_write(missing, b"x")
    assert e.value.filename == str(missing)
    taken = tmp_path / "a-directory"
    taken.mkdir()
    with pytest.raises(IsADirectoryError) as e:
        atomic_write(taken, b"x")
    assert e.value.filename == str(taken)
    assert os.listdir(tmp_path) == ["a-directory"]


def test_an_unwritable_directory_raises_permission_error(tmp_path, monkeypatch):
    """The temporary cannot be created (mode 0o500, injected so that it holds for root too)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    deny_create(monkeypatch, locked)
    with pytest.raises(PermissionError) as e:
        atomic_write(locked / "f.bin", b"x")
    assert e.value.filename == str(locked / "f.bin")
    assert os.listdir(locked) == []


_KILLED_WRITER = """
import sys, time
from cuzk.util.atomic import atomic_write

def chunks():
    for i in range(256):
        yield b"n" * (1 << 20)
        if i == 16:
            print("writing", flush=True)
            time.sleep(60)

atomic_write(sys.argv[1], chunks())
"""


def test_a_writer_killed_mid_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old content")
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"writing\n"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.stdout.close()
    assert path.read_bytes() == b"old content"
    left = [n for n in os.listdir(tmp_path) if n != "f.bin"]  # a killed process cannot clean up
    assert len(left) == 1 and left[0].startswith(".f.bin.") and left[0].endswith(".tmp")


def test_atomic_path_for_writers_that_open_by_name(tmp_path):
    path = tmp_path / "cache"
    with atomic_path(path) as tmp:
        assert tmp.parent == tmp_path and not path.exists()
        out = np.memmap(tmp, dtype="<u4", mode="w+", shape=(1000,))
        out[:] = np.arange(1000)
        out.flush()
        del out
    assert np.array_equal(np.fromfile(path, "<u4"), np.arange(1000))
    with pytest.raises(ValueError):
        with atomic_path(path) as tmp:
            tmp.write_bytes(b"partial")
            raise ValueError
    assert np.array_equal(np.fromfile(path, "<u4"), np.arange(1000))
    assert os.listdir(tmp_path) == ["cache"]


def test_atomic_dir(tmp_path):
    out = tmp_path / "sector"
    with atomic_dir(out) as tmp:
        (tmp / "a").write_bytes(b"1")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "b").write_bytes(b"2")
        assert not out.exists()
    assert (out / "a").read_bytes() == b"1" and (out / "sub" / "b").read_bytes() == b"2"
    assert out.stat().st_mode & 0o777 == 0o755

    with pytest.raises(KeyError):
        with atomic_dir(tmp_path / "failed") as tmp:
            (tmp / "a").write_bytes(b"1")
            raise KeyError
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileExistsError) as e:
        with atomic_dir(tmp_path / "empty") as tmp:
            (tmp / "a").write_bytes(b"1")
    assert e.value.filename == str(tmp_path / "empty") and not any((tmp_path / "empty").iterdir())
    assert sorted(os.listdir(tmp_path)) == ["empty", "sector"]
