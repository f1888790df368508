"""Progress of long work on stderr and wall time per stage: one Progress (a tqdm bar, or a ticker for work
with no count) and one StageTimer (timings and a timeline of stages).

Messages go through tqdm.write, so a stage line or a tick never tears a bar that is being drawn.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple, TextIO

from tqdm import tqdm

log = logging.getLogger("cuzk.timing")


class Progress:
    """Progress of one piece of long work, written to `stream` (stderr by default); nothing when disabled.

    With a `total`, a tqdm bar counted in `unit`s (`update(n)` as work is done; `delay` seconds before it
    first appears, redrawn at most once a second). Without one, a ticker: '<desc>: 1m30s elapsed' every
    `every` seconds while the work runs (a thread; a long compiled kernel holding the GIL delays it).
    Use as a context manager, or call close().
    """

    def __init__(self, desc: str, total: int | None = None, *, unit: str = "it", unit_scale: bool = False,
                 enabled: bool = True, stream: TextIO | None = None, delay: float = 0.0,
                 every: float = 30.0) -> None:
        self.desc, self.stream = desc, stream if stream is not None else sys.stderr
        self._bar: tqdm | None = None
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None
        if not enabled:
            return
        if total is not None:
            self._bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=self.stream,
                             delay=delay, mininterval=1.0)
        else:
            self._start = time.perf_counter()
            self._ticker = threading.Thread(target=self._tick, args=(every,), daemon=True)
            self._ticker.start()

    def update(self, n: int = 1) -> None:
        """Count `n` more units done (a no-op for a ticker or a disabled Progress)."""
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self._ticker is not None:
            self._done.set()
            self._ticker.join()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tick(self, every: float) -> None:
        while not self._done.wait(every):
            m, s = divmod(int(time.perf_counter() - self._start), 60)
            tqdm.write(f"{self.desc}: {m}m{s:02d}s elapsed", file=self.stream)


class Stage(NamedTuple):
    """One timeline event: a stage and its time.perf_counter() start and end."""

    stage: str
    start: float
    end: float


class StageTimer:
    """Wall time per named stage: `timings` (seconds by stage name, summed when a stage runs more than
    once) and `events`, the timeline of Stage(stage, start, end) in the order the stages ended.

    A stage is timed by `with timer("msm"):` or, for a pipeline of consecutive steps, ended by
    `timer.mark("tree_d")` (it began where the previous stage ended, or at the timer's creation). Each
    stage is logged at DEBUG ('<label>: <stage> <seconds> s'); with `echo`, '<label>: <stage> done,
    <seconds since creation> s' is also written to `stream` (stderr by default).
    """

    def __init__(self, label: str = "", *, echo: bool = False, stream: TextIO | None = None,
                 logger: logging.Logger = log) -> None:
        self.label, self.echo, self.stream, self.logger = label, echo, stream, logger
        self.start = time.perf_counter()
        self.timings: dict[str, float] = {}
        self.events: list[Stage] = []

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self._record(stage, start)

    def mark(self, stage: str) -> None:
        """End `stage` now; it began where the previous stage ended (or when the timer was made)."""
        self._record(stage, self.events[-1].end if self.events else self.start)

    def _record(self, stage: str, start: float) -> None:
        end = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + end - start
        self.events.append(Stage(stage, start, end))
        self.logger.debug("%s: %-9s %8.3f s", self.label, stage, end - start)
        if self.echo:
            tqdm.write(f"{self.label}: {stage} done, {end - self.start:.1f} s",
                       file=self.stream if self.stream is not None else sys.stderr)
