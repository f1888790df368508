"""Run fuzz cases in worker processes and judge each one (see surfaces.py for the oracles).

Workers come from a forkserver (cuzk imported once) and take one case at a time over a pipe. A worker
that dies (a signal such as SIGBUS or SIGSEGV, or any exit) or that does not finish a case within the
surface's time limit is recorded against the case it was running and replaced, and the run goes on:
every case is run, and every failure is collected.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import time
import traceback
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.errors import CuzkError

from . import surfaces as S

START_LIMIT = 300.0  # seconds for a worker to start, or to warm a surface up
GENERATE_LIMIT = 60.0  # seconds to build a case's input


@dataclass
class Result:
    surface: str
    index: int
    desc: str
    outcome: str  # the CuzkError class that refused the input, "accepted", or "failure"
    problems: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def _clean(path: Path) -> None:
    """Remove a scratch directory, whatever modes the case left in it."""
    if not os.path.lexists(path):
        return
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            try:
                os.chmod(Path(dirpath) / d, 0o755)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


def _guard(fn: Callable[[Any], list], arg: Any, what: str) -> list[tuple[str, str]]:
    try:
        return list(fn(arg))
    except Exception as e:  # noqa: BLE001 - the oracle met something it cannot judge: report it
        tail = traceback.format_exc().strip().splitlines()[-3:]
        return [("oracle error", f"{what}: {type(e).__name__}: {S.short(str(e), 100)} ({' | '.join(tail)[:200]})")]


def execute(surface: S.Surface, index: int, scratch: Path, started: Callable[[str], None]) -> Result:
    """Generate, run and judge case `index` of `surface` in a fresh `scratch` directory."""
    seeds = surface.seeds
    _clean(scratch)
    scratch.mkdir(parents=True)
    rng = np.random.default_rng([seeds.fuzz_seed, S.SURFACE_IDS[surface.name], index])
    surface.index = index
    try:
        case = surface.generate(rng, scratch)
    except Exception as e:  # noqa: BLE001
        started("(generation failed)")
        tail = " | ".join(traceback.format_exc().strip().splitlines()[-3:])
        return Result(surface.name, index, "(generation failed)", "failure",
                      [("harness error", f"{type(e).__name__}: {e} ({tail[:300]})")])
    started(case.desc)
    before = {p: S.snapshot(p) for p in case.watched}
    problems: list[tuple[str, str]] = []
    t = time.perf_counter()
    try:
        result = case.call()
    except CuzkError as e:
        seconds = time.perf_counter() - t
        outcome = type(e).__name__
        message = str(e)
        if len(S.message_text(message)) > S.MESSAGE_LIMIT:
            problems.append(("long message", f"{outcome} of {len(message):,} characters: {S.short(message, 100)}"))
        elif not message.strip():
            problems.append(("empty message", outcome))
        problems += _guard(case.refuse, e, "refuse")
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - any other exception type is a failure
        seconds = time.perf_counter() - t
        outcome = "failure"
        problems.append(S.other_exception(e))
    else:
        seconds = time.perf_counter() - t
        outcome = "accepted"
        if case.label:
            outcome = _guard(lambda r: [case.label(r)], result, "label")[0]
            outcome = outcome if isinstance(outcome, str) else "accepted"
        problems += _guard(case.accept, result, "accept")
    for p, snap in before.items():
        now = S.snapshot(p)
        if now != snap:
            where = p.relative_to(scratch) if p != scratch else "."
            problems.append(("input changed", f"{where}: {S.diff(snap, now)}"))
    problems = [(k, d.replace(str(scratch), "<dir>").replace(str(seeds.root), "<seeds>")) for k, d in problems]
    _clean(scratch)
    return Result(surface.name, index, case.desc, "failure" if problems else outcome, problems, seconds)


def worker_main(conn, seeds_root: str, scratch_root: str) -> None:
    """A worker: loads the seeds, then runs (surface, index) tasks until it receives None."""
    import logging

    import numba
    numba.set_num_threads(1)  # parallel kernels on a few points cost milliseconds of thread wake-ups
    logging.getLogger().addHandler(logging.NullHandler())  # cuzk's warnings about stale caches: expected
    import threading

    from tqdm import tqdm
    tqdm.set_lock(threading.RLock())  # not tqdm's multiprocessing lock: a killed worker would leak it
    scratch_base = Path(scratch_root)
    scratch_base.mkdir(parents=True, exist_ok=True)
    os.chdir(scratch_base)  # relative paths a case makes land in the scratch tree
    os.environ["CUZK_CACHE_DIR"] = str(scratch_base / "cache")  # any default cache stays in the scratch tree
    os.environ.pop("FIL_PROOFS_PARAMETER_CACHE", None)
    seeds = S.Seeds(Path(seeds_root))
    surfaces = {cls.name: cls(seeds) for cls in [*S.SURFACES, S.HarnessCheck]}
    warm: set[str] = set()
    scratch = scratch_base / "case"
    conn.send(("ready",))
    while True:
        task = conn.recv()
        if task is None:
            return
        name, index = task
        surface = surfaces[name]
        warm_problem = None
        if name not in warm:
            conn.send(("warming", name))
            try:
                surface.warm()
            except Exception as e:  # noqa: BLE001 - reported with the case
                warm_problem = ("harness error",
                                f"warm-up of {name} failed: {type(e).__name__}: {S.short(str(e), 200)}")
            warm.add(name)
        result = execute(surface, index, scratch, lambda desc: conn.send(("start", desc)))
        if warm_problem:
            result.problems.insert(0, warm_problem)
            result.outcome = "failure"
        conn.send(("done", result))


def _context() -> mp.context.BaseContext:
    try:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload([S.__name__])
        return ctx
    except ValueError:
        return mp.get_context("spawn")


def _signal_name(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"worker exit {code}"


class _Slot:
    """One worker process and the task it runs."""

    def __init__(self, ctx, number: int, seeds_root: Path, scratch_root: Path) -> None:
        self.ctx, self.number = ctx, number
        self.seeds_root, self.scratch = seeds_root, scratch_root / f"w{number}"
        self.proc = self.conn = None
        self.task: tuple[str, int] | None = None
        self.desc = "(before the case started)"
        self.deadline = 0.0
        self.ready = False
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker_main, args=(child, str(self.seeds_root), str(self.scratch)),
                                     daemon=True)
        self.proc.start()
        child.close()
        self.conn, self.ready, self.task = parent, False, None
        self.deadline = time.monotonic() + START_LIMIT

    def assign(self, task: tuple[str, int]) -> None:
        self.task, self.desc = task, "(before the case started)"
        self.conn.send(task)
        self.deadline = time.monotonic() + GENERATE_LIMIT

    def stop(self, kill: bool = False) -> int | None:
        if self.proc is None:
            return None
        if kill and self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        code = self.proc.exitcode
        self.conn.close()
        self.proc = self.conn = None
        self.ready = False
        return code


def run_cases(tasks: Iterable[tuple[str, int]], seeds_root: Path, scratch_root: Path, workers: int,
              timeouts: dict[str, float]) -> list[Result]:
    """Every task's Result (in completion order); hangs and worker deaths are failures of their case."""
    ctx = _context()
    pending = deque(tasks)
    slots = [_Slot(ctx, i, seeds_root, scratch_root) for i in range(max(1, min(workers, len(pending))))]
    results: list[Result] = []

    def lost(slot: _Slot, kind: str, detail: str) -> None:
        if slot.task is None:
            if slot.starts > 3:
                raise RuntimeError(f"fuzz worker {slot.number} cannot start: {kind} {detail}")
            return
        name, index = slot.task
        results.append(Result(name, index, slot.desc, "failure", [(kind, detail)]))
        slot.starts = 0

    try:
        for s in slots:
            s.start()
        while pending or any(s.task is not None for s in slots):
            for s in slots:
                if s.proc is None:
                    s.start()
                if s.ready and s.task is None and pending:
                    s.assign(pending.popleft())
            live = [s for s in slots if s.proc is not None]
            timeout = min(60.0, max(0.0, min(s.deadline for s in live) - time.monotonic()))
            for conn in wait([s.conn for s in live] + [s.proc.sentinel for s in live], timeout=timeout):
                s = next((x for x in live if conn in (x.conn, x.proc.sentinel if x.proc else None)), None)
                if s is None or s.proc is None:
                    continue
                try:
                    if not s.conn.poll():
                        if s.proc.is_alive():
                            continue
                        raise EOFError
                    msg = s.conn.recv()
                except (EOFError, OSError):
                    code = s.stop()
                    lost(s, _signal_name(code) if code else "worker exit 0",
                         "the worker process died while running the case")
                    continue
                if msg[0] == "ready":
                    s.ready, s.starts, s.deadline = True, 0, float("inf")
                elif msg[0] == "warming":
                    s.deadline = time.monotonic() + START_LIMIT
                elif msg[0] == "start":
                    s.desc = msg[1]
                    s.deadline = time.monotonic() + timeouts[s.task[0]]
                elif msg[0] == "done":
                    results.append(msg[1])
                    s.task, s.deadline = None, float("inf")
            now = time.monotonic()
            for s in slots:
                if s.proc is not None and s.deadline < now:
                    limit = timeouts[s.task[0]] if s.task else START_LIMIT
                    s.stop(kill=True)
                    lost(s, "hang", f"no result within {limit:.0f} s (the worker was killed)")
    finally:  # let every worker exit by itself (a killed one leaks its semaphores), then kill stragglers
        for s in slots:
            if s.proc is not None:
                try:
                    s.conn.send(None)
                except OSError:
                    pass
        for s in slots:
            if s.proc is not None:
                s.proc.join(30 if s.task is None else 1)
                s.stop(kill=True)
    return results


# ---------------------------------------------------------------- summary and report

def summarize(results: list[Result], seed: int, seconds: float, workers: int) -> dict:
    """Per-surface counts (cases, refusals by error class, acceptances, failures) and every failure."""
    per: dict[str, dict] = {}
    for name in [cls.name for cls in S.SURFACES] + ["seeds"]:
        rs = [r for r in results if r.surface == name]
        if not rs:
            continue
        outcomes = Counter(r.outcome for r in rs)
        refused = sum(v for k, v in outcomes.items() if k not in ("accepted", "failure", "exit 0"))
        per[name] = {"cases": len(rs), "refused": refused,
                         "accepted": outcomes.get("accepted", 0) + outcomes.get("exit 0", 0),
                         "failed": outcomes.get("failure", 0),
                         "outcomes": dict(outcomes.most_common()),
                         "seconds": round(sum(r.seconds for r in rs), 2)}
    failures = sorted((r for r in results if r.problems), key=lambda r: (r.surface, r.index))
    return {"seed": seed, "workers": workers, "seconds": round(seconds, 1), "cases": len(results),
            "surfaces": per, "failures": [asdict(r) for r in failures]}


def report(summary: dict) -> str:
    """Counts per surface, then the failures grouped by surface and kind with an example and its replay."""
    seed = summary["seed"]
    lines = [f"cuzk fuzz: seed {seed} (CUZK_FUZZ_SEED={seed} replays it): {summary['cases']} cases in "
             f"{summary['seconds']} s on {summary['workers']} worker(s)",
             f"  {'surface':<13}{'cases':>7}{'refused':>9}{'accepted':>10}{'failed':>8}  most common outcomes"]
    for name, s in summary["surfaces"].items():
        top = ", ".join(f"{k} {v}" for k, v in list(s["outcomes"].items())[:4])
        lines.append(f"  {name:<13}{s['cases']:>7}{s['refused']:>9}{s['accepted']:>10}{s['failed']:>8}  {top}")
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for f in summary["failures"]:
        for kind, _ in f["problems"][:1]:
            groups[(f["surface"], kind)].append(f)
    if groups:
        lines.append(f"failures: {len(summary['failures'])} cases, by surface and kind "
                     "(replay one: CUZK_FUZZ_SEED=<seed> CUZK_FUZZ_REPLAY=<surface>:<index> pytest tests/fuzz -s)")
    for (surface, kind), fs in sorted(groups.items()):
        ex = fs[0]
        detail = ex["problems"][0][1]
        lines.append(f"  {surface} / {kind}: {len(fs)} case(s); e.g. {surface}:{ex['index']} "
                     f"[{ex['desc']}] -> {detail}")
        seen = {detail[:60]}
        for f in fs[1:]:
            d = f["problems"][0][1]
            if d[:60] not in seen and len(seen) < 4:
                seen.add(d[:60])
                lines.append(f"      also {surface}:{f['index']} [{S.short(f['desc'], 60)}] -> {S.short(d, 90)}")
    return "\n".join(lines)
