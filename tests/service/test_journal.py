"""The job journal against real SQLite files and real processes: durability across a reopen and a
SIGKILL, one job per request_id, the state machine, expiry, damaged and newer files, threads."""
from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from cuzk.errors import CuzkError, InputError
from cuzk.service.journal import (
    DuplicateRequestError,
    ExitRecord,
    Journal,
    JournalError,
    TransitionError,
    UnknownJobError,
)

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def journal(state: Path):
    with Journal(state) as j:
        yield j


def test_creates_private_dir_and_wal_file(state: Path) -> None:
    with Journal(state) as j:
        assert j.path == state / "journal.sqlite3"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "journal.sqlite3").stat().st_mode) & 0o077 == 0
    conn = sqlite3.connect(state / "journal.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_submit_is_durable_across_reopen(state: Path) -> None:
    with Journal(state) as j:
        rec = j.submit("r1", "porep", b"c1-json", 2)
        assert (rec.state, rec.attempts, rec.payload, rec.priority) == ("queued", 0, b"c1-json", 2)
    with Journal(state) as j:
        again = j.get("r1")
        assert again == rec
        assert j.get("nope") is None
        assert j.counts() == {"queued": 1, "running": 0, "done": 0, "failed": 0, "cancelled": 0}


def test_duplicate_request_id_attaches(journal: Journal) -> None:
    first = journal.submit("r1", "snap", b"payload", 2)
    assert journal.submit("r1", "snap", b"payload", 4) == first  # a new priority changes nothing
    journal.mark_running("r1")
    journal.finish("r1", b"proof")
    done = journal.submit("r1", "snap", b"payload", 2)
    assert (done.state, done.result) == ("done", b"proof")
    with pytest.raises(DuplicateRequestError, match="'r1'.*payload"):
        journal.submit("r1", "snap", b"other payload", 2)
    with pytest.raises(DuplicateRequestError, match="'r1'.*kind"):
        journal.submit("r1", "porep", b"payload", 2)
    assert sum(journal.counts().values()) == 1


def test_transitions(journal: Journal) -> None:
    journal.submit("a", "porep", b"x", 2)
    with pytest.raises(TransitionError, match="'a'.*queued"):
        journal.finish("a", b"p")  # never started
    assert journal.mark_running("a").state == "running"
    with pytest.raises(TransitionError, match="running"):
        journal.mark_running("a")  # never run twice at once
    done = journal.finish("a", b"proof")
    assert (done.state, done.result) == ("done", b"proof") and done.ended_at is not None
    assert journal.finish("a", b"proof") == done  # idempotent
    with pytest.raises(TransitionError, match="different result"):
        journal.finish("a", b"another proof")  # never two answers
    with pytest.raises(TransitionError):
        journal.fail("a", "boom")
    assert journal.cancel("a") is False
    assert journal.get("a") == done

    journal.submit("b", "winning_post", b"y", 4)
    assert journal.cancel("b") is True
    assert journal.cancel("b") is False
    with pytest.raises(TransitionError, match="cancelled"):
        journal.mark_running("b")
    with pytest.raises(TransitionError, match="cancelled"):
        journal.finish("b", b"late")
    assert journal.get("b").state == "cancelled"

    journal.submit("c", "window_post", b"z", 3)
    journal.mark_running("c")
    failed = journal.fail("c", "GPU error")
    assert (failed.state, failed.error) == ("failed", "GPU error")
    assert journal.fail("c", "GPU error") == failed
    with pytest.raises(TransitionError, match="different error"):
        journal.fail("c", "other")
    with pytest.raises(TransitionError):
        journal.finish("c", b"p")

    journal.submit("d", "porep", b"w", 2)
    assert journal.fail("d", "bad input").state == "failed"  # a queued job may fail without running

    for call in (lambda: journal.mark_running("zz"), lambda: journal.finish("zz", b""),
                 lambda: journal.fail("zz", "e"), lambda: journal.cancel("zz")):
        with pytest.raises(UnknownJobError, match="'zz'"):
            call()
    assert journal.counts() == {"queued": 0, "running": 0, "done": 1, "failed": 2, "cancelled": 1}


def test_error_classes() -> None:
    assert issubclass(JournalError, CuzkError)
    for cls in (DuplicateRequestError, TransitionError, UnknownJobError):
        assert issubclass(cls, JournalError)


@pytest.mark.parametrize("args, field", [
    (("", "porep", b"x", 2), "request_id"),
    (("r" * 257, "porep", b"x", 2), "request_id"),
    ((None, "porep", b"x", 2), "request_id"),
    (("a\nb", "porep", b"x", 2), "request_id"),
    (("r", "c2", b"x", 2), "kind"),
    (("r", "porep", "text", 2), "payload"),
    (("r", "porep", None, 2), "payload"),
    (("r", "porep", b"x", "high"), "priority"),
])
def test_bad_inputs(journal: Journal, args: tuple, field: str) -> None:
    with pytest.raises(InputError, match=field):
        journal.submit(*args)
    assert sum(journal.counts().values()) == 0


def test_bad_inputs_elsewhere(journal: Journal) -> None:
    journal.submit("r" * 256, "porep", bytearray(b"x"), 0)  # 256 characters is allowed
    journal.mark_running("r" * 256)
    with pytest.raises(InputError, match="result"):
        journal.finish("r" * 256, "not bytes")
    with pytest.raises(InputError, match="older_than_s"):
        journal.expire(-1)
    with pytest.raises(InputError, match="pid"):
        journal.record_exit(0, 1, None, "x", None)


CHILD = textwrap.dedent("""
    import sys, time
    from cuzk.service.journal import Journal
    j = Journal(sys.argv[1])
    for i in range(5):
        j.submit(f"job-{i}", "porep", f"payload-{i}".encode(), 2)
        print("ACK", f"job-{i}", flush=True)
    j.mark_running("job-1")
    j.mark_running("job-3")
    j.finish("job-3", b"proof-3")
    print("READY", flush=True)
    i = 5
    while True:  # keeps writing until it is killed
        j.submit(f"job-{i}", "snap", b"more", 1)
        print("ACK", f"job-{i}", flush=True)
        i += 1
""")


def test_sigkill_loses_no_acknowledged_job(state: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(state)], stdout=subprocess.PIPE, text=True, env=env)
    acked: list[str] = []
    try:
        ready = 0
        for line in child.stdout:
            word, *rest = line.split()
            if word == "ACK":
                acked.append(rest[0])
            elif word == "READY":
                ready = len(acked)
            if ready and len(acked) >= ready + 20:
                break
        os.kill(child.pid, signal.SIGKILL)  # mid-way through its submit loop
    finally:
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    assert ready == 5 and len(acked) >= 25

    with Journal(state) as j:
        for rid in acked:
            assert j.get(rid) is not None, rid
        assert j.get("job-3").result == b"proof-3"
        resumed = j.unfinished()
        ids = [r.request_id for r in resumed]
        assert "job-3" not in ids
        assert ids[:4] == ["job-0", "job-1", "job-2", "job-4"]  # submission order
        assert set(acked) - {"job-3"} <= set(ids)
        by_id = {r.request_id: r for r in resumed}
        assert all(r.state == "queued" for r in resumed)
        assert by_id["job-1"].attempts == 1 and by_id["job-1"].payload == b"payload-1"
        assert all(r.attempts == 0 for r in resumed if r.request_id != "job-1")
        assert j.counts()["running"] == 0

        j.mark_running("job-1")  # a second run, interrupted again
    with Journal(state) as j:
        assert {r.request_id: r.attempts for r in j.unfinished()}["job-1"] == 2
        assert j.unfinished()[1].attempts == 2  # a second call requeues nothing more


def test_expire(state: Path) -> None:
    clock = Clock()
    with Journal(state, clock=clock) as j:
        for rid in ("done", "failed", "cancelled", "queued", "running"):
            j.submit(rid, "porep", b"x", 2)
        j.mark_running("done")
        j.finish("done", b"p")
        j.fail("failed", "e")
        j.cancel("cancelled")
        j.mark_running("running")
        clock.t += 100
        j.submit("recent", "porep", b"x", 2)
        j.mark_running("recent")
        j.finish("recent", b"p")
        assert j.expire(3600) == 0
        assert j.expire(50) == 3  # ended 100 s ago
        assert j.get("done") is None and j.get("recent") is not None
        assert j.expire(50, now=clock.t + 1000) == 1
        assert j.counts() == {"queued": 1, "running": 1, "done": 0, "failed": 0, "cancelled": 0}
        assert j.submit("done", "porep", b"new payload", 2).state == "queued"  # forgotten: a new job


def test_corrupt_file(state: Path) -> None:
    state.mkdir()
    path = state / "journal.sqlite3"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(JournalError, match="journal.sqlite3") as info:
        Journal(state)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_foreign_sqlite_database(state: Path) -> None:
    state.mkdir()
    conn = sqlite3.connect(state / "journal.sqlite3")
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="not a cuzk journal"):
        Journal(state)


def test_newer_schema_version(state: Path) -> None:
    with Journal(state) as j:
        j.submit("r1", "porep", b"x", 2)
    conn = sqlite3.connect(state / "journal.sqlite3")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match=r"journal\.sqlite3.*version 99 is newer"):
        Journal(state)


def test_closed_journal(state: Path) -> None:
    j = Journal(state)
    j.close()
    j.close()
    with pytest.raises(JournalError, match="closed"):
        j.get("r")


def test_concurrent_submits(state: Path) -> None:
    threads, per_thread = 8, 25
    with Journal(state) as j, Journal(state) as other:  # threads of one journal, and a second connection
        results: list = []
        errors: list = []
        barrier = threading.Barrier(threads)

        def work(t: int) -> None:
            try:
                barrier.wait()
                journal = j if t % 2 else other
                for i in range(per_thread):
                    results.append(journal.submit(f"t{t}-{i}", "porep", b"x", 2))
                    results.append(journal.submit("shared", "porep", b"same", 2))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert not errors
        assert j.counts()["queued"] == threads * per_thread + 1
        shared = {r for r in results if r.request_id == "shared"}
        assert len(shared) == 1  # every thread attached to the one job
        seqs = [r.seq for r in results if r.request_id != "shared"]
        assert len(set(seqs)) == threads * per_thread


def test_exits_newest_first(state: Path) -> None:
    clock = Clock()
    with Journal(state, clock=clock) as j:
        j.record_start(100, "0.1.0")
        j.record_exit(100, None, signal.SIGKILL, "killed by SIGKILL (out of memory?)", 200 << 30)
        clock.t += 5
        j.record_start(101, "0.1.0")
        j.record_exit(101, 1, None, "exit code 1", None)
    with Journal(state) as j:
        exits = j.exits()
        assert exits == [ExitRecord(101, 1, None, "exit code 1", None, clock.t),
                         ExitRecord(100, None, signal.SIGKILL, "killed by SIGKILL (out of memory?)", 200 << 30,
                                    clock.t - 5)]
        assert j.exits(limit=1) == exits[:1]
        assert [s.pid for s in j.starts()] == [101, 100]
        assert j.start_count() == 2


def test_state_dir_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("x")
    with pytest.raises(JournalError, match="not a directory"):
        Journal(tmp_path / "state")
