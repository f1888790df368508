"""cuzk.engine.budget: the host limit from fake /proc and cgroup trees, and the reservation ledger
(accounting, blocking and admission across real threads, timeouts, FIFO, shrink, snapshot)."""
import dataclasses
import re
import threading
import time

import pytest

from cuzk.engine.budget import CAP, CGROUP_V1, CGROUP_V2, MEMTOTAL, MemoryBudget, host_limit
from cuzk.errors import BudgetError, BudgetExceededError, BudgetTimeoutError, InputError

GIB = 1 << 30


def _tree(tmp_path, *, memtotal_kb=64 * GIB >> 10, cgroup="0::/app.slice/job\n", files=None):
    """A fake /proc (meminfo, self/cgroup) and cgroup root under tmp_path; files maps paths relative
    to the cgroup root to their content."""
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    root.mkdir()
    if memtotal_kb is not None:
        (proc / "meminfo").write_text(f"MemTotal:       {memtotal_kb} kB\nMemFree:        1000 kB\n")
    if cgroup is not None:
        (proc / "self" / "cgroup").write_text(cgroup)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return {"proc_root": proc, "cgroup_root": root}


def _by_name(limit):
    return {s.name: s for s in limit.sources}


def test_cgroup_v2_limit_wins_over_memtotal(tmp_path):
    paths = _tree(tmp_path, files={"app.slice/job/memory.max": f"{20 * GIB}\n", "app.slice/memory.max": "max\n"})
    limit = host_limit(None, **paths)
    assert (limit.total, limit.source) == (20 * GIB, CGROUP_V2)
    src = _by_name(limit)
    assert src[CGROUP_V2].note == str(paths["cgroup_root"] / "app.slice/job/memory.max")
    assert src[MEMTOTAL].bytes == 64 * GIB and src[CAP].bytes is None and src[CAP].note == "not set"
    assert limit.describe().startswith("20.00 GiB from cgroup v2 memory.max (memory.host_cap: not set; ")


def test_a_parent_cgroup_limit_counts(tmp_path):
    paths = _tree(tmp_path, files={"app.slice/job/memory.max": "max\n", "app.slice/memory.max": f"{8 * GIB}\n"})
    limit = host_limit(None, **paths)
    assert (limit.total, limit.source) == (8 * GIB, CGROUP_V2)


def test_cgroup_v2_max_means_no_limit(tmp_path):
    paths = _tree(tmp_path, files={"app.slice/job/memory.max": "max\n"})
    limit = host_limit(None, **paths)
    assert (limit.total, limit.source) == (64 * GIB, MEMTOTAL)
    src = _by_name(limit)[CGROUP_V2]
    assert src.bytes is None and src.note.startswith("no limit from ")


def test_cgroup_v1_limit_and_its_unlimited_value(tmp_path):
    cgroup = "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n"
    paths = _tree(tmp_path, cgroup=cgroup, files={"memory/docker/abc/memory.limit_in_bytes": f"{12 * GIB}\n",
                                                  "memory/memory.limit_in_bytes": "9223372036854771712\n"})
    limit = host_limit(None, **paths)
    assert (limit.total, limit.source) == (12 * GIB, CGROUP_V1)
    assert _by_name(limit)[CGROUP_V2].bytes is None  # the hybrid setup's v2 root has no memory.max
    (paths["cgroup_root"] / "memory/docker/abc/memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert host_limit(None, **paths).source == MEMTOTAL


def test_no_cgroup_and_no_limit(tmp_path):
    limit = host_limit(None, **_tree(tmp_path, cgroup="1:name=systemd:/\n"))
    assert (limit.total, limit.source) == (64 * GIB, MEMTOTAL)
    assert [(s.name, s.bytes) for s in limit.sources] == [(CAP, None), ("cgroup", None), (MEMTOTAL, 64 * GIB)]


def test_the_cap_wins_when_smallest_and_on_ties(tmp_path):
    paths = _tree(tmp_path, files={"app.slice/job/memory.max": f"{20 * GIB}\n"})
    assert (host_limit(16 * GIB, **paths).total, host_limit(16 * GIB, **paths).source) == (16 * GIB, CAP)
    assert host_limit(20 * GIB, **paths).source == CAP
    assert host_limit(32 * GIB, **paths).source == CGROUP_V2


def test_unreadable_files_are_ignored_and_marked(tmp_path):
    paths = _tree(tmp_path, files={"app.slice/memory.max": "junk\n"})
    (paths["cgroup_root"] / "app.slice/job/memory.max").mkdir(parents=True)  # reading a directory fails
    limit = host_limit(None, **paths)
    src = _by_name(limit)[CGROUP_V2]
    assert limit.source == MEMTOTAL and src.bytes is None
    assert "job/memory.max unreadable (Is a directory)" in src.note
    assert "app.slice/memory.max unreadable (unexpected content 'junk')" in src.note


def test_unreadable_proc_files(tmp_path):
    paths = _tree(tmp_path, files={"app.slice/job/memory.max": "garbage"})
    (paths["proc_root"] / "self" / "cgroup").unlink()
    (paths["proc_root"] / "self" / "cgroup").mkdir()  # reading a directory fails
    limit = host_limit(8 * GIB, **paths)
    src = _by_name(limit)
    assert limit.source == CAP and src["cgroup"].note.endswith("unreadable (Is a directory)")
    assert src[MEMTOTAL].bytes == 64 * GIB


def test_no_limit_at_all_is_an_error(tmp_path):
    paths = _tree(tmp_path, memtotal_kb=None, cgroup="0::/\n")
    with pytest.raises(BudgetError, match=r"no host memory limit found \(memory.host_cap: not set; .*"
                                          r"MemTotal: .*meminfo unreadable .*\): set memory.host_cap"):
        host_limit(None, **paths)


def test_host_budget_subtracts_the_margin(tmp_path):
    limit = host_limit(10 * GIB, **_tree(tmp_path))
    budget = MemoryBudget.for_host(limit, 2 * GIB)
    assert (budget.total, budget.name) == (8 * GIB, "host RAM")
    assert budget.source == "memory.host_cap, 10.00 GiB minus memory.host_margin 2.00 GiB"
    with pytest.raises(BudgetError, match="leaves nothing after memory.host_margin of 10.00 GiB"):
        MemoryBudget.for_host(limit, 10 * GIB)
    assert dataclasses.asdict(limit)["sources"][0] == {"name": CAP, "bytes": 10 * GIB, "note": "set"}


def test_reserve_and_release_accounting():
    budget = MemoryBudget(100, "host RAM")
    a = budget.reserve(60, "partition 0")
    with budget.reserve(40, "partition 1") as b:
        assert (budget.used, budget.free, b.bytes) == (100, 0, 40)
    assert b.released and (budget.used, budget.free) == (60, 40)
    a.release()
    a.release()  # idempotent
    assert (budget.used, budget.free) == (0, 100) and budget.reserve(0, "nothing").bytes == 0
    with pytest.raises(InputError, match="partition 2: a reservation must be an integer of bytes >= 0"):
        budget.reserve(-1, "partition 2")


def _start(target):
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _wait_until(condition, limit=2.0):
    end = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.001)


def test_a_waiter_is_admitted_when_another_thread_releases():
    budget = MemoryBudget(100, "host RAM")
    first = budget.reserve(80, "partition 0")
    got = []
    waiter = _start(lambda: got.append(budget.reserve(50, "partition 1", timeout=5)))
    _wait_until(lambda: budget.snapshot()["waiting"])
    assert not got and budget.snapshot()["waiting"][0]["what"] == "partition 1"
    first.release()
    waiter.join(2)
    assert got[0].bytes == 50 and budget.used == 50 and not budget.snapshot()["waiting"]


def test_timeout_error_says_what_waited_and_for_what():
    budget = MemoryBudget(10 * GIB, "host RAM")
    budget.reserve(9 * GIB, "partition 0")
    start = time.monotonic()
    with pytest.raises(BudgetTimeoutError) as info:
        budget.reserve(4 * GIB, "partition 1", timeout=0.05)
    assert 0.05 <= time.monotonic() - start < 1
    assert re.fullmatch(r"partition 1 waited 0\.\d s for 4\.00 GiB of host RAM: 1\.00 GiB of 10\.00 GiB free",
                        str(info.value)), str(info.value)
    assert info.value.waited_s >= 0.05 and (info.value.needed, info.value.free) == (4 * GIB, GIB)
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, MemoryError)
    assert not budget.snapshot()["waiting"] and budget.used == 9 * GIB


def test_more_than_the_whole_budget_fails_at_once():
    budget = MemoryBudget(8 * GIB, "host RAM", source="memory.host_cap")
    start = time.monotonic()
    with pytest.raises(BudgetExceededError) as info:
        budget.reserve(14 * GIB, "porep-32g partition 3")  # no timeout: it would block forever in curio
    assert time.monotonic() - start < 0.1
    assert str(info.value) == ("porep-32g partition 3 needs 14.00 GiB of host RAM, more than the whole budget "
                               "of 8.00 GiB (budget from memory.host_cap); it can never be admitted")


def test_fifo_a_big_waiter_goes_before_later_small_ones():
    budget = MemoryBudget(100, "host RAM")
    held = budget.reserve(60, "running")
    order = []

    def take(nbytes, what):
        with budget.reserve(nbytes, what, timeout=5):
            order.append(what)

    big = _start(lambda: take(90, "big"))
    _wait_until(lambda: len(budget.snapshot()["waiting"]) == 1)
    small = [_start(lambda i=i: take(10, f"small {i}")) for i in range(3)]
    _wait_until(lambda: len(budget.snapshot()["waiting"]) == 4)
    assert order == []  # 40 bytes are free, but the small ones wait behind the big one
    with pytest.raises(BudgetTimeoutError, match=r"behind 4 earlier request\(s\) still waiting"):
        budget.reserve(1, "late", timeout=0.01)
    held.release()
    for thread in (big, *small):
        thread.join(2)
    assert order[0] == "big" and sorted(order[1:]) == ["small 0", "small 1", "small 2"]
    assert budget.used == 0


def test_a_timed_out_head_lets_the_next_waiter_in():
    budget = MemoryBudget(100, "host RAM")
    budget.reserve(50, "running")
    got, failed = [], []

    def big():
        try:
            budget.reserve(80, "big", timeout=0.1)
        except BudgetTimeoutError as e:
            failed.append(e)

    head = _start(big)
    _wait_until(lambda: len(budget.snapshot()["waiting"]) == 1)
    small = _start(lambda: got.append(budget.reserve(30, "small", timeout=2)))
    _wait_until(lambda: len(budget.snapshot()["waiting"]) == 2 or failed)
    assert not got  # the small one fits, but waits behind the big one until that one times out
    head.join(2)
    small.join(2)
    assert failed[0].what == "big" and got[0].bytes == 30 and budget.used == 80


def test_shrink_frees_the_difference_and_admits_a_waiter():
    budget = MemoryBudget(100, "host RAM")
    r = budget.reserve(90, "partition 0")
    got = []
    waiter = _start(lambda: got.append(budget.reserve(50, "partition 1", timeout=5)))
    _wait_until(lambda: budget.snapshot()["waiting"])
    r.shrink(10)  # e.g. a/b/c freed after the GPU start
    waiter.join(2)
    assert (r.bytes, budget.used, got[0].bytes) == (10, 60, 50)
    with pytest.raises(InputError, match=r"partition 0: can shrink its 10 bytes of host RAM only to 0\.\.10 bytes"):
        r.shrink(11)
    r.shrink(0)
    assert r.released and budget.used == 50
    r.release()
    assert budget.used == 50


def test_snapshot():
    budget = MemoryBudget(100, "GPU 0 VRAM", source="80% of 100 bytes free")
    budget.reserve(30, "srs porep-2k")
    time.sleep(0.01)
    budget.reserve(20, "partition 0")
    snap = budget.snapshot()
    ages = [r.pop("age_s") for r in snap["reservations"]]
    assert snap == {"name": "GPU 0 VRAM", "source": "80% of 100 bytes free", "total": 100, "used": 50, "free": 50,
                    "reservations": [{"what": "srs porep-2k", "bytes": 30}, {"what": "partition 0", "bytes": 20}],
                    "waiting": []}
    assert ages[0] >= 0.01 and ages[0] > ages[1] >= 0


def test_bad_totals_and_timeouts():
    with pytest.raises(InputError, match="host RAM: a budget total must be a positive integer of bytes, got 0"):
        MemoryBudget(0, "host RAM")
    with pytest.raises(InputError, match="a reservation timeout must be None or >= 0 seconds, got -1"):
        MemoryBudget(10, "host RAM").reserve(1, "x", timeout=-1)
