"""Timing, result recording (JSON Lines in bench/results/) and table printing for the benches."""
from __future__ import annotations

import datetime as dt
import json
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).with_name("results")


def median_ms(fn: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    """Median wall time of fn() in milliseconds after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def device_name(backend: str) -> str:
    if backend == "cuda":
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return f"{platform.processor() or platform.machine()} CPU, {_cores()} cores"


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def record(rows: list[dict], filename: str) -> Path:
    """Append one JSON object per measurement to bench/results/<filename>."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / filename
    command = "python -m bench " + shlex.join(sys.argv[1:])
    today = dt.date.today().isoformat()
    with path.open("a") as f:
        for row in rows:
            f.write(json.dumps({**row, "date": today, "command": command}) + "\n")
    return path


def print_table(rows: list[dict], columns: list[tuple[str, str, str]]) -> None:
    """columns: (key, header, format spec); missing values print as '-'."""
    cells = [[h for _, h, _ in columns]]
    for row in rows:
        cells.append([format(row[k], f) if row.get(k) is not None else "-" for k, _, f in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
