"""Fixtures shared by the Groth16 tests: one random circuit with parameters per module (setup is the
slow part), from a fresh seed printed for replay."""
import os
import secrets

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.groth16 import setup
from cuzk.groth16.synthetic import synthetic_circuit


@pytest.fixture(scope="module")
def module_rng() -> np.random.Generator:
    seed = int(os.environ.get("CUZK_TEST_SEED", secrets.randbits(32)))
    print(f"module random seed: {seed} (set CUZK_TEST_SEED={seed} to replay)")
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def cpu():
    return get_backend("cpu")


@pytest.fixture(scope="module")
def keyed(module_rng):
    """(circuit, params): a synthetic circuit of 40-60 rows and 1-3 public inputs, set up once."""
    cs = synthetic_circuit(int(module_rng.integers(40, 60)), int(module_rng.integers(1, 4)), module_rng)
    return cs, setup(cs, module_rng)
