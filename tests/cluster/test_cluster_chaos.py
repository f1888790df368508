"""Chaos on the fleet (slow): a stream of jobs while prover nodes are SIGKILLed one after another and
fresh nodes join; every job completes with verified proofs, each partition proved once (the provers'
proof counts add up to the partitions), and the fleet shows each killed node dead."""
from __future__ import annotations

import random
import time

import pytest

from cluster import work  # tests/ is on the path
from cluster.test_cluster import proofs_by_member, verified
from cluster.work import add_prover_node, until

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("warm_numba_cache")]
KILLS = 4
JOBS = 12


def test_jobs_survive_node_kills_and_joins(cluster, front):
    rng = random.Random(int(time.time()))
    before = proofs_by_member(front)
    jobs = [front.submit(work.spec(), work.tasks(10_000 + 100 * i, 4, delay=rng.uniform(0.5, 2.0))) for i in range(JOBS)]
    killed = []
    for _ in range(KILLS):
        node = add_prover_node(cluster)
        cluster.wait_for_nodes()
        until(lambda: any(m.node_id == node.node_id and m.state == "ready" for m in front.fleet.members()), 60,
              "the new node's prover ready")
        busy = [m for m in front.fleet.members() if m.state == "ready" and m.in_flight > 0]
        victim = rng.choice(busy or [m for m in front.fleet.members() if m.state == "ready"])
        handle = next(n for n in cluster.worker_nodes if n.node_id == victim.node_id)
        cluster.remove_node(handle, allow_graceful=False)
        killed.append(victim)
        time.sleep(rng.uniform(1.0, 4.0))
    for job in jobs:
        verified(job, job.result(timeout=600))
    after = proofs_by_member(front)
    assert sum(after.values()) - sum(before.values()) == 4 * JOBS  # every partition proved exactly once
    until(lambda: all(m.state == "dead" for m in killed), 30, "every killed node's member dead")
