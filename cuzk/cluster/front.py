"""The fleet as one engine: ClusterEngine takes the jobs an Engine takes (submit, submit_porep, and
cuzk.engine.post / cuzk.engine.snap through submit) and proves their partitions on the prover actors
of a Ray cluster, one per GPU (cuzk.cluster.prover). The daemon runs it in place of an Engine
(`cuzk daemon --cluster auto`), so curio's contract and the journal are unchanged.

    with ClusterEngine(config, ClusterOptions("auto")) as fleet:
        proof = fleet.submit_porep(c1).result()

Three threads and callbacks: the dispatcher places the most urgent partition (Priority, FIFO within
one) on a member (cuzk.cluster.placement) as soon as one takes work; each call's outcome lands in a
callback (a proof completes its partition once; a lost prover puts the partition back in the queue,
to be proved elsewhere, up to max_attempts tries; a job that ends withdraws its partitions still on
provers); the monitor, every heartbeat_s, starts a prover on each GPU of every new node and warms it
with the fleet's working set before it takes work, asks each member for its health, flags one whose
answer is stale_after_s late, marks the members of a node Ray reports dead, and warms again, with
backoff, a member whose warm failed with its engine's error (a circuit it cannot load: "failing"
meanwhile); the calls thread makes the Ray calls a callback asks for (a callback may run on Ray
Client's data thread, which must not wait on Ray: a ClientObjectRef waits there for its id)."""
from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from cuzk.cluster import ray_fleet
from cuzk.cluster.fleet import Fleet, Member
from cuzk.cluster.placement import choose
from cuzk.engine.budget import MemoryBudget, host_limit
from cuzk.engine.config import EngineConfig
from cuzk.engine.jobs import CircuitSpec, Job, Priority, Task
from cuzk.engine.porep import porep_job
from cuzk.errors import CuzkError, InputError
from cuzk.porep.c1 import C1Output

log = logging.getLogger("cuzk.cluster")


class RemoteProofError(CuzkError, RuntimeError):
    """A prover could not prove a partition (its engine's error, named), or no prover could in
    max_attempts tries."""


@dataclass(frozen=True)
class ClusterOptions:
    """address: the Ray cluster (ray_fleet.connect); resource: the node resource a prover claims one
    unit of ("GPU", or a custom one for CPU provers); backend: the provers' ("auto", "cuda", "cpu");
    a member whose warm failed is warmed again after warm_retry_s, doubling up to warm_retry_max_s."""

    address: str = "auto"
    resource: str = "GPU"
    backend: str = "auto"
    heartbeat_s: float = 5.0
    stale_after_s: float = 15.0
    max_attempts: int = 3
    ready_timeout_s: float = 120.0
    warm_retry_s: float = 5.0
    warm_retry_max_s: float = 300.0


@dataclass(order=True)
class _Item:
    priority: int
    seq: int
    job: Job = field(compare=False)
    k: int = field(compare=False)
    tried: set[str] = field(default_factory=set, compare=False)
    sent: float = field(default=0.0, compare=False)
    member: Member | None = field(default=None, compare=False)  # where it is being proved

    @property
    def tag(self) -> str:
        return f"{self.job.id}/{self.k}"


class ClusterEngine:
    """An Engine's interface over a Ray fleet (module docstring)."""

    def __init__(self, config: EngineConfig, options: ClusterOptions) -> None:
        self.config, self.options = config, options
        mem = config.memory
        self.budget = MemoryBudget.for_host(host_limit(mem.host_cap), mem.host_margin)  # the front's own host
        self.slots = config.pipeline.slots
        ray_fleet.connect(options.address)
        self.fleet = Fleet()
        self._circuits: dict[str, CircuitSpec] = {}  # every circuit proved or warmed, by key
        self._preloaded: set[str] = set()  # the keys warm() asked for
        self._pending: list[_Item] = []
        self._seq = itertools.count()
        self._job_ids = itertools.count(1)
        self._health: dict[str, tuple[float, Future]] = {}  # member key -> (asked at, answer)
        self._calls: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._closed = False
        self._watch()
        self._threads = [threading.Thread(target=self._dispatch, name="cuzk-cluster-dispatch", daemon=True),
                         threading.Thread(target=self._monitor, name="cuzk-cluster-monitor", daemon=True),
                         threading.Thread(target=self._call, name="cuzk-cluster-calls", daemon=True)]
        for t in self._threads:
            t.start()

    # ---- the engine's interface ----------------------------------------------------------------
    def submit(self, spec: CircuitSpec, tasks: Sequence[Task], priority: Priority = Priority.POREP,
               job_id: str | None = None) -> Job:
        """Queue a proof of len(tasks) partitions of `spec` on the fleet."""
        if self._closed:
            raise InputError("the engine is closed")
        if not tasks:
            raise InputError("a job needs at least one partition")
        job = Job(job_id or f"job-{next(self._job_ids)}", spec, tasks, Priority(priority))
        items = [_Item(int(job.priority), next(self._seq), job, k) for k in range(len(tasks))]
        with self.fleet.lock:
            self._circuits.setdefault(spec.key, spec)
            for item in items:
                heapq.heappush(self._pending, item)
            self.fleet.lock.notify_all()
        job.add_done_callback(lambda _: self._later(partial(self._withdraw, items)))
        return job

    def submit_porep(self, c1: C1Output, priority: Priority = Priority.POREP, job_id: str | None = None,
                     ids: tuple[bytes, int] | None = None, progress: bool = False,
                     allow_setup: bool | None = None) -> Job:
        """Engine.submit_porep on the fleet (its vanilla proofs checked here first)."""
        spec, tasks = porep_job(c1, self.config, ids, progress, allow_setup)
        return self.submit(spec, tasks, priority, job_id)

    def warm(self, spec: CircuitSpec) -> list[str]:
        """Make `spec`'s circuit resident on every ready member (and on each that joins later); the
        members that hold it. One that cannot load it (its engine's error) is failing until it can."""
        with self.fleet.lock:
            self._circuits[spec.key] = spec
            self._preloaded.add(spec.key)
            members = [m for m in self.fleet.live() if m.state == "ready"]
        answers = [(m, m.actor.warm.remote([spec]).future()) for m in members]
        holding = []
        for member, answer in answers:
            try:
                self._heard(member, answer.result())
                holding.append(member.key)
            except Exception as e:  # noqa: BLE001 - a member lost while warming is the monitor's to mark
                log.warning("cluster: %s could not warm %s: %s", member.key, spec.key, ray_fleet.described(e))
                if not ray_fleet.lost(e):
                    self._warm_failed(member, e)
        return holding

    preload = warm

    def evict(self, key: str) -> bool:
        """Drop the circuit `key` on every member (and from what joining members warm)."""
        with self.fleet.lock:
            known = self._circuits.pop(key, None) is not None
            self._preloaded.discard(key)
            members = [m for m in self.fleet.live() if key in m.resident]
        answers = [m.actor.evict.remote(key).future() for m in members]
        dropped = False
        for member, answer in zip(members, answers):
            try:
                dropped |= bool(answer.result(timeout=self.options.stale_after_s))
                member.resident.discard(key)
            except Exception as e:  # noqa: BLE001
                log.warning("cluster: %s could not evict %s: %s", member.key, key, e)
        return known or dropped

    @property
    def held(self) -> int:
        return 0  # the front holds no circuit

    @property
    def resident(self) -> list[str]:
        return sorted({key for m in self.fleet.live() for key in m.resident})

    @property
    def loading(self) -> list[str]:
        return []

    @property
    def devices(self) -> list[dict[str, Any]]:
        """Each member as a device: its key, slots, partitions on it, resident circuits, and its state
        when it is not ready (the fault of an Engine's device)."""
        with self.fleet.lock:
            return [{"device": m.key, "host": m.host, "workers": m.slots, "busy": m.in_flight,
                     "circuits": sorted(m.resident), "fault": None if m.state == "ready" else m.state}
                    for m in self.fleet.members()]

    def stats(self) -> dict[str, Any]:
        """Engine.stats's keys over the fleet (a member's slots are its workers, partitions on it busy;
        "pending": those waiting for a member), and "fleet": Fleet.status."""
        devices = self.devices
        live = [d for d in devices if d["fault"] != "dead"]
        with self.fleet.lock:
            pending = sum(not item.job.done for item in self._pending)
        workers = {"configured": sum(d["workers"] for d in live), "busy": sum(d["busy"] for d in live)}
        return {"synthesis_workers": workers, "gpu_workers": dict(workers),
                "queue": {"loading": 0, "pending": pending, "synthesis": 0, "gpu": workers["busy"]},
                "host": {"total_bytes": self.budget.total, "reserved_bytes": self.budget.used},
                "devices": devices, "resident": self.resident, "loading": [], "fleet": self.fleet.status()}

    def wait_ready(self, members: int = 1, timeout: float | None = None) -> bool:
        """Wait until `members` members are ready (True), or `timeout` seconds (False)."""
        deadline = time.monotonic() + (self.options.ready_timeout_s if timeout is None else timeout)
        with self.fleet.lock:
            while sum(m.state == "ready" for m in self.fleet.members()) < members:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self.fleet.lock.wait(min(left, 0.5))
        return True

    def close(self) -> None:
        """Stop: cancel the queued jobs and wait for the threads. The provers stay up, warm, for the
        next front (they are detached); `ray stop` on a node ends its own."""
        with self.fleet.lock:
            self._closed = True
            for item in self._pending:
                item.job.cancel()
            self.fleet.lock.notify_all()
        self._calls.put(None)
        for t in self._threads:
            t.join()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> ClusterEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- dispatch ------------------------------------------------------------------------------
    def _next(self) -> tuple[_Item, Member] | None:
        """The most urgent unfinished partition and the member to prove it, once one takes work."""
        with self.fleet.lock:
            while not self._closed:
                while self._pending and self._pending[0].job.done:
                    heapq.heappop(self._pending)
                if self._pending:
                    item = self._pending[0]
                    member = choose(self.fleet.members(), item.job.spec.key, frozenset(item.tried))
                    if member is not None:
                        heapq.heappop(self._pending)
                        member.in_flight += 1
                        return item, member
                self.fleet.lock.wait(1.0)
        return None

    def _dispatch(self) -> None:
        while (placed := self._next()) is not None:
            item, member = placed
            item.tried.add(member.key)
            item.member = member
            item.job.partition_state[item.k] = "proving"
            item.job.admit()
            try:
                call = member.actor.prove.remote(item.job.spec, item.job.tasks[item.k], item.priority, item.tag)
            except Exception as e:  # noqa: BLE001 - the spec or task does not serialise
                self._done(item, member)
                item.job.fail(RemoteProofError(f"{item.job.id} partition {item.k} cannot be sent: {e}"))
                continue
            item.sent = time.perf_counter()
            call.future().add_done_callback(partial(self._landed, item, member))

    def _done(self, item: _Item, member: Member) -> None:
        with self.fleet.lock:
            member.in_flight -= 1
            item.member = None
            self.fleet.lock.notify_all()

    def _later(self, call: Callable[[], object]) -> None:
        """Have the calls thread run `call` (one that calls Ray), in order."""
        self._calls.put(call)

    def _call(self) -> None:
        while (call := self._calls.get()) is not None:
            try:
                call()
            except Exception:  # noqa: BLE001 - the thread must outlive a failed call (Ray unreachable)
                log.exception("cluster: a call to the provers failed")

    def _withdraw(self, items: list[_Item]) -> None:
        """A job ended: its partitions still on provers (its proof done elsewhere, or the job cancelled
        or failed) are cancelled there, so that no prover spends more on them."""
        with self.fleet.lock:
            flying = [(item.tag, item.member) for item in items if item.member is not None]
        for tag, member in flying:
            member.actor.cancel.remote(tag)

    def _landed(self, item: _Item, member: Member, answer: Future) -> None:
        """A prove call's outcome: the proof completes its partition (once); an engine error fails the
        job, unless the device failed; a lost prover or device puts the partition back in the queue."""
        self._done(item, member)
        job, k = item.job, item.k
        try:
            outcome = answer.result()
        except Exception as e:  # noqa: BLE001
            if not ray_fleet.lost(e):
                job.fail(RemoteProofError(f"{job.id} partition {k} on {member.key}: {type(e).__name__}: {e}"))
                return
            self._lose(member, f"lost during {job.id} partition {k}: {type(e).__name__}")
            self._again(item, member, type(e).__name__)
            return
        if outcome[0] == "proof":
            with self.fleet.lock:
                member.proofs += 1
                member.resident.add(job.spec.key)
                first = job.proofs[k] is None
            if first and not job.done:
                job.timings[f"partition {k}"] = time.perf_counter() - item.sent
                job.complete_partition(k, outcome[1])  # verified by the prover: not decoded again
            return
        _, kind, message, device_fault = outcome
        if device_fault:
            self._lose(member, f"device fault: {message}")
            self._again(item, member, kind)
            return
        if job.done:  # cancelled (or failed) while this partition ran: its end is no failure of the member
            return
        with self.fleet.lock:
            member.failures += 1
        job.fail(RemoteProofError(f"{job.id} partition {k} on {member.key}: {kind}: {message}"))

    def _again(self, item: _Item, member: Member, why: str) -> None:
        """Put a partition whose prover was lost back in the queue (or fail its job after max_attempts)."""
        if item.job.done:
            return
        if len(item.tried) >= self.options.max_attempts:
            item.job.fail(RemoteProofError(f"{item.job.id} partition {item.k}: no prover finished it in "
                                           f"{len(item.tried)} tries (last: {member.key}, {why})"))
            return
        log.warning("cluster: %s partition %d goes back in the queue (%s on %s)", item.job.id, item.k, why,
                    member.key)
        with self.fleet.lock:
            item.job.partition_state[item.k] = "queued"
            heapq.heappush(self._pending, item)
            self.fleet.lock.notify_all()

    # ---- the members ---------------------------------------------------------------------------
    def _lose(self, member: Member, reason: str) -> None:
        """A call found `member` gone (or its device failed): a failure; it takes nothing until its
        health answers again."""
        with self.fleet.lock:
            member.failures += 1
            if member.state != "dead":
                member.move("unresponsive", reason)
            self.fleet.lock.notify_all()

    def _monitor(self) -> None:
        while not self._closed:
            with self.fleet.lock:
                self.fleet.lock.wait(self.options.heartbeat_s)
            if self._closed:
                return
            try:
                self._watch()
            except Exception:  # noqa: BLE001 - the monitor must outlive a failed round (Ray unreachable)
                log.exception("cluster: fleet check failed")

    def _watch(self) -> None:
        """One round: mark the members of dead nodes, start provers on new nodes' GPUs, ask each live
        member for its health, flag those whose last answer is stale_after_s late."""
        alive, dead = ray_fleet.alive_nodes(self.options.resource)
        for member in self.fleet.live():
            if member.node_id in dead:
                self._health.pop(member.key, None)
                self.fleet.move(member, "dead", "its Ray node died")
                log.error("cluster: %s on %s is dead (its node died)", member.key, member.host)
        for node in alive:
            for index in range(node.count):
                if self.fleet.get(f"{node.node_id}/{index}") is None:
                    self._join(node, index)
        now = time.monotonic()
        for member in self.fleet.live():
            if member.state == "starting":
                continue
            asked = self._health.get(member.key)
            if asked is None or asked[1].done():
                answer = member.actor.health.remote().future()
                self._health[member.key] = (now, answer)
                answer.add_done_callback(partial(self._answered, member))
            elif now - asked[0] > self.options.stale_after_s and member.state != "unresponsive":
                self.fleet.move(member, "unresponsive", f"no heartbeat for {now - asked[0]:.0f} s")
                log.error("cluster: %s on %s stopped answering", member.key, member.host)
        for member in self.fleet.live():
            if member.state == "failing" and not member.warming and now >= member.retry_at:
                log.info("cluster: %s warms again (try %d)", member.key, member.warm_failures + 1)
                self._warm(member)

    def _join(self, node: ray_fleet.NodeSlots, index: int) -> None:
        """Start (or find, after a front restart) the prover of GPU `index` of `node`, and warm it."""
        actor = ray_fleet.start_prover(node, index, self.options.resource, self.config, self.options.backend,
                                       self.slots)
        member = self.fleet.add(Member(f"{node.node_id}/{index}", node.node_id, node.host, index, actor,
                                       slots=self.slots))
        log.info("cluster: %s on %s joined; warming", member.key, node.host)
        self._warm(member)

    def _warm(self, member: Member) -> None:
        """Mark `member` warming (a failing member stays failing: it takes work once a warm succeeds)
        and have the calls thread send it the working set to load."""
        with self.fleet.lock:
            specs = self._working_set()
            member.warming = True
            if member.state != "failing":
                member.move("warming", f"loading {len(specs)} circuit(s)")
        self._later(lambda: member.actor.warm.remote(specs).future().add_done_callback(partial(self._warmed, member)))

    def _working_set(self) -> list[CircuitSpec]:
        """What a joining member warms: the circuits warm() asked for and those a ready member holds
        (not every circuit ever proved: a GPU need not hold them all)."""
        held = {key for m in self.fleet.members() if m.state == "ready" for key in m.resident}
        return [spec for key, spec in self._circuits.items() if key in self._preloaded or key in held]

    def _warmed(self, member: Member, answer: Future) -> None:
        member.warming = False
        try:
            health = answer.result()
        except Exception as e:  # noqa: BLE001
            log.error("cluster: %s could not warm: %s", member.key, ray_fleet.described(e))
            if ray_fleet.lost(e):
                self.fleet.move(member, "unresponsive", f"lost while warming: {type(e).__name__}")
            else:
                self._warm_failed(member, e)
            return
        self._heard(member, health)
        with self.fleet.lock:
            member.warm_failures, member.warm_error = 0, ""
            member.move("ready")
            self.fleet.lock.notify_all()
        log.info("cluster: %s is ready (%s)", member.key, ", ".join(health["resident"]) or "no circuit yet")

    def _warm_failed(self, member: Member, error: BaseException) -> None:
        """A warm call failed with `member`'s engine's error (a circuit it cannot load, its parameter
        files missing): it takes no work ("failing", the error its reason) and the monitor warms it
        again after warm_retry_s, doubling each time up to warm_retry_max_s."""
        with self.fleet.lock:
            if member.state == "dead":
                return
            member.warm_failures += 1
            wait = min(self.options.warm_retry_s * 2 ** (member.warm_failures - 1), self.options.warm_retry_max_s)
            member.retry_at = time.monotonic() + wait
            member.warm_error = (f"warming failed ({member.warm_failures} time(s); next try in {wait:g} s): "
                                 f"{ray_fleet.described(error)}")
            member.move("failing")
            member.reason = member.warm_error
            self.fleet.lock.notify_all()

    def _answered(self, member: Member, answer: Future) -> None:
        try:
            health = answer.result()
        except Exception as e:  # noqa: BLE001
            if ray_fleet.lost(e) and member.state not in ("dead", "unresponsive"):
                self.fleet.move(member, "unresponsive", f"health call failed: {type(e).__name__}")
            return
        if self._heard(member, health):
            with self.fleet.lock:
                member.restarts += 1
            log.warning("cluster: %s restarted (pid %s); warming it again", member.key, health["pid"])
            self._warm(member)
        elif member.state == "unresponsive":
            self.fleet.move(member, *member.answering())
            log.info("cluster: %s answers again", member.key)

    def _heard(self, member: Member, health: dict[str, Any]) -> bool:
        """Record a member's health answer; True when its process is not the one heard before (Ray
        restarted the actor: its engine starts cold)."""
        with self.fleet.lock:
            restarted = member.pid is not None and member.pid != health["pid"]
            member.pid, member.health, member.last_heartbeat = health["pid"], health, time.time()
            member.resident, member.slots = set(health["resident"]), health["slots"]
            self.fleet.lock.notify_all()
        return restarted
