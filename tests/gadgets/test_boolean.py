"""Bulk Booleans, UInt32 and AllocatedNum gadgets: every Is / Not / Constant combination per bit."""
import itertools

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, num, uint32
from cuzk.r1cs import ConstraintSystem

KINDS = ("is", "not", "true", "false")


def operands(cs, kinds, k, rng):
    """Bits whose bit i has kind kinds[i]; allocated bits get random values for k instances."""
    n = len(kinds)
    alloc = boolean.alloc(cs, n, rng.integers(0, 2, (k, n)).astype(bool))
    var = np.where([c in ("is", "not") for c in kinds], alloc.var, -1)
    neg = np.array([c in ("not", "true") for c in kinds])
    val = np.where(var >= 0, alloc.val ^ neg, neg)
    return boolean.Bits(var, neg, val)


def rows_expected(op, kinds):
    """Rows bellperson records per bit (boolean.rs case tables)."""
    const = [c in ("true", "false") for c in kinds]
    if op == "xor":
        return 0 if any(const) else 1
    if op == "and":
        return 0 if any(const) else 1
    nconst = sum(const)
    if nconst == 0:
        return 1 if op == "ch" else 2
    if nconst >= 2:
        return 0
    a, b, c = kinds
    if op == "ch" and a in ("true",):
        return 1  # a = true falls through to the general ch row
    if op == "ch" and a == "false":
        return 0
    return 1  # one constant among the others: an and / nor / and_not


@pytest.mark.parametrize("op", ["xor", "and", "ch", "maj"])
def test_truth_tables(op, rng):
    arity = 2 if op in ("xor", "and") else 3
    combos = list(itertools.product(KINDS, repeat=arity))
    for _ in range(3):
        _truth_table(op, arity, combos, rng)


def _truth_table(op, arity, combos, rng):
    k = 1
    cs = ConstraintSystem("both")
    ops = [operands(cs, [c[j] for c in combos], k, rng) for j in range(arity)]
    before = cs.num_constraints
    fn = {"xor": boolean.xor, "and": boolean.and_, "ch": boolean.sha256_ch, "maj": boolean.sha256_maj}[op]
    out = fn(cs, *ops)
    v = [o.val for o in ops]
    expect = {"xor": lambda: v[0] ^ v[1], "and": lambda: v[0] & v[1],
              "ch": lambda: (v[0] & v[1]) ^ (~v[0] & v[2]),
              "maj": lambda: (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2])}[op]()
    np.testing.assert_array_equal(out.val, expect)
    assert cs.num_constraints - before == sum(rows_expected(op, c) for c in combos)
    # the handles agree with the assignment: a constant is its value, a variable xor Not is the value
    w = Fr.to_ints(cs.witness())
    for i in range(len(combos)):
        if out.var[i] < 0:
            assert (out.val[:, i] == out.neg[i]).all()
        else:
            assert w[cs.num_inputs + (int(out.var[i]) >> 3)] == int(out.val[0, i] ^ out.neg[i])
    assert cs.is_satisfied()


def test_uint32_addmany_and_rotations(rng):
    k = 6
    words = rng.integers(0, 2**32, (5, k), dtype=np.uint64)
    cs = ConstraintSystem("witness")
    with cs.batch(k) as blk:
        ws = [boolean.alloc(blk, 32, ((w[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool))
              for w in words[:4]]
        const = uint32.constant(int(words[4, 0]), k)
        with uint32.MultiEq(blk) as meq:
            total = uint32.addmany(blk, meq, ws + [const])
        assert len(total) == 32
        np.testing.assert_array_equal(uint32.values(total), (words[:4].sum(0) + words[4, 0]) % 2**32)
        np.testing.assert_array_equal(uint32.values(uint32.rotr(ws[0], 7)),
                                      ((words[0] >> 7) | (words[0] << 25)) % 2**32)
        np.testing.assert_array_equal(uint32.values(uint32.shr(ws[0], 3)), words[0] >> 3)
    with pytest.raises(InputError):
        uint32.addmany(ConstraintSystem("constraints"), None, [uint32.constant(1, None)])


def test_multieq_packs_rows(rng):
    """Seven 35-bit sums share one MultiEq row (7 * 35 = 245 < 254); the eighth opens a new row."""
    cs = ConstraintSystem("both")
    words = [boolean.alloc(cs, 32, rng.integers(0, 2, (1, 32)).astype(bool)) for _ in range(5)]
    with uint32.MultiEq(cs) as meq:
        for _ in range(8):
            uint32.addmany(cs, meq, words)
        assert meq.bits_used == 35
    assert cs.num_constraints == 5 * 32 + 8 * 35 + 2
    assert cs.is_satisfied()


def test_num_bits_packing_and_selection(rng):
    k = 4
    vals = Fr.random(2 * k, rng).reshape(k, 2, 4)
    cond = rng.integers(0, 2, (k, 1)).astype(bool)
    cs = ConstraintSystem("both")
    with cs.batch(k) as blk:
        a, b = num.alloc_many(blk, 2, vals)
        bits = num.to_bits_le(blk, a)
        packed = num.pack_bits(blk, bits)
        c = boolean.alloc(blk, 1, cond)
        picked = num.pick(blk, c, a, b)
        x, y = num.conditionally_reverse(blk, a, b, c)
        num.inputize(blk, picked)
    ints = [Fr.to_ints(vals[:, j]) for j in range(2)]
    assert Fr.to_ints(packed.val) == [v % 2**254 for v in ints[0]]
    np.testing.assert_array_equal(bits.val, [[(v >> i) & 1 for i in range(255)] for v in ints[0]])
    sel = cond[:, 0]
    assert Fr.to_ints(picked.val) == [p if s else q for p, q, s in zip(*ints, sel)]
    assert Fr.to_ints(x.val) == [q if s else p for p, q, s in zip(*ints, sel)]
    assert Fr.to_ints(y.val) == [p if s else q for p, q, s in zip(*ints, sel)]
    assert cs.num_constraints == k * (255 + 1 + 1 + 1 + 1 + 2 + 1)
    assert cs.is_satisfied()


def test_bytes_and_bit_orders(rng):
    data = rng.integers(0, 256, (3, 5), dtype=np.uint8)
    le, be = boolean.bytes_to_bits_le(data), boolean.bytes_to_bits_be(data)
    assert le[0, 0] == data[0, 0] & 1 and be[0, 0] == data[0, 0] >> 7
    np.testing.assert_array_equal(boolean.bits_to_bytes_be(be), data)
    bits = boolean.constant(le[0], 1)
    np.testing.assert_array_equal(boolean.reverse_bit_numbering(bits).val, be[:1])
