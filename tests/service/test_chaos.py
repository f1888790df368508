"""Chaos (slow): 2KiB PoRep jobs submitted to a supervised daemon that is SIGKILLed 20 times, each
daemon at a random moment of its life (starting, loading the circuit, proving);
every job finishes exactly once, with a proof that verifies and equals the journal's one record of
it, and every kill is recorded as a kill from outside the process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from cuzk import api
from cuzk.porep.synthetic import synthetic_c1
from cuzk.service.client import Client, DaemonError
from cuzk.service.journal import Journal
from cuzk.service.payload import wrap

CLI = "import sys; from cuzk.cli import main; sys.exit(main())"
JOBS, KILLS = 3, 20


def daemon_pid(state) -> int | None:
    try:
        text = (state / "daemon.lock").read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def next_daemon(state, killed: list[int], deadline: float) -> int:
    """The pid of the daemon the supervisor started after the last kill, once it holds the lock."""
    while time.monotonic() < deadline:
        pid = daemon_pid(state)
        if pid is not None and pid not in killed:
            return pid
        time.sleep(0.1)
    raise AssertionError("the supervisor did not start a daemon again")


@pytest.mark.slow
def test_jobs_survive_sigkills_of_the_daemon(tmp_path):
    rng = np.random.default_rng()
    state, sock = tmp_path / "state", tmp_path / "cuzk.sock"
    c1s = [synthetic_c1("StackedDrg2KiBV1_1", prover_id=bytes(32), sector_id=i, ticket=bytes([i]) * 32,
                        seed=bytes([100 + i]) * 32, rng=np.random.default_rng(i), progress=False) for i in range(JOBS)]
    sup = subprocess.Popen([sys.executable, "-c", CLI, "supervise", "--state-dir", str(state), "--backoff", "0.5",
                            "--window", "5", "--max-exits", str(KILLS + 3), "--", sys.executable, "-c", CLI, "daemon",
                            "--backend", "cpu", "--allow-setup", "--state-dir", str(state), "--listen", f"unix://{sock}"])
    try:
        client = Client(f"unix://{sock}", timeout_s=10)
        ids = [f"porep-chaos-{i}" for i in range(JOBS)]
        pending = list(range(JOBS))
        deadline = time.monotonic() + 600
        while pending and time.monotonic() < deadline:  # submit through restarts
            try:
                client.submit(wrap(c1s[pending[0]], pending[0]), request_id=ids[pending[0]])
                pending.pop(0)
            except DaemonError:
                time.sleep(0.5)
        killed: list[int] = []
        for _ in range(KILLS):  # each daemon killed at a random moment of its life: starting, loading, proving
            pid = next_daemon(state, killed, deadline)
            time.sleep(float(rng.uniform(0.5, 12)))
            os.kill(pid, signal.SIGKILL)  # as the host memory watchdog did
            killed.append(pid)
        proofs = {}
        while len(proofs) < JOBS and time.monotonic() < deadline + 1200:
            for i, job in enumerate(ids):
                if i in proofs:
                    continue
                try:
                    proofs[i] = client.await_proof(job, timeout_s=20)
                except (DaemonError, TimeoutError):
                    time.sleep(0.5)
        client.close()
        assert len(proofs) == JOBS
        for i in range(JOBS):
            assert api.verify(c1s[i], proofs[i])
    finally:
        sup.send_signal(signal.SIGTERM)
        sup.wait(120)
    with Journal(state) as journal:
        for i, job in enumerate(ids):
            rec = journal.get(job)
            assert rec.state == "done" and rec.result == proofs[i]
        exits = journal.exits()
        assert journal.counts()["done"] == JOBS
    reasons = {e.pid: e.reason for e in exits}
    assert len(killed) == KILLS and all("killed from outside the process" in reasons[p] for p in killed)
