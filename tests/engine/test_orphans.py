"""An engine process SIGKILLed (as a host memory watchdog does) leaves no synthesis process behind:
each exits within seconds of its parent's death (cuzk.engine.engine._start_synthesis_process)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not yet reaped by init) is gone too
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_sigkilled_engine_leaves_no_synthesis_process():
    script = Path(__file__).with_name("orphan_engine.py")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        children = json.loads(proc.stdout.readline())
        assert len(children) >= 2 and all(_alive(pid) for pid in children)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in children), f"synthesis processes {children} outlived the engine"
