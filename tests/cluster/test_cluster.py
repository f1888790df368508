"""cuzk.cluster on a real local Ray cluster (conftest: a head and 3 prover nodes, CPU provers, the
small test circuit): a job's partitions spread over the nodes and every proof verifies; placement
prefers the members holding the circuit; a WinningPoSt-priority job overtakes queued PoRep; a node
SIGKILLed mid-partition (its raylet and workers) costs nothing: the job completes once, verified, and
the fleet shows the node dead within 30 s; a node that joins warms before it takes work; a prover
process killed by the host is restarted by Ray, warmed and used again; a prover that stops answering
(SIGSTOP) is flagged within 30 s and taken back when it answers again; provers that cannot load a
circuit warmed on the fleet (its parameter files missing) are failing, with the reason, and warmed
again with backoff until they can, then ready and proving it; a cancelled job's partitions are dropped
on the provers too."""
from __future__ import annotations

import os
import signal
import time

import pytest

from cluster import work  # tests/ is on the path
from cluster.work import NODES, add_prover_node, until
from cuzk import groth16
from cuzk.engine.jobs import Priority

pytestmark = pytest.mark.usefixtures("warm_numba_cache")


def verified(job, proof: bytes) -> None:
    """Each 192-byte proof of `proof` verifies its partition's inputs, in order."""
    vk = groth16.prepare_verifying_key(work.load_small()[1].vk)
    parts = [groth16.Proof.from_bytes(proof[i:i + 192]) for i in range(0, len(proof), 192)]
    assert len(parts) == len(job.tasks)
    for task, p in zip(job.tasks, parts):
        assert groth16.verify(vk, list(task.inputs), p)
    if len(parts) > 1:
        assert not groth16.verify(vk, list(job.tasks[1].inputs), parts[0])


def proofs_by_member(front) -> dict[str, int]:
    return {m.key: m.proofs for m in front.fleet.members()}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: n - before.get(key, 0) for key, n in after.items() if n - before.get(key, 0)}


def test_a_jobs_partitions_spread_over_the_nodes_and_verify(front):
    before = proofs_by_member(front)
    job = front.submit(work.spec(), work.tasks(1, 6, delay=1.0))
    verified(job, job.result(timeout=180))
    spread = delta(before, proofs_by_member(front))
    assert sum(spread.values()) == 6
    assert len(spread) == NODES, spread  # 6 partitions, 2 slots per member: every node took some
    status = front.stats()
    assert status["fleet"]["counts"]["ready"] == NODES
    assert all(row["last_heartbeat_s_ago"] is not None and row["last_heartbeat_s_ago"] < 5
               for row in status["fleet"]["members"])
    assert all("small" in row["resident"] for row in status["fleet"]["members"])


def test_placement_prefers_the_member_holding_the_circuit(front):
    key = f"fresh-{time.time_ns()}"
    first = front.submit(work.spec(key), work.tasks(200, 1))
    first.result(timeout=120)
    holder = until(lambda: [m.key for m in front.fleet.members() if key in m.resident], 10, "a member holding it")
    assert len(holder) == 1
    before = proofs_by_member(front)
    for n in range(3):  # one at a time: every member is free, and the holder takes each
        job = front.submit(work.spec(key), work.tasks(300 + 10 * n, 1))
        verified(job, job.result(timeout=60))
    assert delta(before, proofs_by_member(front)) == {holder[0]: 3}
    assert front.evict(key)
    assert all(key not in m.resident for m in front.fleet.members())


def test_a_winning_post_job_overtakes_queued_porep(front):
    porep = front.submit(work.spec(), work.tasks(400, 4 * NODES * 2, delay=0.5), Priority.POREP)
    until(lambda: sum(m.in_flight for m in front.fleet.members()) == 2 * NODES, 30, "every slot busy")
    winning = front.submit(work.spec(), work.tasks(500, 1), Priority.WINNING_POST)
    verified(winning, winning.result(timeout=120))
    done = sum(state == "done" for state in porep.partition_state)
    assert not porep.done and done <= len(porep.tasks) // 2, porep.partition_state
    verified(porep, porep.result(timeout=300))


def test_a_node_killed_mid_partition_costs_nothing_and_shows_dead(cluster, front):
    node = add_prover_node(cluster)
    cluster.wait_for_nodes()
    member = until(lambda: next((m for m in front.fleet.members() if m.node_id == node.node_id
                                 and m.state == "ready"), None), 60, "the new node's prover ready")
    assert "small" in member.resident  # warmed with the fleet's circuit before it took work
    before = proofs_by_member(front)
    job = front.submit(work.spec(), work.tasks(600, 2 * (NODES + 1) * 2, delay=2.0))
    until(lambda: member.in_flight > 0, 30, "a partition on the new node")
    killed = time.monotonic()
    cluster.remove_node(node, allow_graceful=False)  # SIGKILL of its raylet; its workers go with it
    verified(job, job.result(timeout=300))
    assert sum(delta(before, proofs_by_member(front)).values()) == len(job.tasks)  # each proved once
    until(lambda: member.state == "dead", 30 - (time.monotonic() - killed), "the killed node's member dead")
    row = next(r for r in front.stats()["fleet"]["members"] if r["member"] == member.key)
    assert row["state"] == "dead" and row["failures"] >= 1 and "died" in row["reason"]


def test_a_killed_prover_process_is_restarted_warmed_and_used(front):
    member = next(m for m in front.fleet.members() if m.state == "ready")
    pid = member.pid
    os.kill(pid, signal.SIGKILL)  # a host memory watchdog's kill
    until(lambda: member.restarts == 1 and member.state == "ready" and member.pid != pid, 90,
          "the prover restarted and warm again")
    assert "small" in member.resident
    before = proofs_by_member(front)
    job = front.submit(work.spec(), work.tasks(700, 2 * NODES * 2, delay=0.5))
    verified(job, job.result(timeout=180))
    assert delta(before, proofs_by_member(front)).get(member.key, 0) > 0


def test_a_prover_that_stops_answering_is_flagged_then_taken_back(front):
    member = next(m for m in front.fleet.members() if m.state == "ready")
    restarts = member.restarts
    os.kill(member.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        until(lambda: member.state == "unresponsive", 30, "the silent prover flagged")
        assert time.monotonic() - stopped < 30 and "no heartbeat" in member.reason
        job = front.submit(work.spec(), work.tasks(800, 4))  # the others take it meanwhile
        verified(job, job.result(timeout=120))
        assert member.in_flight == 0
    finally:
        os.kill(member.pid, signal.SIGCONT)
    until(lambda: member.state == "ready", 30, "the prover back")
    assert member.restarts == restarts and member.last_heartbeat > time.time() - 5  # the same process


def test_provers_that_cannot_warm_a_circuit_are_failing_until_they_can(front, tmp_path):
    flag = tmp_path / "params"
    spec = work.spec_once_there(f"params-later-{time.time_ns()}", flag)
    members = [m for m in front.fleet.members() if m.state == "ready"]
    assert front.warm(spec) == []
    until(lambda: all(m.state == "failing" and m.warm_failures >= 2 for m in members), 20,
          "every member failing, warmed again")  # the conftest front retries after 0.5 s, then 1 s, 2 s
    rows = [r for r in front.stats()["fleet"]["members"] if r["state"] != "dead"]
    assert all(f"ParamsNotFoundError: no parameter file {flag}" in r["reason"] for r in rows), rows
    flag.touch()
    until(lambda: all(m.state == "ready" and spec.key in m.resident for m in members), 10, "every member ready")
    assert all(m.warm_failures == 0 and m.reason == "" for m in members)
    job = front.submit(spec, work.tasks(1000, 1))
    verified(job, job.result(timeout=60))
    assert front.evict(spec.key)


def test_a_cancelled_jobs_partitions_are_dropped_on_the_provers(front):
    failures = sum(m.failures for m in front.fleet.members())
    job = front.submit(work.spec(), work.tasks(900, 4 * NODES, delay=8.0))
    until(lambda: sum(m.in_flight for m in front.fleet.members()) == 2 * NODES, 30, "every slot busy")
    assert job.cancel()
    # each prover drops its queued partition at once (its synthesis process busy for 8 s with the other)
    until(lambda: sum(m.in_flight for m in front.fleet.members()) <= NODES, 4, "the queued partitions dropped")
    until(lambda: sum(m.in_flight for m in front.fleet.members()) == 0, 20, "the running ones discarded")
    assert sum(m.failures for m in front.fleet.members()) == failures
    assert all(m.state == "ready" for m in front.fleet.members() if m.state != "dead")
