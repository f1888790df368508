"""The Ray side of the fleet: joining the cluster, finding its GPU nodes, and starting one prover
actor (cuzk.cluster.prover.Prover) per GPU of a node, pinned to that node. Ray is imported here and in
cuzk.cluster.front only: `pip install "cuzk[cluster]"` brings it."""
from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from typing import Any

from cuzk.engine.config import EngineConfig
from cuzk.errors import CuzkError

log = logging.getLogger("cuzk.cluster")
NAMESPACE = "cuzk"
# calls a prover serves at once beyond its partitions: health, warm, evict
CONTROL_CALLS = 4
PROBE_TIMEOUT_S = 5.0  # Ray itself retries an unreachable address without end
CLIENT_INIT_TRIES = 3  # a Ray Client server at times fails to start a client's session (ray#63202)


class ClusterUnavailableError(CuzkError, ConnectionError):
    """Ray is not installed, or the cluster's address cannot be reached or joined."""


@dataclass(frozen=True)
class NodeSlots:
    """An alive Ray node and how many provers it hosts (its units of the fleet's resource)."""

    node_id: str
    host: str
    count: int


def ray_module():
    """Ray, or ClusterUnavailableError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ClusterUnavailableError("--cluster needs Ray: pip install \"cuzk[cluster]\"") from None
    return ray


def probe(address: str) -> None:
    """A TCP connection to HOST:PORT (or ray://HOST:PORT) within PROBE_TIMEOUT_S, else
    ClusterUnavailableError; "auto" is left to Ray (which fails at once when this host runs none)."""
    if address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise ClusterUnavailableError(f"--cluster {address}: not auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as e:
        raise ClusterUnavailableError(f"--cluster {address}: cannot reach {host}:{port}: {e.strerror or e}") from None


def connect(address: str) -> None:
    """Join the Ray cluster at `address` ("auto": the one this host belongs to, "HOST:PORT" its GCS,
    "ray://HOST:PORT" through Ray Client) as a driver in cuzk's namespace, unless joined already. A
    Ray Client session the server failed to start is asked for again, up to CLIENT_INIT_TRIES times."""
    ray = ray_module()
    if ray.is_initialized():
        return
    probe(address)
    tries = CLIENT_INIT_TRIES if address.startswith("ray://") else 1
    for attempt in range(1, tries + 1):
        try:
            ray.init(address=address, namespace=NAMESPACE, logging_level=logging.WARNING, log_to_driver=False)
            return
        except (ConnectionError, RuntimeError, ValueError) as e:
            if not isinstance(e, ConnectionAbortedError) or attempt == tries:
                raise ClusterUnavailableError(f"--cluster {address}: cannot join the Ray cluster: "
                                              f"{one_line(e)}") from None
            log.warning("cluster %s: the Ray Client server could not start this session (try %d of %d); again",
                        address, attempt, tries)


def one_line(error: BaseException) -> str:
    """An error's message on one line: its first line, and its last where it runs on (Ray Client's
    errors carry the server's traceback; the last line names the cause)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " ".join(lines[:1] + lines[-1:] if len(lines) > 1 else lines)


def alive_nodes(resource: str) -> tuple[list[NodeSlots], set[str]]:
    """The alive nodes that hold `resource` (with their count of it), and the ids of the dead ones."""
    ray = ray_module()
    alive, dead = [], set()
    for node in ray.nodes():
        if not node["Alive"]:
            dead.add(node["NodeID"])
            continue
        count = int(node["Resources"].get(resource, 0))
        if count:
            alive.append(NodeSlots(node["NodeID"], node.get("NodeManagerAddress", "?"), count))
    return alive, dead


def start_prover(node: NodeSlots, index: int, resource: str, config: EngineConfig, backend: str, slots: int) -> Any:
    """The prover actor of GPU `index` of `node`: detached and named after both, so a restarted front
    finds the one already warm (get_if_exists); pinned to the node, restarted there by Ray when its
    process dies; one unit of `resource` ("GPU": Ray gives it its own GPU)."""
    ray = ray_module()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from cuzk.cluster.prover import Prover

    claim = {"num_gpus": 1} if resource == "GPU" else {"resources": {resource: 1}}
    actor = ray.remote(Prover).options(
        name=f"cuzk-prover-{node.node_id}-{index}", namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
        max_restarts=-1, max_concurrency=slots + CONTROL_CALLS, num_cpus=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False), **claim)
    return actor.remote(config, backend)


def lost(error: BaseException) -> bool:
    """Whether a call's error means its prover (or node) was lost, not that the call itself failed."""
    ray_module()
    from ray import exceptions

    return isinstance(error, exceptions.RayError) and not isinstance(error, exceptions.RayTaskError)


def described(error: BaseException) -> str:
    """A call's error as "Type: message": for one the prover raised, its own (a RayTaskError's cause),
    not Ray's wrapper with the remote traceback."""
    ray_module()
    from ray import exceptions

    if isinstance(error, exceptions.RayTaskError) and error.cause is not None:
        error = error.cause
    return f"{type(error).__name__}: {one_line(error)}"
