"""`cuzk supervise` as a real process over real children: a child SIGKILLed from outside is
restarted and the exit recorded as such (with its last RSS); a crash loop stops the supervisor with
exit status 1; a clean exit is not restarted; SIGTERM to the supervisor stops the child and exits 0.
Every exit is in the journal of the state directory and in supervisor.log."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from cuzk.service.journal import Journal
from cuzk.service.supervise import classify

CLI = "import sys; from cuzk.cli import main; sys.exit(main())"


def supervisor(state, *child: str, extra=()) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, "supervise", "--state-dir", str(state), "--backoff", "0.1",
                             *extra, "--", sys.executable, "-c", *child], stderr=subprocess.PIPE, text=True)


def pids(path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def wait_for(fn, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_a_child_killed_from_outside_is_restarted_and_recorded(tmp_path):
    state, log = tmp_path / "state", tmp_path / "pids"
    child = f"import os, time; open({str(log)!r}, 'a').write(f'{{os.getpid()}}\\n'); x = bytearray(50 << 20); time.sleep(120)"
    sup = supervisor(state, child)
    try:
        first = wait_for(lambda: pids(log))[0]
        time.sleep(1.0)  # the supervisor polls the child's RSS meanwhile
        os.kill(first, signal.SIGKILL)  # as a host memory watchdog does
        second = wait_for(lambda: pids(log)[1:])[0]
        assert second != first
    finally:
        sup.send_signal(signal.SIGTERM)
    assert sup.wait(60) == 0
    with Journal(state) as journal:
        exits = journal.exits()
    killed = next(e for e in exits if e.pid == first)
    assert killed.signal == signal.SIGKILL and "killed from outside the process" in killed.reason
    assert killed.rss_bytes and killed.rss_bytes > 40 << 20
    assert next(e for e in exits if e.pid == second).signal == signal.SIGTERM
    assert "killed from outside the process" in (state / "supervisor.log").read_text()


def test_a_crash_loop_stops_the_supervisor(tmp_path):
    state = tmp_path / "state"
    sup = supervisor(state, "import sys; sys.exit(3)", extra=("--max-exits", "3", "--window", "30"))
    assert sup.wait(60) == 1
    assert "crash loop: 3 exits" in sup.stderr.read()
    with Journal(state) as journal:
        exits = journal.exits()
    assert [e.code for e in exits] == [3, 3, 3] and all(e.reason == "exit code 3" for e in exits)


def test_a_clean_exit_is_not_restarted(tmp_path):
    state = tmp_path / "state"
    sup = supervisor(state, "pass")
    assert sup.wait(60) == 0
    with Journal(state) as journal:
        assert [e.code for e in journal.exits()] == [0]


def test_classify():
    assert classify(2, 0, 0, None) == "exit code 2"
    assert classify(-signal.SIGKILL, 4, 5, 1 << 30).startswith("OOM kill")
    assert "last RSS 1.00 GiB" in classify(-signal.SIGKILL, 4, 4, 1 << 30)
    assert classify(-signal.SIGSEGV, None, None, None) == "signal SIGSEGV"
