"""The journal's file: its schema, recognising an existing file read-only before anything is written
to it, creating a missing one beside its path and linking it into place, and migrating schema 1 to
SCHEMA_VERSION. The guarantees are in cuzk.service.journal's docstring."""
from __future__ import annotations

import logging
import os
import re
import sqlite3
import tempfile
from contextlib import suppress
from pathlib import Path

from cuzk.service.journal_errors import JournalError
from cuzk.service.journal_rows import DIGESTED, ROW_TABLES, digest_values, sha256_or_none
from cuzk.util.fileio import is_regular, open_regular, pread_into
from cuzk.util.jsonio import quote

log = logging.getLogger("cuzk.journal")

SCHEMA_VERSION = 2
APPLICATION = "cuzk-journal"
APPLICATION_ID = 0x63757A6B  # "cuzk": SQLite's application_id (bytes 68-71 of the file)
FILENAME = "journal.sqlite3"
_SQLITE_HEADER = b"SQLite format 3\0"
# what a sqlite3 call raises on a damaged file: its errors, and UnicodeDecodeError when the message (or
# a column name) it decodes quotes schema text that is not UTF-8
FAULTS = (sqlite3.Error, UnicodeDecodeError)

_TABLES = {  # schema 2's columns; only meta declares NOT NULL (cuzk.service.journal's docstring)
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


def fault(e: Exception) -> str:
    """A FAULTS exception for a message."""
    return str(e) if isinstance(e, sqlite3.Error) else "SQLite reported damaged text (not UTF-8)"


def open_journal(state_dir: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """The connection to `<state_dir>/FILENAME` (autocommit, WAL, synchronous=FULL, at SCHEMA_VERSION):
    the directory made (0o700) and the file created (0o600) where missing, an existing file recognised
    first. JournalError naming the file for anything that is not a usable cuzk journal."""
    path = state_dir / FILENAME
    _make_dir(state_dir, path)
    if not os.path.lexists(path):
        _create(state_dir, path)
    version = _recognise(path, busy_timeout_s)
    try:
        conn = _connect(str(path), False, busy_timeout_s)
    except FAULTS as e:
        raise JournalError(f"{path}: cannot open the journal: {fault(e)}") from e
    try:
        _setup(path, conn, version)
    except FAULTS as e:
        conn.close()
        raise JournalError(f"{path}: cannot open the journal: {fault(e)}") from e
    except BaseException:
        conn.close()
        raise
    return conn


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


def _make_dir(state_dir: Path, path: Path) -> None:
    if state_dir.exists() and not state_dir.is_dir():
        raise JournalError(f"{path}: cannot create the journal: {state_dir} is not a directory")
    try:
        if not state_dir.is_dir():
            state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(state_dir, 0o700)  # mkdir's mode is cut by the umask
    except OSError as e:
        raise JournalError(f"{path}: cannot create the journal: {e.strerror or e}") from e


def _create(state_dir: Path, path: Path) -> None:
    """A new empty journal at the path: written to a temporary file beside it (mode 0o600), fsynced,
    then hard-linked into place; when another process linked its own first, that one is kept."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{FILENAME}.", dir=state_dir)
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
            os.link(tmp, path)
        _fsync(state_dir)
    except (OSError, *FAULTS) as e:
        raise JournalError(f"{path}: cannot create the journal: {getattr(e, 'strerror', None) or e}") from e
    finally:
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)


def _recognise(path: Path, timeout: float) -> int:
    """The schema version of the file at the path, read without writing to it (cuzk.service.journal's
    docstring)."""
    _check_header(path)
    sidecar = any(os.path.lexists(f"{path}{s}") for s in ("-wal", "-journal"))
    uri = path.absolute().as_uri() + ("?mode=ro" if sidecar else "?mode=ro&immutable=1")
    try:
        conn = _connect(uri, True, timeout)
    except FAULTS as e:
        raise JournalError(f"{path}: cannot open the journal: {fault(e)}") from e
    try:
        version = _identify(path, conn)
        problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    except FAULTS as e:
        raise JournalError(f"{path}: not a usable SQLite database ({fault(e)})") from e
    finally:
        conn.close()
    if problem != "ok":
        first = " ".join(str(problem).replace("*** in database main ***", "").split())
        raise JournalError(f"{path}: a damaged SQLite file (quick_check: {first[:120]})")
    return version


def _check_header(path: Path) -> None:
    """JournalError unless the path is a regular file that starts with SQLite's header and carries
    cuzk's application_id (or none, as schema 1 did)."""
    try:
        with open_regular(path) as (fd, st):
            if not is_regular(st):
                raise JournalError(f"{path}: not a regular file, so not a cuzk journal")
            if st.st_size == 0:
                raise JournalError(f"{path}: an empty file (0 bytes), not a cuzk journal; remove it "
                                   "to start a new journal")
            head = bytearray(100)
            got = pread_into(fd, memoryview(head), 0)
    except OSError as e:
        raise JournalError(f"{path}: cannot read the journal: {e.strerror or e}") from e
    if got < len(head) or not head.startswith(_SQLITE_HEADER):
        raise JournalError(f"{path}: not a SQLite database, so not a cuzk journal")
    app = int.from_bytes(head[68:72], "big")
    if app not in (0, APPLICATION_ID):
        raise JournalError(f"{path}: a SQLite database of another application (application_id "
                           f"{app:#010x}), not a cuzk journal")


def _identify(path: Path, conn: sqlite3.Connection) -> int:
    """The schema version in the meta table: JournalError for a database that is not a cuzk journal,
    a newer or unknown version, or tables other than that version's."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        raise JournalError(f"{path}: a SQLite database, but not a cuzk journal (no meta table)")
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("application") != APPLICATION:
        raise JournalError(f"{path}: a SQLite database, but not a cuzk journal")
    version = meta.get("schema_version")
    if not isinstance(version, str) or not re.fullmatch("[0-9]{1,9}", version):
        raise JournalError(f"{path}: unreadable journal schema version {quote(version)}")
    if int(version) > SCHEMA_VERSION:
        raise JournalError(f"{path}: journal schema version {version} is newer than this cuzk supports "
                           f"({SCHEMA_VERSION}); use a newer cuzk")
    if int(version) < 1:
        raise JournalError(f"{path}: unknown old journal schema version {version}")
    for table, columns in _COLUMNS.items():
        if int(version) == 1:
            columns = tuple(c for c in columns if c not in _ADDED_IN_2.get(table, ()))
        got = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))
        if got != columns:
            raise JournalError(f"{path}: a cuzk journal whose {table} table is missing or not that of "
                               f"schema {version} (damaged)")
    return int(version)


def _setup(path: Path, conn: sqlite3.Connection, version: int) -> None:
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise JournalError(f"{path}: the file system does not allow SQLite's WAL mode (got {mode!r})")
    conn.execute("PRAGMA synchronous=FULL")
    if version < SCHEMA_VERSION:
        _migrate(path, conn)


def _migrate(path: Path, conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2 in one transaction (cuzk.service.journal's docstring); nothing when another process
    did it first."""
    conn.create_function("cuzk_sha256", 1, sha256_or_none, deterministic=True)
    conn.create_function("cuzk_row_sha256", len(DIGESTED), digest_values, deterministic=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _identify(path, conn) == 1:
            for table in ROW_TABLES:
                _rebuild(conn, table)
            conn.execute(_CREATE["quarantine"])
            conn.execute("UPDATE jobs SET result_sha256 = cuzk_sha256(result)")
            conn.execute(f"UPDATE jobs SET row_sha256 = cuzk_row_sha256({', '.join(DIGESTED)})")
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            log.info("journal %s: migrated from schema 1 to %d", path, SCHEMA_VERSION)
        conn.execute("COMMIT")
    except BaseException:
        with suppress(*FAULTS):
            conn.execute("ROLLBACK")
        raise


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
