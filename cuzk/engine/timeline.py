"""The engine's timeline (Engine(timeline=...)): read it, summarise it, draw it.

A timeline is JSONL, one event a line: {"t": unix seconds, "job": id, "partition": k, "event": one of
EVENTS, "host_reserved": bytes of the host budget reserved then}. A work item (job, partition) is in
the state of its latest event until its next one: "queued" waits for admission, "admitted" for a
synthesis process, "synthesis_end" for a GPU worker, "gpu_end" for its proof's verification
("finished", on a finisher thread). An item's last event opens no interval (it is
done, failed or cancelled), so a failed item is not counted as waiting. Events carry no worker, so
the plot packs the GPU (and synthesis) intervals into lanes: as many lanes as ran at once.
"""
from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from typing import Any

from cuzk.errors import CuzkError, InputError
from cuzk.util.atomic import atomic_path
from cuzk.util.fileio import irregular_reason, is_regular, open_regular
from cuzk.util.jsonio import describe

EVENTS = ("queued", "admitted", "synthesis_start", "synthesis_end", "gpu_start", "gpu_end", "finished")
_RANK = {name: i for i, name in enumerate(EVENTS)}
Interval = tuple[float, float, str]  # (start, end, job)


class TimelineError(InputError):
    """A timeline file that cannot be read, or a line of it that is not an event; names the file and
    the line (None when no one line is at fault)."""

    def __init__(self, source: str, line: int | None, reason: str) -> None:
        self.source, self.line, self.reason = source, line, reason
        super().__init__(f"{source}: " + (f"line {line}: " if line is not None else "") + reason)


class PlotUnavailableError(CuzkError, ImportError):
    """matplotlib, which only the plot needs, is not installed."""


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_FIELDS = {  # field -> (check, what it must be)
    "t": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
          "a finite number (unix seconds)"),
    "job": (lambda v: isinstance(v, str), "a string"),
    "partition": (_is_count, "an integer >= 0"),
    "event": (lambda v: v in EVENTS, "one of " + ", ".join(EVENTS)),
    "host_reserved": (_is_count, "an integer >= 0 (bytes)"),
}


def _parse(raw: bytes, source: str, line: int) -> dict:
    try:
        event = json.loads(raw)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise TimelineError(source, line, f"is not JSON ({e})") from None
    if not isinstance(event, dict):
        raise TimelineError(source, line, f"must be a JSON object, got {describe(event)}")
    for name, (check, what) in _FIELDS.items():
        if name not in event:
            raise TimelineError(source, line, f'has no "{name}"')
        if not check(event[name]):
            raise TimelineError(source, line, f'"{name}" must be {what}, got {describe(event[name])}')
    return event


def read_timeline(path: str | os.PathLike) -> list[dict]:
    """The events of the timeline file at `path`, in file order (blank lines skipped). TimelineError
    names the file and line of a line that is not an event, and the file when it cannot be read or
    holds no event."""
    source, events = os.fspath(path), []
    try:
        with open_regular(path) as (fd, st), open(fd, "rb", closefd=False) as f:
            if not is_regular(st):
                raise TimelineError(source, None, f"cannot be read ({irregular_reason(st)[1]})")
            events = [_parse(raw, source, n) for n, raw in enumerate(f, 1) if raw.strip()]
    except OSError as e:
        raise TimelineError(source, None, f"cannot be read ({e.strerror or e})") from None
    if not events:
        raise TimelineError(source, None, "holds no events")
    return events


def _states(events: list[dict]) -> dict[str, list[Interval]]:
    """For each event name, the intervals that items spent in its state (from it to the item's next
    event), sorted by start."""
    items: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for e in events:
        items[e["job"], e["partition"]].append(e)
    states: dict[str, list[Interval]] = {name: [] for name in EVENTS}
    for (job, _), seq in items.items():
        seq.sort(key=lambda e: (e["t"], _RANK[e["event"]]))
        for a, b in zip(seq, seq[1:]):
            states[a["event"]].append((a["t"], b["t"], job))
    return {name: sorted(spans) for name, spans in states.items()}


def _depth(spans: list[Interval]) -> list[tuple[float, int]]:
    """How many of the half-open intervals [start, end) hold, as (time, count) steps (an empty one
    holds nowhere)."""
    spans = [s for s in spans if s[1] > s[0]]
    changes = sorted([(a, 1) for a, _, _ in spans] + [(b, -1) for _, b, _ in spans])  # ends first
    steps, count = [], 0
    for t, delta in changes:
        count += delta
        steps.append((t, count))
    return steps


def _union_s(spans: list[Interval]) -> float:
    """The length of the union of the intervals (sorted by start)."""
    total, reach = 0.0, -math.inf
    for a, b, _ in spans:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _checked(events: list[dict]) -> list[dict]:
    if not events:
        raise InputError("the timeline has no events")
    return sorted(events, key=lambda e: (e["t"], _RANK[e["event"]]))


def summary(events: list[dict]) -> dict:
    """The timeline's numbers: its start (unix s) and span (first to last event, s); per job its
    partitions, how many reached gpu_end, first queued and last gpu_end (s after the start; None
    before any) and the seconds between them (None unless every partition reached gpu_end); the
    seconds at least one GPU worker was busy and that as a fraction of the span; the most items
    waiting for a GPU at once; the peak host_reserved (bytes)."""
    events = _checked(events)
    t0 = events[0]["t"]
    span = events[-1]["t"] - t0
    states = _states(events)
    partitions: dict[str, set[int]] = defaultdict(set)
    queued: dict[str, float] = {}
    done: dict[str, list[float]] = defaultdict(list)
    for e in events:
        partitions[e["job"]].add(e["partition"])
        if e["event"] == "queued":
            queued.setdefault(e["job"], e["t"] - t0)
        elif e["event"] == "gpu_end":
            done[e["job"]].append(e["t"] - t0)
    jobs = {}
    for job, parts in partitions.items():
        q, d = queued.get(job), done[job]
        jobs[job] = {"partitions": len(parts), "proved": len(d), "queued_s": q, "done_s": d[-1] if d else None,
                     "seconds": d[-1] - q if q is not None and len(d) == len(parts) else None}
    busy = _union_s(states["gpu_start"])
    return {
        "start": t0, "span_s": span, "events": len(events), "jobs": jobs,
        "gpu_busy_s": busy, "gpu_busy_fraction": busy / span if span > 0 else 0.0,
        "max_gpu_queue": max((n for _, n in _depth(states["synthesis_end"])), default=0),
        "peak_host_reserved": max(e["host_reserved"] for e in events),
    }


def _lanes(spans: list[Interval]) -> list[int]:
    """A lane per interval (sorted by start): the lowest whose last interval has ended."""
    ends: list[float] = []
    lanes = []
    for a, b, _ in spans:
        lane = next((i for i, end in enumerate(ends) if end <= a), len(ends))
        ends[lane:lane + 1] = [b]
        lanes.append(lane)
    return lanes


def plot(events: list[dict], out_png: str | os.PathLike) -> None:
    """Draw the timeline into a PNG at `out_png` (written atomically), four panels over time since
    the first event: GPU busy intervals (gpu_start to gpu_end, a lane per concurrent one, coloured by
    job), synthesis intervals likewise, queue depths (waiting for admission, admitted and waiting for
    a synthesis process, waiting for a GPU) and the host memory reserved. Needs matplotlib
    (PlotUnavailableError without it: pip install 'cuzk[plot]')."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailableError("cuzk timeline plot needs matplotlib: pip install 'cuzk[plot]'") from None
    events = _checked(events)
    t0, states = events[0]["t"], _states(events)
    colour = {job: f"C{i % 10}" for i, job in enumerate(dict.fromkeys(e["job"] for e in events))}
    fig = Figure(figsize=(12, 9), layout="constrained")
    gpu, synth, queue, host = fig.subplots(4, 1, sharex=True, height_ratios=(2, 2, 1.5, 1.5))
    for ax, name, title in ((gpu, "gpu_start", "GPU busy (gpu_start to gpu_end)"),
                            (synth, "synthesis_start", "synthesis")):
        spans = states[name]
        for (a, b, job), lane in zip(spans, _lanes(spans)):
            ax.broken_barh([(a - t0, b - a)], (lane - 0.4, 0.8), color=colour[job])
        ax.set(title=title, ylabel="lane")
        ax.yaxis.get_major_locator().set_params(integer=True)
    for name, label in (("queued", "waiting for admission"), ("admitted", "admitted, waiting for synthesis"),
                        ("synthesis_end", "waiting for a GPU")):
        steps = [(t0, 0), *_depth(states[name])]
        queue.step([t - t0 for t, _ in steps], [n for _, n in steps], where="post", label=label)
    queue.set(title="queue depths", ylabel="items")
    queue.legend(loc="upper right", fontsize="small")
    host.step([e["t"] - t0 for e in events], [e["host_reserved"] / (1 << 30) for e in events], where="post")
    host.set(title="host memory reserved", ylabel="GiB", xlabel="seconds since the first event")
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
