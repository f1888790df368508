"""Memory budgets: the host RAM limit this process lives under, and a reservation ledger that never
hands out more than its total.

host_limit() finds the host RAM total as the smallest of: the configured cap (memory.host_cap: what
protects against a watchdog the kernel does not know about), the cgroup limit of this process (v2
memory.max, v1 memory.limit_in_bytes; the smallest along the path from its cgroup up to the root) and
MemTotal of /proc/meminfo. A source that is absent, unlimited or unreadable is ignored and recorded
as such; HostLimit keeps every source and names the one that won.

MemoryBudget is the ledger. Every work item reserves what it will use before it starts, and holds
the Reservation until it is done (shrinking it as parts are freed). Admission is strict FIFO: a
request is admitted only when every earlier request still waiting has been admitted (or has timed
out) and it fits, so a large request is never starved by a stream of small ones, at the price of
small ones waiting behind it. A request larger than the whole budget fails at once
(BudgetExceededError); one that finds no room within its timeout fails with BudgetTimeoutError. An
evictor (set_evictor) may make room for the request at the head by releasing cached reservations.
"""
from __future__ import annotations

import numbers
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from cuzk.errors import BudgetError, BudgetExceededError, BudgetTimeoutError, InputError, format_size

CAP = "memory.host_cap"
CGROUP_V2 = "cgroup v2 memory.max"
CGROUP_V1 = "cgroup v1 memory.limit_in_bytes"
MEMTOTAL = "MemTotal"
EVICT_RETRY_S = 1.0  # how often a request short of room asks the evictor again
V1_UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as a huge number (9223372036854771712 on 4 KiB pages)


@dataclass(frozen=True)
class LimitSource:
    """One place a host memory limit can come from: `bytes` is its limit (None: no limit there) and
    `note` what was found (the file that set it, "not set", "no limit", "unreadable: ...")."""

    name: str
    bytes: int | None
    note: str


@dataclass(frozen=True)
class HostLimit:
    """The host RAM total (`total` bytes, from the source named `source`) and every source consulted,
    for a log line (describe) or status JSON (dataclasses.asdict)."""

    total: int
    source: str
    sources: tuple[LimitSource, ...]

    def describe(self) -> str:
        """E.g. "48.00 GiB from memory.host_cap (memory.host_cap: 48.00 GiB; cgroup v2 memory.max: no
        limit ...; MemTotal: 251.50 GiB)"."""
        parts = "; ".join(f"{s.name}: {format_size(s.bytes) if s.bytes is not None else s.note}"
                          for s in self.sources)
        return f"{format_size(self.total)} from {self.source} ({parts})"


def host_limit(cap_bytes: int | None, *, proc_root: str | Path = "/proc",
               cgroup_root: str | Path = "/sys/fs/cgroup") -> HostLimit:
    """The host RAM limit of this process (see the module docstring); the configured cap wins ties.
    Raises BudgetError when no source gives a limit."""
    if cap_bytes is not None and (not _is_int(cap_bytes) or cap_bytes <= 0):
        raise InputError(f"{CAP} must be a positive integer of bytes or None, got {cap_bytes!r}")
    proc = Path(proc_root)
    sources = [LimitSource(CAP, None, "not set") if cap_bytes is None else LimitSource(CAP, int(cap_bytes), "set"),
               *_cgroup_limits(proc, Path(cgroup_root)), _memtotal(proc)]
    found = [s for s in sources if s.bytes is not None]
    if not found:
        raise BudgetError("no host memory limit found (" + "; ".join(f"{s.name}: {s.note}" for s in sources)
                          + f"): set {CAP}")
    winner = min(found, key=lambda s: s.bytes)
    return HostLimit(winner.bytes, winner.name, tuple(sources))


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _unreadable(error: Exception) -> str:
    return f"unreadable ({error.strerror if isinstance(error, OSError) and error.strerror else error})"


def _memtotal(proc: Path) -> LimitSource:
    path = proc / "meminfo"
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemTotal:"):
                value, unit = line.split()[1:3]
                if unit != "kB":
                    raise ValueError(f"unexpected unit {unit!r}")
                return LimitSource(MEMTOTAL, int(value) << 10, str(path))
        return LimitSource(MEMTOTAL, None, f"no MemTotal line in {path}")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return LimitSource(MEMTOTAL, None, f"{path} " + _unreadable(e))


def _cgroup_limits(proc: Path, root: Path) -> list[LimitSource]:
    """The v2 and v1 memory limits of this process's cgroups (one entry each for the hierarchies it
    is in; both in a hybrid setup)."""
    path = proc / "self" / "cgroup"
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        return [LimitSource("cgroup", None, f"{path} " + _unreadable(e))]
    out = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, cgroup = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            out.append(_walk(root, cgroup, "memory.max", CGROUP_V2))
        elif "memory" in controllers.split(","):
            out.append(_walk(root / "memory", cgroup, "memory.limit_in_bytes", CGROUP_V1))
    return out or [LimitSource("cgroup", None, f"no memory cgroup in {path}")]


def _walk(base: Path, cgroup: str, filename: str, name: str) -> LimitSource:
    """The smallest limit in `filename` from the cgroup's directory under `base` up to the root."""
    best: tuple[int, Path] | None = None
    notes = []
    directory = PurePosixPath("/", cgroup)
    for level in (directory, *directory.parents):
        path = base / str(level).lstrip("/") / filename
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as e:
            notes.append(f"{path} " + _unreadable(e))
            continue
        if text == "max":
            continue
        if not text.isdigit():
            notes.append(f"{path} unreadable (unexpected content {text[:40]!r})")
            continue
        value = int(text)
        if value < V1_UNLIMITED and (best is None or value < best[0]):
            best = (value, path)
    if best is not None:
        return LimitSource(name, best[0], "; ".join([str(best[1]), *notes]))
    return LimitSource(name, None, "; ".join(notes) or f"no limit from {base / cgroup.lstrip('/')} up to the root")


class Reservation:
    """Bytes held in a MemoryBudget by one work item (`what`) since `since` (time.monotonic()): a
    context manager that releases on exit. release() is idempotent; shrink() hands part back
    (shrinking to 0 releases). Growing is not offered: more bytes go through reserve(), in turn."""

    def __init__(self, budget: MemoryBudget, what: str, nbytes: int) -> None:
        self.budget, self.what, self.bytes, self.since = budget, what, nbytes, time.monotonic()
        self.released = False

    def release(self) -> None:
        """Give every byte back (nothing happens the second time)."""
        self.budget._give_back(self, 0)

    def shrink(self, to_bytes: int) -> None:
        """Keep only `to_bytes` (0 <= to_bytes <= bytes held); the rest goes back to the budget."""
        self.budget._give_back(self, to_bytes)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else format_size(self.bytes)
        return f"Reservation({self.what!r}, {state}, of {self.budget.name})"


@dataclass
class _Waiter:
    what: str
    nbytes: int
    since: float


class MemoryBudget:
    """A thread-safe ledger of `total_bytes` named `name` (e.g. "host RAM", "GPU 0 VRAM"); `source`
    says where the total came from, for messages. Reserved bytes never exceed the total; admission
    is strict FIFO (see the module docstring)."""

    def __init__(self, total_bytes: int, name: str, source: str = "the caller") -> None:
        if not _is_int(total_bytes) or total_bytes <= 0:
            raise InputError(f"{name}: a budget total must be a positive integer of bytes, got {total_bytes!r}")
        self.total, self.name, self.source = int(total_bytes), name, source
        self._used = 0
        self._held: dict[int, Reservation] = {}  # id -> live reservation, oldest first
        self._waiting: deque[_Waiter] = deque()  # oldest first; only the head may be admitted
        self._cond = threading.Condition()
        self._evictor: Callable[[int], int] | None = None

    @classmethod
    def for_host(cls, limit: HostLimit, margin: int) -> MemoryBudget:
        """The host RAM budget: `limit` minus `margin` bytes (memory.host_margin); BudgetError when
        nothing is left."""
        if limit.total <= margin:
            raise BudgetError(f"host RAM limit {limit.describe()} leaves nothing after memory.host_margin "
                              f"of {format_size(margin)}")
        return cls(limit.total - margin, "host RAM",
                   f"{limit.source}, {format_size(limit.total)} minus memory.host_margin {format_size(margin)}")

    @property
    def used(self) -> int:
        with self._cond:
            return self._used

    @property
    def free(self) -> int:
        with self._cond:
            return self.total - self._used

    def reserve(self, nbytes: int, what: str, timeout: float | None = None) -> Reservation:
        """Reserve `nbytes` for `what`, blocking until every earlier waiter is admitted and they fit,
        at most `timeout` seconds (None: no limit). BudgetExceededError at once when nbytes exceeds
        the total; BudgetTimeoutError when the time runs out."""
        if not _is_int(nbytes) or nbytes < 0:
            raise InputError(f"{what}: a reservation must be an integer of bytes >= 0, got {nbytes!r}")
        if timeout is not None and not timeout >= 0:
            raise InputError(f"{what}: a reservation timeout must be None or >= 0 seconds, got {timeout!r}")
        nbytes = int(nbytes)
        if nbytes > self.total:
            raise BudgetExceededError(self.name, what, nbytes, self.total, self.source)
        me = _Waiter(what, nbytes, time.monotonic())
        deadline = None if timeout is None else me.since + timeout
        with self._cond:
            self._waiting.append(me)
        try:
            while True:
                with self._cond:
                    short = None if self._waiting[0] is not me else max(0, self._used + nbytes - self.total)
                    if short == 0:
                        self._used += nbytes
                        reservation = Reservation(self, what, nbytes)
                        self._held[id(reservation)] = reservation
                        return reservation
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise BudgetTimeoutError(self.name, what, nbytes, self.total - self._used, self.total,
                                                 time.monotonic() - me.since, self._waiting.index(me))
                    if short is None or self._evictor is None:
                        self._cond.wait(left)
                        continue
                if self._evictor(short) == 0:  # outside the lock: evicting releases reservations
                    with self._cond:
                        self._cond.wait(EVICT_RETRY_S if left is None else min(left, EVICT_RETRY_S))
        finally:
            with self._cond:
                self._waiting.remove(me)
                self._cond.notify_all()

    def set_evictor(self, evictor: Callable[[int], int] | None) -> None:
        """Let `evictor(short)` make room: called, outside the ledger's lock, while the request at the
        head of the queue lacks `short` bytes; it releases what reservations it can (e.g. idle cached
        circuits) and returns the bytes freed. While it frees nothing it is asked again every
        EVICT_RETRY_S seconds (what it may evict changes with time)."""
        self._evictor = evictor

    def _give_back(self, reservation: Reservation, keep: int) -> None:
        with self._cond:
            if reservation.released:
                return
            if not _is_int(keep) or not 0 <= keep <= reservation.bytes:
                raise InputError(f"{reservation.what}: can shrink its {reservation.bytes:,} bytes of "
                                 f"{self.name} only to 0..{reservation.bytes:,} bytes, got {keep!r}")
            self._used -= reservation.bytes - keep
            reservation.bytes = int(keep)
            if keep == 0:
                reservation.released = True
                del self._held[id(reservation)]
            self._cond.notify_all()

    def snapshot(self) -> dict[str, Any]:
        """The ledger now, for status JSON: name, source, total, used, free (bytes), the live
        reservations (what, bytes, age_s) and the waiting requests (what, bytes, waited_s), oldest first."""
        now = time.monotonic()
        with self._cond:
            return {"name": self.name, "source": self.source, "total": self.total, "used": self._used,
                    "free": self.total - self._used,
                    "reservations": [{"what": r.what, "bytes": r.bytes, "age_s": round(now - r.since, 3)}
                                     for r in self._held.values()],
                    "waiting": [{"what": w.what, "bytes": w.nbytes, "waited_s": round(now - w.since, 3)}
                                for w in self._waiting]}
