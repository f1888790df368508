"""The VRAM planner (cuzk.backend.cuda.vram_plan) on the 32GiB PoRep partition's shape: what stays on
the device and what streams under caps of 12 to 141 GiB, the model's limits, and a small circuit."""
from types import SimpleNamespace

import pytest

from cuzk.backend.cuda import msm
from cuzk.backend.cuda.memory import VramBudget
from cuzk.backend.cuda.vram_plan import (CONTEXT_BYTES, GROUP, MIN_CHUNK, VECTORS, ProverShape, minimum_cap,
                                         plan_prover, pool_limit, usable_bytes)
from cuzk.errors import InputError, VramBudgetError, format_size

GIB = 1 << 30
# The 32GiB PoRep partition: 130,278,541 constraints, 328 inputs, 130,169,893 aux (tests/porep/
# test_circuit.py), domain 2^27; A and B query densities as in tests/backend/cuda/test_setup.py. The
# key is 47.4 GB: 96 (h + l + a + b_g1) + 192 b_g2.
INPUTS, AUX = 328, 130_169_893
B_LEN = INPUTS + int(0.254 * AUX)
LENGTHS = {"h": (1 << 27) - 1, "l": AUX, "a": INPUTS + int(0.997 * AUX), "b_g1": B_LEN, "b_g2": B_LEN}
SHAPE = ProverShape(1 << 27, INPUTS + AUX, LENGTHS, circuit_bytes=550_000_000)
ITEMS = msm.target_items(SHAPE.sm_count)
CAPS = (12, 16, 24, 80, 141)


def point_bytes(vector: str) -> int:
    return 96 if GROUP[vector] == "g1" else 192


def held(plan) -> int:
    return plan.peak - max(plan.phases.values())


@pytest.fixture(scope="module")
def plans():
    return {cap: plan_prover(SHAPE, cap * GIB) for cap in CAPS}


def test_the_shape_is_the_32gib_partition():
    key = sum(n * point_bytes(v) for v, n in LENGTHS.items())
    assert round(key / 1e9, 1) == 47.4
    assert SHAPE.vector_bytes == 32 << 27 and SHAPE.witness_bytes == 32 * 130_170_221


def test_usable_bytes():
    assert pool_limit(16 * GIB) == 15 * GIB
    assert usable_bytes(16 * GIB) == int(15 * GIB * 0.96)


def test_the_model_at_each_cap(plans):
    for cap, plan in plans.items():
        assert plan.cap == cap * GIB and plan.usable == usable_bytes(cap * GIB)
        assert plan.peak <= plan.usable
        assert plan.peak == SHAPE.circuit_bytes + sum(p.bytes.table for p in plan.tables.values()) \
            + max(plan.phases.values())
        assert set(plan.tables) | set(plan.streamed) == set(VECTORS)
        assert not set(plan.tables) & set(plan.streamed)
        assert (plan.chunk == 0) == (not plan.streamed)


def test_12_gib_offloads_the_quotient(plans):
    plan = plans[12]
    assert plan.quotient == "offload" and plan.tables == {} and plan.chunk >= MIN_CHUNK
    assert plan.phases["quotient"] == 2 * SHAPE.vector_bytes


def test_16_gib_keeps_the_quotient_and_streams_h_and_l(plans):
    plan = plans[16]
    assert plan.quotient == "resident" and {"h", "l"} <= set(plan.streamed)
    assert plan.phases["quotient"] == SHAPE.witness_bytes + 2 * SHAPE.vector_bytes


def test_24_gib_keeps_the_small_vectors(plans):
    plan = plans[24]
    assert plan.quotient == "resident" and set(plan.tables) == {"b_g1", "b_g2"}
    assert "h" in plan.streamed


def test_80_gib_keeps_h(plans):
    assert "h" in plans[80].tables and plans[80].streamed == ()


def test_141_gib_keeps_everything_and_raises_h_as_choose_plan_does(plans):
    plan = plans[141]
    assert set(plan.tables) == set(VECTORS) and plan.tables["h"].multiples > 1
    assert plan.h2d_bytes(SHAPE) == 0
    # h is raised first: beside it the other tables at one multiple, its phase's witness and domain vector
    # as held, and at most the multiples whose table also fits beside the largest other phase
    w, v = SHAPE.witness_bytes, SHAPE.vector_bytes
    others = SHAPE.circuit_bytes + sum(n * point_bytes(x) for x, n in LENGTHS.items() if x != "h")
    run = {x: msm.least_run_bytes(GROUP[x], n, ITEMS) for x, n in LENGTHS.items()}
    phases = (w + 2 * v, w + run["l"], w + 32 * LENGTHS["a"] + run["a"],
              w + 32 * LENGTHS["b_g1"] + max(run["b_g1"], run["b_g2"]))
    most = (plan.usable - others - max(phases)) // (96 * LENGTHS["h"])
    want = msm.choose_plan("g1", LENGTHS["h"], VramBudget(plan.usable, "test"), items=ITEMS, held=others + w + v,
                           max_multiples=most)
    assert plan.tables["h"] == want


def test_without_a_cap_each_table_is_choose_plans_in_the_engines_order():
    plan = plan_prover(SHAPE, 1 << 40)
    tables = SHAPE.circuit_bytes
    for v in VECTORS:  # h, l, a, b_g1, b_g2: each with the tables made before it held
        want = msm.choose_plan(GROUP[v], LENGTHS[v], VramBudget(plan.usable, "test"), items=ITEMS, held=tables)
        assert plan.tables[v] == want
        tables += want.bytes.table
    assert list(plan.tables) == list(VECTORS)


def test_h2d_bytes_fall_as_the_cap_grows(plans):
    h2d = [plans[cap].h2d_bytes(SHAPE) for cap in CAPS]
    assert h2d[0] > h2d[1] > h2d[2] > h2d[3] == h2d[4] == 0
    streamed = sum(LENGTHS[v] * point_bytes(v) for v in VECTORS)
    assert h2d[0] == streamed + 3 * SHAPE.vector_bytes + SHAPE.witness_bytes
    assert h2d[1] == streamed


def test_the_witness_batch_is_the_largest_that_fits():
    for cap in CAPS:
        for asked in (1, 4, 10, 40):
            plan = plan_prover(SHAPE, cap * GIB, witness_batch=asked)
            b, w = plan.witness_batch, SHAPE.witness_bytes
            assert 1 <= b <= asked and plan.phases["expand"] == b * w
            assert held(plan) + b * w <= plan.usable
            assert b == asked or held(plan) + (b + 1) * w > plan.usable
    assert plan_prover(SHAPE, 141 * GIB, witness_batch=40).witness_batch < 40
    with pytest.raises(InputError):
        plan_prover(SHAPE, 141 * GIB, witness_batch=0)


def test_minimum_cap():
    low = minimum_cap(SHAPE)
    plan = plan_prover(SHAPE, low)
    assert plan.quotient == "offload" and plan.tables == {} and plan.chunk == MIN_CHUNK
    assert plan.peak <= plan.usable
    with pytest.raises(VramBudgetError, match=format_size(low)) as err:
        plan_prover(SHAPE, low - GIB, source="--vram-cap")
    assert err.value.needed == low and err.value.allowed == low - GIB and err.value.source == "--vram-cap"
    assert "134217728 domain, 130170221 variables" in str(err.value)
    with pytest.raises(VramBudgetError):
        plan_prover(SHAPE, low - 1)
    # at the least: the circuit and h's MSM (the witness, a domain vector, one 2^20-point chunk's work)
    assert 10 * GIB < low < 11 * GIB
    assert (low - CONTEXT_BYTES) * 0.96 > SHAPE.circuit_bytes + SHAPE.witness_bytes + SHAPE.vector_bytes


def test_reasons_name_each_choice(plans):
    for plan in plans.values():
        assert plan.reasons and any(r.startswith("quotient") for r in plan.reasons)
        for v in plan.streamed:
            assert any(r.startswith(f"{v} streamed") for r in plan.reasons)
        for v in plan.tables:
            assert any(r.startswith(f"{v} resident") for r in plan.reasons)
        assert plan.summary().startswith(f"VRAM plan for a {format_size(plan.cap)} cap")


def test_every_cap_from_the_minimum_up():
    """The peak stays within the usable bytes; once a mode is chosen for the quotient, a larger cap keeps
    every table a smaller one kept, and the bytes uploaded never grow. Where the quotient stops being
    offloaded a small table may give way: the quotient's evaluations and witness (17 GB a partition)
    weigh more than it."""
    before = None
    for cap in range(minimum_cap(SHAPE), 142 * GIB, GIB // 2):
        plan = plan_prover(SHAPE, cap)
        assert plan.peak <= plan.usable
        if before is not None:
            assert plan.h2d_bytes(SHAPE) <= before.h2d_bytes(SHAPE)
            assert (before.quotient, plan.quotient) != ("resident", "offload")
            if plan.quotient == before.quotient:
                assert set(before.tables) <= set(plan.tables)
            assert plan.chunk >= before.chunk or set(plan.streamed) < set(before.streamed)
        before = plan


def test_a_small_circuit_keeps_everything_at_16_gib():
    small = ProverShape.of(SimpleNamespace(domain_size=1 << 13, num_inputs=2, num_aux=6000),
                           {"h": (1 << 13) - 1, "l": 6000, "a": 5900, "b_g1": 1500, "b_g2": 1500},
                           circuit_bytes=2 << 20)
    assert small.columns == 6002
    plan = plan_prover(small, "16GiB")
    assert set(plan.tables) == set(VECTORS) and plan.streamed == () and plan.chunk == 0
    assert plan.quotient == "resident" and plan.h2d_bytes(small) == 0 and plan.peak <= plan.usable


def test_a_shape_checks_its_sizes():
    with pytest.raises(InputError):
        ProverShape(3 << 10, 10, {"h": 1}, 0)
    with pytest.raises(InputError):
        ProverShape(1 << 10, 10, {"c": 1}, 0)
    no_b = plan_prover(ProverShape(1 << 10, 900, {"h": 1023, "l": 800, "a": 800}, 0), 16 * GIB)
    assert set(no_b.tables) == {"h", "l", "a"} and no_b.streamed == ()
