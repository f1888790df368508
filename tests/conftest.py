"""Shared fixtures: a fresh random generator per test (seed printed on failure) and GPU skipping."""
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
