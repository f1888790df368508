"""The surfaces of the files a daemon keeps and the requests it reads: the job journal (a SQLite file),
the SubmitProof payload (curio's C1 wrapper JSON or a plain C1 JSON), a PCE file and the configuration
file. Registered in surfaces.SURFACES; their seeds are made by surfaces.build_seeds (build_state_seeds).
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import struct
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.errors import ConfigError, CuzkError, InputError, PceFileError

from .mutators import (FILE_KINDS, IS_ROOT, Mutation, NotStrictJson, make_kind, mutate_bytes, mutate_json,
                       mutate_json_text, pick, rbytes, short, strict_loads, toml_dumps, weighted)
from .surfaces import (PY_WEIRD, SIZE_PRESERVING, STEM, Case, Problem, Surface, c1_accept, diff, must_refuse,
                       snapshot, tiny_circuit)

# ---------------------------------------------------------------- seeds

JOURNAL_JOBS = (("porep-1-1", "porep", 2, "queued"), ("porep-1-2", "porep", 2, "running"),
                ("porep-1-3", "porep", 4, "done"), ("snap-4", "snap", 3, "failed"),
                ("porep-1-5", "porep", 2, "cancelled"), ("window-6", "window_post", 1, "queued"))
PCE_IDENTITY = {"shape": STEM, "cuzk_version": "0.0.0+fuzz",
                "circuit_digest": hashlib.sha256(STEM.encode()).hexdigest()}


def journal_payload(request_id: str) -> bytes:
    """A seed job's payload: 6,000 bytes for the running job (an overflow page chain), 300 for the others."""
    n = 6000 if request_id == "porep-1-2" else 300
    return (hashlib.sha256(request_id.encode()).digest() * (n // 32 + 1))[:n]


def build_state_seeds(root: Path, fuzz_seed: int) -> None:
    """A real journal (one job per state, a second queued one, daemon starts and an exit), the small
    circuit's PCE file, and cuzk.example.toml."""
    from cuzk.r1cs.pce import build
    from cuzk.r1cs.pce_file import write_pce
    from cuzk.service.journal import Journal
    ticks = iter(range(1_700_000_000, 1_700_001_000))
    with Journal(root / "journal", clock=lambda: float(next(ticks))) as j:
        for rid, kind, priority, _ in JOURNAL_JOBS:
            j.submit(rid, kind, journal_payload(rid), priority)
        for rid, _, _, final in JOURNAL_JOBS:
            if final in ("running", "done"):
                j.mark_running(rid)
            if final == "done":
                j.finish(rid, b"proof:" + journal_payload(rid)[:186])
            elif final == "failed":
                j.fail(rid, "InputError: bad payload")
            elif final == "cancelled":
                j.cancel(rid)
        j.record_start(100, "0.1.0")
        j.record_exit(100, None, 9, "killed by SIGKILL (out of memory?)", 1 << 30)
        j.record_start(101, "0.1.0")
    write_pce(root / "tiny.pce", PCE_IDENTITY, build(tiny_circuit(fuzz_seed)).to_arrays())
    shutil.copy(Path(__file__).resolve().parents[2] / "cuzk.example.toml", root / "cuzk.toml")


# ---------------------------------------------------------------- journal

SQL_VALUES: list[tuple[str, str, Any]] = [  # (description, SQL expression, its parameter)
    ("NULL", "?", None), ("0", "?", 0), ("-1", "?", -1), ("2**63-1", "?", 2**63 - 1), ("1.5", "?", 1.5),
    ("inf", "?", float("inf")), ("''", "?", ""), ("'x'", "?", "x"), ("'queued'", "?", "queued"),
    ("'done'", "?", "done"), ("'porep'", "?", "porep"), ("'1700000000.5' (text)", "?", "1700000000.5"),
    ("32 zero bytes", "?", bytes(32)), ("X'00'", "?", b"\0"), ("X''", "?", b""), ("a 5000-char text", "?", "x" * 5000),
    ("text that is not UTF-8", "CAST(? AS TEXT)", b"job\xff\xfe"), ("text with a NUL", "?", "a\0b"),
    ("a 100 KB blob", "zeroblob(?)", 100_000),
    ("text with a lone surrogate's bytes", "CAST(? AS TEXT)", b"\xed\xa0\x80"),
]
TABLE_WEIGHTS = {"jobs": 8, "starts": 1, "exits": 1, "meta": 1, "quarantine": 1, "sqlite_sequence": 0.5}
JOURNAL_KINDS = {"kind": 3, "random_bytes": 1, "foreign": 1.5, "empty_sqlite": 0.5, "application_id": 0.5,
                 "schema_version": 1, "truncated": 1, "header": 1.5, "wal_garbage": 1, "wal_directory": 0.5}


@dataclass
class JournalSeen:
    """What one pass over a journal handed out and reported."""

    records: list = field(default_factory=list)  # (where, JobRecord)
    damaged_ids: set = field(default_factory=set)  # request_ids get() or submit() said were damaged
    duplicates: list = field(default_factory=list)  # request_ids whose resubmission was refused as another job's
    starts: list = field(default_factory=list)
    exits: list = field(default_factory=list)
    damaged: list = field(default_factory=list)
    damaged_count: int = 0
    counts: dict = field(default_factory=dict)
    error_lines: int = 0


class _Lines(logging.Handler):
    """Counts the error lines logged."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def table_rows(path: Path, table: str) -> int | None:
    """How many rows `table` holds (a table scan, read-only and immutable: nothing is written beside
    the file), None when SQLite cannot tell."""
    try:
        conn = sqlite3.connect(path.absolute().as_uri() + "?mode=ro&immutable=1", uri=True)
        try:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table} NOT INDEXED").fetchone()[0])
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError):  # the latter: an error message quoting damaged schema text
        return None


class JournalFile(Surface):
    """cuzk.service.journal.Journal on a damaged copy of a real journal: bytes of the file or of one page,
    one column of one row changed through sqlite3, rows deleted, copied or swapped, or another file at
    its path. Opening it and reading everything (counts, unfinished, get of every job, starts, exits,
    damaged) and running a new job to its end may only raise JournalError subclasses. What it hands out
    is exactly what the journal wrote (a running job requeued by unfinished), never a quarantined
    request_id; every job of the file is counted or quarantined, each quarantine logged in one line;
    a refusal at open leaves the file as it was."""

    name, count, timeout = "journal", 300, 20.0

    def expected(self) -> dict[str, Any]:
        """The seed journal's records after unfinished() (read from a copy: opening writes)."""
        def make() -> dict[str, Any]:
            from cuzk.service.journal import Journal
            with tempfile.TemporaryDirectory() as tmp:
                shutil.copytree(self.seeds.root / "journal", Path(tmp) / "state")
                with Journal(Path(tmp) / "state") as j:
                    j.unfinished()
                    return {rid: j.get(rid) for rid, *_ in JOURNAL_JOBS}
        return self.seeds.get("journal_expected", make)

    def warm(self) -> None:
        self.expected()

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        state = scratch / "state"
        shutil.copytree(self.seeds.root / "journal", state)
        path = state / "journal.sqlite3"
        op = weighted(rng, {"bytes": 3, "page": 4, "column": 6, "rows": 2, "kind": 2})
        expected = dict(self.expected())
        if op in ("bytes", "page"):
            raw = path.read_bytes()
            page = int(rng.integers(len(raw) // 4096))
            for _ in range(20):
                m = (mutate_bytes(rng, raw) if op == "bytes" else
                     mutate_bytes(rng, raw, SIZE_PRESERVING, region=(page * 4096, (page + 1) * 4096)))
                if m.value != raw:
                    break
            path.write_bytes(m.value)
            desc = f"file: {m.desc}" + (f" (page {page + 1})" if op == "page" else "")
        elif op == "column":
            desc = self._column(rng, path)
        elif op == "rows":
            desc, gone = self._rows(rng, path)
            for rid in gone:
                expected.pop(rid, None)
        else:
            desc, expected = self._kind(rng, state, path, expected)
        return self._case(desc, state, path, expected)

    def _column(self, rng: np.random.Generator, path: Path) -> str:
        table = weighted(rng, TABLE_WEIGHTS)
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            if table == "quarantine":  # the seed has none: one quarantined row, one of its columns changed
                conn.execute("INSERT INTO quarantine (found_at, source, row_id, request_id, reason, original) "
                             "VALUES (1700000500.0, 'jobs', 99, 'gone-99', 'a done job without result', X'7B7D')")
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]
            column, rowid = pick(rng, columns), pick(rng, rowids)
            if rng.random() < 0.15 and len(rowids) > 1:
                other = pick(rng, [r for r in rowids if r != rowid])
                what, expr, params = f"row {other}'s value", f"(SELECT {column} FROM {table} WHERE rowid = ?)", (other,)
            else:
                what, expr, param = pick(rng, SQL_VALUES)
                params = (param,)
            try:
                conn.execute(f"UPDATE {table} SET {column} = {expr} WHERE rowid = ?", (*params, rowid))
            except sqlite3.Error as e:
                return f"column {table}.{column} of row {rowid} := {what}: refused by SQLite ({e}), unchanged"
        finally:
            conn.close()
        return f"column {table}.{column} of row {rowid} := {what}"

    def _rows(self, rng: np.random.Generator, path: Path) -> tuple[str, list[str]]:
        """Whole rows deleted, copied or swapped; the request_ids of deleted jobs."""
        op = weighted(rng, {"delete_job": 1, "copy_job": 1, "swap_payloads": 1, "delete_start": 0.5,
                            "drop_table": 0.5, "delete_meta": 0.5})
        a, b = (JOURNAL_JOBS[int(i)][0] for i in rng.choice(len(JOURNAL_JOBS), 2, replace=False))
        sql, params = {
            "delete_job": ("DELETE FROM jobs WHERE request_id = ?", (a,)),
            "copy_job": ("INSERT INTO jobs (request_id, kind, payload, payload_sha256, priority, state, attempts, "
                         "submitted_at, started_at, ended_at, result, result_sha256, error, row_sha256) SELECT "
                         "'copy-of-' || request_id, kind, payload, payload_sha256, priority, state, attempts, "
                         "submitted_at, started_at, ended_at, result, result_sha256, error, row_sha256 FROM jobs "
                         "WHERE request_id = ?", (a,)),
            "swap_payloads": ("UPDATE jobs SET (payload, payload_sha256) = (SELECT payload, payload_sha256 FROM "
                              "jobs WHERE request_id = ?) WHERE request_id = ?", (b, a)),
            "delete_start": ("DELETE FROM starts WHERE id = 1", ()),
            "drop_table": (f"DROP TABLE {pick(rng, ['quarantine', 'exits', 'jobs'])}", ()),
            "delete_meta": (f"DELETE FROM meta WHERE key = '{pick(rng, ['application', 'schema_version'])}'", ()),
        }[op]
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute(sql, params)
        finally:
            conn.close()
        return f"rows: {op} ({a}, {b}): {short(sql, 60)}", [a] if op == "delete_job" else []

    def _kind(self, rng: np.random.Generator, state: Path, path: Path,
              expected: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Another file at the journal's path (or beside it); the records a journal there must give."""
        kind = weighted(rng, JOURNAL_KINDS)
        if kind == "kind":
            kinds = {k: v for k, v in FILE_KINDS.items() if k not in ("below_file", "sparse_huge")}
            _, desc = make_kind(rng, path, weighted(rng, kinds))
            return desc, {} if desc == "file: missing" else expected
        if kind == "random_bytes":
            path.write_bytes(rbytes(rng, int(pick(rng, [1, 100, 4096, 20000]))))
        elif kind in ("foreign", "empty_sqlite", "application_id"):
            path.unlink()
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute(f"PRAGMA journal_mode={pick(rng, ['delete', 'wal'])}")
            statements = {"foreign": ["CREATE TABLE meta (key TEXT, value TEXT)",
                                      "INSERT INTO meta VALUES ('application', 'cuzk-journa1')"],
                          "empty_sqlite": ["PRAGMA user_version = 7"],
                          "application_id": ["PRAGMA application_id = 42", "CREATE TABLE jobs (x)"]}[kind]
            for sql in statements:
                conn.execute(sql)
            conn.close()
        elif kind == "schema_version":
            value = pick(rng, ["3", "0", "", "2.0", "x", "99999999999"])
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
            conn.close()
            kind = f"schema_version {value!r}"
        elif kind == "truncated":
            size = path.stat().st_size
            cut = int(pick(rng, [100, 4096, size // 2, size - 4096, size - 1]))
            os.truncate(path, cut)
            kind = f"truncated to {cut} of {size} bytes"
        elif kind == "header":
            raw = path.read_bytes()
            m = mutate_bytes(rng, raw, SIZE_PRESERVING, region=(0, 100))
            path.write_bytes(m.value)
            kind = f"header: {m.desc}"
        elif kind == "wal_garbage":
            (state / "journal.sqlite3-wal").write_bytes(rbytes(rng, int(pick(rng, [32, 4096 + 24, 9000]))))
        else:
            (state / "journal.sqlite3-wal").mkdir()
        return f"the file: {kind}", expected

    def _case(self, desc: str, state: Path, path: Path, expected: dict[str, Any]) -> Case:
        from cuzk.service.journal import Journal, JournalError
        before = snapshot(state)
        counted = path.is_file()  # (not a FIFO: opening one would block)
        rows_before = ((table_rows(path, "jobs"), table_rows(path, "quarantine")) if counted else
                       (0, 0) if not os.path.lexists(path) else (None, None))
        opened: list[bool] = []

        def call() -> JournalSeen:
            lines = _Lines()
            logger = logging.getLogger("cuzk.journal")
            logger.addHandler(lines)
            try:
                with Journal(state, busy_timeout_s=1.0) as j:
                    opened.append(True)
                    seen = read_journal(j, expected)
            finally:
                logger.removeHandler(lines)
            seen.error_lines = lines.count
            return seen

        def accept(seen: JournalSeen) -> list[Problem]:
            return journal_problems(seen, expected, *rows_before)

        def refuse(e: CuzkError) -> list[Problem]:
            if not isinstance(e, JournalError):
                return [("not JournalError", f"{type(e).__name__}: {short(str(e), 100)}")]
            after = {k: v for k, v in snapshot(state).items() if not k.endswith("-shm")}
            if not opened and after != before:
                return [("input changed", f"refused at open ({short(str(e), 60)}), but {diff(before, after)}")]
            return []
        return Case(desc, call, accept, refuse, label=lambda seen: "quarantined" if seen.damaged else "accepted")


def read_journal(j: Any, expected: dict[str, Any]) -> JournalSeen:
    """What a daemon reads from a journal, in a daemon's order (counts, unfinished, get and a resubmission
    of every job, starts, exits), a new job run to its end, then damaged and counts."""
    from cuzk.service.journal import DamagedJobError, DuplicateRequestError
    seen = JournalSeen()
    j.counts()
    seen.records += [("unfinished", r) for r in j.unfinished()]
    for rid in [*expected, "copy-of-porep-1-1", "gone-99"]:
        try:
            rec = j.get(rid)
            if rec is not None:
                seen.records.append(("get", rec))
            if rid in expected:  # a job whose row is gone (its request_id damaged) comes back as a new job
                want = expected[rid]
                seen.records.append(("submit" if rec else "resubmitted",
                                     j.submit(rid, want.kind, want.payload, want.priority)))
        except DamagedJobError:
            seen.damaged_ids.add(rid)
        except DuplicateRequestError:
            seen.duplicates.append(rid)
    seen.starts, seen.exits = j.starts(), j.exits()
    j.submit("fuzz-new", "porep", b"new payload", 2)
    j.mark_running("fuzz-new")
    j.finish("fuzz-new", b"new proof")
    seen.records.append(("new", j.get("fuzz-new")))
    seen.damaged, seen.damaged_count = j.damaged(limit=1000), j.damaged_count()
    seen.counts = j.counts()
    return seen


def journal_problems(seen: JournalSeen, expected: dict[str, Any], jobs_before: int | None,
                     quarantined_before: int | None) -> list[Problem]:
    """The journal surface's oracle (JournalFile); the row counts are the file's before the call (None
    where SQLite could not count them)."""
    if seen.duplicates:
        return [("refused", f"{seen.duplicates[0]} resubmitted as written, refused as another job's")]
    damaged_ids = seen.damaged_ids | {d.request_id for d in seen.damaged}
    for where, rec in seen.records:
        if rec.request_id in damaged_ids:
            return [("handed out", f"{where}: {rec.request_id} handed out, and reported damaged")]
        if where == "resubmitted":
            want = expected[rec.request_id]
            if (rec.payload, rec.kind, rec.state, rec.attempts, rec.seq <= len(JOURNAL_JOBS)) != (
                    want.payload, want.kind, "queued", 0, False):
                return [("handed out", f"a resubmission of {rec.request_id} came back as {short(rec, 80)}")]
        elif rec.request_id == "fuzz-new":
            if (rec.payload, rec.state, rec.result) != (b"new payload", "done", b"new proof"):
                return [("handed out", f"{where}: the new job came back as {short(rec, 80)}")]
        elif rec.request_id not in expected:
            return [("handed out", f"{where}: {short(rec.request_id, 40)}, a job the journal never wrote")]
        elif rec != expected[rec.request_id]:
            return [("handed out", f"{where}: {rec.request_id} is not what the journal wrote: {short(rec, 60)}")]
    if seen.damaged_count != len(seen.damaged):
        return [("damaged count", f"damaged_count {seen.damaged_count}, damaged() lists {len(seen.damaged)}")]
    bad = [d for d in seen.damaged if not (isinstance(d.reason, str) and d.reason and isinstance(d.row_id, int))]
    if bad:
        return [("damaged row", f"an unreadable DamagedRow: {short(bad[0], 80)}")]
    for r in [*seen.starts, *seen.exits]:
        if type(r.pid) is not int or r.pid < 1 or type(r.at) is not float:
            return [("handed out", f"a damaged daemon record: {short(r, 80)}")]
    if quarantined_before is None:
        return []
    found = seen.damaged[:seen.damaged_count - quarantined_before]  # newest first: those of this call
    if seen.error_lines != len(found):
        return [("log lines", f"{seen.error_lines} error lines for {len(found)} rows quarantined")]
    counted, quarantined = sum(seen.counts.values()), sum(d.table == "jobs" for d in found)
    added = 1 + sum(where == "resubmitted" for where, _ in seen.records)
    if jobs_before is not None and counted + quarantined != jobs_before + added:
        return [("dropped", f"{jobs_before} job rows and {added} new, but {counted} counted and {quarantined} "
                            "quarantined")]
    return []


# ---------------------------------------------------------------- daemon payload

def payload_meaning(data: bytes) -> Any:
    """The C1 JSON value a strict reader finds in a payload: the wrapper's Phase1Out decoded (its
    SectorNum and SectorSize u64 integers, SectorSize 0 or the C1's, no other key), or the document;
    None where a strict reader must refuse."""
    try:
        outer = strict_loads(data)
    except NotStrictJson:
        return None
    if not (isinstance(outer, dict) and "Phase1Out" in outer):
        return outer
    if set(outer) - {"SectorNum", "Phase1Out", "SectorSize"} or not isinstance(outer["Phase1Out"], str):
        return None
    sizes = [outer.get(k, 0) for k in ("SectorNum", "SectorSize")]
    if not all(type(v) is int and 0 <= v < 1 << 64 for v in sizes) or sizes[1] not in (0, 2048):
        return None
    try:
        return strict_loads(base64.b64decode(outer["Phase1Out"], validate=True))
    except (ValueError, NotStrictJson):
        return None


class DaemonPayload(Surface):
    """cuzk.service.payload.parse_porep of curio's C1 wrapper JSON (the wrapper, its Phase1Out's base64
    or the C1 inside mutated) and of a plain C1 JSON: only InputError subclasses may come out; a result
    is the original C1 from an input of the same meaning, or fails vanilla verification."""

    name, count, timeout = "payload", 250, 15.0

    def wrapper(self) -> bytes:
        def make() -> bytes:
            from cuzk.porep.c1 import C1Output
            from cuzk.service.payload import wrap
            return wrap(C1Output.loads(self.seeds.bytes("c1.json")), self.seeds.ids[1])
        return self.seeds.get("wrapper", make)

    def warm(self) -> None:
        from cuzk.service.payload import parse_porep
        assert parse_porep(self.wrapper()).dumps() == self.seeds.c1_dump

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.service.payload import parse_porep
        target = weighted(rng, {"wrapper_json": 2, "wrapper_text": 2, "inner_json": 2, "inner_text": 2,
                                "base64": 1, "plain_json": 1.5, "plain_text": 1.5, "sizes": 0.7, "type": 0.3})
        sector_size, lenient = 0, False
        if target == "type":
            value, name = pick(rng, PY_WEIRD)
            return Case(f"payload is {name}", lambda: parse_porep(value), must_refuse(f"{name} as a payload"),
                        _only_input_errors)
        wrapper, c1_text = self.wrapper(), self.seeds.bytes("c1.json")
        outer = json.loads(wrapper)
        if target == "sizes":
            outer["SectorSize"] = int(pick(rng, [0, 2048, 4096, 8 << 20, 2**64 - 1]))
            sector_size = int(pick(rng, [0, 0, 2048, 4096, 32 << 30]))
            data, desc = json.dumps(outer).encode(), f"SectorSize {outer['SectorSize']}, sector_size {sector_size}"
        else:
            for _ in range(20):
                m = self._mutation(rng, target, wrapper, outer, c1_text)
                if m.value != wrapper and m.value != c1_text:
                    break
            data, desc, lenient = m.value, f"{target}: {m.desc}", m.lenient
        accept = c1_accept(self.seeds, payload_meaning(data), lenient)

        def accept_sized(c1: Any) -> list[Problem]:
            if sector_size not in (0, 2048):
                return [("accepted", f"a 2KiB C1 accepted for sector_size {sector_size}")]
            return accept(c1)
        return Case(desc, lambda: parse_porep(data, sector_size), accept_sized, _only_input_errors)

    def _mutation(self, rng: np.random.Generator, target: str, wrapper: bytes, outer: dict, c1_text: bytes) -> Mutation:
        def wrapped(inner: bytes, desc: str, lenient: bool = False) -> Mutation:
            return Mutation(json.dumps(dict(outer, Phase1Out=base64.b64encode(inner).decode())).encode(), desc, lenient)
        if target == "wrapper_json":
            return _dumped(mutate_json(rng, outer, lenient_keys=()))
        if target == "wrapper_text":
            return mutate_json_text(rng, wrapper)
        if target == "inner_json":
            m = _dumped(mutate_json(rng, self.seeds.c1_obj))
            return wrapped(m.value, f"Phase1Out {m.desc}", m.lenient)
        if target == "inner_text":
            m = mutate_json_text(rng, c1_text)
            return wrapped(m.value, f"Phase1Out {m.desc}", m.lenient)
        if target == "base64":
            m = mutate_bytes(rng, outer["Phase1Out"].encode())
            return Mutation(json.dumps(dict(outer, Phase1Out=m.value.decode("latin-1"))).encode(),
                            f"Phase1Out's base64: {m.desc}")
        if target == "plain_json":
            return _dumped(mutate_json(rng, self.seeds.c1_obj))
        return mutate_json_text(rng, c1_text)


def _dumped(m: Mutation) -> Mutation:
    try:
        return Mutation(json.dumps(m.value).encode(), m.desc, m.lenient)
    except (ValueError, RecursionError):
        return Mutation(b"[", m.desc + " (unserialisable: '[')")


def _only_input_errors(e: CuzkError) -> list[Problem]:
    if isinstance(e, InputError):
        return []
    return [("not InputError", f"{type(e).__name__}: {short(str(e), 100)}")]


# ---------------------------------------------------------------- PCE files

class PceFiles(Surface):
    """cuzk.r1cs.pce_file read_pce / read_header / build_or_load of a damaged copy of the small circuit's
    PCE file (bytes anywhere, in the header, in a section; the format version; the file kind; the lock
    path; the header rewritten with a valid checksum, a forgery read as it says if it holds together):
    only PceFileError or InputError may come out; what is read is the original arrays (and header)."""

    name, count, timeout = "pce", 250, 15.0

    def original(self) -> dict[str, np.ndarray]:
        from cuzk.r1cs.pce_file import read_pce
        return self.seeds.get("pce_arrays", lambda: read_pce(self.seeds.root / "tiny.pce", PCE_IDENTITY))

    def warm(self) -> None:
        self.original()

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.r1cs import pce_file as F
        path = scratch / "tiny.pce"
        raw = self.seeds.bytes("tiny.pce")
        path.write_bytes(raw)
        header = self.seeds.get("pce_header", lambda: F.read_header(self.seeds.root / "tiny.pce"))
        op = weighted(rng, {"bytes": 3, "header_bytes": 2, "header_json": 3, "section": 2, "version": 0.5,
                            "kind": 1, "lock": 1})
        if op == "kind":
            path, desc = make_kind(rng, path, weighted(rng, {k: v for k, v in FILE_KINDS.items() if k != "dev_zero"}))
        elif op == "lock":
            kind = weighted(rng, {"directory": 2, "fifo": 1, "symlink_loop": 1, "dangling_symlink": 0.5,
                                  "unreadable": 0 if IS_ROOT else 1, "dev_null": 0.5})
            _, d = make_kind(rng, path.with_name(path.name + ".lock"), kind)
            desc = f"lock {d}"
        else:
            data, desc = self._bytes(rng, op, raw, header)
            path.write_bytes(data)
        forged = op == "header_json"  # a header with a valid checksum: read as it says if it holds together
        call_kind = weighted(rng, {"read_pce": 5, "read_header": 2, "build_or_load": 3})
        original = self.original()
        warned: list[str] = []

        def call() -> Any:
            if call_kind == "read_pce":
                return F.read_pce(path, PCE_IDENTITY)
            if call_kind == "read_header":
                return F.read_header(path)
            return F.build_or_load(path, PCE_IDENTITY, lambda: original, warn=warned.append)

        def accept(result: Any) -> list[Problem]:
            if forged:
                return []
            if call_kind == "read_header":
                return [] if result == header else [("accepted", f"another header: {short(result, 60)}")]
            if not (list(result) == list(original) and all(
                    result[k].dtype == a.dtype and result[k].shape == a.shape and np.array_equal(result[k], a)
                    for k, a in original.items())):
                return [("accepted", f"{call_kind} returned arrays that are not the original")]
            if len(warned) > 1:
                return [("warnings", f"{len(warned)} warning lines: {short(warned, 80)}")]
            return []

        def refuse(e: CuzkError) -> list[Problem]:
            if not isinstance(e, (PceFileError, InputError)):
                return [("not PceFileError", f"{type(e).__name__}: {short(str(e), 100)}")]
            return []
        watched = [path] if call_kind != "build_or_load" and os.path.lexists(path) else []
        return Case(f"{call_kind}: {desc}", call, accept, refuse, watched=watched)

    def _bytes(self, rng: np.random.Generator, op: str, raw: bytes, header: Any) -> tuple[bytes, str]:
        """Changed file bytes: anywhere, in the header, a section, the version, or a new header JSON
        with a valid checksum."""
        from cuzk.r1cs import pce_file as F
        end = header.header_end
        if op == "header_json":
            length = struct.unpack_from("<I", raw, 12)[0]
            m = mutate_json(rng, json.loads(raw[16:16 + length]))
            try:
                text = F._canonical(m.value) if rng.random() < 0.7 else json.dumps(m.value).encode()
            except (ValueError, RecursionError):
                text = b"[" * 5000
            head = struct.pack("<8sII", F.MAGIC, F.FORMAT_VERSION, len(text)) + text
            return head + F._header_digest(head) + raw[end:], f"header JSON (resealed) {m.desc}"
        if op == "version":
            v = int(pick(rng, [0, 2, 0xFFFFFFFF]))
            return raw[:8] + struct.pack("<I", v) + raw[12:], f"format version {v}"
        region = {"bytes": None, "header_bytes": (0, end)}.get(op)
        if op == "section":
            s = pick(rng, [s for s in header.sections if s.nbytes])
            region, op = (s.offset, s.offset + s.nbytes), f"section {s.name}"
        for _ in range(20):
            m = mutate_bytes(rng, raw, SIZE_PRESERVING if op.startswith("section") else None, region=region)
            if m.value != raw:
                break
        return m.value, f"{op}: {m.desc}"


# ---------------------------------------------------------------- configuration file

TOML_WEIRD: list[tuple[Any, str]] = [
    (-1, "-1"), (0, "0"), (2**63 - 1, "2**63-1"), (2**64, "2**64"), (1.5, "1.5"), (float("nan"), "nan"),
    (float("inf"), "inf"), (-0.0, "-0.0"), (True, "true"), ("", '""'), ("x" * 5000, "5000 x"), ("a\0b", "a NUL"),
    ("/tmp/\0x", "a path with a NUL"), ("~nobody-here/x", "~user path"), ("-5GiB", '"-5GiB"'), ("1.5T", '"1.5T"'),
    ("18446744073709551616", "2**64 as text"), ("99999ZiB", '"99999ZiB"'), ("0x10", '"0x10"'),
    ("\ud800", "a lone surrogate"),
    ([], "[]"), ([0, 0], "[0, 0]"), ([-1], "[-1]"), ([256], "[256]"), (["0"], '["0"]'), ({"a": 1}, "{a = 1}"),
    (datetime.date(2020, 1, 1), "a date"), ("unix://" + "x" * 200, "a long socket path"),
    ("0.0.0.0:99999", "a port over 65535"), ("5m", '"5m"'), ("1h", '"1h"'), ("-1s", '"-1s"'), ("auto", '"auto"'),
]
TOML_TEXT = [b"[gpus]\ndevices = [0]\n[gpus]\n", b"[[pipeline]]\n", b"a.b.c.d = 1\n",
             b"x = " + b"[" * 2000 + b"]" * 2000,
             b"[daemon]\nlisten = 'unix:///a\x00b'\n", b"\xef\xbb\xbf", b"[memory]\nhost_cap = '1GiB'\nhost_cap = 2\n",
             b"[srs]\nparam_cache = '/dev/null'\n", b'[gpus]\n"devices" = []\ndevices = []\n', b"= 1\n", b"[]\n"]


class ConfigFile(Surface):
    """cuzk.engine.config.load_config of a changed copy of cuzk.example.toml: its text (bytes, TOML of
    its own: duplicate tables or keys, arrays of tables, deep nesting, NULs), one value of the wrong
    type or range, an unknown, renamed or missing key or table, or the file kind: only ConfigError."""

    name, count, timeout = "config", 250, 10.0

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.engine.config import load_config
        raw = self.seeds.bytes("cuzk.toml")
        doc = tomllib.loads(raw.decode())
        path = scratch / "cuzk.toml"
        op = weighted(rng, {"value": 5, "key": 2, "text": 2, "toml": 1.5, "kind": 1})
        filled = sorted(t for t in doc if doc[t])
        if op == "value":
            table = pick(rng, filled)
            key = pick(rng, sorted(doc[table]))
            alike = [w for w in TOML_WEIRD if type(w[0]) is type(doc[table][key])]  # mostly of the key's type
            value, name = pick(rng, alike if alike and rng.random() < 0.6 else TOML_WEIRD)
            doc[table][key] = value
            data, desc = toml_dumps(doc).encode("utf-8", "surrogatepass"), f"{table}.{key} = {name}"
        elif op == "key":
            table = pick(rng, filled)
            change = pick(rng, ["unknown key", "unknown table", "delete table", "rename key", "table as value"])
            if change == "unknown key":
                doc[table]["no_such_key"] = 1
            elif change == "unknown table":
                doc["no_such_table"] = {"x": 1}
            elif change == "delete table":
                del doc[table]
            elif change == "rename key":
                key = pick(rng, sorted(doc[table]))
                doc[table][key.upper()] = doc[table].pop(key)
            else:
                doc[table] = 7
            data, desc = toml_dumps(doc).encode(), f"{change} ({table})"
        elif op == "text":
            m = mutate_bytes(rng, raw)
            data, desc = m.value, f"text: {m.desc}"
        elif op == "toml":
            extra = pick(rng, TOML_TEXT)
            data, desc = (extra + raw if rng.random() < 0.3 else raw + b"\n" + extra), f"TOML {short(extra, 40)}"
        else:
            path.write_bytes(raw)
            path, desc = make_kind(rng, path, huge=(1 << 20) + 1)
            accept = _config_accept if desc == "file: empty" else must_refuse("a config file read")  # empty: defaults
            return Case(f"the file: {desc}", lambda: load_config(path), accept, _only_config_errors)
        path.write_bytes(data)
        return Case(desc, lambda: load_config(path), _config_accept, _only_config_errors, watched=[path])


def _config_accept(result: Any) -> list[Problem]:
    from cuzk.engine.config import EngineConfig
    if not isinstance(result, EngineConfig):
        return [("accepted", f"load_config returned {type(result).__name__}")]
    return []


def _only_config_errors(e: CuzkError) -> list[Problem]:
    if isinstance(e, ConfigError):
        return []
    return [("not ConfigError", f"{type(e).__name__}: {short(str(e), 100)}")]


STATE_SURFACES: list[type[Surface]] = [JournalFile, DaemonPayload, PceFiles, ConfigFile]
