"""The front's view of the fleet: one Member per prover actor (a GPU of a Ray node), its state and
what its last heartbeat said. No Ray here: the front (cuzk.cluster.front) drives the states.

A member's states, and what moves it:

    starting --created--> warming --warm--> ready <--heartbeat--> unresponsive
    warming, ready --a warm failed (its engine's error)--> failing --warmed again, with backoff--> ready
        any --its node or actor died--> dead;  ready --its actor restarted--> warming

Only a ready member takes work (cuzk.cluster.placement)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

STATES = ("starting", "warming", "ready", "unresponsive", "failing", "dead")


@dataclass
class Member:
    """A prover actor: `key` is "<node id>/<index>" (index: the GPU's place among its node's).
    `in_flight` counts the partitions the front has on it; `slots` is how many it takes at once."""

    key: str
    node_id: str
    host: str
    index: int
    actor: Any = None
    state: str = "starting"
    since: float = field(default_factory=time.time)
    last_heartbeat: float | None = None
    slots: int = 1
    in_flight: int = 0
    resident: set[str] = field(default_factory=set)
    proofs: int = 0
    failures: int = 0
    restarts: int = 0
    pid: int | None = None
    health: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    warming: bool = False  # a warm call is out: the member returns to "warming", not "ready", when it answers
    warm_failures: int = 0  # warm calls failed in a row with its engine's error: "failing" until one succeeds
    warm_error: str = ""  # the last one's reason
    retry_at: float = 0.0  # time.monotonic() of its next warm while failing

    def move(self, state: str, reason: str = "") -> bool:
        """Enter `state` (since now) unless in it already; False when nothing changed."""
        if state not in STATES:
            raise ValueError(f"no member state {state!r}")
        if self.state == state:
            return False
        self.state, self.since, self.reason = state, time.time(), reason
        return True

    def answering(self) -> tuple[str, str]:
        """The state, and its reason, of an unresponsive member that answers again."""
        if self.warm_failures:
            return "failing", self.warm_error
        return ("warming" if self.warming else "ready"), ""

    @property
    def host_free_bytes(self) -> int | None:
        """Its engine's host budget left at the last heartbeat (None before one)."""
        host = self.health.get("host")
        return None if host is None else host["total_bytes"] - host["reserved_bytes"]

    def row(self, now: float) -> dict[str, Any]:
        """The member as `cuzk fleet status` and /status show it."""
        beat = self.last_heartbeat
        return {"member": self.key, "node_id": self.node_id, "host": self.host, "gpu": self.index,
                "state": self.state, "since": round(self.since, 3), "for_s": round(now - self.since, 1),
                "reason": self.reason,
                "last_heartbeat_s_ago": None if beat is None else round(now - beat, 1),
                "resident": sorted(self.resident), "in_flight": self.in_flight, "slots": self.slots,
                "proofs": self.proofs, "failures": self.failures, "restarts": self.restarts, "pid": self.pid,
                "host_memory": self.health.get("host"), "rss_bytes": self.health.get("rss_bytes"),
                "devices": self.health.get("devices", [])}


class Fleet:
    """The members, under one lock (`lock`, a Condition the front waits on for a free member)."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self._members: dict[str, Member] = {}

    def add(self, member: Member) -> Member:
        with self.lock:
            self._members[member.key] = member
            self.lock.notify_all()
        return member

    def get(self, key: str) -> Member | None:
        with self.lock:
            return self._members.get(key)

    def members(self) -> list[Member]:
        with self.lock:
            return list(self._members.values())

    def live(self) -> list[Member]:
        """The members not dead."""
        with self.lock:
            return [m for m in self._members.values() if m.state != "dead"]

    def move(self, member: Member, state: str, reason: str = "") -> bool:
        """member.move under the lock, waking whoever waits for a change."""
        with self.lock:
            changed = member.move(state, reason)
            self.lock.notify_all()
        return changed

    def status(self) -> dict[str, Any]:
        """Counts per state and every member's row (`Member.row`), dead ones included."""
        now = time.time()
        with self.lock:
            rows = [m.row(now) for m in sorted(self._members.values(), key=lambda m: (m.host, m.node_id, m.index))]
        counts = {state: sum(r["state"] == state for r in rows) for state in STATES}
        return {"members": rows, "counts": counts, "proofs": sum(r["proofs"] for r in rows),
                "failures": sum(r["failures"] for r in rows), "restarts": sum(r["restarts"] for r in rows)}
