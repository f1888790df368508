"""Fuzz every input surface of cuzk from valid seeds, seeded and deterministic.

Surfaces (surfaces.py): point decoding, proof decoding, .params and .vk files, C1 outputs, sector
directories, the parameter cache, the parents cache, API argument types and the `cuzk` CLI; and
(state_surfaces.py) the daemon's job journal, its SubmitProof payload, PCE files and the configuration
file. Each case
must be refused with a short CuzkError or give a result that is still right; any other exception, a
hang, a signal, an accepted bad input or a changed input file fails the test, which runs every case
and then reports all failures grouped by surface and kind, with a replayable example of each.

    CUZK_FUZZ_SEED=n           the seed (default 11); printed with every run
    CUZK_FUZZ_REPLAY=c1:17,..  run only these cases (surface:index), e.g. one from a report
    CUZK_FUZZ_SURFACES=a,b     run only these surfaces
    CUZK_FUZZ_SCALE=x          multiply the case counts (default 1; the slow test runs 10x)
    CUZK_FUZZ_WORKERS=n        worker processes (default: the CPUs available, at most 4)

The per-surface counts and every failure are printed (pytest -s) and written as JSON to
.pytest_cache/d/cuzk-fuzz/summary-<test>.json (and beside the test's tmp_path).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from . import runner
from . import surfaces as S

DEFAULT_SEED = 11


def fuzz_seed() -> int:
    return int(os.environ.get("CUZK_FUZZ_SEED", DEFAULT_SEED))


def workers() -> int:
    if os.environ.get("CUZK_FUZZ_WORKERS"):
        return max(1, int(os.environ["CUZK_FUZZ_WORKERS"]))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
    return max(1, min(4, cpus))


def plan(scale: float) -> list[tuple[str, int]]:
    """The (surface, index) tasks: a replay list, or every surface's count times `scale`, interleaved
    so that slow and fast cases spread over the workers."""
    if os.environ.get("CUZK_FUZZ_REPLAY"):
        tasks = []
        for item in os.environ["CUZK_FUZZ_REPLAY"].split(","):
            name, _, index = item.strip().partition(":")
            if name not in S.SURFACE_IDS:
                raise pytest.UsageError(f"CUZK_FUZZ_REPLAY: unknown surface {name!r} (one of {sorted(S.SURFACE_IDS)})")
            tasks.append((name, int(index)))
        return tasks
    only = {s.strip() for s in os.environ.get("CUZK_FUZZ_SURFACES", "").split(",") if s.strip()}
    scale *= float(os.environ.get("CUZK_FUZZ_SCALE", 1))
    counts = {cls.name: max(1, round(cls.count * scale)) for cls in S.SURFACES if not only or cls.name in only}
    tasks = [(name, i) for name, n in counts.items() for i in range(n)]
    # slowest first within the interleaving, so that the run does not end on one long case
    slow = {"cli": 0, "sector": 1, "c1": 2}
    return sorted(tasks, key=lambda t: (t[1] / counts[t[0]], slow.get(t[0], 9)))


@pytest.fixture(scope="session")
def fuzz_seeds(tmp_path_factory) -> Path:
    """The valid seeds of this seed (see surfaces.build_seeds), made once per session."""
    root = tmp_path_factory.mktemp("fuzz-seeds")
    start = time.perf_counter()
    S.build_seeds(root, fuzz_seed())
    print(f"fuzz seeds for seed {fuzz_seed()} built in {time.perf_counter() - start:.1f} s")
    return root


def _fuzz(request, fuzz_seeds: Path, tmp_path: Path, scale: float, label: str) -> dict:
    seed, n = fuzz_seed(), workers()
    tasks = plan(scale)
    print(f"\ncuzk fuzz: seed {seed} (set CUZK_FUZZ_SEED={seed} to replay), {len(tasks)} cases on {n} worker(s)")
    before = S.snapshot(fuzz_seeds)
    start = time.perf_counter()
    results = runner.run_cases(tasks, fuzz_seeds, tmp_path / "scratch", n,
                               {cls.name: cls.timeout for cls in S.SURFACES})
    seconds = time.perf_counter() - start
    after = S.snapshot(fuzz_seeds)
    if after != before:
        results.append(runner.Result("seeds", -1, "the seed files", "failure",
                                     [("input changed", S.diff(before, after))]))
    summary = runner.summarize(results, seed, seconds, n)
    text = json.dumps(summary, indent=1, default=str)
    paths = [tmp_path / f"summary-{label}.json"]
    cache = getattr(request.config, "cache", None)  # None with -p no:cacheprovider
    if cache is not None:
        paths.append(Path(cache.mkdir("cuzk-fuzz")) / f"summary-{label}.json")
    for p in paths:
        p.write_text(text)
    print(runner.report(summary))
    print(f"summary: {paths[-1]}")
    return summary


def test_fuzz(request, fuzz_seeds, tmp_path):
    """The CI run: about 4,100 cases (each surface's `count`) in about a minute on two cores."""
    summary = _fuzz(request, fuzz_seeds, tmp_path, 1.0, "default")
    narrowed = any(os.environ.get(k) for k in ("CUZK_FUZZ_REPLAY", "CUZK_FUZZ_SURFACES", "CUZK_FUZZ_SCALE"))
    assert narrowed or summary["cases"] >= 2000, summary["cases"]
    assert not summary["failures"], runner.report(summary)


@pytest.mark.slow
def test_fuzz_large(request, fuzz_seeds, tmp_path):
    """Ten times the CI run (about 41,000 cases)."""
    summary = _fuzz(request, fuzz_seeds, tmp_path, 10.0, "large")
    assert not summary["failures"], runner.report(summary)


def test_harness_reports_every_kind_of_failure(fuzz_seeds, tmp_path):
    """The runner itself: a signal and a hang are recorded against their case (and the worker replaced),
    as are another exception type, a long message, a changed input and an accepted bad input."""
    results = runner.run_cases([("harness", i) for i in range(7)], fuzz_seeds, tmp_path / "scratch", 2,
                               {"harness": S.HarnessCheck.timeout})
    kinds = {r.index: [k for k, _ in r.problems] for r in results}
    assert kinds == {0: ["signal SIGBUS"], 1: ["hang"], 2: ["TypeError"], 3: ["long message"],
                     4: ["input changed"], 5: ["accepted"], 6: []}, kinds


def test_cases_are_deterministic(fuzz_seeds, tmp_path):
    """A case is a function of (seed, surface, index) alone: generating it twice gives the same input."""
    seeds = S.Seeds(fuzz_seeds)
    for cls in S.SURFACES:
        surface = cls(seeds)
        for index in range(4):
            descs = []
            for attempt in range(2):
                scratch = tmp_path / f"{cls.name}-{index}-{attempt}"
                scratch.mkdir()
                rng = np.random.default_rng([seeds.fuzz_seed, S.SURFACE_IDS[cls.name], index])
                desc = surface.generate(rng, scratch).desc
                files = {k: v.split(" mtime ")[0] for k, v in S.snapshot(scratch).items()}
                descs.append((desc, sorted(files.items())))
                runner._clean(scratch)
            assert descs[0] == descs[1], (cls.name, index)
