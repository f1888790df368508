"""What every bench shares: timing (wall clock and CUDA events), the device name, result recording
(JSON Lines in bench/results/, one object per measurement, as ../shared/BENCH.md says) and tables.

A row handed to `record` carries BENCH.md's required fields except `date` and `command`, which
`record` adds: `bench` (a name of BENCH.md's table), `backend` (cpu | cuda), `device`, `n` and `ms`.
Optional: `stat`, `peer`, `peer_ms`, `gpus`, `threads`, `peak_rss_gib`, `peak_vram_gib`, `note`,
stages as `<stage>_ms`, and a few descriptive fields of the run (`c`, `multiples`, `workload`, ...).
`record` refuses a row that breaks the convention, so a bad line is never written; fields that are
None are left out. A projection or estimate goes to `note`, never to `ms`.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

RESULTS = Path(__file__).with_name("results")

# ../shared/BENCH.md's table of bench names (check with python3 ../shared/tools/check_results.py)
BENCHES = {"msm_g1", "msm_g2", "msm_g1_sparse", "msm_g2_sparse", "ntt", "intt", "coset_ntt", "coset_intt", "prove",
           "pce_build", "pce_load", "pce_eval", "witness", "porep_prove", "engine_prove", "daemon_prove", "daemon_submit",
           "porep_scaling", "setup", "compile", "cluster_prove", "window_post", "winning_post", "snap_prove"}
REQUIRED = ("bench", "backend", "device", "n", "ms")
# the order fields are written in; any others follow, then note, date and command
FIRST = ("bench", "backend", "device", "n", "ms", "stat", "peer", "peer_ms", "gpus", "threads", "peak_rss_gib",
         "peak_vram_gib")
LAST = ("note", "date", "command")


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


def event_times_ms(fn: Callable[[], object], repeat: int, warmup: int = 1) -> list[float]:
    """GPU time of each of `repeat` calls of fn() (CUDA events on the current stream), after warm-up."""
    import cupy as cp

    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return times


def event_ms(fn: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    """Median GPU time of fn() in milliseconds (CUDA events), after `warmup` untimed calls."""
    return statistics.median(event_times_ms(fn, repeat, warmup))


def field_mul_rate(kernel: str, words: int, iters: int = 2000) -> float:
    """G mul/s of one of the loader's Montgomery-multiply probes (bench_fq_mul: 12 words, bench_fr_mul: 8)
    over the whole chip: 1024 threads per SM, 2 multiplies per loop iteration per thread."""
    import cupy as cp
    import numpy as np

    from cuzk.backend.cuda import loader

    threads = cp.cuda.Device().attributes["MultiProcessorCount"] * 1024
    inp = cp.asarray(np.random.default_rng(1).integers(0, 2**32, 2 * words, dtype=np.uint32))
    inp[words - 1] &= 0x0FFFFFFF  # both operands below the modulus
    inp[2 * words - 1] &= 0x0FFFFFFF
    out = cp.empty(threads * words, dtype=cp.uint32)
    fn = loader.function(kernel)
    ms = event_ms(lambda: fn((threads // 256,), (256,), (inp, np.int32(iters), out)), 1, warmup=1)
    return 2 * iters * threads / (ms * 1e-3) / 1e9


def device_name(backend: str) -> str:
    """The GPU as the driver names it ("NVIDIA H200"), or "<arch> CPU, <k> cores" for the CPU."""
    if backend == "cuda":
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    return f"{platform.processor() or platform.machine()} CPU, {len(os.sched_getaffinity(0))} cores"


def peak_rss_gib() -> float:
    """This process's peak resident set size so far, GiB (Linux ru_maxrss is in KiB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)


def reset_peak_rss() -> bool:
    """Start this process's peak resident size afresh (cuzk.engine.processes.reset_peak_rss); False
    where that is refused (then the peak counts from the process's start)."""
    from cuzk.engine.processes import reset_peak_rss as reset

    return reset()


def _hwm_bytes(pid: int | str) -> int:
    """VmHWM of a process (its peak resident size since start or the last reset), bytes; 0 if gone."""
    from cuzk.engine.processes import peak_rss

    return peak_rss(pid)


def peak_rss_since_reset_gib() -> float:
    """This process's peak resident size since reset_peak_rss (or its start), GiB."""
    return round(_hwm_bytes("self") / 2**30, 2)


def children_peak_rss_gib() -> float:
    """The sum of the peak resident sizes of this process's live child processes (an engine's
    synthesis processes), GiB: an upper bound of what they held at once."""
    me, total = os.getpid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == me:
                total += _hwm_bytes(entry)
    return round(total / 2**30, 2)


class VramPeak:
    """The largest device memory in use (total - free, every process's) seen on the current GPU while
    the context is open, sampled every `period` seconds by a thread: `gib` once closed."""

    def __init__(self, period: float = 0.05) -> None:
        import threading

        self.period, self.peak, self._stop = period, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        import cupy

        while True:
            free, total = cupy.cuda.runtime.memGetInfo()
            self.peak = max(self.peak, total - free)
            if self._stop.wait(self.period):
                return

    def __enter__(self) -> VramPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def gib(self) -> float:
        return gib(self.peak)


def gib(nbytes: float) -> float:
    return round(nbytes / 2**30, 2)


def command_line() -> str:
    """How this process was started, as someone would type it again from the repository root."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "__main__.py" and argv0.parent.name == "bench":
        prog = "python -m bench"
    elif argv0.parent.name == "bench":
        prog = f"python -m bench.{argv0.stem}"
    else:
        prog = shlex.quote(sys.argv[0])
    return " ".join([prog, *map(shlex.quote, sys.argv[1:])])


def problems(row: dict) -> list[str]:
    """What keeps `row` (with date and command) from following ../shared/BENCH.md; empty when it does."""
    why = [f"{k} missing" for k in (*REQUIRED, "date", "command") if row.get(k) is None]
    if row.get("bench") not in BENCHES:
        why.append(f"unknown bench {row.get('bench')!r}")
    if row.get("backend") not in ("cpu", "cuda"):
        why.append("backend must be cpu or cuda")
    if not isinstance(row.get("n"), int) or isinstance(row.get("n"), bool):
        why.append("n must be an int")
    ms = row.get("ms")
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not ms > 0:
        why.append("ms must be a number > 0")
    if row.get("bench") == "compile" and (row.get("n") != 0 or not row.get("module")):
        why.append("a compile row has n = 0 and a module")
    return why


def line(row: dict, date: str, command: str) -> dict:
    """The row as written: None fields dropped, date and command added, fields in a fixed order."""
    full = {k: v for k, v in {**row, "date": date, "command": row.get("command") or command}.items() if v is not None}
    order = [*FIRST, *sorted(k for k in full if k not in FIRST and k not in LAST), *LAST]
    return {k: full[k] for k in order if k in full}


def record(rows: Iterable[dict], family: str, out: Path | str | None = None, command: str | None = None) -> list[Path]:
    """Append each row to <out>/<family>_<backend>.jsonl (out: bench/results by default).

    Raises ValueError, writing nothing, if any row does not follow ../shared/BENCH.md."""
    today, command = dt.date.today().isoformat(), command or command_line()
    lines = [line(r, today, command) for r in rows]
    bad = [f"{r}: {'; '.join(problems(r))}" for r in lines if problems(r)]
    if bad:
        raise ValueError("rows that do not follow BENCH.md:\n" + "\n".join(bad))
    directory = Path(out) if out is not None else RESULTS
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for r in lines:
        path = directory / f"{family}_{r['backend']}.jsonl"
        with path.open("a") as f:
            f.write(json.dumps(r) + "\n")
        if path not in paths:
            paths.append(path)
    return paths


def print_table(rows: list[dict], columns: list[tuple[str, str, str]]) -> None:
    """columns: (key, header, format spec); missing values print as '-'."""
    cells = [[h for _, h, _ in columns]]
    for row in rows:
        cells.append([format(row[k], f) if row.get(k) is not None else "-" for k, _, f in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
