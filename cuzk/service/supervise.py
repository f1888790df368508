"""`cuzk supervise --state-dir DIR -- COMMAND...`: keep a daemon running and say why it died.

The child is watched by polling (its exit status and its resident size every `poll_s`), never by a
shell `wait -n`. Every exit is classified and recorded in the journal (Journal.record_exit) and in
<state-dir>/supervisor.log (and stderr):
    exit code N                      the daemon exited with N (0: asked to stop; not restarted)
    OOM kill                         SIGKILL and the cgroup's memory.events oom_kill count rose
    killed from outside the process  SIGKILL with no OOM record: a host memory watchdog? (with the
                                     last RSS seen)
    signal S                         any other signal
then the child is restarted after an exponential backoff (backoff_s doubling up to backoff_max_s,
reset after a run longer than window_s), unless it exited max_exits times within window_s: a crash
loop, reported and not restarted (exit status 1). SIGTERM / SIGINT to the supervisor go to the child;
the supervisor then exits 0.
"""
from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("cuzk.supervise")


@dataclass(frozen=True)
class SupervisorOptions:
    command: list[str]
    state_dir: Path
    max_exits: int = 5
    window_s: float = 60.0
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    poll_s: float = 0.2


def oom_kills(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The oom_kill count of this process's cgroup (v2 memory.events; v1 memory.oom_control), or None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for events in ((cgroup_root / path.lstrip("/") / "memory.events") if controllers == "" else None,
                       (cgroup_root / "memory" / path.lstrip("/") / "memory.oom_control")
                       if "memory" in controllers.split(",") else None):
            if events is None:
                continue
            try:
                for row in events.read_text().splitlines():
                    key, _, value = row.partition(" ")
                    if key == "oom_kill":
                        return int(value)
            except (OSError, ValueError):
                continue
    return None


def rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * 4096
    except (OSError, ValueError, IndexError):
        return None


def classify(returncode: int, oom_before: int | None, oom_after: int | None, rss: int | None) -> str:
    """The reason an exit is recorded with (module docstring)."""
    if returncode >= 0:
        return f"exit code {returncode}"
    sig = -returncode
    name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
    if sig == signal.SIGKILL:
        if oom_before is not None and oom_after is not None and oom_after > oom_before:
            return "OOM kill (the cgroup's oom_kill count rose)"
        seen = f"{rss / 2**30:.2f} GiB" if rss else "unknown"
        return f"SIGKILL with no OOM record: killed from outside the process (a host memory watchdog?); last RSS {seen}"
    return f"signal {name}"


def supervise(options: SupervisorOptions) -> int:
    """Run and restart the command (module docstring); the supervisor's exit status."""
    from cuzk.service.journal import Journal

    options.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    handler = logging.FileHandler(options.state_dir / "supervisor.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    journal = Journal(options.state_dir)
    stop: list[int] = []
    child: list[subprocess.Popen] = []

    def on_signal(signum, frame) -> None:
        stop.append(signum)
        if child and child[0].poll() is None:
            child[0].send_signal(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    exits: list[float] = []
    backoff = options.backoff_s
    try:
        while True:
            oom_before = oom_kills()
            started = time.monotonic()
            proc = subprocess.Popen(options.command)
            child[:] = [proc]
            log.info("started pid %d: %s", proc.pid, " ".join(options.command))
            rss = None
            while proc.poll() is None:
                rss = rss_bytes(proc.pid) or rss
                time.sleep(options.poll_s)
            reason = classify(proc.returncode, oom_before, oom_kills(), rss)
            sig = -proc.returncode if proc.returncode < 0 else None
            journal.record_exit(proc.pid, None if sig else proc.returncode, sig, reason, rss)
            _say(f"pid {proc.pid} ended: {reason}")
            if stop:
                return 0
            if proc.returncode == 0:
                _say("the daemon exited cleanly; not restarting")
                return 0
            now = time.monotonic()
            exits = [t for t in exits if now - t < options.window_s] + [now]
            if len(exits) >= options.max_exits:
                _say(f"crash loop: {len(exits)} exits within {options.window_s:g} s; not restarting "
                     f"(see {options.state_dir / 'supervisor.log'} and the daemon's log)")
                return 1
            backoff = options.backoff_s if now - started > options.window_s else backoff
            _say(f"restarting in {backoff:g} s")
            deadline = time.monotonic() + backoff
            while time.monotonic() < deadline and not stop:
                time.sleep(min(options.poll_s, backoff))
            if stop:
                return 0
            backoff = min(backoff * 2, options.backoff_max_s)
    finally:
        journal.close()


def _say(message: str) -> None:
    log.warning(message)
    print(f"cuzk supervise: {message}", file=sys.stderr, flush=True)
