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
  (_STATE_COLUMNS: a result of at least one byte where done, an error where failed, no result
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

import base64
import hashlib
import json
import logging
import math
import os
import re
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from cuzk.errors import BytesTypeError, CuzkError, InputError
from cuzk.util.fileio import is_regular, open_regular, pread_into
from cuzk.util.jsonio import quote

log = logging.getLogger("cuzk.journal")

SCHEMA_VERSION = 2
APPLICATION = "cuzk-journal"
APPLICATION_ID = 0x63757A6B  # "cuzk": SQLite's application_id (bytes 68-71 of the file)
FILENAME = "journal.sqlite3"
KINDS = ("porep", "snap", "winning_post", "window_post")
STATES = ("queued", "running", "done", "failed", "cancelled")
UNFINISHED_STATES = ("queued", "running")
TERMINAL_STATES = ("done", "failed", "cancelled")
MAX_REQUEST_ID = 256
_INT64 = 1 << 63
_SQLITE_HEADER = b"SQLite format 3\0"
# what a sqlite3 call raises on a damaged file: its errors, and UnicodeDecodeError when the message (or
# a column name) it decodes quotes schema text that is not UTF-8
_FAULTS = (sqlite3.Error, UnicodeDecodeError)


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
class DamagedRow:
    """A quarantined journal row: the table it was in ("jobs", "starts" or "exits"; "quarantine" for a
    quarantine record that is itself damaged), its id there (a job's seq), the job's request_id (None
    when unreadable or not a job), what is wrong, and when it was found (epoch seconds; None when
    that record is damaged)."""

    table: str
    row_id: int
    request_id: str | None
    reason: str
    found_at: float | None


class DamagedJobError(JournalError):
    """A request_id whose journal row is damaged: the row is quarantined (Journal.damaged), and the job
    is never run or answered; the request_id cannot be submitted again."""

    def __init__(self, path: Path, request_id: str, damage: DamagedRow) -> None:
        self.request_id, self.reason, self.found_at = request_id, damage.reason, damage.found_at
        super().__init__(f"{path}: job {request_id!r} is damaged in the journal ({damage.reason}); "
                         "it is quarantined, never run or answered")


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


_TABLES = {  # schema 2's columns; only meta declares NOT NULL (module docstring)
    "meta": ("key TEXT PRIMARY KEY", "value TEXT NOT NULL"),
    "jobs": ("seq INTEGER PRIMARY KEY AUTOINCREMENT", "request_id TEXT UNIQUE", "kind TEXT", "payload BLOB",
             "payload_sha256 BLOB", "priority INTEGER", "state TEXT", "attempts INTEGER", "submitted_at REAL",
             "started_at REAL", "ended_at REAL", "result BLOB", "result_sha256 BLOB", "error TEXT", "row_sha256 BLOB"),
    "starts": ("id INTEGER PRIMARY KEY AUTOINCREMENT", "pid INTEGER", "version TEXT", "at REAL"),
    "exits": ("id INTEGER PRIMARY KEY AUTOINCREMENT", "pid INTEGER", "code INTEGER", "signal INTEGER", "reason TEXT",
              "rss_bytes INTEGER", "at REAL"),
    "quarantine": ("id INTEGER PRIMARY KEY AUTOINCREMENT", "found_at REAL", "source TEXT", "row_id INTEGER",
                   "request_id TEXT", "reason TEXT", "original BLOB"),
}
_CREATE = {table: f"CREATE TABLE {table} ({', '.join(columns)})" for table, columns in _TABLES.items()}
_COLUMNS = {table: tuple(c.split()[0] for c in columns) for table, columns in _TABLES.items()}
_ADDED_IN_2 = {"jobs": ("result_sha256", "row_sha256"), "quarantine": _COLUMNS["quarantine"]}
_ROW_TABLES = ("jobs", "starts", "exits")  # rows checked when read; schema 1 declared constraints on them


class _Row(NamedTuple):
    """A jobs row as stored. In a sweep (_SHAPE) payload and result stand in for the real bytes: b"" for
    a blob, b"\\0" for a result of at least one byte; any other value as it is."""

    seq: int
    request_id: object
    kind: object
    priority: object
    state: object
    attempts: object
    submitted_at: object
    started_at: object
    ended_at: object
    error: object
    payload: object
    payload_sha256: object
    result: object
    result_sha256: object
    row_sha256: object


_FULL = ", ".join(_Row._fields)
_STAND_INS = {"payload": "CASE typeof(payload) WHEN 'blob' THEN X'' ELSE payload END",
              "result": "CASE typeof(result) WHEN 'blob' THEN CASE length(result) WHEN 0 THEN X'' ELSE X'00' END "
                        "ELSE result END"}
_SHAPE = ", ".join(_STAND_INS.get(name, name) for name in _Row._fields)
_DIGESTED = ("seq", "request_id", "kind", "payload_sha256", "priority", "state", "attempts", "submitted_at",
             "started_at", "ended_at", "result_sha256", "error")  # what row_sha256 covers
# per state, whether (started_at, ended_at, result, error) must be set (True), must not be (False), or either
_STATE_COLUMNS = {"queued": (False, False, False, False), "running": (True, False, False, False),
                  "done": (True, True, True, False), "failed": (None, True, False, True),
                  "cancelled": (None, True, False, False)}


def _is_text(value: object) -> bool:
    """A str that encodes as UTF-8 (text read from a damaged file may hold lone surrogates)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "int": (lambda v: type(v) is int, "an integer"),
    "count": (lambda v: type(v) is int and v >= 0, "an integer >= 0"),
    "id": (lambda v: type(v) is int and v >= 1, "an integer >= 1"),
    "time": (lambda v: type(v) is float and math.isfinite(v), "a finite real"),
    "text": (_is_text, "UTF-8 text"),
    "blob": (lambda v: type(v) is bytes, "a blob"),
    "digest": (lambda v: type(v) is bytes and len(v) == 32, "a 32-byte blob"),
}
_JOB_TYPES = (("priority", "int"), ("attempts", "count"), ("submitted_at", "time"), ("started_at", "time?"),
              ("ended_at", "time?"), ("error", "text?"), ("payload", "blob"), ("payload_sha256", "digest"),
              ("result", "blob?"), ("result_sha256", "digest?"), ("row_sha256", "digest"))
_RECORD_TYPES = {"starts": (("pid", "id"), ("version", "text"), ("at", "time")),
                 "exits": (("pid", "id"), ("code", "int?"), ("signal", "count?"), ("reason", "text"),
                           ("rss_bytes", "count?"), ("at", "time"))}


def _sql_value(value: object) -> str:
    """A column value described for a message."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"a blob of {len(value):,} bytes"
    kind = {str: "text", int: "integer", float: "real"}.get(type(value), type(value).__name__)
    return f"the {kind} {quote(value)}"


def _type_problem(name: str, value: object, spec: str) -> str | None:
    """Why column `name` does not hold a value of `spec` (a _TYPES key, "?" suffixed: or NULL), or None."""
    test, what = _TYPES[spec.rstrip("?")]
    if test(value) or (value is None and spec.endswith("?")):
        return None
    return f"{name} is {_sql_value(value)}, not {what}"


def _tagged(value: object) -> object:
    """A column value as exact JSON: NULL and integers as they are, reals in hex, text and blobs in base64."""
    if value is None or type(value) is int:
        return value
    if type(value) is float:
        return {"real": value.hex()}
    if type(value) is str:
        return {"text": base64.b64encode(value.encode("utf-8", "surrogateescape")).decode()}
    return {"blob": base64.b64encode(value).decode()}


def _digest_values(*values: object) -> bytes:
    """SHA-256 of column values (_tagged); the row_sha256 of the _DIGESTED columns."""
    return hashlib.sha256(json.dumps([_tagged(v) for v in values], separators=(",", ":")).encode()).digest()


def _sha256_or_none(value: object) -> bytes | None:
    return hashlib.sha256(value).digest() if type(value) is bytes else None


def _row_digest(r: _Row) -> bytes:
    return _digest_values(*(getattr(r, name) for name in _DIGESTED))


def _row_problem(r: _Row) -> str | None:
    """The first thing wrong with a jobs row's columns, or None (the payload and result bytes are not
    hashed here: see _content_problem)."""
    problem = _request_id_problem(r.request_id)
    if problem:
        return problem
    if r.kind not in KINDS:
        return f"kind {quote(r.kind)} is not one of {', '.join(KINDS)}"
    if r.state not in STATES:
        return f"state {quote(r.state)} is not one of {', '.join(STATES)}"
    for name, spec in _JOB_TYPES:
        problem = _type_problem(name, getattr(r, name), spec)
        if problem:
            return problem
    for name, need in zip(("started_at", "ended_at", "result", "error"), _STATE_COLUMNS[r.state]):
        present = getattr(r, name) not in (None, b"", "")
        if need is not None and present != need:
            return f"a {r.state} job {'without' if need else 'with'} {name}"
    if (r.result is None) != (r.result_sha256 is None):
        return "result and result_sha256 disagree (one is NULL)"
    if r.row_sha256 != _row_digest(r):
        return "row_sha256 does not match the row (a column was changed outside cuzk)"
    return None


def _content_problem(r: _Row) -> str | None:
    """Whether a full row's payload and result bytes match their checksums."""
    if hashlib.sha256(r.payload).digest() != r.payload_sha256:
        return "the payload's bytes do not match payload_sha256"
    if r.result is not None and hashlib.sha256(r.result).digest() != r.result_sha256:
        return "the result's bytes do not match result_sha256"
    return None


def _record(r: _Row) -> JobRecord:
    return JobRecord(r.request_id, r.kind, r.priority, r.state, r.attempts, r.submitted_at, r.started_at,
                     r.ended_at, r.error, r.payload, r.result, r.seq)


def _damaged(qid: int, found_at: object, source: object, row_id: object, request_id: object,
             reason: object) -> DamagedRow:
    """A quarantine record as a DamagedRow, or one saying that the record itself is damaged."""
    checks = (("found_at", found_at, "time"), ("row_id", row_id, "int"), ("request_id", request_id, "text?"),
              ("reason", reason, "text"))
    if source in _ROW_TABLES and reason and not any(_type_problem(*check) for check in checks):
        return DamagedRow(source, row_id, request_id, reason, found_at)
    return DamagedRow("quarantine", qid, None, "this quarantine record is itself damaged",
                      found_at if _TYPES["time"][0](found_at) else None)


def _check_request_id(request_id: object) -> str:
    if not isinstance(request_id, str) or not request_id:
        raise InputError("request_id must be a non-empty string")
    if len(request_id) > MAX_REQUEST_ID:
        raise InputError(f"request_id is {len(request_id)} characters, more than {MAX_REQUEST_ID}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in request_id):
        raise InputError("request_id has a control character")
    if not _is_text(request_id):
        raise InputError("request_id is not UTF-8 text (a lone surrogate)")
    return request_id


def _request_id_problem(request_id: object) -> str | None:
    try:
        _check_request_id(request_id)
    except InputError as e:
        return str(e)
    return None


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
    if not _is_text(value):
        raise InputError(f"{name} is not UTF-8 text (a lone surrogate)")
    if not empty and not value:
        raise InputError(f"{name} must not be empty")
    return value


def _fault(e: Exception) -> str:
    """A _FAULTS exception for a message."""
    return str(e) if isinstance(e, sqlite3.Error) else "SQLite reported damaged text (not UTF-8)"


def _connect(target: str, uri: bool, timeout: float) -> sqlite3.Connection:
    """A connection in autocommit mode whose text never fails to decode (bad UTF-8 keeps its bytes as
    lone surrogates, which the row checks refuse)."""
    conn = sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri)
    conn.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
    return conn


def _fsync(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        self._conn: sqlite3.Connection | None = None
        self._swept: set[_Row] = set()  # the jobs rows the last sweep found valid
        self._make_dir()
        if not os.path.lexists(self.path):
            self._create()
        version = self._recognise(busy_timeout_s)
        try:
            conn = _connect(str(self.path), False, busy_timeout_s)
        except _FAULTS as e:
            raise JournalError(f"{self.path}: cannot open the journal: {_fault(e)}") from e
        try:
            self._setup(conn, version)
        except _FAULTS as e:
            conn.close()
            raise JournalError(f"{self.path}: cannot open the journal: {_fault(e)}") from e
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    # -- opening ----------------------------------------------------------------------------------

    def _make_dir(self) -> None:
        if self.state_dir.exists() and not self.state_dir.is_dir():
            raise JournalError(f"{self.path}: cannot create the journal: {self.state_dir} is not a directory")
        try:
            if not self.state_dir.is_dir():
                self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.chmod(self.state_dir, 0o700)  # mkdir's mode is cut by the umask
        except OSError as e:
            raise JournalError(f"{self.path}: cannot create the journal: {e.strerror or e}") from e

    def _create(self) -> None:
        """A new empty journal at the path: written to a temporary file beside it (mode 0o600), fsynced,
        then hard-linked into place; when another process linked its own first, that one is kept."""
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{FILENAME}.", dir=self.state_dir)
            os.close(fd)
            conn = _connect(tmp, False, 0.0)
            try:
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("BEGIN IMMEDIATE")
                for sql in _CREATE.values():
                    conn.execute(sql)
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                                 [("schema_version", str(SCHEMA_VERSION)), ("application", APPLICATION)])
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute("COMMIT")
            finally:
                conn.close()
            _fsync(tmp)
            with suppress(FileExistsError):
                os.link(tmp, self.path)
            _fsync(self.state_dir)
        except (OSError, *_FAULTS) as e:
            raise JournalError(f"{self.path}: cannot create the journal: {getattr(e, 'strerror', None) or e}") from e
        finally:
            if tmp is not None:
                with suppress(OSError):
                    os.unlink(tmp)

    def _recognise(self, timeout: float) -> int:
        """The schema version of the file at the path, read without writing to it (module docstring)."""
        self._check_header()
        sidecar = any(os.path.lexists(f"{self.path}{s}") for s in ("-wal", "-journal"))
        uri = self.path.absolute().as_uri() + ("?mode=ro" if sidecar else "?mode=ro&immutable=1")
        try:
            conn = _connect(uri, True, timeout)
        except _FAULTS as e:
            raise JournalError(f"{self.path}: cannot open the journal: {_fault(e)}") from e
        try:
            version = self._identify(conn)
            problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        except _FAULTS as e:
            raise JournalError(f"{self.path}: not a usable SQLite database ({_fault(e)})") from e
        finally:
            conn.close()
        if problem != "ok":
            first = " ".join(str(problem).replace("*** in database main ***", "").split())
            raise JournalError(f"{self.path}: a damaged SQLite file (quick_check: {first[:120]})")
        return version

    def _check_header(self) -> None:
        """JournalError unless the path is a regular file that starts with SQLite's header and carries
        cuzk's application_id (or none, as schema 1 did)."""
        try:
            with open_regular(self.path) as (fd, st):
                if not is_regular(st):
                    raise JournalError(f"{self.path}: not a regular file, so not a cuzk journal")
                if st.st_size == 0:
                    raise JournalError(f"{self.path}: an empty file (0 bytes), not a cuzk journal; remove it "
                                       "to start a new journal")
                head = bytearray(100)
                got = pread_into(fd, memoryview(head), 0)
        except OSError as e:
            raise JournalError(f"{self.path}: cannot read the journal: {e.strerror or e}") from e
        if got < len(head) or not head.startswith(_SQLITE_HEADER):
            raise JournalError(f"{self.path}: not a SQLite database, so not a cuzk journal")
        app = int.from_bytes(head[68:72], "big")
        if app not in (0, APPLICATION_ID):
            raise JournalError(f"{self.path}: a SQLite database of another application (application_id "
                               f"{app:#010x}), not a cuzk journal")

    def _identify(self, conn: sqlite3.Connection) -> int:
        """The schema version in the meta table: JournalError for a database that is not a cuzk journal,
        a newer or unknown version, or tables other than that version's."""
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
            raise JournalError(f"{self.path}: a SQLite database, but not a cuzk journal (no meta table)")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("application") != APPLICATION:
            raise JournalError(f"{self.path}: a SQLite database, but not a cuzk journal")
        version = meta.get("schema_version")
        if not isinstance(version, str) or not re.fullmatch("[0-9]{1,9}", version):
            raise JournalError(f"{self.path}: unreadable journal schema version {quote(version)}")
        if int(version) > SCHEMA_VERSION:
            raise JournalError(f"{self.path}: journal schema version {version} is newer than this cuzk supports "
                               f"({SCHEMA_VERSION}); use a newer cuzk")
        if int(version) < 1:
            raise JournalError(f"{self.path}: unknown old journal schema version {version}")
        for table, columns in _COLUMNS.items():
            if int(version) == 1:
                columns = tuple(c for c in columns if c not in _ADDED_IN_2.get(table, ()))
            got = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))
            if got != columns:
                raise JournalError(f"{self.path}: a cuzk journal whose {table} table is missing or not that of "
                                   f"schema {version} (damaged)")
        return int(version)

    def _setup(self, conn: sqlite3.Connection, version: int) -> None:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise JournalError(f"{self.path}: the file system does not allow SQLite's WAL mode (got {mode!r})")
        conn.execute("PRAGMA synchronous=FULL")
        if version < SCHEMA_VERSION:
            self._migrate(conn)

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Schema 1 -> 2 in one transaction (module docstring); nothing when another process did it first."""
        conn.create_function("cuzk_sha256", 1, _sha256_or_none, deterministic=True)
        conn.create_function("cuzk_row_sha256", len(_DIGESTED), _digest_values, deterministic=True)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if self._identify(conn) == 1:
                for table in _ROW_TABLES:
                    _rebuild(conn, table)
                conn.execute(_CREATE["quarantine"])
                conn.execute("UPDATE jobs SET result_sha256 = cuzk_sha256(result)")
                conn.execute(f"UPDATE jobs SET row_sha256 = cuzk_row_sha256({', '.join(_DIGESTED)})")
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                log.info("journal %s: migrated from schema 1 to %d", self.path, SCHEMA_VERSION)
            conn.execute("COMMIT")
        except BaseException:
            with suppress(*_FAULTS):
                conn.execute("ROLLBACK")
            raise

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
            except _FAULTS as e:
                if conn.in_transaction:
                    with suppress(*_FAULTS):
                        conn.execute("ROLLBACK")
                raise JournalError(f"{self.path}: {_fault(e)}") from e

    def _now(self) -> float:
        return float(self._clock())

    def _quarantine(self, conn: sqlite3.Connection, table: str, row_id: int, request_id: str | None,
                    reason: str) -> DamagedRow:
        """Move row `row_id` of `table` into the quarantine for `reason`, with one error log line."""
        cur = conn.execute(f"SELECT * FROM {table} WHERE rowid = ?", (row_id,))
        original = {d[0]: _tagged(v) for d, v in zip(cur.description, cur.fetchone())}
        damage = DamagedRow(table, row_id, request_id, reason, self._now())
        conn.execute("INSERT INTO quarantine (found_at, source, row_id, request_id, reason, original) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     (damage.found_at, table, row_id, request_id, reason, json.dumps(original).encode()))
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row_id,))
        what = (f"{table} row {row_id}" if table != "jobs" else
                f"job {request_id!r} (seq {row_id})" if request_id else f"the job at seq {row_id}")
        log.error("journal %s: %s is damaged and quarantined: %s", self.path, what, reason)
        return damage

    def _check(self, conn: sqlite3.Connection, r: _Row, request_id: str | None = None) -> DamagedRow | None:
        """None for a full row that checks (and, given request_id, holds it); else its quarantine."""
        problem = _row_problem(r)
        if problem is None and request_id is not None and r.request_id != request_id:
            problem = f"its request_id is {quote(r.request_id)}, not the {request_id!r} it was found under"
        problem = problem or _content_problem(r)
        if problem is None:
            return None
        readable = r.request_id if _request_id_problem(r.request_id) is None else None
        return self._quarantine(conn, "jobs", r.seq, readable, problem)

    def _sweep(self, conn: sqlite3.Connection) -> list[_Row]:
        """Every jobs row whose columns check (_row_problem; a request_id held by two rows fails both),
        in submission order, with stand-ins for payload and result (_Row); the others quarantined. A
        row exactly as the last sweep found it valid is not checked again (validity depends on its
        values alone)."""
        rows = [_Row._make(r) for r in conn.execute(f"SELECT {_SHAPE} FROM jobs ORDER BY seq").fetchall()]
        problems = [None if r in self._swept else _row_problem(r) for r in rows]
        held = Counter(r.request_id for r, p in zip(rows, problems) if p is None)
        good = []
        for r, problem in zip(rows, problems):
            if problem is None and held[r.request_id] > 1:
                problem = f"its request_id {r.request_id!r} is also another row's"
            if problem is None:
                good.append(r)
            else:
                readable = r.request_id if _request_id_problem(r.request_id) is None else None
                self._quarantine(conn, "jobs", r.seq, readable, problem)
        self._swept = set(good)
        return good

    def _records(self, conn: sqlite3.Connection, table: str) -> list[tuple]:
        """The rows of starts or exits (without their id) whose columns have their types, oldest first;
        the others quarantined."""
        types = _RECORD_TYPES[table]
        good = []
        for row_id, *values in conn.execute(f"SELECT id, {', '.join(n for n, _ in types)} FROM {table} "
                                            "ORDER BY id").fetchall():
            problem = next((p for (name, spec), v in zip(types, values) if (p := _type_problem(name, v, spec))), None)
            if problem is None:
                good.append(tuple(values))
            else:
                self._quarantine(conn, table, row_id, None, problem)
        return good

    def _fetch(self, conn: sqlite3.Connection, request_id: str) -> _Row | None:
        """The job's checked full row; None when there is none; DamagedJobError when it is (or was) damaged."""
        row = conn.execute(f"SELECT {_FULL} FROM jobs WHERE request_id = ?", (request_id,)).fetchone()
        if row is None:
            found = conn.execute("SELECT id, found_at, source, row_id, request_id, reason FROM quarantine "
                                 "WHERE request_id = ? ORDER BY id DESC LIMIT 1", (request_id,)).fetchone()
            if found is not None:
                raise DamagedJobError(self.path, request_id, _damaged(*found))
            return None
        r = _Row._make(row)
        damage = self._check(conn, r, request_id)
        if damage is not None:
            raise DamagedJobError(self.path, request_id, damage)
        return r

    def _existing(self, conn: sqlite3.Connection, request_id: str) -> _Row:
        r = self._fetch(conn, request_id)
        if r is None:
            raise UnknownJobError(request_id)
        return r

    @staticmethod
    def _write(conn: sqlite3.Connection, r: _Row) -> JobRecord:
        """Store r's changeable columns and its row_sha256; its record."""
        r = r._replace(row_sha256=_row_digest(r))
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
        _check_request_id(request_id)
        if kind not in KINDS:
            raise InputError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        payload = _check_bytes("payload", payload)
        _check_int("priority", priority)
        with self._tx() as conn:
            job = self._fetch(conn, request_id)
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
            return self._write(conn, _Row(cur.lastrowid, request_id, kind, priority, "queued", 0, now, None, None,
                                          None, payload, digest, None, None, None))

    def get(self, request_id: str) -> JobRecord | None:
        """The job's checked record, or None when there is none (never submitted, or expired).
        DamagedJobError when its row is damaged (it is quarantined by this call) or was quarantined."""
        _check_request_id(request_id)
        with self._tx() as conn:
            r = self._fetch(conn, request_id)
            return None if r is None else _record(r)

    def mark_running(self, request_id: str) -> JobRecord:
        """queued -> running (sets started_at). A job already running, answered or cancelled raises
        TransitionError: one job is never run twice at once."""
        _check_request_id(request_id)
        with self._tx() as conn:
            r = self._existing(conn, request_id)
            if r.state != "queued":
                raise TransitionError(request_id, f"cannot start a job that is {r.state}")
            return self._write(conn, r._replace(state="running", started_at=self._now()))

    def finish(self, request_id: str, result: bytes) -> JobRecord:
        """running -> done with its result (at least one byte). Finishing a done job again with the same
        result returns it unchanged; a different result, or any other state, raises TransitionError."""
        _check_request_id(request_id)
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
        _check_request_id(request_id)
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
        _check_request_id(request_id)
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
            for shape in self._sweep(conn):
                if shape.state not in UNFINISHED_STATES:
                    continue
                r = _Row._make(conn.execute(f"SELECT {_FULL} FROM jobs WHERE seq = ?", (shape.seq,)).fetchone())
                if self._check(conn, r) is not None:
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
            old = [r.seq for r in self._sweep(conn) if r.state in TERMINAL_STATES and r.ended_at < cutoff]
            conn.executemany("DELETE FROM jobs WHERE seq = ?", [(seq,) for seq in old])
        return len(old)

    def counts(self) -> dict[str, int]:
        """The number of jobs in each state (every state present, zeros included); damaged rows are
        quarantined and counted by damaged_count instead."""
        with self._tx() as conn:
            found = Counter(r.state for r in self._sweep(conn))
        return {state: found.get(state, 0) for state in STATES}

    # -- damaged rows -----------------------------------------------------------------------------

    def _sweep_all(self, conn: sqlite3.Connection) -> None:
        self._sweep(conn)
        for table in _RECORD_TYPES:
            self._records(conn, table)

    def damaged(self, limit: int = 100) -> list[DamagedRow]:
        """The latest quarantined rows, newest first, after checking every row (so it is current)."""
        _check_int("limit", limit, minimum=0)
        with self._tx() as conn:
            self._sweep_all(conn)
            rows = conn.execute("SELECT id, found_at, source, row_id, request_id, reason FROM quarantine "
                                "ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [_damaged(*r) for r in rows]

    def damaged_count(self) -> int:
        """How many rows are quarantined, after checking every row."""
        with self._tx() as conn:
            self._sweep_all(conn)
            return int(conn.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0])

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
            rows = self._records(conn, "starts")
        return [StartRecord(*r) for r in rows[::-1][:limit]]

    def start_count(self) -> int:
        """How many daemon starts are journaled (damaged rows quarantined, not counted)."""
        with self._tx() as conn:
            return len(self._records(conn, "starts"))

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
            rows = self._records(conn, "exits")
        return [ExitRecord(*r) for r in rows[::-1][:limit]]


def _rebuild(conn: sqlite3.Connection, table: str) -> None:
    """Recreate a schema-1 table as schema 2 declares it, with its rows and its AUTOINCREMENT counter."""
    old = f"{table}_v1"
    conn.execute(f"ALTER TABLE {table} RENAME TO {old}")
    conn.execute(_CREATE[table])
    kept = [c for c in _COLUMNS[table] if c not in _ADDED_IN_2.get(table, ())]
    conn.execute(f"INSERT INTO {table} ({', '.join(kept)}) SELECT {', '.join(kept)} FROM {old}")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = ?", (table,))
    conn.execute("UPDATE sqlite_sequence SET name = ? WHERE name = ?", (table, old))
    conn.execute(f"DROP TABLE {old}")
