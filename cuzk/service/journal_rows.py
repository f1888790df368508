"""The journal's row checks and its quarantine: what a valid jobs, starts or exits row holds (each
column's type, the columns each state needs, row_sha256 and the payload's and result's checksums),
and the move of a row that fails into the quarantine table. The guarantees are in
cuzk.service.journal's docstring."""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from cuzk.errors import InputError
from cuzk.service.journal_errors import JournalError
from cuzk.util.jsonio import quote

log = logging.getLogger("cuzk.journal")

KINDS = ("porep", "snap", "winning_post", "window_post")
STATES = ("queued", "running", "done", "failed", "cancelled")
MAX_REQUEST_ID = 256
ROW_TABLES = ("jobs", "starts", "exits")  # rows checked when read; schema 1 declared constraints on them


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


class Row(NamedTuple):
    """A jobs row as stored. In a sweep (SHAPE) payload and result stand in for the real bytes: b"" for
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


FULL = ", ".join(Row._fields)
_STAND_INS = {"payload": "CASE typeof(payload) WHEN 'blob' THEN X'' ELSE payload END",
              "result": "CASE typeof(result) WHEN 'blob' THEN CASE length(result) WHEN 0 THEN X'' ELSE X'00' END "
                        "ELSE result END"}
SHAPE = ", ".join(_STAND_INS.get(name, name) for name in Row._fields)
DIGESTED = ("seq", "request_id", "kind", "payload_sha256", "priority", "state", "attempts", "submitted_at",
            "started_at", "ended_at", "result_sha256", "error")  # what row_sha256 covers
# per state, whether (started_at, ended_at, result, error) must be set (True), must not be (False), or either
_STATE_COLUMNS = {"queued": (False, False, False, False), "running": (True, False, False, False),
                  "done": (True, True, True, False), "failed": (None, True, False, True),
                  "cancelled": (None, True, False, False)}


def is_text(value: object) -> bool:
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
    "text": (is_text, "UTF-8 text"),
    "blob": (lambda v: type(v) is bytes, "a blob"),
    "digest": (lambda v: type(v) is bytes and len(v) == 32, "a 32-byte blob"),
}
_JOB_TYPES = (("priority", "int"), ("attempts", "count"), ("submitted_at", "time"), ("started_at", "time?"),
              ("ended_at", "time?"), ("error", "text?"), ("payload", "blob"), ("payload_sha256", "digest"),
              ("result", "blob?"), ("result_sha256", "digest?"), ("row_sha256", "digest"))
_RECORD_TYPES = {"starts": (("pid", "id"), ("version", "text"), ("at", "time")),
                 "exits": (("pid", "id"), ("code", "int?"), ("signal", "count?"), ("reason", "text"),
                           ("rss_bytes", "count?"), ("at", "time"))}


def check_request_id(request_id: object) -> str:
    """request_id, or InputError: a non-empty UTF-8 string of at most MAX_REQUEST_ID characters, no
    control character."""
    if not isinstance(request_id, str) or not request_id:
        raise InputError("request_id must be a non-empty string")
    if len(request_id) > MAX_REQUEST_ID:
        raise InputError(f"request_id is {len(request_id)} characters, more than {MAX_REQUEST_ID}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in request_id):
        raise InputError("request_id has a control character")
    if not is_text(request_id):
        raise InputError("request_id is not UTF-8 text (a lone surrogate)")
    return request_id


def _request_id_problem(request_id: object) -> str | None:
    try:
        check_request_id(request_id)
    except InputError as e:
        return str(e)
    return None


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


def digest_values(*values: object) -> bytes:
    """SHA-256 of column values (_tagged); the row_sha256 of the DIGESTED columns."""
    return hashlib.sha256(json.dumps([_tagged(v) for v in values], separators=(",", ":")).encode()).digest()


def sha256_or_none(value: object) -> bytes | None:
    return hashlib.sha256(value).digest() if type(value) is bytes else None


def row_digest(r: Row) -> bytes:
    return digest_values(*(getattr(r, name) for name in DIGESTED))


def _row_problem(r: Row) -> str | None:
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
    if r.row_sha256 != row_digest(r):
        return "row_sha256 does not match the row (a column was changed outside cuzk)"
    return None


def _content_problem(r: Row) -> str | None:
    """Whether a full row's payload and result bytes match their checksums."""
    if hashlib.sha256(r.payload).digest() != r.payload_sha256:
        return "the payload's bytes do not match payload_sha256"
    if r.result is not None and hashlib.sha256(r.result).digest() != r.result_sha256:
        return "the result's bytes do not match result_sha256"
    return None


def _damaged_row(qid: int, found_at: object, source: object, row_id: object, request_id: object,
                reason: object) -> DamagedRow:
    """A quarantine record (its id, found_at, source, row_id, request_id, reason) as a DamagedRow, or
    one saying that the record itself is damaged."""
    checks = (("found_at", found_at, "time"), ("row_id", row_id, "int"), ("request_id", request_id, "text?"),
              ("reason", reason, "text"))
    if source in ROW_TABLES and reason and not any(_type_problem(*check) for check in checks):
        return DamagedRow(source, row_id, request_id, reason, found_at)
    return DamagedRow("quarantine", qid, None, "this quarantine record is itself damaged",
                      found_at if _TYPES["time"][0](found_at) else None)


_QUARANTINED = "SELECT id, found_at, source, row_id, request_id, reason FROM quarantine"


class RowChecks:
    """The checked reads of one journal's rows, each inside the caller's transaction: a row that fails
    is quarantined there (one error line on the "cuzk.journal" logger). `now` gives found_at."""

    def __init__(self, path: Path, now: Callable[[], float]) -> None:
        self.path = path
        self._now = now
        self._swept: set[Row] = set()  # the jobs rows the last sweep found valid

    def quarantine(self, conn: sqlite3.Connection, table: str, row_id: int, request_id: str | None,
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

    def check(self, conn: sqlite3.Connection, r: Row, request_id: str | None = None) -> DamagedRow | None:
        """None for a full row that checks (and, given request_id, holds it); else its quarantine."""
        problem = _row_problem(r)
        if problem is None and request_id is not None and r.request_id != request_id:
            problem = f"its request_id is {quote(r.request_id)}, not the {request_id!r} it was found under"
        problem = problem or _content_problem(r)
        if problem is None:
            return None
        readable = r.request_id if _request_id_problem(r.request_id) is None else None
        return self.quarantine(conn, "jobs", r.seq, readable, problem)

    def sweep(self, conn: sqlite3.Connection) -> list[Row]:
        """Every jobs row whose columns check (_row_problem; a request_id held by two rows fails both),
        in submission order, with stand-ins for payload and result (Row); the others quarantined. A
        row exactly as the last sweep found it valid is not checked again (validity depends on its
        values alone)."""
        rows = [Row._make(r) for r in conn.execute(f"SELECT {SHAPE} FROM jobs ORDER BY seq").fetchall()]
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
                self.quarantine(conn, "jobs", r.seq, readable, problem)
        self._swept = set(good)
        return good

    def records(self, conn: sqlite3.Connection, table: str) -> list[tuple]:
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
                self.quarantine(conn, table, row_id, None, problem)
        return good

    def sweep_all(self, conn: sqlite3.Connection) -> None:
        """Check every row of jobs, starts and exits."""
        self.sweep(conn)
        for table in _RECORD_TYPES:
            self.records(conn, table)

    def fetch(self, conn: sqlite3.Connection, request_id: str) -> Row | None:
        """The job's checked full row; None when there is none; DamagedJobError when it is (or was) damaged."""
        row = conn.execute(f"SELECT {FULL} FROM jobs WHERE request_id = ?", (request_id,)).fetchone()
        if row is None:
            found = conn.execute(f"{_QUARANTINED} WHERE request_id = ? ORDER BY id DESC LIMIT 1",
                                 (request_id,)).fetchone()
            if found is not None:
                raise DamagedJobError(self.path, request_id, _damaged_row(*found))
            return None
        r = Row._make(row)
        damage = self.check(conn, r, request_id)
        if damage is not None:
            raise DamagedJobError(self.path, request_id, damage)
        return r

    def quarantined(self, conn: sqlite3.Connection, limit: int) -> list[DamagedRow]:
        """The latest `limit` quarantine records, newest first (no row is checked here: see sweep_all)."""
        rows = conn.execute(f"{_QUARANTINED} ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [_damaged_row(*r) for r in rows]

    def quarantined_count(self, conn: sqlite3.Connection) -> int:
        """How many quarantine records there are."""
        return int(conn.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0])
