"""`cuzk fleet status`: every prover of a cluster front (`cuzk daemon --cluster ... --status-listen
HOST:PORT`), read from the front's /status: alive or dead and since when, last heartbeat, resident
circuits, partitions on it, proofs, failures, restarts, memory (cuzk.cli)."""
from __future__ import annotations

import argparse
import json
import time
import urllib.error
import urllib.request

from cuzk.errors import InputError

GIB = 1 << 30
COLUMNS = ("MEMBER", "HOST", "STATE", "FOR", "HEARTBEAT", "PARTS", "PROOFS", "FAILED", "RESTARTS", "RSS", "HOST BUDGET",
           "VRAM", "RESIDENT")


def fetch_fleet(front: str, timeout: float) -> dict:
    """The "fleet" of the front's /status (`front`: HOST:PORT or a URL); InputError when it cannot be
    read or the daemon there runs no cluster."""
    url = (front if "://" in front else f"http://{front}").rstrip("/") + "/status"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            doc = json.loads(answer.read())
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise InputError(f"--front {front}: cannot read {url}: {getattr(e, 'reason', e)}") from None
    except ValueError as e:
        raise InputError(f"--front {front}: {url} is not a cuzk status document: {e}") from None
    if "fleet" not in doc:
        raise InputError(f"--front {front}: that daemon runs no cluster (start it with --cluster)")
    return doc["fleet"]


def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / GIB:.1f}G"


def _seconds(s: float | None) -> str:
    if s is None:
        return "never"
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


def _short(member: str) -> str:
    """A member key "<node id>/<gpu>" with its node id cut to 12 characters."""
    node, _, gpu = member.partition("/")
    return f"{node[:12]}/{gpu}"


def _vram(devices: list[dict]) -> str:
    """used/total VRAM of a member's GPU(s), "-" on a host backend (no VRAM figures)."""
    used = [d["vram_used_bytes"] for d in devices if "vram_used_bytes" in d]
    total = [d["vram_total_bytes"] for d in devices if "vram_total_bytes" in d]
    return f"{_gib(sum(used))}/{_gib(sum(total))}" if used and total else "-"


def table(fleet: dict) -> str:
    """The fleet as a table, a member per line, then the counts per state."""
    rows = [COLUMNS]
    for m in fleet["members"]:
        host = m["host_memory"] or {}
        since = time.strftime("%H:%M:%S", time.localtime(m["since"]))
        rows.append((_short(m["member"]), m["host"], m["state"], f"{_seconds(m['for_s'])} (since {since})",
                     _seconds(m["last_heartbeat_s_ago"]), f"{m['in_flight']}/{m['slots']}", str(m["proofs"]),
                     str(m["failures"]), str(m["restarts"]), _gib(m["rss_bytes"]),
                     f"{_gib(host.get('reserved_bytes'))}/{_gib(host.get('total_bytes'))}" if host else "-",
                     _vram(m["devices"]), ",".join(m["resident"]) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    counts = ", ".join(f"{n} {state}" for state, n in fleet["counts"].items() if n)
    lines.append(f"{len(fleet['members'])} member(s): {counts or 'none'}; {fleet['proofs']} proofs, "
                 f"{fleet['failures']} failures, {fleet['restarts']} restarts")
    reasons = [f"  {_short(m['member'])}: {m['reason']}" for m in fleet["members"]
               if m["state"] != "ready" and m["reason"]]
    return "\n".join(lines + reasons)


def _status(args: argparse.Namespace) -> int:
    fleet = fetch_fleet(args.front, args.timeout)
    print(json.dumps(fleet, indent=1) if args.json else table(fleet))
    return 1 if args.check and any(m["state"] != "ready" for m in fleet["members"]) else 0


def add_commands(sub) -> None:
    fp = sub.add_parser("fleet", help="a cluster front's provers (cuzk daemon --cluster)")
    fsub = fp.add_subparsers(dest="fleet_command", required=True)
    sp = fsub.add_parser("status", help="every prover of the fleet: state, heartbeat, circuits, proofs, memory")
    sp.add_argument("--front", required=True, metavar="HOST:PORT",
                    help="the front's status port (its --status-listen), or a URL")
    sp.add_argument("--json", action="store_true", help="print the fleet document as JSON")
    sp.add_argument("--check", action="store_true", help="exit 1 when a member is not ready (for monitoring)")
    sp.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the front (default 10)")
    sp.set_defaults(run=_status)
