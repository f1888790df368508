"""The VRAM planner (cuzk.backend.cuda.vram_plan) on the 32GiB PoRep partition's shape: what stays on
the device and what streams under caps of 12 to 141 GiB, the model's limits, and a small circuit."""
from types import SimpleNamespace

import pytest

from cuzk.backend.cuda import msm
from cuzk.backend.cuda.memory import VramBudget
from cuzk.backend.cuda.vram_plan import (CONTEXT_BYTES, GROUP, MAX_CHUNK, MIN_CHUNK, QUOTIENT_MODES, VECTORS,
                                         ProverShape, minimum_cap, plan_prover, pool_limit, usable_bytes)
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
W, V = SHAPE.witness_bytes, SHAPE.vector_bytes


def point_bytes(vector: str) -> int:
    return 96 if GROUP[vector] == "g1" else 192


def msm_phases_without_a_witness(plan) -> bool:
    """Whether each MSM phase holds its uploaded scalars (H's: the domain vector) and its work, no witness:
    a resident vector's plan's working memory, a streamed one's two chunk buffers and a chunk's run bytes."""
    def work(v: str) -> int:
        if v in plan.tables:
            return max(plan.tables[v].bytes.run, plan.tables[v].bytes.prepare)
        k = min(plan.chunk, LENGTHS[v])
        return 2 * k * point_bytes(v) + msm.streamed_plan(GROUP[v], k, ITEMS).bytes.run

    return plan.phases["msm_h"] == V + work("h") and plan.phases["msm_l"] == 32 * LENGTHS["l"] + work("l") \
        and plan.phases["msm_a"] == 32 * LENGTHS["a"] + work("a") \
        and plan.phases["msm_b"] == 32 * LENGTHS["b_g1"] + max(work("b_g1"), work("b_g2"))


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


def test_12_gib_keeps_the_witness_in_host_memory(plans):
    plan = plans[12]
    # even offloaded, the quotient would keep the witness and two domain vectors beside the circuit
    assert SHAPE.circuit_bytes + W + 2 * V > plan.usable
    assert plan.quotient == "host" and plan.witness_on_host
    # the witness goes to host memory once expanded: each evaluation uploads it beside its output, and the
    # transforms hold a vector and its scratch
    assert plan.phases["quotient"] == max(W + V, 2 * V) == 2 * V
    assert msm_phases_without_a_witness(plan)
    assert plan.tables == {} and set(plan.streamed) == set(VECTORS) and plan.peak <= plan.usable
    assert any(r.startswith("quotient offloaded and the witness in host memory") for r in plan.reasons)
    assert not any(p.witness_on_host for cap, p in plans.items() if cap > 12)


def test_16_gib_offloads_the_quotient_and_streams_everything(plans):
    plan = plans[16]
    # kept on the device the quotient (W + 3 V) does not fit beside the circuit; offloaded (W + 2 V) it does
    assert SHAPE.circuit_bytes + W + 3 * V > plan.usable >= SHAPE.circuit_bytes + W + 2 * V
    assert plan.quotient == "offload" and plan.phases["quotient"] == W + 2 * V
    # not even the smallest table (b_g1's, one multiple) fits beside the offloaded quotient
    smallest = min(VECTORS, key=lambda v: LENGTHS[v] * point_bytes(v))
    assert smallest == "b_g1"
    assert SHAPE.circuit_bytes + LENGTHS["b_g1"] * point_bytes("b_g1") + W + 2 * V > plan.usable
    assert plan.tables == {} and set(plan.streamed) == set(VECTORS)
    # with nothing resident the largest chunk fits: h's, a's and B's MSMs stay within the usable bytes
    assert plan.chunk == MAX_CHUNK
    assert any(r.startswith("quotient offloaded") for r in plan.reasons)


def test_24_gib_keeps_the_quotient_and_b_g1(plans):
    plan = plans[24]
    assert SHAPE.circuit_bytes + W + 3 * V <= plan.usable
    assert plan.quotient == "resident" and plan.phases["quotient"] == W + 3 * V
    # b_g1's table fits beside the resident quotient; b_g2's, the next smallest, does not beside both
    tables = {v: LENGTHS[v] * point_bytes(v) for v in ("b_g1", "b_g2")}
    assert SHAPE.circuit_bytes + tables["b_g1"] + W + 3 * V <= plan.usable
    assert SHAPE.circuit_bytes + tables["b_g1"] + tables["b_g2"] + W + 3 * V > plan.usable
    assert set(plan.tables) == {"b_g1"} and plan.streamed == ("h", "l", "a", "b_g2")
    assert any(r.startswith("quotient resident") for r in plan.reasons)


def test_80_gib_keeps_h(plans):
    assert "h" in plans[80].tables and plans[80].streamed == ()


def test_141_gib_keeps_everything_and_raises_h_as_choose_plan_does(plans):
    plan = plans[141]
    assert set(plan.tables) == set(VECTORS) and plan.tables["h"].multiples > 1
    assert plan.h2d_bytes(SHAPE) == 0
    # h is raised first: beside it the other tables at one multiple, its phase's witness and domain vector
    # as held, and at most the multiples whose table also fits beside the largest other phase
    w, v = W, V
    others = SHAPE.circuit_bytes + sum(n * point_bytes(x) for x, n in LENGTHS.items() if x != "h")
    run = {x: msm.least_run_bytes(GROUP[x], n, ITEMS) for x, n in LENGTHS.items()}
    phases = (w + 3 * v, w + run["l"], w + 32 * LENGTHS["a"] + run["a"],
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
    key = sum(LENGTHS[v] * point_bytes(v) for v in VECTORS)
    # 12 GiB: as 16 GiB, and the witness for each of the three evaluations and the scalars of the L, A
    # and both B MSMs
    assert h2d[0] == key + 2 * V + 3 * W + 32 * (LENGTHS["l"] + LENGTHS["a"] + 2 * LENGTHS["b_g1"])
    # 16 GiB: every point, and the offloaded quotient's A and A B coset values coming back (2 V)
    assert h2d[1] == key + 2 * V
    # 24 GiB: every point but b_g1's; the quotient stays on the device
    assert h2d[2] == key - LENGTHS["b_g1"] * point_bytes("b_g1")


def test_the_witness_batch_is_the_largest_that_fits():
    """Where nothing streams, a batch's witnesses stay on the device until its last item is proved:
    (B - 1) W more in every phase, after the tables are chosen (the same tables as one witness). B is
    the largest up to the one asked for whose peak fits: at 80 and 141 GiB the tables take the room
    and no second witness fits; at 640 GiB some do, and at 1 TiB all 40 asked."""
    batches = {}
    for cap in (80, 141, 640, 1024):
        one = plan_prover(SHAPE, cap * GIB)
        for asked in (1, 4, 10, 40):
            plan = plan_prover(SHAPE, cap * GIB, witness_batch=asked)
            b = batches[cap, asked] = plan.witness_batch
            assert plan.streamed == () and plan.prove_batch == 1
            assert 1 <= b <= asked and plan.tables == one.tables
            assert plan.phases == {k: x + (b - 1) * W for k, x in one.phases.items()}
            assert plan.phases["expand"] == b * W
            assert plan.peak == held(one) + max(one.phases.values()) + (b - 1) * W <= plan.usable
            assert b == asked or plan.peak + W > plan.usable
            assert (b < asked) == any(r.startswith(f"witness batch {b} of the {asked}") for r in plan.reasons)
    assert batches[80, 40] == batches[141, 40] == 1
    assert 1 < batches[640, 40] < 40 and batches[1024, 40] == 40
    with pytest.raises(InputError):
        plan_prover(SHAPE, 141 * GIB, witness_batch=0)


def test_partitions_are_proved_together_where_the_key_streams(plans):
    """Where a vector streams, the partitions asked for are proved together, each expanded alone: the
    same tables, no witness held through the MSMs (their scalars uploaded, H's too), so the peak does
    not rise, and the streamed points cross once for all of them."""
    for cap in (12, 16, 24):
        one = plans[cap]
        for asked in (4, 10):
            plan = plan_prover(SHAPE, cap * GIB, witness_batch=asked)
            assert plan.prove_batch == asked and plan.witness_batch == 1
            assert plan.tables == one.tables and plan.streamed == one.streamed and plan.quotient == one.quotient
            assert plan.phases["expand"] == W and plan.phases["quotient"] == one.phases["quotient"]
            assert msm_phases_without_a_witness(plan)
            assert plan.peak <= one.peak <= plan.usable
            assert any(r.startswith(f"{asked} partitions proved together") for r in plan.reasons)
            points = sum(LENGTHS[v] * point_bytes(v) for v in plan.streamed)
            scalars = 32 * (LENGTHS["h"] + LENGTHS["l"] + LENGTHS["a"] + 2 * LENGTHS["b_g1"])
            back = 0 if plan.quotient == "resident" else 2 * V
            evaluations = 3 * W if plan.witness_on_host else 0
            assert plan.h2d_bytes(SHAPE) == points // asked + back + evaluations + scalars
    # per partition at 16 GiB, 10 together: 28.1 GB against 56.0 GB one at a time
    assert plan_prover(SHAPE, 16 * GIB, witness_batch=10).h2d_bytes(SHAPE) < plans[16].h2d_bytes(SHAPE) // 1.9


def test_minimum_cap():
    low = minimum_cap(SHAPE)
    plan = plan_prover(SHAPE, low)
    assert plan.quotient == "host" and plan.tables == {} and plan.chunk >= MIN_CHUNK
    assert plan.peak <= plan.usable
    # at the least: the circuit beside the quotient's two domain vectors (the witness in host memory), the
    # largest phase with every vector streamed at MIN_CHUNK; the chunk then grows into the room up to it
    need = SHAPE.circuit_bytes + 2 * V
    assert usable_bytes(low) >= need > usable_bytes(low - 1)
    assert plan.peak == need and plan.phases["quotient"] == 2 * V
    with pytest.raises(VramBudgetError, match=format_size(low)) as err:
        plan_prover(SHAPE, low - GIB, source="--vram-cap")
    assert err.value.needed == low and err.value.allowed == low - GIB and err.value.source == "--vram-cap"
    assert "134217728 domain, 130170221 variables" in str(err.value)
    with pytest.raises(VramBudgetError):
        plan_prover(SHAPE, low - 1)
    assert 9 * GIB < low < 10 * GIB
    assert int((low - CONTEXT_BYTES) * 0.96) >= need


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
    offloaded a small table may give way: the resident quotient's third domain vector and the 2 V of
    coset values no longer uploaded (4.3 and 8.6 GB a partition) weigh more than it."""
    before = None
    for cap in range(minimum_cap(SHAPE), 142 * GIB, GIB // 2):
        plan = plan_prover(SHAPE, cap)
        assert plan.peak <= plan.usable
        if before is not None:
            assert plan.h2d_bytes(SHAPE) <= before.h2d_bytes(SHAPE)
            assert QUOTIENT_MODES.index(plan.quotient) <= QUOTIENT_MODES.index(before.quotient)
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
