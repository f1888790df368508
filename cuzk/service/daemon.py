"""The proving service: cuzk.v1.ProvingEngine (the gRPC contract of curio's cuzk daemon, wire
compatible: cuzk/service/proto/cuzk/v1/proving.proto) over an Engine, with every job in the journal.

    SubmitProof  check the request's fields (INVALID_ARGUMENT: unknown kind, empty or oversized payload,
                 bad request_id), journal the job (the acknowledgment: it is on disk before the reply)
                 and reply with its queue position; then, on a starter thread, parse its payload, check
                 its vanilla proofs and hand it to the engine, which loads its circuit in the
                 background: a defect fails the job (AwaitProof and GetStatus show the message), not
                 the call. A request_id already journaled attaches to that job: a live one is never
                 started twice, a finished one answers from the journal. The journal's states follow
                 the engine: queued until the engine admits its first partition, then running.
    AwaitProof   the job's outcome; waits while it runs, up to timeout_ms (0: no limit), then TIMEOUT.
    Prove        SubmitProof then AwaitProof (bounded by the call's deadline).
    CancelProof  cancels a queued or running job (its memory is released); was_running tells which.
    GetStatus    jobs per state, resident circuits (loaded_srs), one queue per proof kind (curio's
                 names: porep-c2, snap-update, window-post, winning-post; pending = journaled queued,
                 in_progress = running, every kind listed), uptime; GetMetrics: Prometheus text (with
                 the engine's queues, workers and devices and the daemon's restarts read at each scrape).
    PreloadSRS / EvictSRS  load / drop a circuit's parameters, by a circuit id of cuzk.service.circuits
                 (curio's porep-32g, porep-64g, wpost-32g, winning-32g, snap-32g, snap-64g, and the
                 other sizes: porep-2k, wpost-2k, winning-2k, snap-2k, ...; another: INVALID_ARGUMENT
                 naming them); FAILED_PRECONDITION when its official parameters are missing and
                 srs.allow_setup is off.
Parameters: a job uses the official ones (srs.param_cache / $FIL_PROOFS_PARAMETER_CACHE); without
them it fails, naming the file, unless srs.allow_setup lets cuzk's own stand in (tests, private
networks: the chain rejects their proofs). At start one log line per circuit says which it has.
After a restart `resume` starts every journaled job that had not finished; finished jobs are kept
for results_ttl_s (default 7 days) and then expired by `run_expiry`'s thread. PoRep (its C1 wrapper
JSON, cuzk.service.payload), WinningPoSt and WindowPoSt partitions (their vanilla_proofs, registered
proof, randomness and partition index, cuzk.service.post_payload; 192 bytes a proof) and SnapDeals
updates (their vanilla proofs, registered update proof and commitments, cuzk.service.snap_payload;
192 bytes a partition, in partition order) are proved. A request's priority 0 takes its kind's:
WinningPoSt before WindowPoSt before PoRep = SnapDeals.
"""
from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from cuzk.engine.engine import Engine, Job, JobCancelledError, Priority
from cuzk.engine.post import POST_PRIORITY, submit_post
from cuzk.engine.snap import submit_snap
from cuzk.errors import CuzkError, InputError, ParamsNotFoundError
from cuzk.service.circuits import CIRCUITS, QUEUE_NAMES, Circuit, circuit_lines, circuit_table, unknown
from cuzk.service.journal import (UNFINISHED_STATES, DamagedJobError, DuplicateRequestError, ExitRecord, JobRecord,
                                  Journal)
from cuzk.service.fleet_metrics import fleet_metrics
from cuzk.service.payload import MAX_PAYLOAD, parse_porep
from cuzk.service.post_payload import KIND_OF, parse_post, post_payload
from cuzk.service.proto.cuzk.v1 import proving_pb2 as pb
from cuzk.service.proto.cuzk.v1 import proving_pb2_grpc as pb_grpc
from cuzk.service.snap_payload import parse_snap, snap_payload

log = logging.getLogger("cuzk.daemon")

MAX_MESSAGE = 128 << 20
GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]
KINDS = {pb.POREP_SEAL_COMMIT: "porep", pb.SNAP_DEALS_UPDATE: "snap", pb.WINDOW_POST_PARTITION: "window_post",
         pb.WINNING_POST: "winning_post"}
# the contract's priorities onto the engine's (0: the kind's default, as curio's daemon does)
PRIORITIES = {pb.CRITICAL: Priority.WINNING_POST, pb.HIGH: Priority.WINDOW_POST, pb.NORMAL: Priority.POREP,
              pb.LOW: Priority.POREP}
KIND_PRIORITY = {"porep": Priority.POREP, "snap": Priority.SNAP_DEALS} | {
    kind: POST_PRIORITY[k] for kind, k in KIND_OF.items()}
# what a request of each kind carries (in vanilla_proof for PoRep, vanilla_proofs for PoSt and SnapDeals,
# whose snap-vproof.json may come in vanilla_proof instead) and its journaled payload
CARRIES = {"porep": "the C1 wrapper JSON", "window_post": "one bincode vanilla proof per sector",
           "winning_post": "one bincode vanilla proof",
           "snap": "one bincode vanilla proof per partition (or snap-vproof.json in vanilla_proof)"}
PAYLOADS = {"porep": lambda request: bytes(request.vanilla_proof), "window_post": post_payload,
            "winning_post": post_payload, "snap": snap_payload}
START_THREADS = 4  # jobs whose payloads are parsed and checked at once


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
        self.damaged = Gauge("cuzk_journal_damaged_rows", "Journal rows found damaged and quarantined",
                             registry=self.registry)


class _StateCollector:
    """The metrics read at each scrape: the engine's queues, workers and VRAM (Engine.stats), the
    daemon's restarts (ProvingService.restarts), and under --cluster the fleet's (fleet_metrics)."""

    VRAM = {"vram_used_bytes": "VRAM in use on the device (every process)", "vram_total_bytes": "VRAM of the device",
            "vram_reserved_bytes": "VRAM the backend's tables hold under its budget",
            "vram_budget_bytes": "The VRAM budget the prover plans within", "vram_cap_bytes": "The VRAM cap, 0 without one",
            "vram_pool_bytes": "Device memory in CuPy's pool", "vram_pool_peak_bytes": "High-water mark of CuPy's pool",
            "pinned_bytes": "Host memory page-locked for the device (streamed keys, staging and offload buffers)",
            "h2d_stream_bytes": "Bytes streamed host to device so far (key chunks, offloaded vectors coming back)"}

    def __init__(self, service: ProvingService) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        stats = self.service.engine.stats()
        queue = GaugeMetricFamily("cuzk_queue_depth", "Work waiting, per stage: jobs starting (payload being "
                                  "checked), then partitions", labels=["stage"])
        queue.add_metric(["starting"], self.service.starting())
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
        if "fleet" in stats:
            yield from fleet_metrics(stats["fleet"])


class ProvingService(pb_grpc.ProvingEngineServicer):
    """cuzk.v1.ProvingEngine over an engine and a journal (module docstring)."""

    def __init__(self, engine: Engine, journal: Journal, results_ttl_s: float = 7 * 86400) -> None:
        self.engine, self.journal, self.results_ttl_s = engine, journal, results_ttl_s
        self.metrics = Metrics()
        self.metrics.registry.register(_StateCollector(self))
        self.started = time.time()
        self.ready = threading.Event()  # set when start-up has finished (readyz)
        self._jobs: dict[str, _Live] = {}  # request_id -> each journaled job not yet answered here
        self._seq = itertools.count()
        self._lock = threading.RLock()  # _finished may run inside _begin (a job that ends at once)
        # a job's payload is parsed, its vanilla proofs checked and it is handed to the engine here,
        # after SubmitProof has answered
        self._starter = ThreadPoolExecutor(START_THREADS, thread_name_prefix="cuzk-start")
        self._closing = False
        for line in circuit_lines(self.circuits()):
            log.info("daemon: %s", line)

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

    def _start(self, rec: JobRecord, sector_size: int = 0) -> None:
        """Start a journaled job in the background (_begin) unless it is live already."""
        with self._lock:
            if rec.request_id in self._jobs:
                return
            self._jobs[rec.request_id] = _Live(rec, next(self._seq))
        self._starter.submit(self._begin, rec, sector_size)

    def _begin(self, rec: JobRecord, sector_size: int) -> None:
        """On a starter thread: parse the job's payload, check its vanilla proofs and submit it to the
        engine, which loads its circuit in the background; a defect fails the job in the journal, with
        the message AwaitProof and GetStatus show. Its admission (journal: running) and its end are
        journaled by callbacks registered before anyone can wait on the job, so a waiter woken by
        the job's end finds the journal already updated."""
        try:
            submit = self._parsed(rec, sector_size)
            if self._closing:  # stopping: the job stays queued in the journal for the next start
                return
            job = submit()
        except CuzkError as e:
            if not self._closing:
                self._failed_to_start(rec, e)
            return
        except Exception as e:  # noqa: BLE001 - a bug must fail the job, not leave it waiting forever
            log.exception("daemon: starting %s failed", rec.request_id)
            self._failed_to_start(rec, e)
            return
        with self._lock:
            live = self._jobs.get(rec.request_id)
            if live is not None:
                live.job = job
            try:
                cancelled = live is None or self.journal.get(rec.request_id).state == "cancelled"
            except CuzkError as e:  # its row was found damaged meanwhile: it must not be proved
                log.error("daemon: %s not started: %s", rec.request_id, e)
                cancelled = True
        if cancelled:  # CancelProof came while it was starting
            job.cancel()
        job.add_admitted_callback(lambda j: self._admitted(rec))
        job.add_done_callback(lambda j: self._finished(rec, j))

    def _parsed(self, rec: JobRecord, sector_size: int) -> Callable[[], Job]:
        """The job's payload parsed (typed errors), as the call that checks its vanilla proofs and
        submits it to the engine."""
        priority = Priority(rec.priority)
        if rec.kind == "porep":
            c1 = parse_porep(rec.payload, sector_size)
            return partial(self.engine.submit_porep, c1, priority, job_id=rec.request_id)
        if rec.kind == "snap":
            snap = parse_snap(rec.payload)
            return partial(submit_snap, self.engine, snap.proof, snap.comm_r_old, snap.comm_r_new, snap.comm_d_new,
                           snap.vanilla_proofs, priority, rec.request_id)
        post = parse_post(rec.payload, rec.kind)
        return partial(submit_post, self.engine, post.proof, post.randomness, post.vanilla_proofs,
                       post.partition_index, priority, rec.request_id)

    def close(self) -> None:
        """Stop starting jobs (before the engine closes): a job still starting stays queued in the
        journal, to be resumed at the next start, rather than failing on a closed engine."""
        self._closing = True
        self._starter.shutdown(wait=True, cancel_futures=True)

    def _failed_to_start(self, rec: JobRecord, error: BaseException) -> None:
        try:
            self.journal.fail(rec.request_id, f"{type(error).__name__}: {error}")
            self.metrics.failed.labels(rec.kind).inc()
        except CuzkError as e:  # cancelled meanwhile, or a journal that cannot record it
            log.info("daemon: %s did not start (%s) and its failure is not journaled: %s", rec.request_id, error, e)
        self._ended(rec.request_id)

    def _admitted(self, rec: JobRecord) -> None:
        """The engine admitted the job's first partition: it is running."""
        try:
            self.journal.mark_running(rec.request_id)
        except DamagedJobError as e:  # its row was quarantined: it is not proved
            log.error("daemon: %s cancelled: %s", rec.request_id, e)
            with self._lock:
                live = self._jobs.get(rec.request_id)
            if live is not None and live.job is not None:
                live.job.cancel()
            return
        except CuzkError as e:  # cancelled meanwhile: the journal keeps its answer
            log.info("daemon: %s admitted but not marked running: %s", rec.request_id, e)
        with self._lock:
            live = self._jobs.get(rec.request_id)
            if live is not None:
                live.admitted = True

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
            self._ended(rec.request_id)

    def _ended(self, request_id: str) -> None:
        """Forget a job that has ended here and wake its waiters (the journal holds its answer)."""
        with self._lock:
            live = self._jobs.pop(request_id, None)
        if live is not None:
            live.ended.set()

    def _wait(self, request_id: str, timeout: float | None) -> JobRecord | None:
        """The job's record once it has ended, or its current one after `timeout` seconds."""
        with self._lock:
            live = self._jobs.get(request_id)
        if live is not None:
            live.ended.wait(timeout)
        return self.journal.get(request_id)

    def queue_position(self, request_id: str) -> int:
        """How many jobs wait for admission ahead of this one (of a higher or the same priority,
        submitted earlier); 0 once it is admitted or has ended."""
        with self._lock:
            me = self._jobs.get(request_id)
            if me is None or me.admitted:
                return 0
            return sum(1 for live in self._jobs.values() if not live.admitted and live.seq < me.seq
                       and live.rec.priority <= me.rec.priority)

    def starting(self) -> int:
        """Jobs journaled and not yet on the engine (their payload being parsed and checked)."""
        with self._lock:
            return sum(1 for live in self._jobs.values() if live.job is None)

    def circuits(self) -> list[dict]:
        """Each circuit id with its parameter file and residency (cuzk.service.circuits.circuit_table)."""
        return circuit_table(self.engine)

    def live_jobs(self) -> list[Job]:
        """The jobs running on the engine (not those still starting)."""
        with self._lock:
            return [live.job for live in self._jobs.values() if live.job is not None]

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
        self.metrics.damaged.set(self.journal.damaged_count())
        self.metrics.reserved.set(self.engine.budget.used)
        self.metrics.limit.set(self.engine.budget.total)
        return generate_latest(self.metrics.registry).decode()

    # ---- rpcs
    def SubmitProof(self, request, context):
        rec, position = self._submit(request, context)
        return pb.SubmitProofResponse(job_id=rec.request_id, queue_position=position, assigned_gpu="")

    def _submit(self, request, context) -> tuple[JobRecord, int]:
        """Journal a request and start its job in the background: the reply waits for nothing but the
        journal's commit. Only the request's own fields are checked here; the payload is parsed and
        checked by the job (a defect fails it)."""
        kind = KINDS.get(request.proof_kind)
        if kind is None:
            self._reject(context, f"proof_kind {request.proof_kind} is not one of 1..4")
        field_name = "vanilla_proof" if kind == "porep" else "vanilla_proofs"
        if not (getattr(request, field_name) or kind == "snap" and request.vanilla_proof):
            self._reject(context, f"{field_name} is empty: a {kind} request carries {CARRIES[kind]}")
        payload = PAYLOADS[kind](request)
        if len(payload) > MAX_PAYLOAD:
            self._reject(context, f"{field_name} is {len(payload)} bytes, over the {MAX_PAYLOAD}-byte limit")
        priority = PRIORITIES.get(request.priority, KIND_PRIORITY[kind])
        request_id = request.request_id or str(uuid.uuid4())
        try:
            rec = self.journal.submit(request_id, kind, payload, int(priority))
        except DuplicateRequestError as e:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, str(e))
        except DamagedJobError as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except InputError as e:
            self._reject(context, str(e))
        if rec.state in UNFINISHED_STATES:
            self._start(rec, request.sector_size)
        return rec, self.queue_position(rec.request_id)

    def _reject(self, context, message: str) -> None:
        self.metrics.rejected.inc()
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)

    def AwaitProof(self, request, context):
        if not request.job_id:
            self._reject(context, "job_id is empty")
        timeout = request.timeout_ms / 1000 if request.timeout_ms else context.time_remaining()
        out = self._answer(request.job_id, timeout)
        if out is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"job not found: {request.job_id}")
        return out

    def _answer(self, request_id: str, timeout: float | None):
        """The AwaitProofResponse of a job once it has ended or `timeout` has passed (None: no such job);
        a job whose journal row is damaged answers FAILED with what is wrong."""
        try:
            rec = self._wait(request_id, timeout)
        except DamagedJobError as e:
            return pb.AwaitProofResponse(job_id=request_id, status=pb.AwaitProofResponse.FAILED, error_message=str(e))
        return None if rec is None else self._outcome(rec)

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
        return pb.ProveResponse(result=self._answer(rec.request_id, context.time_remaining()))

    def CancelProof(self, request, context):
        try:
            return self._cancel(request, context)
        except DamagedJobError as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))

    def _cancel(self, request, context):
        with self._lock:  # journaled first: an engine-side cancel alone (shutdown) leaves a job to resume
            live = self._jobs.get(request.job_id)
            if live is not None:
                self.journal.cancel(request.job_id)
        if live is not None:
            if live.job is not None:
                live.job.cancel()
            else:  # still starting: _begin sees the journal's "cancelled" and cancels it on the engine
                self._ended(request.job_id)
            return pb.CancelProofResponse(was_running=live.admitted)
        rec = self.journal.get(request.job_id)
        if rec is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"job not found: {request.job_id}")
        return pb.CancelProofResponse(was_running=self.journal.cancel(request.job_id))

    def GetStatus(self, request, context):
        by_kind = self.journal.counts_by_kind()
        resident = set(self.engine.resident)
        loaded = [pb.SRSStatus(circuit_id=cid, tier=pb.SRSStatus.HOT) for cid, c in CIRCUITS.items()
                  if c.key in resident]
        queues = [pb.QueueStatus(proof_kind=name, pending=by_kind[kind]["queued"],
                                 in_progress=by_kind[kind]["running"]) for kind, name in QUEUE_NAMES.items()]
        return pb.GetStatusResponse(loaded_srs=loaded, queues=queues,
                                    total_proofs_completed=sum(c["done"] for c in by_kind.values()),
                                    total_proofs_failed=sum(c["failed"] for c in by_kind.values()),
                                    uptime_seconds=int(self.uptime()))

    def GetMetrics(self, request, context):
        return pb.GetMetricsResponse(prometheus_text=self.metrics_text())

    def PreloadSRS(self, request, context):
        spec = self._circuit(request.circuit_id, context).spec(self.engine.config.srs.allow_setup)
        already = spec.key in self.engine.resident
        t = time.perf_counter()
        try:
            self.engine.warm(spec)  # on a GPU its MSM tables and witness program too: the next proof builds nothing
        except ParamsNotFoundError as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"{request.circuit_id}: {e}")
        return pb.PreloadSrsResponse(already_loaded=already, load_time_ms=int(1000 * (time.perf_counter() - t)))

    def EvictSRS(self, request, context):
        key = self._circuit(request.circuit_id, context).key
        held = self.engine.held
        was = self.engine.evict(key)
        return pb.EvictSrsResponse(was_loaded=was, freed_bytes=max(held - self.engine.held, 0) if was else 0)

    def _circuit(self, circuit_id: str, context) -> Circuit:
        refusal = unknown(circuit_id)
        if refusal is not None:
            self._reject(context, refusal)
        return CIRCUITS[circuit_id]


@dataclass(eq=False)
class _Live:
    """A journaled job not yet answered: its record, submission order, engine job (None while it
    starts), whether the engine has admitted it, and an event set once the journal holds its answer."""

    rec: JobRecord
    seq: int
    job: Job | None = None
    admitted: bool = False
    ended: threading.Event = field(default_factory=threading.Event)


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
