"""What the cluster tests prove, importable by the provers' Ray workers (tests/ is on their
PYTHONPATH): engine.circuits' small circuit with parameters from a fixed seed, so every prover loads
the same key, and its tasks (and a spec of it whose parameters are found only once a file exists);
and the tests' helpers (the provers' configuration, a prover node, waiting for a condition)."""
from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bench import cluster as bench_cluster
from cuzk.engine.config import EngineConfig, MemoryConfig, SrsConfig
from cuzk.engine.jobs import CircuitSpec, Task
from cuzk.errors import ParamsNotFoundError
from cuzk.groth16 import as_circuit, setup
from cuzk.porep.params_cache import LoadedParams, ParamsFiles
from engine import circuits

WIDTH = 3
PROVER = "cuzk_prover"
NODES = 3
TESTS = Path(__file__).resolve().parents[1]


def prover_config() -> EngineConfig:
    """bench.cluster's prover (one synthesis process and one GPU-worker thread: 2 slots), waiting at
    most 60 s for room in a memory budget and making no parameters of its own."""
    return dataclasses.replace(bench_cluster.config(), memory=MemoryConfig(admission_timeout_s=60), srs=SrsConfig())


def until(condition: Callable[[], object], timeout: float, what: str, step: float = 0.1):
    """condition()'s first true value within `timeout` seconds, else fail naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    pytest.fail(f"not within {timeout} s: {what}")


def add_prover_node(cluster):
    """A new node of `cluster` (a ray.cluster_utils.Cluster) with one prover."""
    return cluster.add_node(num_cpus=1, resources={PROVER: 1})


def load_small():
    circuit = as_circuit(circuits.inputs_circuit([1] * WIDTH))
    params = setup(circuit, np.random.default_rng(1))
    return circuit, LoadedParams(params, params.vk, ParamsFiles(Path("/nonexistent"), "test"), True)


def spec(key: str = "small") -> CircuitSpec:
    return CircuitSpec(key, load_small)


def tasks(first: int, n: int, delay: float = 0.0) -> list[Task]:
    """n partitions of distinct inputs, each synthesis taking at least `delay` seconds."""
    values = [[first + 10 * k + i for i in range(WIDTH)] for k in range(n)]
    return [Task(functools.partial(circuits.witness, v, delay), v) for v in values]


def load_once_there(flag: Path):
    """load_small once the file `flag` exists; before, ParamsNotFoundError (a host without the
    circuit's parameter files)."""
    if not flag.exists():
        raise ParamsNotFoundError(f"no parameter file {flag}")
    return load_small()


def spec_once_there(key: str, flag: Path) -> CircuitSpec:
    return CircuitSpec(key, functools.partial(load_once_there, flag))
