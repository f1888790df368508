"""The Python client and `cuzk submit | await | status | metrics` against a real in-process daemon:
a journaled finished job is attached to and answered; status and metrics; refusals are DaemonError
with the gRPC code, a bad payload fails its job (ProofFailedError); the CLI commands write the proof and print status."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cuzk.service.client import Client, DaemonError, ProofFailedError
from cuzk.service.payload import wrap
from service.test_daemon import c1, start, stop  # noqa: F401 - c1 is a fixture

CLI = "import sys; from cuzk.cli import main; sys.exit(main())"


@pytest.fixture
def served(tmp_path, c1):  # noqa: F811
    service, srv, channel, _ = start(tmp_path)
    payload = wrap(c1, 9)
    service.journal.submit("porep-1-9", "porep", payload, 30)
    service.journal.mark_running("porep-1-9")
    service.journal.finish("porep-1-9", b"\x05" * 192)
    (tmp_path / "c1.json").write_bytes(payload)
    yield service, f"unix://{tmp_path}/cuzk.sock", tmp_path
    stop(service, srv, channel)


def test_the_client(served):
    _, address, tmp = served
    with Client(address) as client:
        assert client.submit((tmp / "c1.json").read_bytes(), request_id="porep-1-9") == "porep-1-9"
        assert client.await_proof("porep-1-9", timeout_s=5) == b"\x05" * 192
        assert client.status()["total_proofs_completed"] == "1"
        assert "cuzk_jobs" in client.metrics()
        with pytest.raises(DaemonError) as info:
            client.await_proof("missing", timeout_s=1)
        assert info.value.code == "NOT_FOUND" and "missing" in str(info.value)
        with pytest.raises(DaemonError) as info:
            client.submit(b"")
        assert info.value.code == "INVALID_ARGUMENT"
        bad = client.submit(b"{}")  # a bad payload is acknowledged, then fails its job
        with pytest.raises(ProofFailedError, match="C1FormatError"):
            client.await_proof(bad, timeout_s=30)


def test_the_cli_commands(served):
    _, address, tmp = served
    run = lambda *a: subprocess.run([sys.executable, "-c", CLI, *a, "--address", address],  # noqa: E731
                                    capture_output=True, text=True, timeout=60)
    out = run("submit", str(tmp / "c1.json"), "--request-id", "porep-1-9")
    assert out.returncode == 0 and out.stdout.strip() == "porep-1-9"
    out = run("await", "porep-1-9", "--out", str(tmp / "proof.bin"))
    assert out.returncode == 0 and (tmp / "proof.bin").read_bytes() == b"\x05" * 192
    out = run("status")
    assert out.returncode == 0 and json.loads(out.stdout)["total_proofs_completed"] == "1"
    out = run("metrics")
    assert out.returncode == 0 and "cuzk_requests_rejected_total" in out.stdout
    out = run("await", "missing", "--timeout", "1")
    assert out.returncode != 0 and "NOT_FOUND" in out.stderr
