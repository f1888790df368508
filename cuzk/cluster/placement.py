"""Where the front sends a partition: among the ready members with a free slot whose host budget is not
spent, those that hold the circuit resident first (no load, no tables to build), then the least loaded
(in_flight / slots), then the one that has proved least, then by key (a stable order)."""
from __future__ import annotations

from collections.abc import Iterable

from cuzk.cluster.fleet import Member


def takes_work(member: Member) -> bool:
    """Ready, a slot free, and its engine's host budget not spent at its last heartbeat."""
    free = member.host_free_bytes
    return member.state == "ready" and member.in_flight < member.slots and (free is None or free > 0)


def choose(members: Iterable[Member], circuit: str, avoid: frozenset[str] = frozenset()) -> Member | None:
    """The member to prove a partition of `circuit` (module docstring), or None when none takes work.
    `avoid`: members that failed this partition before; used only when no other takes work."""
    open_ = [m for m in members if takes_work(m)]
    fresh = [m for m in open_ if m.key not in avoid] or open_
    if not fresh:
        return None
    return min(fresh, key=lambda m: (circuit not in m.resident, m.in_flight / m.slots, m.proofs, m.key))
