"""Engine tests spawn synthesis processes: numba's kernels are compiled (and cached on disk) here
first, in the test process, so that each spawned process loads them instead of compiling them
again (minutes on a 2-core machine with a cold cache). The warm-up proves a circuit (about a
minute on 2 cores), so only the modules that start engines or prove wait for it: those in
PROVING_MODULES, and any that asks for it (pytestmark = pytest.mark.usefixtures("warm_numba_cache"));
the others (configuration, budget, timeline) run without it."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.groth16 import as_circuit, prove, setup

PROVING_MODULES = {"test_batch", "test_engine", "test_multi_gpu", "test_orphans", "test_stats", "test_watchdog"}


@pytest.fixture(scope="session")
def warm_numba_cache() -> None:
    from engine import circuits  # tests/ is on the path

    cs = circuits.inputs_circuit([1, 2, 3])
    circuit = as_circuit(cs)
    prove(setup(circuit, np.random.default_rng(1)), circuit, circuits.witness([1, 2, 3]), get_backend("cpu"), check=True)


@pytest.fixture(scope="module", autouse=True)
def _warm_for_proving_modules(request: pytest.FixtureRequest) -> None:
    """warm_numba_cache, once, before the first module of PROVING_MODULES."""
    if request.module.__name__.rpartition(".")[2] in PROVING_MODULES:
        request.getfixturevalue("warm_numba_cache")
