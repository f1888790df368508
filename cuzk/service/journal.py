"""The daemon's durable job journal: one SQLite file, `<state_dir>/journal.sqlite3`.

Guarantees:
- A job is acknowledged when `submit` returns, and `submit` returns only after its transaction is
  committed with WAL + synchronous=FULL, i.e. fsynced: a SIGKILL or power loss after that point
  never loses the job.
- Every state change is one transaction: a crash leaves each job wholly in its old state or wholly
  in its new one, never half-written.
- One request_id is one job: submitting it again attaches to the existing job (its record comes back
  unchanged); a resubmission with a different kind or payload is refused (DuplicateRequestError).
- A job has at most one answer: finishing or failing it again with the same answer is a no-op,
  with a different one is refused.
- After a restart `unfinished()` gives every job not yet answered, in submission order; jobs that
  were running when the daemon died go back to queued with `attempts` incremented.

Job states and the transitions allowed between them:

    queued -> running -> done
       |         |----> failed
       |----------------> failed, cancelled
                 |----> cancelled
    running -> queued   (only through unfinished(), after a restart)

A Journal is safe to share between threads (one connection, guarded by a lock); several processes
may open the same file (SQLite serializes their writes; a writer waits up to `busy_timeout_s`).
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cuzk.errors import BytesTypeError, CuzkError, InputError

SCHEMA_VERSION = 1
APPLICATION = "cuzk-journal"
FILENAME = "journal.sqlite3"
KINDS = ("porep", "snap", "winning_post", "window_post")
STATES = ("queued", "running", "done", "failed", "cancelled")
UNFINISHED_STATES = ("queued", "running")
TERMINAL_STATES = ("done", "failed", "cancelled")
MAX_REQUEST_ID = 256
_INT64 = 1 << 63


class JournalError(CuzkError):
    """The journal cannot be opened or used (not a SQLite database, a newer schema, an I/O error, a
    closed journal), or a job state change that is not allowed."""


class DuplicateRequestError(JournalError):
    """A request_id submitted again with a different kind or payload: it names another job's request."""

    def __init__(self, request_id: str, what: str) -> None:
        self.request_id = request_id
        super().__init__(f"request_id {request_id!r} is already a job with a different {what}")


class UnknownJobError(JournalError):
    """No job with this request_id (never submitted, or expired)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        super().__init__(f"no job with request_id {request_id!r}")


class TransitionError(JournalError):
    """A state change the job's current state does not allow (e.g. finishing a cancelled job), or a
    second, different answer for an answered job."""

    def __init__(self, request_id: str, reason: str) -> None:
        self.request_id, self.reason = request_id, reason
        super().__init__(f"job {request_id!r}: {reason}")


@dataclass(frozen=True)
class JobRecord:
    """One job as the journal holds it. Times are epoch seconds; started_at is the latest start;
    attempts counts runs interrupted by a restart."""

    request_id: str
    kind: str
    priority: int
    state: str
    attempts: int
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    error: str | None
    payload: bytes = field(repr=False)
    result: bytes | None = field(repr=False)
    seq: int = 0  # submission order (increasing)


@dataclass(frozen=True)
class ExitRecord:
    """One daemon exit as the supervisor saw it: exit code or killing signal, why, peak RSS."""

    pid: int
    code: int | None
    signal: int | None
    reason: str
    rss_bytes: int | None
    at: float


@dataclass(frozen=True)
class StartRecord:
    """One daemon start: its pid and cuzk version."""

    pid: int
    version: str
    at: float


_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
CREATE INDEX jobs_state ON jobs (state, seq);
CREATE INDEX jobs_ended ON jobs (ended_at) WHERE ended_at IS NOT NULL;
CREATE TABLE starts (id INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER NOT NULL, version TEXT NOT NULL,
                     at REAL NOT NULL);
CREATE TABLE exits (id INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER NOT NULL, code INTEGER,
                    signal INTEGER, reason TEXT NOT NULL, rss_bytes INTEGER, at REAL NOT NULL);
"""
_JOB_COLUMNS = ("request_id, kind, priority, state, attempts, submitted_at, started_at, ended_at, error, "
                "payload, result, seq")


def _job(row: tuple) -> JobRecord:
    return JobRecord(*row)


def _check_request_id(request_id: object) -> str:
    if not isinstance(request_id, str) or not request_id:
        raise InputError("request_id must be a non-empty string")
    if len(request_id) > MAX_REQUEST_ID:
        raise InputError(f"request_id is {len(request_id)} characters, more than {MAX_REQUEST_ID}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in request_id):
        raise InputError("request_id has a control character")
    return request_id


def _check_bytes(name: str, value: object) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise BytesTypeError(f"{name} must be bytes, not {type(value).__name__}")
    return bytes(value)


def _check_int(name: str, value: object, *, optional: bool = False, minimum: int = -_INT64) -> int | None:
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"{name} must be an integer{' or None' if optional else ''}, not {type(value).__name__}")
    if not minimum <= value < _INT64:
        raise InputError(f"{name} {value} is out of range")
    return value


def _check_str(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, not {type(value).__name__}")
    return value


class Journal:
    """The durable job journal in `<state_dir>/journal.sqlite3` (see the module docstring for the
    guarantees). The directory is created with mode 0o700 and the file with 0o600 when missing.
    Raises JournalError naming the file when it is not a SQLite database, not a cuzk journal, or
    has a schema newer than this cuzk knows."""

    def __init__(self, state_dir: str | Path, *, clock: Callable[[], float] = time.time,
                 busy_timeout_s: float = 30.0) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / FILENAME
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if self.state_dir.exists() and not self.state_dir.is_dir():
            raise JournalError(f"{self.path}: cannot create the journal: {self.state_dir} is not a directory")
        try:
            if not self.state_dir.is_dir():
                self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.chmod(self.state_dir, 0o700)  # mkdir's mode is cut by the umask
            if not self.path.exists():
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        except OSError as e:
            raise JournalError(f"{self.path}: cannot create the journal: {e.strerror or e}") from e
        try:
            conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as e:
            raise JournalError(f"{self.path}: cannot open the journal: {e}") from e
        try:
            self._setup(conn)
        except sqlite3.DatabaseError as e:
            conn.close()
            raise JournalError(f"{self.path}: not a usable SQLite database ({e})") from e
        except JournalError:
            conn.close()
            raise
        self._conn = conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise JournalError(f"{self.path}: the file system does not allow SQLite's WAL mode (got {mode!r})")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables - {"sqlite_sequence"}:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                                 [("schema_version", str(SCHEMA_VERSION)), ("application", APPLICATION)])
                created = True
            else:
                created = False
                if "meta" not in tables:
                    raise JournalError(f"{self.path}: a SQLite database, but not a cuzk journal (no meta table)")
                meta = dict(conn.execute("SELECT key, value FROM meta"))
                if meta.get("application") != APPLICATION:
                    raise JournalError(f"{self.path}: a SQLite database, but not a cuzk journal")
                version = meta.get("schema_version", "")
                if not version.isdigit():
                    raise JournalError(f"{self.path}: unreadable journal schema version {version!r}")
                if int(version) > SCHEMA_VERSION:
                    raise JournalError(f"{self.path}: journal schema version {version} is newer than this cuzk "
                                       f"supports ({SCHEMA_VERSION}); use a newer cuzk")
                if int(version) < SCHEMA_VERSION:  # no older version exists yet
                    raise JournalError(f"{self.path}: unknown old journal schema version {version}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if created:  # make the new file's directory entry durable too
            fd = os.open(self.state_dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    # -- plumbing ---------------------------------------------------------------------------------

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction (BEGIN IMMEDIATE for writes, so a read-then-write is never raced); sqlite3
        errors become JournalError naming the file."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise JournalError(f"{self.path}: the journal is closed")
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise JournalError(f"{self.path}: {e}") from e

    @staticmethod
    def _fetch(conn: sqlite3.Connection, request_id: str) -> JobRecord | None:
        row = conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE request_id = ?", (request_id,)).fetchone()
        return _job(row) if row else None

    def _existing(self, conn: sqlite3.Connection, request_id: str) -> JobRecord:
        job = self._fetch(conn, request_id)
        if job is None:
            raise UnknownJobError(request_id)
        return job

    def close(self) -> None:
        """Close the connection (every change is already committed). Idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- jobs -------------------------------------------------------------------------------------

    def submit(self, request_id: str, kind: str, payload: bytes, priority: int) -> JobRecord:
        """Record a new queued job, committed and fsynced before this returns (the acknowledgment
        point). A request_id already in the journal returns that job's record unchanged, whatever
        its state and priority; with a different kind or payload it raises DuplicateRequestError."""
        _check_request_id(request_id)
        if kind not in KINDS:
            raise InputError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        payload = _check_bytes("payload", payload)
        _check_int("priority", priority)
        digest = hashlib.sha256(payload).digest()
        with self._tx() as conn:
            row = conn.execute("SELECT kind, payload_sha256 FROM jobs WHERE request_id = ?", (request_id,)).fetchone()
            if row is not None:
                if row[0] != kind:
                    raise DuplicateRequestError(request_id, f"kind ({row[0]})")
                if row[1] != digest:
                    raise DuplicateRequestError(request_id, "payload")
                return self._existing(conn, request_id)
            conn.execute("INSERT INTO jobs (request_id, kind, payload, payload_sha256, priority, state, submitted_at) "
                         "VALUES (?, ?, ?, ?, ?, 'queued', ?)",
                         (request_id, kind, payload, digest, priority, self._clock()))
            return self._existing(conn, request_id)

    def get(self, request_id: str) -> JobRecord | None:
        """The job's record, or None when there is none (never submitted, or expired)."""
        _check_request_id(request_id)
        with self._tx(write=False) as conn:
            return self._fetch(conn, request_id)

    def mark_running(self, request_id: str) -> JobRecord:
        """queued -> running (sets started_at). A job already running, answered or cancelled raises
        TransitionError: one job is never run twice at once."""
        _check_request_id(request_id)
        with self._tx() as conn:
            job = self._existing(conn, request_id)
            if job.state != "queued":
                raise TransitionError(request_id, f"cannot start a job that is {job.state}")
            conn.execute("UPDATE jobs SET state = 'running', started_at = ? WHERE request_id = ?",
                         (self._clock(), request_id))
            return self._existing(conn, request_id)

    def finish(self, request_id: str, result: bytes) -> JobRecord:
        """running -> done with its result. Finishing a done job again with the same result returns
        it unchanged; a different result, or any other state, raises TransitionError."""
        _check_request_id(request_id)
        result = _check_bytes("result", result)
        with self._tx() as conn:
            job = self._existing(conn, request_id)
            if job.state == "done":
                if job.result == result:
                    return job
                raise TransitionError(request_id, "already done with a different result")
            if job.state != "running":
                raise TransitionError(request_id, f"cannot finish a job that is {job.state}")
            conn.execute("UPDATE jobs SET state = 'done', result = ?, ended_at = ? WHERE request_id = ?",
                         (result, self._clock(), request_id))
            return self._existing(conn, request_id)

    def fail(self, request_id: str, error: str) -> JobRecord:
        """queued or running -> failed with its error message. Failing a failed job again with the
        same message returns it unchanged; a different message, or a done or cancelled job, raises
        TransitionError."""
        _check_request_id(request_id)
        _check_str("error", error)
        with self._tx() as conn:
            job = self._existing(conn, request_id)
            if job.state == "failed":
                if job.error == error:
                    return job
                raise TransitionError(request_id, "already failed with a different error")
            if job.state not in UNFINISHED_STATES:
                raise TransitionError(request_id, f"cannot fail a job that is {job.state}")
            conn.execute("UPDATE jobs SET state = 'failed', error = ?, ended_at = ? WHERE request_id = ?",
                         (error, self._clock(), request_id))
            return self._existing(conn, request_id)

    def cancel(self, request_id: str) -> bool:
        """queued or running -> cancelled: True when this call cancelled it, False when the job was
        already done, failed or cancelled (left as it was). An unknown request_id raises UnknownJobError."""
        _check_request_id(request_id)
        with self._tx() as conn:
            job = self._existing(conn, request_id)
            if job.state not in UNFINISHED_STATES:
                return False
            conn.execute("UPDATE jobs SET state = 'cancelled', ended_at = ? WHERE request_id = ?",
                         (self._clock(), request_id))
            return True

    def unfinished(self) -> list[JobRecord]:
        """Every queued or running job, in submission order: what a restarted daemon resumes. In the
        same transaction the running ones go back to queued with attempts incremented (their run
        died with the daemon), so call this once at startup, before any worker runs."""
        with self._tx() as conn:
            conn.execute("UPDATE jobs SET state = 'queued', attempts = attempts + 1, started_at = NULL "
                         "WHERE state = 'running'")
            rows = conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE state = 'queued' ORDER BY seq").fetchall()
            return [_job(r) for r in rows]

    def expire(self, older_than_s: float, now: float | None = None) -> int:
        """Delete the done, failed and cancelled jobs that ended more than older_than_s seconds before
        `now` (default: the clock); returns how many. Queued and running jobs are never deleted. An
        expired request_id is forgotten: submitting it again makes a new job."""
        if isinstance(older_than_s, bool) or not isinstance(older_than_s, (int, float)) or not older_than_s >= 0:
            raise InputError(f"older_than_s must be a number >= 0, not {older_than_s!r}")
        cutoff = (self._clock() if now is None else float(now)) - older_than_s
        with self._tx() as conn:
            cur = conn.execute("DELETE FROM jobs WHERE state IN ('done', 'failed', 'cancelled') AND ended_at < ?",
                               (cutoff,))
            return cur.rowcount

    def counts(self) -> dict[str, int]:
        """The number of jobs in each state (every state present, zeros included)."""
        with self._tx(write=False) as conn:
            found = dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state"))
        return {state: found.get(state, 0) for state in STATES}

    # -- daemon lifecycle (for the supervisor) ----------------------------------------------------

    def record_start(self, pid: int, version: str) -> StartRecord:
        """Record that a daemon started (durable before this returns)."""
        _check_int("pid", pid, minimum=1)
        _check_str("version", version)
        at = self._clock()
        with self._tx() as conn:
            conn.execute("INSERT INTO starts (pid, version, at) VALUES (?, ?, ?)", (pid, version, at))
        return StartRecord(pid, version, at)

    def starts(self, limit: int = 100) -> list[StartRecord]:
        """The latest daemon starts, newest first."""
        _check_int("limit", limit, minimum=0)
        with self._tx(write=False) as conn:
            rows = conn.execute("SELECT pid, version, at FROM starts ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [StartRecord(*r) for r in rows]

    def start_count(self) -> int:
        """How many daemon starts are journaled."""
        with self._tx(write=False) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM starts").fetchone()[0])

    def record_exit(self, pid: int, code: int | None, signal: int | None, reason: str,
                    rss_bytes: int | None) -> ExitRecord:
        """Record how a daemon ended: its exit code or the signal that killed it (either may be None),
        why (e.g. "killed by SIGKILL (out of memory?)"), and its peak RSS where known."""
        _check_int("pid", pid, minimum=1)
        _check_int("code", code, optional=True)
        _check_int("signal", signal, optional=True, minimum=0)
        _check_str("reason", reason)
        _check_int("rss_bytes", rss_bytes, optional=True, minimum=0)
        at = self._clock()
        with self._tx() as conn:
            conn.execute("INSERT INTO exits (pid, code, signal, reason, rss_bytes, at) VALUES (?, ?, ?, ?, ?, ?)",
                         (pid, code, signal, reason, rss_bytes, at))
        return ExitRecord(pid, code, signal, reason, rss_bytes, at)

    def exits(self, limit: int = 100) -> list[ExitRecord]:
        """The latest daemon exits, newest first."""
        _check_int("limit", limit, minimum=0)
        with self._tx(write=False) as conn:
            rows = conn.execute("SELECT pid, code, signal, reason, rss_bytes, at FROM exits ORDER BY id DESC LIMIT ?",
                                (limit,)).fetchall()
        return [ExitRecord(*r) for r in rows]
