"""The engine's synthesis processes: their compute threads, their initializer (which ends a process
whose engine has gone), and what they measure: the resident bytes of a process and the peak growth
of one synthesis."""
from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from typing import Any

from cuzk.engine.config import PipelineConfig

def synthesis_threads(pipe: PipelineConfig) -> int:
    """Compute threads of each synthesis process: pipeline.synthesis_threads, or when 0 the CPUs this
    process may use shared out among the max_parallel_synthesis processes (at least 1). Each process
    would otherwise run a thread per CPU and together they oversubscribe the cores: 4 processes packing
    32GiB partitions on a 2-core machine took 61-180 ms a partition with 2 threads each, 11-32 ms
    with 1."""
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


def measured(fn: Callable[[], Any]) -> tuple[Any, int, float, float]:
    """fn() in a synthesis process: its result, the process's peak RSS growth over the call (bytes)
    and the wall-clock start and end (time.time)."""
    before, start = rss(), time.time()
    out = fn()
    return out, max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before), start, time.time()


def worker_rss() -> tuple[int, int]:
    """(pid, resident bytes) of a synthesis process, after a pause that makes the pool start them all."""
    time.sleep(0.2)
    return os.getpid(), rss()
