"""The engine's processes: the parameter directory they share (srs.param_cache), the synthesis
processes' compute threads, their initializer (which ends a process whose engine has gone), and
what they measure: the resident bytes of a process and the peak growth of one synthesis."""
from __future__ import annotations

import logging
import os
import resource
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from cuzk.engine.config import PipelineConfig

log = logging.getLogger("cuzk.engine")
PARAMS_ENV = "FIL_PROOFS_PARAMETER_CACHE"

def synthesis_threads(pipe: PipelineConfig) -> int:
    """Compute threads of each synthesis process: pipeline.synthesis_threads, or when 0 the CPUs this
    process may use shared out among the max_parallel_synthesis processes (at least 1): a thread per
    CPU in each would oversubscribe the cores (bench/RESULTS.md has the measurement)."""
    if pipe.synthesis_threads:
        return pipe.synthesis_threads
    return max(1, len(os.sched_getaffinity(0)) // pipe.max_parallel_synthesis)


def numba_threads(n: int) -> None:
    """numba's parallel loops in this process use n threads (at most the pool numba started with)."""
    import numba

    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


def start_synthesis_process(parent: int, threads: int) -> None:
    """A synthesis process's initializer: numba's parallel loops use `threads` threads, and the process
    exits once the engine process `parent` is gone (checked every second). A SIGKILLed engine's pool
    workers would otherwise wait forever on a pipe they hold both ends of, and a restarted daemon
    would find them still holding memory."""
    numba_threads(threads)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="cuzk-parent-watch", daemon=True).start()


def rss(pid: int | str = "self") -> int:
    """The resident bytes of a process (this one by default; 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        if pid == "self":
            raise
        return 0


def reset_peak_rss() -> bool:
    """Start this process's peak resident size afresh (Linux: 5 into /proc/self/clear_refs resets its
    high-water mark, VmHWM); False where that is refused (then the peak counts from the process's start)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss(pid: int | str = "self") -> int:
    """VmHWM of a process: its peak resident bytes since its start (its exec) or the last
    reset_peak_rss; 0 when it is gone or /proc has no VmHWM."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def measured(fn: Callable[[], Any]) -> tuple[Any, int, float, float]:
    """fn() in a synthesis process: its result, the process's peak RSS growth over the call (bytes)
    and the wall-clock start and end (time.time). The peak is VmHWM, reset before the call, not
    getrusage's ru_maxrss: that one is the largest the process ever was, and Linux carries it over from
    the engine process that spawned it (through fork and exec), so every item of an engine that once
    peaked at gigabytes (a Groth16 setup, a CPU proof) measured gigabytes of growth. Where the reset is
    refused the peak counts from the process's start (an earlier, larger item still counts)."""
    reset_peak_rss()
    before, start = rss(), time.time()
    out = fn()
    return out, max(0, max(peak_rss(), rss()) - before), start, time.time()


def process_sizes(pool: ProcessPoolExecutor, processes: int) -> list[tuple[str, int]]:
    """(what, resident bytes) of each of the pool's `processes` synthesis processes, started here, and
    of multiprocessing's resource tracker (a process the spawn context started; a host watchdog sees
    it too)."""
    pids = dict(f.result() for f in [pool.submit(worker_rss) for _ in range(processes)])
    sizes = [(f"synthesis process {pid}", size) for pid, size in pids.items()]
    tracker = getattr(resource_tracker._resource_tracker, "_pid", None)  # None: not running, or not ours
    if tracker is not None and tracker not in pids and (size := rss(tracker)) > 0:
        sizes.append((f"resource tracker process {tracker}", size))
    return sizes


def worker_rss() -> tuple[int, int]:
    """(pid, resident bytes) of a synthesis process, after a pause that makes the pool start them all."""
    time.sleep(0.2)
    return os.getpid(), rss()


def use_param_cache(directory: Path | None) -> None:
    """srs.param_cache: the directory of the parameters and of cuzk's compiled circuits for this
    process and its synthesis processes, set as $FIL_PROOFS_PARAMETER_CACHE (as curio's daemon does,
    it wins over the variable's own value). None leaves the environment as it is."""
    if directory is None:
        return
    before = os.environ.get(PARAMS_ENV)
    if before and Path(before) != directory:
        log.warning("engine: srs.param_cache %s replaces $%s=%s", directory, PARAMS_ENV, before)
    os.environ[PARAMS_ENV] = str(directory)
