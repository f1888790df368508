"""The CUDA backend's memory bookkeeping, without a GPU: the VRAM budget (parsing, where it comes
from) and the residency of prepared tables under it (accounting, LRU eviction, typed errors)."""
import gc

import numpy as np
import pytest

from cuzk.backend.cuda import memory
from cuzk.backend.cuda.memory import Residency, VramBudget, parse_bytes, resolve_budget
from cuzk.errors import InputError, VramBudgetError

GIB = 1 << 30


@pytest.mark.parametrize("text, want", [
    ("17179869184", 16 * GIB), ("16GiB", 16 * GIB), ("16G", 16 * GIB), ("16gb", 16 * GIB), ("16 GiB", 16 * GIB),
    ("1.5GiB", 3 * GIB // 2), ("512M", 512 << 20), ("512MiB", 512 << 20), ("64K", 64 << 10), ("1T", 1 << 40),
    ("100", 100), ("100B", 100), (4096, 4096), (np.int64(7), 7),
])
def test_parse_bytes(text, want):
    assert parse_bytes(text) == want


@pytest.mark.parametrize("text", ["", "GiB", "16 XB", "sixteen", "16GiBs", "-1G", "0", "0G", 0, -5])
def test_parse_bytes_rejects(text):
    with pytest.raises(InputError):
        parse_bytes(text)


def test_budget_sources(monkeypatch):
    free = lambda: 100 * GIB  # noqa: E731
    monkeypatch.delenv(memory.ENV, raising=False)
    default = resolve_budget(None, 3, free)
    assert default.bytes == int(100 * GIB * memory.DEFAULT_FRACTION)
    assert "memory.vram_fraction 0.8" in default.source and "100.00 GiB free on device 3" in default.source
    half = resolve_budget(None, 3, free, fraction=0.5)
    assert half.bytes == 50 * GIB and "memory.vram_fraction 0.5" in half.source
    monkeypatch.setenv(memory.ENV, "16GiB")
    env = resolve_budget(None, 0, free)
    assert env == VramBudget(15 * GIB, "CUZK_VRAM_BUDGET=16GiB", 16 * GIB)  # a cap: the pool limit is the budget
    config = resolve_budget(None, 0, free, cap=("24GiB", "memory.vram_budget"))
    assert config == VramBudget(23 * GIB, "memory.vram_budget = 24GiB", 24 * GIB)
    explicit = resolve_budget("8G", 0, free)
    assert explicit.bytes == 8 * GIB and "vram_budget='8G'" in explicit.source
    monkeypatch.setenv(memory.ENV, "lots")
    with pytest.raises(InputError, match="lots"):
        resolve_budget(None, 0, free)


class Table:
    """Stands for a PreparedBases: anything weak-referenceable with a size."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def _kept(res: Residency, host: np.ndarray, nbytes: int) -> Table:
    table = Table(nbytes)
    res.track(table, nbytes)
    res.insert(host, table)
    return table


def test_tracking_counts_live_tables():
    res = Residency()
    a, b = Table(3 * GIB), Table(5 * GIB)
    res.track(a, a.nbytes)
    res.track(b, b.nbytes)
    assert res.held == 8 * GIB
    del a
    gc.collect()
    assert res.held == 5 * GIB


def test_cache_follows_its_arrays():
    res = Residency()
    host = np.zeros(4)
    _kept(res, host, GIB)
    assert res.lookup(host) is not None
    assert res.lookup(np.zeros(4)) is None
    assert res.held == GIB
    del host
    gc.collect()
    assert res.held == 0  # the array died: its entry, and with it the table, went


def test_make_room_evicts_least_recently_used():
    res = Residency()
    budget = VramBudget(10 * GIB, "test")
    hosts = [np.zeros(1) for _ in range(3)]
    tables = [id(_kept(res, h, 3 * GIB)) for h in hosts]
    assert res.lookup(hosts[0]) is not None  # now the most recently used
    res.make_room(2 * GIB, budget, "job")  # 9 + 2 > 10: evicts hosts[1]'s table
    assert res.held == 6 * GIB
    assert res.lookup(hosts[1]) is None
    assert [id(res.lookup(h)) for h in (hosts[0], hosts[2])] == [tables[0], tables[2]]
    keep = res.lookup(hosts[0])
    res.make_room(7 * GIB, budget, "job", keep=keep)  # evicts hosts[2], never keep
    assert res.held == 3 * GIB and res.lookup(hosts[0]) is keep


def test_make_room_raises_with_the_numbers():
    res = Residency()
    pinned = Table(6 * GIB)  # held by its caller: counted, never evicted
    res.track(pinned, pinned.nbytes)
    _kept(res, np.zeros(1), GIB)  # its array dies at once: nothing to evict later
    with pytest.raises(VramBudgetError) as err:
        res.make_room(5 * GIB, VramBudget(8 * GIB, "CUZK_VRAM_BUDGET=8GiB"), "a G1 MSM of 16 points")
    msg = str(err.value)
    assert "a G1 MSM of 16 points needs 5.00 GiB" in msg
    assert "budget is 8.00 GiB" in msg and "prepared bases hold 6.00 GiB" in msg
    assert "CUZK_VRAM_BUDGET=8GiB" in msg
    assert (err.value.needed, err.value.allowed, err.value.held) == (5 * GIB, 8 * GIB, 6 * GIB)
    assert isinstance(err.value, MemoryError)


def test_evicting_a_table_its_caller_holds_frees_nothing():
    res = Residency()
    host = np.zeros(1)
    held_by_caller = _kept(res, host, 4 * GIB)
    assert res.evict_lru()
    assert res.held == 4 * GIB and res.lookup(host) is None
    del held_by_caller
    gc.collect()
    assert res.held == 0


def test_entries_of_no_bytes_are_never_evicted():
    """A table that is its held bases (m = 1 on parameters kept on the device) counts 0 bytes: evicting it
    frees nothing, so make_room passes it by and evicts what does free memory, or raises."""
    res = Residency()
    budget = VramBudget(4 * GIB, "test")
    free_view, costly = np.zeros(1), np.zeros(1)
    view = _kept(res, free_view, 0)
    _kept(res, costly, 3 * GIB)
    res.make_room(2 * GIB, budget, "job")  # 3 + 2 > 4: evicts the 3 GiB table, not the older 0-byte one
    assert res.lookup(free_view) is view and res.lookup(costly) is None and res.held == 0
    with pytest.raises(VramBudgetError):
        res.make_room(5 * GIB, budget, "job")
    assert res.lookup(free_view) is view


def test_small_sizes_read_in_mib():
    msg = str(VramBudgetError("a job", 30 << 20, 1 << 20, "somewhere"))
    assert msg.startswith("a job needs 30.0 MiB of GPU memory, but the VRAM budget is 1.0 MiB (budget from somewhere)")


@pytest.mark.gpu
def test_an_allocation_refused_by_the_pool_limit_is_retried_after_releasing_cached_blocks():
    """CuPy counts its cached free blocks against its limit: a larger block than any cached one is
    refused although the cache could make room. The installed allocator releases them and retries."""
    from cuzk.backend.cuda import cuda_available
    from cuzk.backend.cuda.memory import POOL_PEAK
    cp = pytest.importorskip("cupy")
    if not cuda_available():
        pytest.skip("no CUDA device")
    POOL_PEAK.install()
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    limit, before = pool.get_limit(), pool.total_bytes()
    pool.set_limit(size=before + (256 << 20))
    try:
        a = cp.empty(160 << 20, dtype=cp.uint8)
        del a  # cached: 160 MiB of the 256 MiB count against the limit
        assert pool.total_bytes() >= before + (160 << 20)
        b = cp.empty(200 << 20, dtype=cp.uint8)  # 360 MiB with the cache: refused, then retried
        assert b.nbytes == 200 << 20 and pool.total_bytes() <= before + (256 << 20)
    finally:
        pool.set_limit(size=limit)
