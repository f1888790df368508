"""The job journal against real SQLite files and real processes: durability across a reopen and a
SIGKILL, one job per request_id, the state machine, expiry, damaged and newer files, threads; rows
damaged on disk quarantined (never handed out), files that are not a journal refused untouched, and
the migration of a schema-1 journal."""
from __future__ import annotations

import base64
import hashlib
import json
import logging
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
    APPLICATION_ID,
    SCHEMA_VERSION,
    DamagedJobError,
    DamagedRow,
    DuplicateRequestError,
    ExitRecord,
    Journal,
    JournalError,
    StartRecord,
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

    for call in (lambda: journal.mark_running("zz"), lambda: journal.finish("zz", b"p"),
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


# ---------------------------------------------------------------- damaged rows and foreign files

def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def edit(state: Path, sql: str, *params: object) -> None:
    """Change the journal's file through sqlite3, as a hand outside cuzk would."""
    conn = sqlite3.connect(state / "journal.sqlite3")
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def journal_errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "cuzk.journal" and r.levelno == logging.ERROR]


@pytest.fixture
def five(state: Path) -> Path:
    """A closed journal with one job in each state, payloads b"payload-<i>" + 400 marker bytes."""
    with Journal(state) as j:
        for i, rid in enumerate(("q", "r", "d", "f", "c")):
            j.submit(rid, "porep", f"payload-{i}:".encode() + bytes([0x41 + i]) * 400, 2)
        j.mark_running("r")
        j.mark_running("d")
        j.finish("d", b"proof-d")
        j.fail("f", "InputError: bad")
        j.cancel("c")
    return state


def test_changed_payload_bytes_are_quarantined_not_resumed(five: Path, caplog) -> None:
    path = five / "journal.sqlite3"
    data = path.read_bytes()
    marker = b"B" * 400  # job r's payload (its bytes may also stand in freed space: change every copy)
    assert marker in data
    path.write_bytes(data.replace(marker, b"B" * 199 + b"C" + b"B" * 200))
    caplog.set_level(logging.INFO, logger="cuzk.journal")
    with Journal(five) as j:
        assert [r.request_id for r in j.unfinished()] == ["q"]  # r is not resumed
        with pytest.raises(DamagedJobError, match=r"journal.sqlite3: job 'r' is damaged.*payload") as info:
            j.get("r")
        assert (info.value.request_id, info.value.reason) == ("r", "the payload's bytes do not match payload_sha256")
        [damage] = j.damaged()
        assert (damage.table, damage.row_id, damage.request_id) == ("jobs", 2, "r")
        assert j.damaged_count() == 1
        assert j.counts() == {"queued": 1, "running": 0, "done": 1, "failed": 1, "cancelled": 1}
    [line] = journal_errors(caplog)  # one line, however often the row is looked at
    assert "'r'" in line and "payload" in line and str(path) in line


def test_damaged_state_is_quarantined_and_counted(five: Path, caplog) -> None:
    edit(five, "UPDATE jobs SET state = 'doen' WHERE request_id = 'd'")
    # a valid-looking change: f made queued again, columns as a queued job has them; only row_sha256 sees it
    edit(five, "UPDATE jobs SET state = 'queued', ended_at = NULL, error = NULL WHERE request_id = 'f'")
    caplog.set_level(logging.ERROR, logger="cuzk.journal")
    with Journal(five) as j:
        assert j.counts() == {"queued": 1, "running": 1, "done": 0, "failed": 0, "cancelled": 1}
        assert j.damaged_count() == 2
        reasons = {d.request_id: d.reason for d in j.damaged()}
        assert reasons == {"d": "state 'doen' is not one of queued, running, done, failed, cancelled",
                           "f": "row_sha256 does not match the row (a column was changed outside cuzk)"}
        assert [r.request_id for r in j.unfinished()] == ["q", "r"]
    assert len(journal_errors(caplog)) == 2


def test_done_without_result_is_quarantined_never_answered(five: Path) -> None:
    edit(five, "UPDATE jobs SET result = NULL, result_sha256 = NULL WHERE request_id = 'd'")
    with Journal(five) as j:
        with pytest.raises(DamagedJobError, match="'d'.*a done job without result"):
            j.get("d")
        with pytest.raises(DamagedJobError, match="'d'"):  # still damaged, never done
            j.finish("d", b"proof-d")
        assert j.counts()["done"] == 0 and j.damaged_count() == 1


def test_changed_result_is_quarantined(five: Path) -> None:
    edit(five, "UPDATE jobs SET result = ? WHERE request_id = 'd'", b"proof-e")
    with Journal(five) as j:
        with pytest.raises(DamagedJobError, match="result's bytes do not match"):
            j.get("d")


def test_a_row_changed_while_open_is_found_by_the_next_read(five: Path) -> None:
    with Journal(five) as j:
        assert j.counts()["queued"] == 1  # every row checked (and remembered as valid)
        edit(five, "UPDATE jobs SET priority = 9 WHERE request_id = 'q'")  # by another connection
        assert j.counts()["queued"] == 0 and [d.request_id for d in j.damaged()] == ["q"]


def test_resubmitting_a_quarantined_request_id_is_refused(five: Path) -> None:
    edit(five, "UPDATE jobs SET priority = 'high' WHERE request_id = 'q'")
    payload = b"payload-0:" + b"A" * 400
    with Journal(five) as j:
        with pytest.raises(DamagedJobError, match="'q'.*priority is the text 'high', not an integer"):
            j.submit("q", "porep", payload, 2)
        with pytest.raises(DamagedJobError):  # the same answer later, from the quarantine
            j.submit("q", "porep", payload, 2)
        with pytest.raises(DamagedJobError):
            j.cancel("q")
        assert j.get("q2") is None and j.submit("q2", "porep", payload, 2).state == "queued"


def test_quarantine_keeps_the_original_row(five: Path) -> None:
    edit(five, "UPDATE jobs SET attempts = -1 WHERE request_id = 'c'")
    with Journal(five, clock=Clock(5.0)) as j:
        assert j.damaged() == [DamagedRow("jobs", 5, "c", "attempts is the integer -1, not an integer >= 0", 5.0)]
    conn = sqlite3.connect(five / "journal.sqlite3")
    original = json.loads(conn.execute("SELECT original FROM quarantine").fetchone()[0])
    assert conn.execute("SELECT COUNT(*) FROM jobs WHERE request_id = 'c'").fetchone()[0] == 0
    conn.close()
    assert original["attempts"] == -1 and original["state"] == {"text": "Y2FuY2VsbGVk"}  # base64 of cancelled
    assert original["payload"] == {"blob": base64.b64encode(b"payload-4:" + b"E" * 400).decode()}


def test_a_damaged_quarantine_record_is_reported_as_such(five: Path) -> None:
    edit(five, "UPDATE jobs SET kind = 'c2' WHERE request_id = 'c'")
    with Journal(five, clock=Clock(5.0)) as j:
        assert j.damaged_count() == 1
    edit(five, "UPDATE quarantine SET reason = NULL")
    with Journal(five) as j:
        assert j.damaged() == [DamagedRow("quarantine", 1, None, "this quarantine record is itself damaged", 5.0)]
        with pytest.raises(DamagedJobError, match="job 'c' is damaged in the journal") as info:
            j.get("c")
        assert info.value.request_id == "c"


def test_damaged_start_and_exit_rows_are_quarantined(state: Path) -> None:
    with Journal(state, clock=Clock()) as j:
        j.record_start(10, "0.1.0")
        j.record_start(11, "0.1.0")
        j.record_exit(10, 1, None, "exit code 1", None)
    edit(state, "UPDATE starts SET at = 'yesterday' WHERE pid = 10")
    edit(state, "UPDATE exits SET signal = -9")
    with Journal(state) as j:
        assert j.starts() == [StartRecord(11, "0.1.0", 1_000_000.0)] and j.start_count() == 1
        assert j.exits() == []
        assert sorted((d.table, d.reason) for d in j.damaged()) == [
            ("exits", "signal is the integer -9, not an integer >= 0"),
            ("starts", "at is the text 'yesterday', not a finite real")]


def test_empty_file_is_refused_and_left_empty(state: Path) -> None:
    state.mkdir()
    (state / "journal.sqlite3").write_bytes(b"")
    with pytest.raises(JournalError, match=r"journal\.sqlite3: an empty file \(0 bytes\)"):
        Journal(state)
    assert (state / "journal.sqlite3").stat().st_size == 0
    assert os.listdir(state) == ["journal.sqlite3"]


FOREIGN_META = ["CREATE TABLE meta (key TEXT, value TEXT)", "INSERT INTO meta VALUES ('application', 'other')"]


@pytest.mark.parametrize("statements, match", [
    (["PRAGMA journal_mode=delete", *FOREIGN_META], "a SQLite database, but not a cuzk journal"),
    (["PRAGMA journal_mode=wal", *FOREIGN_META], "a SQLite database, but not a cuzk journal"),
    (["PRAGMA user_version = 1"], r"a SQLite database, but not a cuzk journal \(no meta table\)"),  # no tables
    (["PRAGMA application_id = 1234", "CREATE TABLE x (y)"],
     r"a SQLite database of another application \(application_id 0x000004d2\)"),
])
def test_a_foreign_sqlite_file_is_refused_and_unchanged(state: Path, statements: list[str], match: str) -> None:
    state.mkdir()
    path = state / "journal.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    for sql in statements:
        conn.execute(sql)
    conn.close()
    before = sha(path)
    with pytest.raises(JournalError, match=r"journal\.sqlite3: " + match):
        Journal(state)
    assert sha(path) == before and os.listdir(state) == ["journal.sqlite3"]


def test_quick_check_failure_is_refused(five: Path) -> None:
    path = five / "journal.sqlite3"
    conn = sqlite3.connect(path)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'jobs'").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * 4096 + 5] ^= 0x40  # the start of the cell content area of the jobs table's root page
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match=r"journal\.sqlite3: a damaged SQLite file \(quick_check: Page \d+") as info:
        Journal(five)
    assert "\n" not in str(info.value) and sha(path) == hashlib.sha256(data).hexdigest()


def test_schema_text_that_is_not_utf8_is_a_journal_error(state: Path) -> None:
    """sqlite3 decodes an error message quoting a damaged table name as UTF-8: not a raw UnicodeDecodeError."""
    Journal(state).close()
    conn = sqlite3.connect(state / "journal.sqlite3", isolation_level=None)
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute("UPDATE sqlite_master SET name = CAST(? AS TEXT), sql = 'CREATE TABLE x (' WHERE name = 'exits'",
                 (b"ex\xc3(ts",))
    conn.close()
    with pytest.raises(JournalError, match=r"not a usable SQLite database \(SQLite reported damaged text"):
        Journal(state)


SCHEMA_1_JOURNAL = """BEGIN TRANSACTION;
CREATE TABLE exits (id INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER NOT NULL, code INTEGER,
                    signal INTEGER, reason TEXT NOT NULL, rss_bytes INTEGER, at REAL NOT NULL);
INSERT INTO "exits" VALUES(1,100,NULL,9,'killed by SIGKILL (out of memory?)',1073741824,1700001022.5);
CREATE TABLE jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    payload BLOB NOT NULL,
    payload_sha256 BLOB NOT NULL,
    priority INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    attempts INTEGER NOT NULL DEFAULT 0,
    submitted_at REAL NOT NULL,
    started_at REAL,
    ended_at REAL,
    result BLOB,
    error TEXT
);
INSERT INTO "jobs" VALUES(1,'queued-1','porep',X'7061796C6F61642D31',X'2E6709AF8DBFE7CD5ABB2F716924848E527B4486C30C4509B0E4AA8171987335',2,'queued',0,1700000001.5,NULL,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(2,'running-2','porep',X'7061796C6F61642D32',X'BDDD3A6E5DAB59FA05FA8FB0D789A3C2AD3C9982DCC4A368F3D5719F421FFDA8',2,'running',0,1700000003.0,1700001012.0,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(3,'done-3','porep',X'7061796C6F61642D33',X'C97811E4375FDA6EB4B46693D20752E6D584A4EC8A7910A25C52F09988C2D4CB',2,'done',0,1700000004.5,1700001013.5,1700001015.0,X'70726F6F662D33',NULL);
INSERT INTO "jobs" VALUES(4,'failed-4','snap',X'7061796C6F61642D34',X'85261D40C625814F4E9EAE3AAC7948691FBCD76D4E19D85A71E30A665ADD4D3B',4,'failed',0,1700000006.0,NULL,1700001016.5,NULL,'InputError: bad');
INSERT INTO "jobs" VALUES(5,'cancelled-5','porep',X'7061796C6F61642D35',X'ED8A2D8E007008D5582CC9FC8F72C361F32B698DC426C70691072AA18E5BE1C8',2,'cancelled',0,1700000007.5,NULL,1700001018.0,NULL,NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('schema_version','1');
INSERT INTO "meta" VALUES('application','cuzk-journal');
CREATE TABLE starts (id INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER NOT NULL, version TEXT NOT NULL,
                     at REAL NOT NULL);
INSERT INTO "starts" VALUES(1,100,'0.1.0',1700001021.0);
CREATE INDEX jobs_state ON jobs (state, seq);
CREATE INDEX jobs_ended ON jobs (ended_at) WHERE ended_at IS NOT NULL;
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('jobs',6);
INSERT INTO "sqlite_sequence" VALUES('starts',1);
INSERT INTO "sqlite_sequence" VALUES('exits',1);
COMMIT;"""  # sqlite3 .dump of a journal Journal wrote at schema 1


def test_a_schema_1_journal_is_migrated(state: Path) -> None:
    state.mkdir()
    conn = sqlite3.connect(state / "journal.sqlite3")
    conn.executescript(SCHEMA_1_JOURNAL)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    with Journal(state) as j:
        assert j.counts() == {"queued": 1, "running": 1, "done": 1, "failed": 1, "cancelled": 1}
        assert j.damaged_count() == 0
        done = j.get("done-3")
        assert (done.state, done.result, done.payload, done.seq, done.ended_at) == (
            "done", b"proof-3", b"payload-3", 3, 1700001015.0)
        assert j.get("failed-4").error == "InputError: bad"
        assert [(r.request_id, r.state, r.attempts) for r in j.unfinished()] == [
            ("queued-1", "queued", 0), ("running-2", "queued", 1)]
        assert j.submit("new", "porep", b"x", 2).seq == 7  # seq 6 was used (then expired): never again
        assert j.exits()[0].reason == "killed by SIGKILL (out of memory?)" and j.start_count() == 1
    conn = sqlite3.connect(state / "journal.sqlite3")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()
    with Journal(state) as j:  # and it opens again as schema 2
        assert j.get("new").seq == 7


def test_a_damaged_schema_1_row_is_quarantined_after_migration(state: Path) -> None:
    state.mkdir()
    conn = sqlite3.connect(state / "journal.sqlite3")
    conn.executescript(SCHEMA_1_JOURNAL.replace("X'70726F6F662D33'", "NULL"))  # done-3 without its result
    conn.close()
    with Journal(state) as j:
        assert [d.request_id for d in j.damaged()] == ["done-3"]
