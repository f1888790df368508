"""A real local Ray cluster for the cluster tests: a head node with no prover (and a Ray Client server
where a module's `client_port` names a port) and NODES worker nodes, each with one unit of the custom
resource PROVER (a CPU prover stands in for a GPU), started in this process with
ray.cluster_utils.Cluster; tests/ goes on the PYTHONPATH the nodes' workers inherit, so they can import
the test circuits (cluster.work, engine.circuits)."""
from __future__ import annotations

import os

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from cluster.work import NODES, PROVER, TESTS, add_prover_node, prover_config  # noqa: E402 - tests/ is on the path
from cuzk.cluster.front import ClusterEngine, ClusterOptions  # noqa: E402


@pytest.fixture(scope="module")
def client_port() -> int | None:
    """The port of the head's Ray Client server: none, unless a module overrides this fixture."""
    return None


@pytest.fixture(scope="module")
def cluster(warm_numba_cache, client_port):
    paths = [str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                      "ray_client_server_port": client_port})
    try:
        for _ in range(NODES):
            add_prover_node(c)
        c.wait_for_nodes()
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="module")
def front(cluster):
    engine = ClusterEngine(prover_config(), ClusterOptions(cluster.address, resource=PROVER, backend="cpu",
                                                           heartbeat_s=0.5, stale_after_s=5.0, warm_retry_s=0.5,
                                                           warm_retry_max_s=2.0))
    assert engine.wait_ready(NODES, timeout=120), engine.fleet.status()
    yield engine
    engine.close()
