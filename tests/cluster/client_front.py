"""A front in a process of its own, joined to the cluster through Ray Client:
`python -m cluster.client_front ray://HOST:PORT` (tests/ on the PYTHONPATH) starts a ClusterEngine at
that address on the conftest cluster's provers, proves a job of the small circuit, SIGKILLs a prover
process, waits until Ray has restarted it and the front has warmed it again, proves another job, and
prints what it saw as one JSON line. Each proof is checked (cluster.test_cluster.verified)."""
from __future__ import annotations

import json
import os
import signal
import sys
import time

from cluster import work
from cluster.test_cluster import verified
from cluster.work import NODES, PROVER, until
from cuzk.cluster.front import ClusterEngine, ClusterOptions


def prove(front: ClusterEngine, first: int) -> None:
    job = front.submit(work.spec(), work.tasks(first, 2))
    verified(job, job.result(timeout=60))


def main(address: str) -> dict:
    t = time.monotonic()
    with ClusterEngine(work.prover_config(), ClusterOptions(address, resource=PROVER, backend="cpu", heartbeat_s=0.5,
                                                            stale_after_s=30.0)) as front:
        ready = front.wait_ready(NODES, timeout=60)
        joined_s = time.monotonic() - t
        prove(front, 2000)
        member = next(m for m in front.fleet.members() if m.state == "ready")
        os.kill(member.pid, signal.SIGKILL)
        until(lambda: member.restarts == 1 and member.state == "ready", 60, "the prover restarted and warm again")
        prove(front, 2100)
        return {"ready": ready, "joined_s": round(joined_s, 1), "restarts": member.restarts, "state": member.state,
                "proofs": front.fleet.status()["proofs"]}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])), flush=True)
