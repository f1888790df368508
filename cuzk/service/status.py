"""The daemon's HTTP port beside gRPC (`cuzk daemon --status-listen host:port`), GET only:

    /status   JSON: jobs per journal state, each live job's per-partition states, jobs still
              starting, the engine's workers (configured / busy), queues and devices (on CUDA VRAM
              total, used, reserved, budget, cap, and CuPy's pool with its high-water mark),
              its host RAM budget (used / total), resident and loading circuits, each circuit id's
              official parameter file (present or not), the journal's damaged (quarantined) rows, the
              daemon's restarts and last exit, uptime; under --cluster "fleet": every prover of the
              Ray fleet (cuzk.cluster.fleet.Fleet.status)
    /metrics  Prometheus text (the service's prometheus-client registry)
    /healthz  200 while the process serves
    /readyz   200 once start-up has finished (parameters of preloaded circuits loaded, unfinished
              jobs resumed), else 503
anything else 404. A stdlib ThreadingHTTPServer on its own thread."""
from __future__ import annotations

import json
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cuzk.errors import InputError


def status(service) -> dict:
    """The /status document of a ProvingService."""
    stats = service.engine.stats()
    live = service.live_jobs()
    restarts, last_exit = service.restarts()
    doc = {"uptime_seconds": round(service.uptime(), 1), "ready": service.ready.is_set(),
            "jobs": service.journal.counts(),
            "live": [{"job_id": job.id, "partitions": list(job.partition_state)} for job in live],
            "workers": {"synthesis": stats["synthesis_workers"], "gpu": stats["gpu_workers"]},
            "queue": stats["queue"], "devices": stats["devices"],
            "memory": {"host_used_bytes": stats["host"]["reserved_bytes"],
                       "host_budget_bytes": stats["host"]["total_bytes"], "budget_source": service.engine.budget.source},
            "resident_circuits": stats["resident"], "loading_circuits": stats["loading"],
            "circuits": service.circuits(), "starting_jobs": service.starting(),
            "journal_damaged": {"count": service.journal.damaged_count(),
                                "rows": [asdict(d) for d in service.journal.damaged(limit=20)]},
            "restarts": {"count": restarts, "last_exit": asdict(last_exit) if last_exit else None}}
    if "fleet" in stats:
        doc["fleet"] = stats["fleet"]
    return doc


class StatusServer:
    """The HTTP port of a ProvingService on `listen` (host:port; port 0 picks one)."""

    def __init__(self, service, listen: str) -> None:
        host, sep, port = listen.rpartition(":")
        if not sep or not port.isdigit():
            raise InputError(f"--status-listen must be host:port, got {listen!r}")
        handler = _handler(service)
        try:
            self._http = ThreadingHTTPServer((host or "0.0.0.0", int(port)), handler)
        except OSError as e:
            raise InputError(f"cannot listen on {listen}: {e.strerror or e}") from None
        self.port = self._http.server_address[1]
        self._thread = threading.Thread(target=self._http.serve_forever, name="cuzk-status", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def _handler(service):
    from prometheus_client import CONTENT_TYPE_LATEST

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/status":
                self._send(200, "application/json", json.dumps(status(service), indent=1).encode())
            elif self.path == "/metrics":
                self._send(200, CONTENT_TYPE_LATEST, service.metrics_text().encode())
            elif self.path == "/healthz":
                self._send(200, "text/plain", b"ok\n")
            elif self.path == "/readyz":
                ready = service.ready.is_set()
                self._send(200 if ready else 503, "text/plain", b"ready\n" if ready else b"starting\n")
            else:
                self._send(404, "text/plain", b"not found\n")

        def _send(self, code: int, kind: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # requests are not logged line by line
            pass

    return Handler
