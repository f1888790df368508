"""The front's bookkeeping without Ray: placement (resident circuit first, then least loaded, within
slots and host budget, a failed member avoided while another takes work), member states, the fleet's
status document, `cuzk fleet status`'s table and its refusals, and the fleet's metrics."""
from __future__ import annotations

import time

import pytest

from cuzk.cli.fleet import fetch_fleet, table
from cuzk.cluster.fleet import Fleet, Member
from cuzk.cluster.placement import choose, takes_work
from cuzk.errors import InputError
from cuzk.service.fleet_metrics import fleet_metrics
from service.test_run import free_port  # tests/ is on the path


def member(key: str, state: str = "ready", slots: int = 2, in_flight: int = 0, resident=(), proofs: int = 0,
           host: tuple[int, int] | None = None) -> Member:
    m = Member(key, key.split("/")[0], "10.0.0.1", 0, state=state, slots=slots, in_flight=in_flight,
               resident=set(resident), proofs=proofs)
    if host is not None:
        m.health = {"host": {"total_bytes": host[0], "reserved_bytes": host[1]}}
    return m


def test_the_member_holding_the_circuit_comes_first_then_the_least_loaded():
    cold, warm = member("a/0"), member("b/0", in_flight=1, resident={"c"})
    assert choose([cold, warm], "c") is warm  # no load, no tables to build: worth a busier member
    warm.in_flight = 2
    assert choose([cold, warm], "c") is cold  # the holder is full: the other one loads it
    busy, idle = member("c/0", in_flight=1), member("d/0", proofs=9)
    assert choose([busy, idle], "x") is idle
    assert choose([member("e/0", proofs=3), member("f/0", proofs=1)], "x").key == "f/0"


def test_only_ready_members_with_a_free_slot_and_budget_take_work():
    assert not takes_work(member("a/0", state="warming"))
    assert not takes_work(member("a/0", state="unresponsive"))
    assert not takes_work(member("a/0", state="failing"))
    assert not takes_work(member("a/0", state="dead"))
    assert not takes_work(member("a/0", in_flight=2))
    assert not takes_work(member("a/0", host=(8 << 30, 8 << 30)))
    assert takes_work(member("a/0", host=(8 << 30, 1 << 30)))
    assert choose([member("a/0", state="warming"), member("b/0", in_flight=2)], "x") is None


def test_a_partition_avoids_the_member_it_failed_on_while_another_takes_work():
    failed, other = member("a/0", resident={"c"}), member("b/0", in_flight=1)
    assert choose([failed, other], "c", frozenset({"a/0"})) is other
    other.in_flight = 2
    assert choose([failed, other], "c", frozenset({"a/0"})) is failed  # better than waiting forever


def test_member_states_and_the_fleet_document():
    fleet = Fleet()
    a, b = fleet.add(member("a/0")), fleet.add(member("b/0", state="warming"))
    with pytest.raises(ValueError):
        a.move("gone")
    before = a.since
    time.sleep(0.01)
    assert fleet.move(a, "dead", "its Ray node died") and a.since > before
    assert not fleet.move(a, "dead")
    a.proofs, b.failures, b.restarts = 4, 1, 2
    doc = fleet.status()
    assert doc["counts"] == {"starting": 0, "warming": 1, "ready": 0, "unresponsive": 0, "failing": 0, "dead": 1}
    assert (doc["proofs"], doc["failures"], doc["restarts"]) == (4, 1, 2)
    assert [row["state"] for row in doc["members"]] == ["dead", "warming"]
    assert doc["members"][0]["reason"] == "its Ray node died" and doc["members"][0]["last_heartbeat_s_ago"] is None
    assert [m.key for m in fleet.live()] == ["b/0"]


def test_an_unresponsive_member_that_answers_again_returns_to_its_warm_state():
    m = member("a/0", state="unresponsive")
    assert m.answering() == ("ready", "")
    m.warming = True
    assert m.answering() == ("warming", "")
    m.warm_failures, m.warm_error = 2, "warming failed (2 time(s); next try in 10 s): ParamsNotFoundError: x"
    assert m.answering() == ("failing", m.warm_error)  # not ready before a warm succeeds


def test_the_status_table_names_every_member_and_why_one_is_out():
    fleet = Fleet()
    fleet.add(member("aaaaaaaaaaaaaaaa/0", resident={"porep-32g"}, proofs=7, host=(64 << 30, 3 << 30)))
    fleet.get("aaaaaaaaaaaaaaaa/0").health["devices"] = [{"device": "cuda:0", "vram_used_bytes": 20 << 30,
                                                         "vram_total_bytes": 24 << 30}]
    fleet.add(member("bbbbbbbbbbbbbbbb/1")).move("dead", "its Ray node died")
    fleet.add(member("cccccccccccccccc/0")).move("failing", "warming failed (1 time(s); next try in 5 s): E: x")
    fleet.get("aaaaaaaaaaaaaaaa/0").last_heartbeat = time.time() - 2
    text = table(fleet.status())
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["MEMBER", "HOST", "STATE"]
    assert "aaaaaaaaaaaa/0" in lines[1] and " ready " in lines[1] and "porep-32g" in lines[1] and "3.0G/64.0G" in lines[1] \
        and "20.0G/24.0G" in lines[1]
    assert "bbbbbbbbbbbb/1" in lines[2] and " dead " in lines[2] and "never" in lines[2]
    assert "cccccccccccc/0" in lines[3] and " failing " in lines[3]
    assert "3 member(s): 1 ready, 1 failing, 1 dead; 7 proofs" in text
    assert [line.strip() for line in lines[-2:]] == ["bbbbbbbbbbbb/1: its Ray node died",
                                                     "cccccccccccc/0: warming failed (1 time(s); next try in 5 s): E: x"]
    metrics = {(m.name, tuple(s.labels.values())): s.value for m in fleet_metrics(fleet.status()) for s in m.samples}
    assert metrics[("cuzk_fleet_members", ("failing",))] == 1
    assert metrics[("cuzk_fleet_member_up", ("cccccccccccccccc/0", "10.0.0.1"))] == 0


def test_fleet_status_names_a_front_it_cannot_read():
    port = free_port()
    with pytest.raises(InputError, match=f"--front 127.0.0.1:{port}: cannot read http://127.0.0.1:{port}/status"):
        fetch_fleet(f"127.0.0.1:{port}", timeout=2)
