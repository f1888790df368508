"""Engine tests spawn synthesis processes: numba's kernels are compiled (and cached on disk) here
first, in the test process, so that each spawned process loads them instead of compiling them
again (minutes on a 2-core machine with a cold cache)."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.groth16 import as_circuit, prove, setup


@pytest.fixture(scope="session", autouse=True)
def warm_numba_cache():
    from engine import circuits  # tests/ is on the path

    cs = circuits.inputs_circuit([1, 2, 3])
    circuit = as_circuit(cs)
    prove(setup(circuit, np.random.default_rng(1)), circuit, circuits.witness([1, 2, 3]), get_backend("cpu"), check=True)
