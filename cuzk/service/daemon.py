"""The proving service: cuzk.v1.ProvingEngine (the gRPC contract of curio's cuzk daemon, wire
compatible: cuzk/service/proto/cuzk/v1/proving.proto) over an Engine, with every job in the journal.

    SubmitProof  validate (INVALID_ARGUMENT with a message for any bad field or payload), journal the
                 job (the acknowledgment: it is on disk before the reply), start it on the engine.
                 A request_id already journaled attaches to that job: a live one is never started
                 twice, a finished one answers from the journal.
    AwaitProof   the job's outcome; waits while it runs, up to timeout_ms (0: no limit), then TIMEOUT.
    Prove        SubmitProof then AwaitProof (bounded by the call's deadline).
    CancelProof  cancels a queued or running job (its memory is released); was_running tells which.
    GetStatus    jobs per state, resident circuits, uptime; GetMetrics: Prometheus text (with the
                 engine's queues, workers and devices and the daemon's restarts read at each scrape).
    PreloadSRS / EvictSRS  load / drop a circuit's parameters ("porep-2k", "porep-8m", "porep-512m",
                 "porep-32g", "porep-64g").
After a restart `resume` starts every journaled job that had not finished; finished jobs are kept
for results_ttl_s (default 7 days) and then expired by `run_expiry`'s thread. Only PoRep is proved;
the other kinds of the contract are answered UNIMPLEMENTED.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from cuzk.engine.engine import Engine, Job, JobCancelledError, Priority, porep_spec_of
from cuzk.errors import CuzkError, InputError
from cuzk.porep.registry import get_proof
from cuzk.service.journal import DuplicateRequestError, ExitRecord, JobRecord, Journal
from cuzk.service.payload import parse_porep
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.proto.cuzk.v1 import proving_pb2_grpc as pb_grpc

log = logging.getLogger("cuzk.daemon")

MAX_MESSAGE = 128 << 20
GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]
KINDS = {pb.POREP_SEAL_COMMIT: "porep", pb.SNAP_DEALS_UPDATE: "snap", pb.WINDOW_POST_PARTITION: "window_post",
         pb.WINNING_POST: "winning_post"}
# the contract's priorities onto the engine's (0: the kind's default, as curio's daemon does)
PRIORITIES = {pb.CRITICAL: Priority.WINNING_POST, pb.HIGH: Priority.WINDOW_POST, pb.NORMAL: Priority.POREP,
              pb.LOW: Priority.POREP}
CIRCUITS = {"porep-2k": "StackedDrg2KiBV1_1", "porep-8m": "StackedDrg8MiBV1_1", "porep-512m": "StackedDrg512MiBV1_1",
            "porep-32g": "StackedDrg32GiBV1_1", "porep-64g": "StackedDrg64GiBV1_1"}


class Metrics:
    """The daemon's Prometheus metrics (prometheus-client, a registry of its own)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.completed = Counter("cuzk_proofs_completed", "Proofs completed", ["kind"], registry=self.registry)
        self.failed = Counter("cuzk_proofs_failed", "Proofs failed", ["kind"], registry=self.registry)
        self.duration = Histogram("cuzk_proof_seconds", "Seconds from submission to the proof", ["kind"],
                                  buckets=(1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800), registry=self.registry)
        self.jobs = Gauge("cuzk_jobs", "Journaled jobs per state", ["state"], registry=self.registry)
        self.reserved = Gauge("cuzk_host_reserved_bytes", "Host RAM reserved by the engine", registry=self.registry)
        self.limit = Gauge("cuzk_host_budget_bytes", "The engine's host RAM budget", registry=self.registry)
        self.rejected = Counter("cuzk_requests_rejected", "Requests answered INVALID_ARGUMENT", registry=self.registry)


class _StateCollector:
    """The metrics read at each scrape: the engine's queues, workers and VRAM (Engine.stats) and the
    daemon's restarts (ProvingService.restarts)."""

    VRAM = {"vram_used_bytes": "VRAM in use on the device (every process)", "vram_total_bytes": "VRAM of the device",
            "vram_reserved_bytes": "VRAM the backend's tables hold under its budget"}

    def __init__(self, service: ProvingService) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        stats = self.service.engine.stats()
        queue = GaugeMetricFamily("cuzk_queue_depth", "Work items waiting, per stage", labels=["stage"])
        for stage, n in stats["queue"].items():
            queue.add_metric([stage], n)
        workers = GaugeMetricFamily("cuzk_workers", "Engine workers configured and busy", labels=["kind", "state"])
        for kind in ("synthesis", "gpu"):
            for state, n in stats[f"{kind}_workers"].items():
                workers.add_metric([kind, state], n)
        yield from (queue, workers)
        for key, text in self.VRAM.items():
            family = GaugeMetricFamily(f"cuzk_{key}", text, labels=["device"])
            for dev in stats["devices"]:
                if key in dev:
                    family.add_metric([dev["device"]], dev[key])
            if family.samples:
                yield family
        yield CounterMetricFamily("cuzk_daemon_restarts", "Daemon starts on this state directory after the first",
                                  value=self.service.restarts()[0])


class ProvingService(pb_grpc.ProvingEngineServicer):
    """cuzk.v1.ProvingEngine over an engine and a journal (module docstring)."""

    def __init__(self, engine: Engine, journal: Journal, results_ttl_s: float = 7 * 86400) -> None:
        self.engine, self.journal, self.results_ttl_s = engine, journal, results_ttl_s
        self.metrics = Metrics()
        self.metrics.registry.register(_StateCollector(self))
        self.started = time.time()
        self.ready = threading.Event()  # set when start-up has finished (readyz)
        self._live: dict[str, Job] = {}
        self._lock = threading.RLock()  # _finished may run inside _start (a job that ends at once)

    # ---- jobs
    def expire_results(self) -> int:
        """Forget finished jobs older than results_ttl_s (their request_ids may then be used again)."""
        n = self.journal.expire(self.results_ttl_s)
        if n:
            log.info("daemon: %d finished job(s) older than %.0f s expired", n, self.results_ttl_s)
        return n

    def run_expiry(self, stop: threading.Event, every_s: float | None = None) -> threading.Thread:
        """A thread that calls expire_results every `every_s` (default ttl / 10, at most an hour) until
        `stop` is set."""
        period = every_s or min(self.results_ttl_s / 10, 3600.0)

        def loop() -> None:
            while not stop.wait(period):
                try:
                    self.expire_results()
                except CuzkError as e:
                    log.error("daemon: expiring results failed: %s", e)
        thread = threading.Thread(target=loop, name="cuzk-expiry", daemon=True)
        thread.start()
        return thread

    def resume(self) -> int:
        """Start every journaled job that had not finished (after a restart); how many."""
        records = self.journal.unfinished()
        for rec in records:
            self._start(rec)
        return len(records)

    def _start(self, rec: JobRecord, c1=None) -> None:
        """Run a journaled job on the engine (c1: its payload, when already parsed). Its end is
        journaled by a callback registered before anyone can wait on the job, so a waiter woken by
        the job's end finds the journal already updated."""
        with self._lock:
            if rec.request_id in self._live:
                return
            try:
                c1 = c1 or parse_porep(rec.payload)
                self.journal.mark_running(rec.request_id)
                job = self.engine.submit_porep(c1, Priority(rec.priority), job_id=rec.request_id)
            except CuzkError as e:
                self.journal.fail(rec.request_id, str(e))
                self.metrics.failed.labels(rec.kind).inc()
                return
            self._live[rec.request_id] = job
            job.add_done_callback(lambda j: self._finished(rec, j))

    def _finished(self, rec: JobRecord, job: Job) -> None:
        error = job.error()
        try:
            if error is None:
                self.journal.finish(rec.request_id, job.result())
                self.metrics.completed.labels(rec.kind).inc()
                self.metrics.duration.labels(rec.kind).observe(time.time() - rec.submitted_at)
            elif isinstance(error, JobCancelledError):
                pass  # CancelProof journaled it; otherwise the engine is closing: unfinished, resumed at the next start
            else:
                self.journal.fail(rec.request_id, f"{type(error).__name__}: {error}")
                self.metrics.failed.labels(rec.kind).inc()
        except CuzkError as e:  # a journal that cannot record it: the job stays unfinished, resumed on restart
            log.error("daemon: cannot journal the end of %s: %s", rec.request_id, e)
        finally:
            with self._lock:
                self._live.pop(rec.request_id, None)

    def _wait(self, request_id: str, timeout: float | None) -> JobRecord | None:
        """The job's record once it has ended, or its current one after `timeout` seconds."""
        with self._lock:
            job = self._live.get(request_id)
        if job is not None:
            done = threading.Event()
            job.add_done_callback(lambda _: done.set())  # runs after _finished: the journal is current
            done.wait(timeout)
        return self.journal.get(request_id)

    def live_jobs(self) -> list[Job]:
        with self._lock:
            return list(self._live.values())

    def restarts(self) -> tuple[int, ExitRecord | None]:
        """Daemon restarts on this state directory (its journaled starts less the first) and the last
        daemon exit the supervisor journaled (None: none)."""
        exits = self.journal.exits(limit=1)
        return max(self.journal.start_count() - 1, 0), exits[0] if exits else None

    def uptime(self) -> float:
        return time.time() - self.started

    def metrics_text(self) -> str:
        """The Prometheus text of the service's metrics, the gauges refreshed first."""
        for state, n in self.journal.counts().items():
            self.metrics.jobs.labels(state).set(n)
        self.metrics.reserved.set(self.engine.budget.used)
        self.metrics.limit.set(self.engine.budget.total)
        return generate_latest(self.metrics.registry).decode()

    # ---- rpcs
    def SubmitProof(self, request, context):
        rec, position = self._submit(request, context)
        return pb.SubmitProofResponse(job_id=rec.request_id, queue_position=position, assigned_gpu="")

    def _submit(self, request, context) -> tuple[JobRecord, int]:
        kind = KINDS.get(request.proof_kind)
        if kind is None:
            self._reject(context, f"proof_kind {request.proof_kind} is not one of 1..4")
        if kind != "porep":
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"proof_kind {kind}: only POREP_SEAL_COMMIT is proved here")
        try:
            c1 = parse_porep(request.vanilla_proof, request.sector_size)
        except CuzkError as e:
            self._reject(context, f"vanilla_proof: {e}")
        priority = PRIORITIES.get(request.priority, Priority.POREP)
        request_id = request.request_id or str(uuid.uuid4())
        try:
            rec = self.journal.submit(request_id, kind, bytes(request.vanilla_proof), int(priority))
        except DuplicateRequestError as e:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, str(e))
        except InputError as e:
            self._reject(context, str(e))
        position = self.journal.counts().get("queued", 1) - 1
        if rec.state == "queued":
            self._start(rec, c1)
        return rec, max(position, 0)

    def _reject(self, context, message: str) -> None:
        self.metrics.rejected.inc()
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)

    def AwaitProof(self, request, context):
        if not request.job_id:
            self._reject(context, "job_id is empty")
        timeout = request.timeout_ms / 1000 if request.timeout_ms else context.time_remaining()
        rec = self._wait(request.job_id, timeout)
        if rec is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"job not found: {request.job_id}")
        return self._outcome(rec)

    def _outcome(self, rec: JobRecord):
        status = {"done": pb.AwaitProofResponse.COMPLETED, "failed": pb.AwaitProofResponse.FAILED,
                  "cancelled": pb.AwaitProofResponse.CANCELLED}.get(rec.state, pb.AwaitProofResponse.TIMEOUT)
        out = pb.AwaitProofResponse(job_id=rec.request_id, status=status, error_message=rec.error or "")
        if rec.state == "done":
            out.proof = rec.result
            out.total_ms = int(1000 * ((rec.ended_at or rec.submitted_at) - rec.submitted_at))
        return out

    def Prove(self, request, context):
        rec, _ = self._submit(request.submit, context)
        return pb.ProveResponse(result=self._outcome(self._wait(rec.request_id, context.time_remaining())))

    def CancelProof(self, request, context):
        with self._lock:
            job = self._live.get(request.job_id)
        if job is not None:  # journaled first: an engine-side cancel alone (shutdown) leaves a job to resume
            self.journal.cancel(request.job_id)
            return pb.CancelProofResponse(was_running=job.cancel())
        rec = self.journal.get(request.job_id)
        if rec is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"job not found: {request.job_id}")
        return pb.CancelProofResponse(was_running=self.journal.cancel(request.job_id))

    def GetStatus(self, request, context):
        counts = self.journal.counts()
        resident = [pb.SRSStatus(circuit_id=key, tier=pb.SRSStatus.HOT) for key in self.engine.resident]
        queues = [pb.QueueStatus(proof_kind="porep", pending=counts.get("queued", 0),
                                 in_progress=counts.get("running", 0))]
        return pb.GetStatusResponse(loaded_srs=resident, queues=queues, total_proofs_completed=counts.get("done", 0),
                                    total_proofs_failed=counts.get("failed", 0),
                                    uptime_seconds=int(self.uptime()))

    def GetMetrics(self, request, context):
        return pb.GetMetricsResponse(prometheus_text=self.metrics_text())

    def PreloadSRS(self, request, context):
        proof = self._circuit(request.circuit_id, context)
        spec = porep_spec_of(get_proof(proof))
        already = spec.key in self.engine.resident
        t = time.perf_counter()
        self.engine.warm(spec)  # on a GPU its MSM tables and witness program too: the next proof builds nothing
        return pb.PreloadSrsResponse(already_loaded=already, load_time_ms=int(1000 * (time.perf_counter() - t)))

    def EvictSRS(self, request, context):
        spec = porep_spec_of(get_proof(self._circuit(request.circuit_id, context)))
        held = self.engine.held
        was = self.engine.evict(spec.key)
        return pb.EvictSrsResponse(was_loaded=was, freed_bytes=max(held - self.engine.held, 0) if was else 0)

    def _circuit(self, circuit_id: str, context) -> str:
        if circuit_id not in CIRCUITS:
            self._reject(context, f"unknown circuit id {circuit_id!r}: one of {', '.join(CIRCUITS)}")
        return CIRCUITS[circuit_id]


def server(service: ProvingService, listen: str, workers: int = 16) -> tuple[grpc.Server, int]:
    """A started gRPC server for the service on `listen` (unix:///path or host:port; port 0 picks one)
    with 128 MiB messages; (server, port bound, 0 for a unix socket). InputError when it cannot bind."""
    if listen.startswith("unix://"):
        _clear_stale_socket(Path(listen[len("unix://"):]))
    srv = grpc.server(futures.ThreadPoolExecutor(workers, thread_name_prefix="cuzk-grpc"), options=GRPC_OPTIONS)
    pb_grpc.add_ProvingEngineServicer_to_server(service, srv)
    try:
        port = srv.add_insecure_port(listen)
    except RuntimeError as e:
        raise InputError(f"cannot listen on {listen}: {e}") from None
    if port == 0 and not listen.startswith("unix:"):
        raise InputError(f"cannot listen on {listen}: the address is in use or invalid")
    srv.start()
    return srv, port


def _clear_stale_socket(path: Path) -> None:
    """Remove a socket file no process listens on (a daemon that was killed leaves one); create the
    parent directory. A live socket is left for the bind to fail on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_socket():
        return
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink(missing_ok=True)
