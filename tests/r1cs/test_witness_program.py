"""The witness program (cuzk.r1cs.witness_program) against the gadgets' own witness: hints recorded
alike with and without replay and holding on the witness; on circuits of every gadget the program,
started from the inputs and the free values alone, reproduces the whole witness; the free values are
exactly the external data; a decomposition that cannot fit its value is a typed error."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk.errors import InputError, SynthesisError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, merkle, num, sha256
from cuzk.gadgets.merkle import Level
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs import witness_program as wp
from cuzk.r1cs.lc import columns
from cuzk.r1cs.pce import build

R = Fr.modulus


def _fr(rng: np.random.Generator, shape) -> np.ndarray:
    return Fr.from_ints([int(x) % R for x in rng.integers(0, 2**62, int(np.prod(shape)), dtype=np.int64)]
                        ).reshape(*shape, 4)


def gadget_circuit(rng: np.random.Generator, k: int = 3, mode: str = "both") -> tuple[ConstraintSystem, int]:
    """A circuit of every gadget the PoRep circuit uses: top level a number, its bits and an input; a
    block of k instances with a SHA256 compression on allocated bits, packing, Poseidon, a Merkle path
    over Poseidon (arity 8) and one over SHA256 (arity 2), its index bits packed into inputs. Returns
    the system and the number of free values per instance (what the gadgets allocate from outside)."""
    cs = ConstraintSystem(mode)
    has = mode != "constraints"
    val = lambda x: x if has else None  # noqa: E731
    x = num.alloc(cs, val([int(rng.integers(1, 2**60))]))
    num.inputize(cs, x)
    xbits = num.to_bits_le(cs, x)
    with cs.batch(k) as blk:
        bits = boolean.alloc(blk, 512, val(rng.integers(0, 2, (k, 512)).astype(bool)))
        state = boolean.alloc(blk, 256, val(rng.integers(0, 2, (k, 256)).astype(bool)))
        words = sha256.compression(blk, boolean.xor(blk, bits, boolean.concat([xbits, xbits[:1]] * 2)),
                                   [state[32 * i:32 * i + 32] for i in range(8)])
        packed = num.pack_bits(blk, boolean.concat(words)[:200])
        column = num.alloc_many(blk, 1, val(_fr(rng, (k, 1))))
        leaf = poseidon_hash(blk, [packed] + column)
        levels = [Level(8, val(rng.integers(0, 8, k)), val(_fr(rng, (k, 7)))),
                  Level(2, val(rng.integers(0, 2, k)), val(_fr(rng, (k, 1))))]
        root, bits1 = merkle.root_from_path(blk, leaf, levels[:1], "poseidon")
        top, bits2 = merkle.root_from_path(blk, root, levels[1:], "sha256")
        num.pack_into_inputs(blk, boolean.concat([bits1, bits2]))
        num.to_bits_le(blk, top)
    return cs, 512 + 256 + 1 + 7 + 1


def _seeded(cs: ConstraintSystem, pce, program) -> np.ndarray:
    w = cs.witness()
    ni = pce.num_inputs
    blk = pce.blocks[0]
    cols = blk[3] + np.arange(blk[1])[:, None] * blk[4] + program.free_tpl[None, :]
    return wp.seed(pce, program, w[None, :ni], w[None, program.free_plain], [w[cols][None]])


def _compiled(cs: ConstraintSystem):
    pce = build(cs)
    return pce, wp.compile_program(pce, wp.hint_matrices(cs, pce))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_program_reproduces_the_witness(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cs, free_per_instance = gadget_circuit(rng, k=int(rng.integers(1, 5)))
    pce, program = _compiled(cs)
    assert program.num_free == (0, free_per_instance)  # x comes from its public input
    w = _seeded(cs, pce, program)
    assert not np.array_equal(w[0], cs.witness())
    wp.run_cpu(pce, program, w)
    assert np.array_equal(w[0], cs.witness())
    stats = program.stats()
    assert stats["steps"] == int(program.levels[-1]) and stats["dec_h"] > 0 and stats["dec_c"] > 0


def test_partitions_at_once_and_round_trip() -> None:
    rng = np.random.default_rng(9)
    systems = []
    for _ in range(3):  # one shape, three witnesses
        systems.append(gadget_circuit(np.random.default_rng(int(rng.integers(1 << 30))), k=2)[0])
    pce, program = _compiled(systems[0])
    again = wp.WitnessProgram.from_arrays(program.to_arrays())
    w = np.concatenate([_seeded(cs, pce, again) for cs in systems])
    wp.run_cpu(pce, again, w)
    for p, cs in enumerate(systems):
        assert np.array_equal(w[p], cs.witness())
    arrays = program.to_arrays()
    arrays.pop("levels")
    with pytest.raises(InputError, match="missing"):
        wp.WitnessProgram.from_arrays(arrays)


def test_hints_hold_and_replay_records_the_same() -> None:
    rng = np.random.default_rng(4)
    cs = ConstraintSystem("both")
    with cs.batch(2) as blk:
        bits = boolean.alloc(blk, 512, rng.integers(0, 2, (2, 512)).astype(bool))
        sha256.sha256(blk, bits[:448])
    w = Fr.to_ints(cs.witness())
    coeffs = cs._coeffs.values
    hl, hr = (rows.arrays() for rows in cs.hint_recording())
    assert cs.num_hints == hl[0].shape[0] > 0
    ends = np.cumsum(hl[0]), np.cumsum(hr[0])
    for h in range(cs.num_hints):
        sides = []
        for (counts, codes, cids), end in zip((hl, hr), ends):
            lo = end[h] - counts[h]
            cols = columns(codes[lo:end[h]], cs.num_inputs)
            sides.append(sum(coeffs[c] * w[col] for c, col in zip(cids[lo:end[h]], cols)) % R)
        assert sides[0] == sides[1]
    replayed = ConstraintSystem("constraints", replay=True)
    with replayed.batch(2) as blk:
        sha256.sha256(blk, boolean.alloc(blk, 512)[:448])
    plain = ConstraintSystem("constraints")
    with plain.batch(2) as blk:
        sha256.sha256(blk, boolean.alloc(blk, 512)[:448])
    for a, b in zip(replayed.hint_recording(), plain.hint_recording()):
        (ca, xa, ia), (cb, xb, ib) = a.arrays(), b.arrays()
        assert np.array_equal(ca, cb) and np.array_equal(xa, xb)
        assert [replayed._coeffs.values[i] for i in ia] == [plain._coeffs.values[i] for i in ib]


def test_a_decomposition_that_does_not_fit_is_an_error() -> None:
    rng = np.random.default_rng(5)
    cs, _ = gadget_circuit(rng, k=2)
    pce, program = _compiled(cs)
    w = _seeded(cs, pce, program)
    w[0, pce.blocks[0, 5]] = Fr.from_ints([2**70])[0]  # instance 0's packed path index: 4 bits, not 71
    with pytest.raises(SynthesisError, match="do not fit"):
        wp.run_cpu(pce, program, w)


def test_bad_shapes_are_refused() -> None:
    cs, _ = gadget_circuit(np.random.default_rng(6), k=2)
    pce, program = _compiled(cs)
    with pytest.raises(InputError):
        wp.run_cpu(pce, program, np.zeros((1, 3, 4), np.uint64))
    with pytest.raises(InputError):
        wp.seed(pce, program, np.zeros((1, pce.num_inputs, 4), np.uint64), np.zeros((1, 0, 4), np.uint64), [])


def test_several_blocks_and_plain_rows_between() -> None:
    rng = np.random.default_rng(12)
    cs = ConstraintSystem("both")
    for k in (2, 3, 2):  # blocks of one template, plain allocations between them
        with cs.batch(k) as blk:
            bits = boolean.alloc(blk, 512, rng.integers(0, 2, (k, 512)).astype(bool))
            state = boolean.alloc(blk, 256, rng.integers(0, 2, (k, 256)).astype(bool))
            sha256.compression(blk, bits, [state[32 * i:32 * i + 32] for i in range(8)])
        boolean.alloc(cs, 3, rng.integers(0, 2, (1, 3)).astype(bool))
    pce, program = _compiled(cs)
    assert list(pce.blocks[:, 0]) == [0, 0, 0] and program.free_plain.shape == (9,)
    w = cs.witness()
    free = []
    for blk in pce.blocks:
        cols = blk[3] + np.arange(blk[1])[:, None] * blk[4] + program.free_tpl[None, :]
        free.append(w[cols][None])
    seeded = wp.seed(pce, program, w[None, :pce.num_inputs], w[None, program.free_plain], free)
    wp.run_cpu(pce, program, seeded)
    assert np.array_equal(seeded[0], w)


def _step_vars(pce, program, s: int, plain: bool) -> tuple[set[int], set[int]]:
    """(variables step s reads, variables it writes): template-local aux indices, or in the plain
    program columns past the inputs; a SOLVE writes its unknown term, a decomposition its targets."""
    op, row, term = (int(v) for v in program.steps[s, :3])
    mats = (program.hl, program.hr) if op == wp.DEC_H else (pce.a, pce.b, pce.c)
    unknown_side = {wp.SOLVE_C: 2, wp.SOLVE_A: 0, wp.SOLVE_B: 1}.get(op)
    dec_side = {wp.DEC_A: 0, wp.DEC_C: 2, wp.DEC_H: 1}.get(op)
    reads, writes = set(), set()
    for q, m in enumerate(mats):
        ptr, stored, cids = (m.plain_indptr, m.plain_cols, m.plain_cids) if plain else (m.tpl_indptr, m.tpl_vars, m.tpl_cids)
        for e in range(int(ptr[row]), int(ptr[row + 1])):
            v = int(stored[e])
            key = (v if v >= pce.num_inputs else None) if plain else (v >> 2 if v & 3 == 1 else None)
            if key is None:
                continue
            target = (q == unknown_side and e == term) or (q == dec_side and program.coeff_log2[cids[e]] >= 0)
            (writes if target else reads).add(key)
    return reads, writes


@pytest.mark.parametrize("seed", [4, 5])
def test_each_level_reads_only_what_earlier_levels_wrote(seed: int) -> None:
    """Run level by level, every step finds each variable it reads written by an earlier level (or
    free): the levels (as the solver's steps are re-levelled, long steps sharing levels) keep every
    dependency, which a GPU running a level's steps at once relies on."""
    cs, _ = gadget_circuit(np.random.default_rng(seed), k=2)
    pce, program = _compiled(cs)
    ntpl = program.prog_levels.shape[0] - 2
    for t in range(ntpl + 1):
        plain = t == ntpl
        known = set(program.free_plain.tolist()) if plain else \
            set(program.free_tpl[program.free_tpl_ptr[t]:program.free_tpl_ptr[t + 1]].tolist())
        for level in range(int(program.prog_levels[t]), int(program.prog_levels[t + 1])):
            written = set()
            for s in range(int(program.levels[level]), int(program.levels[level + 1])):
                reads, writes = _step_vars(pce, program, s, plain)
                assert reads <= known, (t, level, s, sorted(reads - known)[:5])
                written |= writes
            known |= written
