"""Where one MSM's GPU time goes: CUDA events around its stages, read once the stream has passed them.

The stages (named as ../shared/BENCH.md's msm fields, `<stage>_ms`):

    plan        scalar decomposition: the sparse split, counting the (bucket, point) pairs per bucket,
                the buckets' starts, and cutting buckets into items (index arithmetic, a sort by length)
    sort        the scatter of the counting sort: each pair written to its bucket's range
    accumulate  the bucket sums over the sorted points (accum_affine)
    reduce      partial sums to one point per bucket, the running sums, the Horner sum over bucket sets
    copy        scalars host -> device and the result device -> host

A stage may be entered several times in one MSM (plan interleaves with the others); its time is the
sum. Host work between launches is not in any stage: total - sum(stages) is the MSM's glue.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, ContextManager, Iterator, Protocol

from cuzk.backend.cuda.device import cupy

STAGES = ("plan", "sort", "accumulate", "reduce", "copy")


class Stage(Protocol):
    """stage(name): a context manager around the launches of stage `name`."""

    def __call__(self, name: str) -> ContextManager[Any]: ...


def untimed(name: str) -> ContextManager[None]:
    """The Stage that records nothing."""
    return nullcontext()


class StageEvents:
    """A Stage that records a pair of CUDA events on the current stream around each entry."""

    def __init__(self) -> None:
        self._spans: list[tuple[str, Any, Any]] = []

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        cp = cupy()
        start = cp.cuda.Event()
        start.record()
        try:
            yield
        finally:
            end = cp.cuda.Event()
            end.record()
            self._spans.append((name, start, end))

    def milliseconds(self) -> dict[str, float]:
        """{stage: GPU ms} over every stage (0.0 for one never entered), waiting for the last event."""
        out = dict.fromkeys(STAGES, 0.0)
        if self._spans:
            self._spans[-1][2].synchronize()
        for name, start, end in self._spans:
            out[name] += cupy().cuda.get_elapsed_time(start, end)
        return out
