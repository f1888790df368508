"""The witness program on the GPU (cuzk.backend.cuda.witness) against the CPU executor
(cuzk.r1cs.witness_program.run_cpu), limb for limb, and against the gadgets' own witness: a circuit
with every op in plain and template steps and every kind of template variable, a plain-only one and
the PoRep-like gadget circuit; one and three partitions; the cooperative launch and the per-level
one; every step a thread, every step a warp, and the split by row length; 32- and 64-bit index
arrays; a decomposition that cannot fit its value is a SynthesisError. Without a GPU: the run table
and the long-first order of the steps."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cuzk.backend.cuda import pce as pce_cuda
from cuzk.backend.cuda import witness as witness_cuda
from cuzk.errors import InputError, SynthesisError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, num, sha256, uint32
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.r1cs import ONE, ConstraintSystem, Variable
from cuzk.r1cs import witness_program as wp
from cuzk.r1cs.pce import build
from r1cs.test_witness_program import gadget_circuit  # tests/ is on the path, as in test_pce

gpu = pytest.mark.gpu
R = Fr.modulus
MODES = [True, False]
MODE_IDS = ["cooperative", "per-level"]


def op_circuit(rng: np.random.Generator, k: int, mode: str = "both", blocks: bool = True) -> ConstraintSystem:
    """Plain rows: a number, its bits and their packing (DEC_C, SOLVE_C), 3 y = x (SOLVE_B) and
    (z + 1) 5 = x (SOLVE_A). With blocks, a block of k SHA-256 compressions (SOLVE_C, DEC_H), 64 bits
    packed into its inputs (DEC_A) and rows over a wire and an input solved through A and B; then a
    block of another template: Poseidon, its bits, xor / and, an addmany, a packing."""
    cs = ConstraintSystem(mode)
    x = num.alloc(cs, [int(rng.integers(1, 1 << 62))])
    num.pack_bits(cs, num.to_bits_le(cs, x))
    xv = Fr.to_ints(x.val)[0]
    cs.enforce(3 * ONE, cs.alloc(xv * pow(3, -1, R) % R), Variable(x.code))
    cs.enforce(cs.alloc((xv * pow(5, -1, R) - 1) % R) + ONE, 5 * ONE, Variable(x.code))
    if not blocks:
        return cs
    vals = [int(v) for v in rng.integers(1, 1 << 60, k)]
    pool = [cs.alloc(v) for v in vals]
    with cs.batch(k) as blk:
        sha256.block_no_padding(blk, boolean.alloc(blk, 512, rng.integers(0, 2, (k, 512)).astype(bool)))
        num.pack_into_inputs(blk, boolean.alloc(blk, 64, rng.integers(0, 2, (k, 64)).astype(bool)))
        u = blk.wire(pool)
        inp = [int(v) for v in rng.integers(1, 1 << 60, k)]
        i1 = blk.alloc_input(inp)
        blk.enforce(blk.alloc([(a * pow(5, -1, R) - v) % R for a, v in zip(inp, vals)]) + u, 5 * ONE, i1)
        blk.enforce(7 * ONE, blk.alloc([(a * pow(7, -1, R) + v) % R for a, v in zip(inp, vals)]) - u, i1)
    with cs.batch(k) as blk:
        a, b = num.alloc(blk, Fr.random(k, rng)), num.alloc(blk, Fr.random(k, rng))
        bits = num.to_bits_le(blk, poseidon_hash(blk, [a, b]))
        words = [bits[32 * j:32 * j + 32] for j in range(3)]
        mixed = boolean.and_(blk, words[0], boolean.xor(blk, words[1], words[2]))
        with uint32.MultiEq(blk) as meq:
            num.pack_bits(blk, uint32.addmany(blk, meq, [mixed, words[0]]))
    return cs


def seeded(pce, program, witnesses: list[np.ndarray]) -> np.ndarray:
    """The (P, ncols, 4) start of the program: the witnesses' inputs and free values, zeros elsewhere."""
    w = np.stack(witnesses)
    block_free = []
    for t, k, _, aux_col, aux_per, *_ in pce.blocks.tolist():
        free = program.free_tpl[program.free_tpl_ptr[t]:program.free_tpl_ptr[t + 1]]
        block_free.append(w[:, aux_col + np.arange(k)[:, None] * aux_per + free[None, :]])
    return wp.seed(pce, program, w[:, :pce.num_inputs], w[:, program.free_plain], block_free)


def compiled(systems: list[ConstraintSystem]):
    """(pce, program, start, want): the first system's circuit and program, the start of all the
    systems' witnesses and what run_cpu makes of it."""
    pce = build(systems[0])
    program = wp.compile_program(pce, wp.hint_matrices(systems[0], pce))
    start = seeded(pce, program, [cs.witness() for cs in systems])
    want = start.copy()
    wp.run_cpu(pce, program, want)
    return pce, program, start, want


@pytest.fixture(scope="module")
def ops():
    """op_circuit for three partitions (one shape, three witnesses), k = 3."""
    seeds = np.random.default_rng(11).integers(1 << 30, size=3)
    return compiled([op_circuit(np.random.default_rng(int(s)), 3, "both" if p == 0 else "witness")
                     for p, s in enumerate(seeds)])


def check(pce, program, start, want, cooperative: bool) -> None:
    got = witness_cuda.run(pce, program, start, cooperative)
    assert got.shape == start.shape and got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)


def test_runs_and_long_steps_first():
    cs, _ = gadget_circuit(np.random.default_rng(13), k=2)
    pce = build(cs)
    program = wp.compile_program(pce, wp.hint_matrices(cs, pce))
    table = witness_cuda.runs(pce, program)
    assert table.tolist() == [[pce.tpl_rows.shape[0] - 1] + [0] * 6] + pce.blocks[:, [0, 1, 3, 4, 5, 6, 7]].tolist()
    steps, heads, long_end = witness_cuda.ordered_steps(pce, program)
    levels = program.levels
    assert (levels[:-1] <= long_end).all() and (long_end <= levels[1:]).all() and (long_end > levels[:-1]).any()
    plain0 = levels[program.prog_levels[-2]]
    for lv, (s0, s1, s2) in enumerate(zip(levels[:-1], long_end, levels[1:])):
        key = lambda a: sorted(map(tuple, a.tolist()))  # noqa: E731
        assert key(steps[s0:s2]) == key(program.steps[s0:s2]), lv
        for part, head, long in ((steps[s0:s1], heads[s0:s1], True), (steps[s1:s2], heads[s1:s2], False)):
            for (op, row, *_), (*first, na, nb, nc) in zip(part.tolist(), head.tolist()):
                mats = (program.hl, program.hr) if op == wp.DEC_H else (pce.a, pce.b, pce.c)
                ptrs = [m.plain_indptr if s0 >= plain0 else m.tpl_indptr for m in mats]
                spans = [(int(p[row]), int(p[row + 1] - p[row])) for p in ptrs] + [(0, 0)] * (3 - len(ptrs))
                assert [(f if n else 0, n) for f, n in spans] == list(zip(first, (na, nb, nc)))
                assert (max(n for _, n in spans) > witness_cuda.LONG_TERMS) == long


def test_the_program_levels_long_rows_as_the_kernel_splits_them():
    """The witness program shares levels among the steps the kernel gives a warp (rows over LONG_TERMS)."""
    assert wp.LONG_ROW == witness_cuda.LONG_TERMS


def test_step_records_hold_each_short_solve_step():
    """step_records: a short SOLVE step's record names its op, inv, unknown term and every other term of
    its rows (stored variable, coefficient id) in row order; every other step's record is 0."""
    cs, _ = gadget_circuit(np.random.default_rng(13), k=2)
    pce = build(cs)
    program = wp.compile_program(pce, wp.hint_matrices(cs, pce))
    steps, heads, _ = witness_cuda.ordered_steps(pce, program)
    records = witness_cuda.step_records(pce, program, steps, heads)
    plain0 = program.levels[program.prog_levels[-2]]
    short = 0
    for s, ((op, row, term, inv), rec) in enumerate(zip(steps.tolist(), records.tolist())):
        mats = (pce.a, pce.b, pce.c)
        side = {wp.SOLVE_C: 2, wp.SOLVE_A: 0, wp.SOLVE_B: 1}.get(op)
        rows = []
        for q, m in enumerate(mats):
            ptr, stored, cids = (m.plain_indptr, m.plain_cols, m.plain_cids) if s >= plain0 else \
                (m.tpl_indptr, m.tpl_vars, m.tpl_cids)
            rows.append([(int(stored[e]), int(cids[e])) for e in range(int(ptr[row]), int(ptr[row + 1]))
                         if not (q == side and e == term)])
            if q == side:
                unknown = int(stored[term])
        if side is None or max(map(len, rows)) > witness_cuda.SHORT_TERMS:
            assert not any(rec), (s, op)
            continue
        short += 1
        n = [len(r) for r in rows]
        assert rec[0] == op | n[0] << 8 | n[1] << 12 | n[2] << 16 | 1 << 24 and rec[1] == inv and rec[2] == unknown
        for q in range(3):
            assert [(rec[3 + 4 * q + j], rec[15 + 4 * q + j]) for j in range(n[q])] == rows[q]
    assert 0 < short < len(steps)


@gpu
@pytest.mark.parametrize("long_terms", [None, 0, 1 << 30], ids=["split", "warps", "threads"])
@pytest.mark.parametrize("cooperative", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("partitions", [1, 3])
def test_every_op_matches_the_cpu(ops, partitions, cooperative, long_terms, monkeypatch):
    pce, program, start, want = ops
    if long_terms is not None:
        monkeypatch.setattr(witness_cuda, "LONG_TERMS", long_terms)
    stats = program.stats()
    assert all(stats[name] > 0 for name in wp.WITNESS_OPS), stats
    assert not np.array_equal(start, want)
    check(pce, program, start[:partitions], want[:partitions], cooperative)
    assert np.array_equal(witness_cuda.run(pce, program, start[0], cooperative), want[0])  # one (ncols, 4) witness


@gpu
@pytest.mark.parametrize("cooperative", MODES, ids=MODE_IDS)
def test_gadget_witness_is_reproduced(cooperative):
    rng = np.random.default_rng(12)
    systems = [gadget_circuit(np.random.default_rng(int(s)), k=4, mode="both" if p == 0 else "witness")[0]
               for p, s in enumerate(rng.integers(1 << 30, size=2))]
    pce, program, start, want = compiled(systems)
    for p, cs in enumerate(systems):
        assert np.array_equal(want[p], cs.witness())
    check(pce, program, start, want, cooperative)
    pce, program, start, want = compiled([op_circuit(rng, 1, blocks=False)])
    assert pce.blocks.shape[0] == 0
    check(pce, program, start, want, cooperative)


WIDE = {"tpl_indptr": np.int64, "tpl_vars": np.int64, "plain_cols": np.int64, "tpl_cids": np.uint32,
        "plain_cids": np.uint32}


@gpu
def test_wide_index_arrays(ops):
    pce, program, start, want = ops
    wide = {m: replace(getattr(pce, m), **{n: getattr(getattr(pce, m), n).astype(t) for n, t in WIDE.items()})
            for m in ("a", "b", "c")}
    wide_pce = replace(pce, **wide, wire_cols=pce.wire_cols.astype(np.int64))
    wide_pce.check()
    hints = {m: replace(getattr(program, m), **{n: getattr(getattr(program, m), n).astype(t) for n, t in WIDE.items()})
             for m in ("hl", "hr")}
    wide_program = replace(program, **hints)
    for m in (wide_pce.a, wide_pce.b, wide_pce.c, wide_program.hl, wide_program.hr):
        assert pce_cuda.widths(wide_pce, m) == 63
    for cooperative in MODES:
        check(wide_pce, wide_program, start, want, cooperative)


@gpu
def test_device_arrays_in_place_and_shared(ops):
    import cupy as cp

    pce, program, start, want = ops
    dev = witness_cuda.upload_program(pce, program, pce_cuda.upload(pce))
    for cooperative in MODES:
        w = cp.asarray(start)
        witness_cuda.run_device(dev, w, 3, cooperative)
        np.testing.assert_array_equal(cp.asnumpy(w), want)
    for bad in (cp.asarray(start[:2]), cp.asarray(start).astype(cp.int64), cp.asarray(start)[:, ::2], start):
        with pytest.raises(InputError):
            witness_cuda.run_device(dev, bad, 3)


@gpu
@pytest.mark.parametrize("cooperative", MODES, ids=MODE_IDS)
def test_a_decomposition_that_does_not_fit_is_an_error(ops, cooperative):
    pce, program, start, _ = ops
    tpl, _, _, aux_col, aux_per, in_col, in_per, *_ = pce.blocks[0].tolist()
    packed = in_col + 2 * in_per  # instance 2's input of 64 packed bits (DEC_A)
    message = aux_col + aux_per + int(program.free_tpl[program.free_tpl_ptr[tpl]])  # instance 1's first SHA bit
    for column in (packed, message):  # an input, and a free value (its sums decomposed by DEC_H)
        w = start.copy()
        w[1, column] = Fr.from_ints([1 << 70])[0]  # partition 1 only
        with pytest.raises(SynthesisError, match="does not fit"):
            witness_cuda.run(pce, program, w, cooperative)
        with pytest.raises(SynthesisError):
            wp.run_cpu(pce, program, w)
