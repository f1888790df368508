"""The MSM plan under a VRAM budget and the SpMV's chunking, without a GPU: the memory estimate, the
choice of (c, multiples) and the typed error when nothing fits."""
import numpy as np
import pytest

from cuzk.backend.cuda import loader, msm, spmv
from cuzk.backend.cuda.memory import VramBudget
from cuzk.errors import VramBudgetError

GIB = 1 << 30
ITEMS = msm.target_items(132)
POINT = {"g1": 96, "g2": 192}


def plan(group, n, budget, **kw):
    return msm.choose_plan(group, n, VramBudget(budget, "test budget"), items=ITEMS, **kw)


def test_table_multiples_are_the_kernels():
    assert loader.MAX_MULTIPLES == 16  # PRE_MAX in kernels/msm/params.cuh
    assert plan("g1", 1 << 20, 1 << 50).multiples <= loader.MAX_MULTIPLES


def test_items_follow_the_sm_count():
    assert msm.target_items(132) == 8 * 256 * 132  # about 2^18 on an H200
    assert msm.target_items(46) < msm.target_items(128)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_estimate_counts_table_and_working_memory(group):
    n = 1 << 20
    for c, m in ((16, 1), (16, 4), (16, 16), (12, 11), (20, 13)):
        est = msm.msm_bytes(group, n, c, m, False, ITEMS)
        w = msm.windows(c)
        assert est.table == m * n * POINT[group]
        assert est.prepare == (n * POINT[group] if m > 1 else 0)
        assert est.run >= 32 * n + 4 * w * n  # scalars and sorted entries at least
        assert est.peak == est.table + max(est.prepare, est.run)
        assert msm.msm_bytes(group, n, c, m, True, ITEMS).run >= est.run
    assert msm.msm_bytes(group, n, 16, 8, False, ITEMS).peak > msm.msm_bytes(group, n, 16, 4, False, ITEMS).peak


def test_unbounded_budget_keeps_the_fastest_plans():
    """With room to spare the plan is the cost model's best: the H200 plans of bench/RESULTS.md."""
    p = plan("g1", 1 << 24, 1 << 50)
    assert (p.c, p.multiples) == (22, 12) and p.bytes.table == 18 * GIB
    assert 19 * GIB < p.peak_bytes < 22 * GIB  # measured peak: 20.3 GiB
    p = plan("g2", 1 << 22, 1 << 50)
    assert (p.c, p.multiples) == (20, 13)


@pytest.mark.parametrize("group, log_n", [("g1", 24), ("g2", 22)])
def test_16gib_budget_still_runs(group, log_n):
    best = plan(group, 1 << log_n, 1 << 50)
    p = plan(group, 1 << log_n, 16 * GIB)
    assert p.peak_bytes <= 16 * GIB
    assert p.cost >= best.cost and p.cost < 1.1 * best.cost
    if best.peak_bytes > 16 * GIB:
        assert p.multiples < best.multiples


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_smaller_budgets_pick_smaller_tables(group):
    n = 1 << 22
    budgets = [64 * GIB, 16 * GIB, 8 * GIB, 4 * GIB, 2 * GIB]
    plans = [plan(group, n, b) for b in budgets]
    for b, p in zip(budgets, plans):
        assert p.peak_bytes <= b
    costs = [p.cost for p in plans]
    assert costs == sorted(costs)
    assert plans[-1].multiples < plans[0].multiples
    assert plans[-1].bytes.table < plans[0].bytes.table


def test_held_bytes_count_against_the_budget():
    free = plan("g1", 1 << 22, 8 * GIB)
    crowded = plan("g1", 1 << 22, 8 * GIB, held=6 * GIB)
    assert crowded.peak_bytes <= 2 * GIB < free.peak_bytes


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_bases_already_on_the_device_are_not_counted_twice(group):
    """Device-held bases (parameter vectors kept on the GPU) are the table's first multiple: a plan
    adds (m - 1) n A and its run memory, and nothing for an upload."""
    n = 1 << 22
    a = POINT[group] * n
    for c, m in ((16, 1), (16, 4)):
        p = msm.plan_for(group, n, c, m, False, ITEMS)
        assert msm.new_bytes(p, False) == p.peak_bytes
        assert msm.new_bytes(p, True) == (m - 1) * a + p.bytes.run
    budget = 2 * a + 2 * GIB
    assert plan(group, n, budget, bases_held=True).multiples \
        >= plan(group, n, budget).multiples
    tight = min(msm.plan_for(group, n, c, 1, False, ITEMS).bytes.run for c in range(4, 24)) + a // 2
    with pytest.raises(VramBudgetError):
        plan(group, n, tight, sparse=False)  # the bases themselves do not fit beside the run
    assert plan(group, n, tight, sparse=False, bases_held=True).multiples == 1


def test_nothing_fits_raises_with_the_numbers():
    n = 1 << 24
    least = min(msm.plan_for("g1", n, c, 1, True, ITEMS).peak_bytes for c in range(4, 24))
    with pytest.raises(VramBudgetError) as err:
        plan("g1", n, GIB, held=GIB // 4)
    e = err.value
    assert e.needed <= least and e.allowed == GIB and e.held == GIB // 4
    msg = str(e)
    assert f"G1 MSM of {n} points" in msg and f"needs {e.needed / GIB:.2f} GiB" in msg
    assert "budget is 1.00 GiB" in msg and "prepared bases hold 0.25 GiB" in msg and "test budget" in msg
    assert 2 * GIB < e.needed < 4 * GIB


def test_limits_on_multiples():
    assert plan("g1", 1 << 16, 1 << 50, precompute=False).multiples == 1
    assert plan("g1", 1 << 16, 1 << 50, max_multiples=4).multiples <= 4
    big = plan("g1", 1 << 27, 1 << 50)
    assert big.multiples * (1 << 27) < 1 << 31  # (multiple, base) indices fit the sorted entries
    with pytest.raises(msm.MsmInputError):
        plan("g1", 1 << 31, 1 << 50)


@pytest.mark.parametrize("log_n", [8, 12, 16, 20])
def test_plans_keep_the_smallest_table_for_a_set_count(log_n):
    p = plan("g1", 1 << log_n, 1 << 50, max_multiples=12)
    w = msm.windows(p.c)
    assert p.multiples == 1 or -(-w // (p.multiples - 1)) > -(-w // p.multiples)


# ---- SpMV chunks ------------------------------------------------------------------------------------
def test_spmv_chunks_cover_the_rows(rng):
    counts = rng.integers(0, 9, size=1000)
    counts[17] = 50  # wider than a chunk: a chunk of its own
    indptr = np.concatenate([[0], np.cumsum(counts)])
    parts = spmv.chunks(indptr, chunk_nnz=20, chunk_rows=64)
    assert parts[0][0] == 0 and parts[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    for r0, r1 in parts:
        assert 0 < r1 - r0 <= 64
        assert indptr[r1] - indptr[r0] <= 20 or r1 - r0 == 1
    assert (17, 18) in parts
    assert spmv.chunks(np.zeros(1, np.int64)) == []
    assert spmv.chunks(np.zeros(200, np.int64), chunk_rows=64) == [(0, 64), (64, 128), (128, 192), (192, 199)]
