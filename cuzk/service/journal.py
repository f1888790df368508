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
- Nothing is handed out unchecked. Every read of a job (get, submit, unfinished, the transitions)
  checks its row: each column's type, the state one of STATES with the columns that state needs
  (journal_rows: a result of at least one byte where done, an error where failed, no result
  elsewhere...), row_sha256 (a SHA-256 over every other column, rewritten with each change, so a
  request_id, priority or state changed outside cuzk is seen), and the payload's and the result's
  SHA-256 against payload_sha256 and result_sha256. counts, expire, damaged and damaged_count check
  every job row the same way but recompute no payload or result checksum (they hand none out);
  starts and exits check their rows' types.
- A damaged row is quarantined, never dropped: in the transaction that found it, it moves from its
  table into `quarantine` (found_at, source table, row id, the request_id where readable, the
  reason, and `original`: the row's values as JSON, blobs and text in base64, reals in hex), with
  ONE error line on the "cuzk.journal" logger naming the request_id and what is wrong. It is never
  run, answered or counted as a job again: `damaged()` lists the quarantine and `damaged_count()`
  counts it. `get`, `submit` and the transitions of a quarantined request_id raise DamagedJobError,
  so a resubmission is refused (what the job had become is unknown); an operator who has looked at
  it may delete its quarantine row to let the request_id be used again.
- Only a cuzk journal is opened, and nothing is written to the file before it is recognised. A
  missing file is created beside its path and linked into place, so the path never holds a half-made
  journal. An existing one must be a regular file starting with SQLite's header, with application_id
  APPLICATION_ID (0 in schema 1), a meta table naming it a cuzk journal of a known schema, the tables
  of that schema, and a PRAGMA quick_check that finds nothing; all of this is read through a
  read-only connection (immutable when no -wal or -journal file exists, so no side file is made).
  Anything else (an empty file, another file, another database, a damaged one, a newer schema) is a
  JournalError naming the path, and the file is left as it was.

Job states and the transitions allowed between them:

    queued -> running -> done
       |         |----> failed
       |----------------> failed, cancelled
                 |----> cancelled
    running -> queued   (only through unfinished(), after a restart)

Schema 2 (SCHEMA_VERSION) declares no NOT NULL or CHECK constraint: the journal checks each row it
reads, and a constraint that quick_check reports would refuse every job for one damaged row. A
schema-1 journal is migrated at open in one transaction: its tables rebuilt without constraints,
result_sha256 and row_sha256 computed from the rows as they are (a row already damaged is then found
by the other checks), the quarantine table added. A cuzk that knows only schema 1 refuses a
migrated journal as newer than it supports.

A Journal is safe to share between threads (one connection, guarded by a lock); several processes
may open the same file (SQLite serializes their writes; a writer waits up to `busy_timeout_s`). Each
call is one write transaction (BEGIN IMMEDIATE), so that a damaged row it finds is quarantined at once.
"""
from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from cuzk.errors import BytesTypeError, InputError
from cuzk.service.journal_errors import DuplicateRequestError, JournalError, TransitionError, UnknownJobError
from cuzk.service.journal_file import APPLICATION, APPLICATION_ID, FAULTS, FILENAME, SCHEMA_VERSION, fault, open_journal
from cuzk.service.journal_rows import (FULL, KINDS, MAX_REQUEST_ID, STATES, DamagedJobError, DamagedRow, Row,
                                       RowChecks, check_request_id, is_text, row_digest)

__all__ = ["APPLICATION", "APPLICATION_ID", "FILENAME", "KINDS", "MAX_REQUEST_ID", "SCHEMA_VERSION", "STATES",
           "TERMINAL_STATES", "UNFINISHED_STATES", "DamagedJobError", "DamagedRow", "DuplicateRequestError",
           "ExitRecord", "JobRecord", "Journal", "JournalError", "StartRecord", "TransitionError", "UnknownJobError"]

UNFINISHED_STATES = ("queued", "running")
TERMINAL_STATES = ("done", "failed", "cancelled")
_INT64 = 1 << 63


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


def _record(r: Row) -> JobRecord:
    return JobRecord(r.request_id, r.kind, r.priority, r.state, r.attempts, r.submitted_at, r.started_at,
                     r.ended_at, r.error, r.payload, r.result, r.seq)


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


def _check_str(name: str, value: object, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, not {type(value).__name__}")
    if not is_text(value):
        raise InputError(f"{name} is not UTF-8 text (a lone surrogate)")
    if not empty and not value:
        raise InputError(f"{name} must not be empty")
    return value


class Journal:
    """The durable job journal in `<state_dir>/journal.sqlite3` (see the module docstring for the
    guarantees). The directory is created with mode 0o700 and the file with 0o600 when missing.
    Raises JournalError naming the file when it is not a cuzk journal (an empty file, not SQLite,
    another database), is damaged (PRAGMA quick_check), or has a schema newer than this cuzk knows."""

    def __init__(self, state_dir: str | Path, *, clock: Callable[[], float] = time.time,
                 busy_timeout_s: float = 30.0) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / FILENAME
        self._clock = clock
        self._lock = threading.Lock()
        self._rows = RowChecks(self.path, self._now)
        self._conn: sqlite3.Connection | None = open_journal(self.state_dir, busy_timeout_s)

    # -- plumbing ---------------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE, so a read-then-write is never raced). It commits when
        the block ends or raises DamagedJobError (the quarantine it made stays) and rolls back on any
        other exception; sqlite3 errors become JournalError naming the file."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise JournalError(f"{self.path}: the journal is closed")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except DamagedJobError:
                    conn.execute("COMMIT")
                    raise
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except FAULTS as e:
                if conn.in_transaction:
                    with suppress(*FAULTS):
                        conn.execute("ROLLBACK")
                raise JournalError(f"{self.path}: {fault(e)}") from e

    def _now(self) -> float:
        return float(self._clock())

    def _existing(self, conn: sqlite3.Connection, request_id: str) -> Row:
        r = self._rows.fetch(conn, request_id)
        if r is None:
            raise UnknownJobError(request_id)
        return r

    @staticmethod
    def _write(conn: sqlite3.Connection, r: Row) -> JobRecord:
        """Store r's changeable columns and its row_sha256; its record."""
        r = r._replace(row_sha256=row_digest(r))
        conn.execute("UPDATE jobs SET state = ?, attempts = ?, started_at = ?, ended_at = ?, result = ?, "
                     "result_sha256 = ?, error = ?, row_sha256 = ? WHERE seq = ?",
                     (r.state, r.attempts, r.started_at, r.ended_at, r.result, r.result_sha256, r.error,
                      r.row_sha256, r.seq))
        return _record(r)

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
        its state and priority; with a different kind or payload it raises DuplicateRequestError, and
        a quarantined one DamagedJobError."""
        check_request_id(request_id)
        if kind not in KINDS:
            raise InputError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        payload = _check_bytes("payload", payload)
        _check_int("priority", priority)
        with self._tx() as conn:
            job = self._rows.fetch(conn, request_id)
            if job is not None:
                if job.kind != kind:
                    raise DuplicateRequestError(request_id, f"kind ({job.kind})")
                if job.payload != payload:
                    raise DuplicateRequestError(request_id, "payload")
                return _record(job)
            digest, now = hashlib.sha256(payload).digest(), self._now()
            cur = conn.execute("INSERT INTO jobs (request_id, kind, payload, payload_sha256, priority, state, "
                               "attempts, submitted_at) VALUES (?, ?, ?, ?, ?, 'queued', 0, ?)",
                               (request_id, kind, payload, digest, priority, now))
            return self._write(conn, Row(cur.lastrowid, request_id, kind, priority, "queued", 0, now, None, None,
                                          None, payload, digest, None, None, None))

    def get(self, request_id: str) -> JobRecord | None:
        """The job's checked record, or None when there is none (never submitted, or expired).
        DamagedJobError when its row is damaged (it is quarantined by this call) or was quarantined."""
        check_request_id(request_id)
        with self._tx() as conn:
            r = self._rows.fetch(conn, request_id)
            return None if r is None else _record(r)

    def mark_running(self, request_id: str) -> JobRecord:
        """queued -> running (sets started_at). A job already running, answered or cancelled raises
        TransitionError: one job is never run twice at once."""
        check_request_id(request_id)
        with self._tx() as conn:
            r = self._existing(conn, request_id)
            if r.state != "queued":
                raise TransitionError(request_id, f"cannot start a job that is {r.state}")
            return self._write(conn, r._replace(state="running", started_at=self._now()))

    def finish(self, request_id: str, result: bytes) -> JobRecord:
        """running -> done with its result (at least one byte). Finishing a done job again with the same
        result returns it unchanged; a different result, or any other state, raises TransitionError."""
        check_request_id(request_id)
        result = _check_bytes("result", result)
        if not result:
            raise InputError("result must not be empty")
        with self._tx() as conn:
            r = self._existing(conn, request_id)
            if r.state == "done":
                if r.result == result:
                    return _record(r)
                raise TransitionError(request_id, "already done with a different result")
            if r.state != "running":
                raise TransitionError(request_id, f"cannot finish a job that is {r.state}")
            return self._write(conn, r._replace(state="done", result=result, ended_at=self._now(),
                                                result_sha256=hashlib.sha256(result).digest()))

    def fail(self, request_id: str, error: str) -> JobRecord:
        """queued or running -> failed with its error message (not empty). Failing a failed job again
        with the same message returns it unchanged; a different message, or a done or cancelled job,
        raises TransitionError."""
        check_request_id(request_id)
        _check_str("error", error, empty=False)
        with self._tx() as conn:
            r = self._existing(conn, request_id)
            if r.state == "failed":
                if r.error == error:
                    return _record(r)
                raise TransitionError(request_id, "already failed with a different error")
            if r.state not in UNFINISHED_STATES:
                raise TransitionError(request_id, f"cannot fail a job that is {r.state}")
            return self._write(conn, r._replace(state="failed", error=error, ended_at=self._now()))

    def cancel(self, request_id: str) -> bool:
        """queued or running -> cancelled: True when this call cancelled it, False when the job was
        already done, failed or cancelled (left as it was). An unknown request_id raises UnknownJobError."""
        check_request_id(request_id)
        with self._tx() as conn:
            r = self._existing(conn, request_id)
            if r.state not in UNFINISHED_STATES:
                return False
            self._write(conn, r._replace(state="cancelled", ended_at=self._now()))
            return True

    def unfinished(self) -> list[JobRecord]:
        """Every queued or running job whose row checks, in submission order: what a restarted daemon
        resumes (damaged rows are quarantined). In the same transaction the running ones go back to
        queued with attempts incremented (their run died with the daemon), so call this once at
        startup, before any worker runs."""
        out = []
        with self._tx() as conn:
            for shape in self._rows.sweep(conn):
                if shape.state not in UNFINISHED_STATES:
                    continue
                r = Row._make(conn.execute(f"SELECT {FULL} FROM jobs WHERE seq = ?", (shape.seq,)).fetchone())
                if self._rows.check(conn, r) is not None:
                    continue
                if r.state == "running":
                    out.append(self._write(conn, r._replace(state="queued", attempts=r.attempts + 1,
                                                            started_at=None)))
                else:
                    out.append(_record(r))
        return out

    def expire(self, older_than_s: float, now: float | None = None) -> int:
        """Delete the done, failed and cancelled jobs that ended more than older_than_s seconds before
        `now` (default: the clock); returns how many. Queued and running jobs are never deleted, nor
        damaged rows (quarantined instead). An expired request_id is forgotten: submitting it again
        makes a new job."""
        if isinstance(older_than_s, bool) or not isinstance(older_than_s, (int, float)) or not older_than_s >= 0:
            raise InputError(f"older_than_s must be a number >= 0, not {older_than_s!r}")
        cutoff = (self._now() if now is None else float(now)) - older_than_s
        with self._tx() as conn:
            old = [r.seq for r in self._rows.sweep(conn) if r.state in TERMINAL_STATES and r.ended_at < cutoff]
            conn.executemany("DELETE FROM jobs WHERE seq = ?", [(seq,) for seq in old])
        return len(old)

    def counts(self) -> dict[str, int]:
        """The number of jobs in each state (every state present, zeros included); damaged rows are
        quarantined and counted by damaged_count instead."""
        with self._tx() as conn:
            found = Counter(r.state for r in self._rows.sweep(conn))
        return {state: found.get(state, 0) for state in STATES}

    def counts_by_kind(self) -> dict[str, dict[str, int]]:
        """counts() per job kind (every kind and state present, zeros included)."""
        with self._tx() as conn:
            found = Counter((r.kind, r.state) for r in self._rows.sweep(conn))
        return {kind: {state: found.get((kind, state), 0) for state in STATES} for kind in KINDS}

    # -- damaged rows -----------------------------------------------------------------------------

    def damaged(self, limit: int = 100) -> list[DamagedRow]:
        """The latest quarantined rows, newest first, after checking every row (so it is current)."""
        _check_int("limit", limit, minimum=0)
        with self._tx() as conn:
            self._rows.sweep_all(conn)
            return self._rows.quarantined(conn, limit)

    def damaged_count(self) -> int:
        """How many rows are quarantined, after checking every row."""
        with self._tx() as conn:
            self._rows.sweep_all(conn)
            return self._rows.quarantined_count(conn)

    # -- daemon lifecycle (for the supervisor) ----------------------------------------------------

    def record_start(self, pid: int, version: str) -> StartRecord:
        """Record that a daemon started (durable before this returns)."""
        _check_int("pid", pid, minimum=1)
        _check_str("version", version)
        at = self._now()
        with self._tx() as conn:
            conn.execute("INSERT INTO starts (pid, version, at) VALUES (?, ?, ?)", (pid, version, at))
        return StartRecord(pid, version, at)

    def starts(self, limit: int = 100) -> list[StartRecord]:
        """The latest daemon starts, newest first (damaged rows quarantined)."""
        _check_int("limit", limit, minimum=0)
        with self._tx() as conn:
            rows = self._rows.records(conn, "starts")
        return [StartRecord(*r) for r in rows[::-1][:limit]]

    def start_count(self) -> int:
        """How many daemon starts are journaled (damaged rows quarantined, not counted)."""
        with self._tx() as conn:
            return len(self._rows.records(conn, "starts"))

    def record_exit(self, pid: int, code: int | None, signal: int | None, reason: str,
                    rss_bytes: int | None) -> ExitRecord:
        """Record how a daemon ended: its exit code or the signal that killed it (either may be None),
        why (e.g. "killed by SIGKILL (out of memory?)"), and its peak RSS where known."""
        _check_int("pid", pid, minimum=1)
        _check_int("code", code, optional=True)
        _check_int("signal", signal, optional=True, minimum=0)
        _check_str("reason", reason)
        _check_int("rss_bytes", rss_bytes, optional=True, minimum=0)
        at = self._now()
        with self._tx() as conn:
            conn.execute("INSERT INTO exits (pid, code, signal, reason, rss_bytes, at) VALUES (?, ?, ?, ?, ?, ?)",
                         (pid, code, signal, reason, rss_bytes, at))
        return ExitRecord(pid, code, signal, reason, rss_bytes, at)

    def exits(self, limit: int = 100) -> list[ExitRecord]:
        """The latest daemon exits, newest first (damaged rows quarantined)."""
        _check_int("limit", limit, minimum=0)
        with self._tx() as conn:
            rows = self._rows.records(conn, "exits")
        return [ExitRecord(*r) for r in rows[::-1][:limit]]

