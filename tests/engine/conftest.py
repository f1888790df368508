"""Engine tests spawn synthesis processes, which load numba's kernels from the disk cache that
warm_numba_cache (tests/conftest.py) fills first. Only the modules that start engines or prove wait
for it: those in PROVING_MODULES, and any that asks for it (pytestmark =
pytest.mark.usefixtures("warm_numba_cache")); the others (configuration, budget, timeline) run
without it."""
from __future__ import annotations

import pytest

PROVING_MODULES = {"test_batch", "test_engine", "test_multi_gpu", "test_orphans", "test_stats", "test_together",
                   "test_watchdog"}


@pytest.fixture(scope="module", autouse=True)
def _warm_for_proving_modules(request: pytest.FixtureRequest) -> None:
    """warm_numba_cache, once, before the first module of PROVING_MODULES."""
    if request.module.__name__.rpartition(".")[2] in PROVING_MODULES:
        request.getfixturevalue("warm_numba_cache")
