"""Shared fixtures: a fresh random generator per test (seed printed on failure), numba's kernels
compiled once for the tests that spawn processes, and GPU skipping."""
import os
import secrets

import numpy as np
import pytest


@pytest.fixture
def rng(request) -> np.random.Generator:
    seed = int(os.environ.get("CUZK_TEST_SEED", secrets.randbits(32)))
    request.node.user_properties.append(("seed", seed))
    print(f"random seed: {seed} (set CUZK_TEST_SEED={seed} to replay)")
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def warm_numba_cache() -> None:
    """numba's kernels compiled (and cached on disk) here, in the test process, by proving a small
    circuit (about a minute on 2 cores), so that the engines' spawned synthesis processes and the
    cluster's provers load them instead of compiling them again each."""
    from cuzk.backend import get_backend
    from cuzk.groth16 import as_circuit, prove, setup
    from engine import circuits  # tests/ is on the path

    circuit = as_circuit(circuits.inputs_circuit([1, 2, 3]))
    prove(setup(circuit, np.random.default_rng(1)), circuit, circuits.witness([1, 2, 3]), get_backend("cpu"), check=True)


def _gpu_present() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _gpu_present():
        skip = pytest.mark.skip(reason="needs a CUDA GPU with cupy")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
