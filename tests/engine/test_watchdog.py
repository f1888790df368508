"""A real memory test of the engine's host RAM budget: the engine runs in a process of its
own (tests/engine/watchdog_engine.py) under a watchdog of the test's, which polls the total RSS of
the process tree (the engine, its synthesis processes and every other descendant) every 20 ms and
SIGKILLs the tree once it passes the configured memory.host_cap, as our users' host watchdog did
(a limit the kernel never sees). Each synthesis allocates and touches ALLOC_MB MiB.

The cap is tight: a calibration run (one synthesis process, three jobs one after the other, so the
engine's growth over a run is reserved by its end) reports what the engine reserves (the engine,
its synthesis process and helper processes, the resident circuit; one item), and each setting's cap
is what the engine holds with N synthesis processes, plus room for max(1, N - 1) items (so for N > 1
unconstrained synthesis would pass it), plus SLACK. The budget can then admit only that many items
at a time, and memory the engine uses without reserving it, beyond SLACK, fires the watchdog: before
the engine reserved its own growth after start (~30-40 MiB here: setup, first-use kernels) and the
multiprocessing resource tracker (~13 MiB), it fired in every setting. The control runs the same
workload with a budget that lies: the watchdog must fire. About 20 s on 2 cores.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import cuzk

# slow: calibrated on warm numba caches; on a fresh checkout every spawned synthesis process compiles
# the kernels first (minutes on 2 cores, and compiler memory the calibration does not see)
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("watchdog_engine.py")
ALLOC_MB = 200
SLACK = 16 << 20  # room above the engine's reservations: RSS noise, not unreserved memory
POLL_S = 0.02
MIB = 1 << 20


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:  # the process (or one of its threads) just ended
        pass
    return out


def process_tree(root: int) -> list[int]:
    """root and all its descendants (from /proc/<pid>/task/*/children)."""
    tree, i = [root], 0
    while i < len(tree):
        tree += [c for c in _children(tree[i]) if c not in tree]
        i += 1
    return tree


def vm_rss(pid: int) -> int:
    """The resident size of pid in bytes (VmRSS of /proc/<pid>/status; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


@dataclass
class Watched:
    """What the watchdog saw of one run: the exit code, whether it fired (and at what total), the
    peak total RSS of the tree and the most processes in it, and the script's output."""

    returncode: int
    fired: bool
    fired_at: int | None
    peak: int
    peak_parts: list[int] = field(default_factory=list)
    processes: int = 0
    stdout: str = ""
    stderr: str = ""

    @property
    def summary(self) -> dict:
        lines = [line for line in self.stdout.splitlines() if line.startswith("{")]
        assert lines, f"no summary line (rc {self.returncode}); stderr:\n{self.stderr[-3000:]}"
        return json.loads(lines[-1])


def run_watched(cap: int, tmp_path: Path, *args: str, timeout: float = 120) -> Watched:
    """Run the engine script with memory.host_cap = cap under the watchdog: SIGKILL to every process
    of its tree when their total RSS passes cap."""
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    paths = [str(Path(cuzk.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]  # the cuzk under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([sys.executable, str(SCRIPT), "--cap", str(cap), *args], stdout=o, stderr=e,
                                env=env, start_new_session=True)
    fired_at, peak, parts, most = None, 0, [], 0
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None:
            tree = process_tree(proc.pid)
            sizes = [vm_rss(pid) for pid in tree]
            total = sum(sizes)
            most = max(most, len(tree))
            if total > peak:
                peak, parts = total, sizes
            if total > cap:
                fired_at = total
                for pid in tree:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                proc.wait()
                break
            if time.monotonic() > deadline:
                pytest.fail(f"the engine script ran past {timeout} s: {err.read_text()[-3000:]}")
            time.sleep(POLL_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        try:  # whatever of its session is left (a killed tree's stragglers)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return Watched(proc.returncode, fired_at is not None, fired_at, peak, parts, most, out.read_text(), err.read_text())


@pytest.fixture(scope="module")
def calibration(tmp_path_factory) -> dict:
    """What the engine reserves with one synthesis process after a run of three jobs, one after the
    other (no cap in the way): held (the engine besides items), one synthesis process, one item."""
    w = run_watched(64 << 30, tmp_path_factory.mktemp("calibration"), "--synthesis", "1", "--gpu-workers", "2",
                    "--jobs", "3", "--sequential", "--alloc-mb", str(ALLOC_MB), "--hold", "0")
    assert w.returncode == 0 and not w.fired, w.stderr[-3000:]
    s = w.summary
    workers = [b for what, b in s["reservations"] if what.startswith("synthesis process")]
    assert len(workers) == 1 and s["synthesis_bytes"] >= ALLOC_MB * MIB
    return {"held": s["held"], "worker": workers[0], "item": s["item_bytes"]}


def cap_for(calibration: dict, synthesis: int, fits: int) -> int:
    """A cap with room for what the engine holds with `synthesis` processes and `fits` items."""
    return calibration["held"] + (synthesis - 1) * calibration["worker"] + fits * calibration["item"] + SLACK


def workload(synthesis: int, gpu_workers: int, hold: float = 0.15) -> list[str]:
    """3 jobs of 2 partitions, each synthesis holding ALLOC_MB MiB for `hold` s (>= 5 polls)."""
    return ["--synthesis", str(synthesis), "--gpu-workers", str(gpu_workers), "--jobs", "3", "--partitions", "2",
            "--alloc-mb", str(ALLOC_MB), "--hold", str(hold)]


@pytest.mark.parametrize("synthesis,gpu_workers", [(1, 1), (2, 1), (3, 2), (4, 2)])
def test_the_engine_stays_under_the_cap(calibration, tmp_path, synthesis, gpu_workers):
    """Under a cap with room for max(1, N - 1) items, every proof completes and the watchdog never
    fires: the engine admits no more than fit, and reserves all it uses."""
    fits = max(1, synthesis - 1)
    cap = cap_for(calibration, synthesis, fits)
    assert synthesis == 1 or cap < cap_for(calibration, synthesis, synthesis) - SLACK  # all at once would not fit
    w = run_watched(cap, tmp_path, *workload(synthesis, gpu_workers))
    seen = f"peak {w.peak / MIB:.0f} MiB ({', '.join(f'{p / MIB:.0f}' for p in w.peak_parts)}) of cap {cap / MIB:.0f} MiB"
    print(f"synthesis {synthesis}, gpu workers {gpu_workers}: {seen}")
    assert not w.fired, f"the watchdog fired at {w.fired_at / MIB:.0f} MiB: {seen}\n{w.stderr[-3000:]}"
    assert w.returncode == 0, w.stderr[-3000:]
    s = w.summary
    assert s["proofs"] == s["jobs"] == 3
    assert s["max_reserved"] <= s["budget_total"] <= cap
    assert w.processes >= synthesis + 1  # the synthesis processes were in the tree the watchdog watched


def test_the_watchdog_kills_an_engine_whose_budget_lies(calibration, tmp_path):
    """The control: the same workload and cap, but the engine believes it has 1 PiB; its synthesis
    runs unconstrained, the tree passes the cap and the watchdog kills it."""
    synthesis, fits = 4, 3
    cap = cap_for(calibration, synthesis, fits)
    w = run_watched(cap, tmp_path, "--unbudgeted", *workload(synthesis, 2, hold=0.5))  # long: they overlap
    print(f"control: the watchdog {'fired at ' + format(w.fired_at / MIB, '.0f') + ' MiB' if w.fired else 'did not fire'}"
          f" (cap {cap / MIB:.0f} MiB)")
    assert w.fired and w.returncode == -signal.SIGKILL, (w.returncode, w.peak / MIB, cap / MIB, w.stderr[-3000:])
