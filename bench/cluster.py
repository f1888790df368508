"""PoRep proofs through a Ray fleet (cuzk.cluster): proofs per hour on a local Ray cluster of 1, 2 and
4 prover nodes (CPU provers, on this one machine), the scaling ratio, and the cluster's per-partition
dispatch overhead against one in-process Engine. JSON lines (cluster_prove).

    python -m bench.cluster [--proof StackedDrg2KiBV1_1] [--nodes 1,2,4] [--proofs 4] [--overhead 30]

Per node count: a fresh cluster (a head with no prover, N nodes of one prover each: one synthesis
process and one prover thread, as a one-GPU host), every prover warmed with the circuit (cuzk's own
parameters where no official ones are), then --proofs proofs of one synthetic C1 submitted at once;
`ms` is the wall time over the proofs (every partition verified by its prover); scaling is the
throughput over N times the one-node throughput. All nodes share this machine's cores: on a host with
fewer cores than provers x their synthesis and proving threads the scaling measures the CPU, not the
fleet (the GPU fleet's hosts each bring their own).

Simulated partitions (`simulated_*`): the same fleet proves 6 x N partitions of the tiny circuit whose
synthesis sleeps --partition-s seconds (default 1.6: a 32GiB PoRep partition's GPU time on the H200)
without using a core, as a GPU host's partition leaves its CPU free; their throughput over N times
the one-node throughput is the fleet's own scaling, free of this machine's shared cores.

Dispatch overhead (`dispatch_ms`, on the one-node run): a partition of a tiny circuit (three
constraints: the proof takes milliseconds) proved --overhead times one at a time, through an
in-process Engine and through the one-node fleet with the same configuration; the difference of
the median latencies is what the fleet adds per partition (front -> Ray -> prover -> back)."""
from __future__ import annotations

import argparse
import os
import statistics
import time
from functools import partial
from pathlib import Path

import numpy as np

from bench.common import device_name, print_table, record
from cuzk.engine.config import EngineConfig, GpuConfig, PipelineConfig, SrsConfig
from cuzk.engine.jobs import CircuitSpec, Task

PROVER = "cuzk_prover"
REPO = Path(__file__).resolve().parents[1]


def config() -> EngineConfig:
    """A one-GPU host's prover: one synthesis process, one prover thread, cuzk's own parameters."""
    return EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1),
                        pipeline=PipelineConfig(max_parallel_synthesis=1, gpu_queue_depth=1),
                        srs=SrsConfig(allow_setup=True))


def tiny_witness(values: list[int], delay: float = 0.0) -> np.ndarray:
    """The tiny circuit's witness, after sleeping `delay` seconds (a simulated partition)."""
    from cuzk.r1cs.example import squares_circuit

    time.sleep(delay)
    return squares_circuit(values).witness()


def tiny_load():
    from cuzk.groth16 import as_circuit, setup
    from cuzk.porep.params_cache import LoadedParams, ParamsFiles
    from cuzk.r1cs.example import squares_circuit

    circuit = as_circuit(squares_circuit([1, 1, 1]))
    params = setup(circuit, np.random.default_rng(1))
    return circuit, LoadedParams(params, params.vk, ParamsFiles(Path("/nonexistent"), "tiny"), True)


def tiny_task(k: int, delay: float = 0.0) -> Task:
    values = [3 * k + 1, 3 * k + 2, 3 * k + 3]
    return Task(partial(tiny_witness, values, delay), values)



def tiny_spec() -> CircuitSpec:
    return CircuitSpec("tiny", tiny_load)


def latencies(engine, count: int) -> list[float]:
    """ms of each of `count` one-partition tiny jobs proved one at a time (after one untimed)."""
    spec = tiny_spec()
    engine.submit(spec, [tiny_task(0)]).result()
    out = []
    for k in range(1, count + 1):
        t = time.perf_counter()
        engine.submit(spec, [tiny_task(k)]).result()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def start_cluster(nodes: int):
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    for _ in range(nodes):
        cluster.add_node(num_cpus=1, resources={PROVER: 1})
    cluster.wait_for_nodes()
    return cluster


def fleet_run(nodes: int, c1, proofs: int, overhead: int, partition_s: float) -> dict:
    """One fresh cluster of `nodes` provers: (overhead > 0) the tiny partition's latencies through it,
    its wall time over 6 x nodes simulated partitions of `partition_s` seconds, and over `proofs`
    proofs of `c1`."""
    import ray

    from cuzk.cluster.front import ClusterEngine, ClusterOptions
    from cuzk.engine.porep import porep_spec_of

    cluster = start_cluster(nodes)
    try:
        with ClusterEngine(config(), ClusterOptions(cluster.address, resource=PROVER, backend="cpu")) as front:
            if not front.wait_ready(nodes, timeout=300):
                raise RuntimeError(f"only {front.fleet.status()['counts']} of {nodes} provers ready")
            out = {"latencies": latencies(front, overhead) if overhead else []}
            # every prover's synthesis process started (spawned at its first partition), untimed
            front.submit(tiny_spec(), [tiny_task(k, 0.5) for k in range(2 * nodes)]).result()
            t = time.perf_counter()
            front.submit(tiny_spec(), [tiny_task(k, partition_s) for k in range(6 * nodes)]).result()
            out["simulated_ms"] = (time.perf_counter() - t) * 1e3
            t = time.perf_counter()
            warm = front.warm(porep_spec_of(c1.registered_proof, allow_setup=True))
            out["warm_ms"] = (time.perf_counter() - t) * 1e3
            assert len(warm) == nodes, warm
            t = time.perf_counter()
            jobs = [front.submit_porep(c1, job_id=f"p{i}") for i in range(proofs)]
            sizes = {len(job.result()) for job in jobs}
            out["wall_ms"] = (time.perf_counter() - t) * 1e3
            out["proof_bytes"] = sizes.pop()
            out["spread"] = sorted(m.proofs for m in front.fleet.members())
        return out
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proof", default="StackedDrg2KiBV1_1")
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--proofs", type=int, default=4, help="proofs per node count, submitted at once")
    ap.add_argument("--overhead", type=int, default=30, help="tiny partitions for the dispatch overhead (0: none)")
    ap.add_argument("--partition-s", type=float, default=1.6, help="seconds of a simulated partition (default 1.6)")
    ap.add_argument("--out", default=None, help="results directory (default bench/results)")
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

    from cuzk.engine.engine import Engine
    from cuzk.porep.registry import get_proof
    from cuzk.porep.synthetic import synthetic_c1

    proof = get_proof(args.proof)
    c1 = synthetic_c1(proof, prover_id=bytes(32), sector_id=1, ticket=bytes(range(32)), seed=b"\x02" * 32,
                      rng=np.random.default_rng(3), progress=False)
    with Engine(config(), backend="cpu") as engine:
        local = latencies(engine, args.overhead) if args.overhead else []
    rows, base, simulated_base = [], None, None
    for n, nodes in enumerate(int(x) for x in args.nodes.split(",")):
        run = fleet_run(nodes, c1, args.proofs, args.overhead if n == 0 else 0, args.partition_s)
        per_hour = args.proofs / (run["wall_ms"] / 3.6e6)
        simulated = 6 * nodes / (run["simulated_ms"] / 3.6e6)
        base, simulated_base = base or per_hour / nodes, simulated_base or simulated / nodes
        row = {"bench": "cluster_prove", "backend": "cpu", "device": device_name("cpu"), "n": proof.sector_size,
               "ms": round(run["wall_ms"] / args.proofs, 1), "stat": "mean", "nodes": nodes, "proofs": args.proofs,
               "proofs_per_hour": round(per_hour, 1), "scaling": round(per_hour / (nodes * base), 3),
               "warm_ms": round(run["warm_ms"], 1), "proof": proof.name, "partitions_per_prover": run["spread"],
               "proof_bytes": run["proof_bytes"], "simulated_partition_s": args.partition_s,
               "simulated_partitions": 6 * nodes, "simulated_partitions_per_hour": round(simulated, 1),
               "simulated_scaling": round(simulated / (nodes * simulated_base), 3),
               "load_avg_1m": round(os.getloadavg()[0], 2),
               "note": f"local Ray cluster on one machine ({os.cpu_count()} cores shared by every node); CPU provers"}
        if run["latencies"]:
            fleet_ms, engine_ms = statistics.median(run["latencies"]), statistics.median(local)
            row.update({"dispatch_ms": round(fleet_ms - engine_ms, 2), "tiny_partition_fleet_ms": round(fleet_ms, 2),
                        "tiny_partition_engine_ms": round(engine_ms, 2), "tiny_partitions": args.overhead})
        rows.append(row)
        print_table(rows, [("nodes", "nodes", "d"), ("ms", "ms/proof", ".1f"), ("proofs_per_hour", "proofs/h", ".1f"),
                           ("scaling", "scaling", ".3f"), ("simulated_scaling", "simulated scaling", ".3f"),
                           ("warm_ms", "warm ms", ".0f"),
                           ("dispatch_ms", "dispatch ms", ".2f")])
    for path in record(rows, "cluster", args.out):
        print(f"recorded in {path}")


if __name__ == "__main__":  # run as bench.cluster, so that the provers can import the tiny circuit's functions
    from bench import cluster

    cluster.main()
