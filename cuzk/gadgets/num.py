"""Allocated field elements in bulk (bellperson's AllocatedNum), bit decomposition and packing.

A `Num` is one variable for K instances: `code` and `val` ((K, 4) Montgomery Fr, None in constraint
mode). The gadgets follow bellpepper's num.rs / multipack.rs and rust-fil-proofs' insertion.rs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.scope import CAPACITY, ONE_SPEC, alloc_codes, enforce, lc_sum, single_row
from cuzk.r1cs import Variable

NUM_BITS = 255  # Fr::NUM_BITS


@dataclass
class Num:
    code: int
    val: np.ndarray | None


def _vals(scope, values) -> np.ndarray | None:
    if not scope.has_values:
        return None
    if values is None:
        raise InputError("witness mode: give the values")
    if not (isinstance(values, np.ndarray) and values.dtype == np.uint64):
        values = Fr.from_ints([int(v) for v in np.asarray(values, dtype=object).reshape(-1)])
    return values.reshape(scope.total, 4)


def alloc(scope, values=None) -> Num:
    """AllocatedNum::alloc: values (K, 4) Montgomery Fr, or K ints; None in constraint mode."""
    v = _vals(scope, values)
    return Num(int(alloc_codes(scope, 1, None if v is None else v[:, None, :])[0]), v)


def alloc_many(scope, n: int, values=None) -> list[Num]:
    """n AllocatedNums at once; values (K, n, 4)."""
    if not scope.has_values:
        return [Num(int(c), None) for c in alloc_codes(scope, n)]
    return [Num(int(c), values[:, j]) for j, c in enumerate(alloc_codes(scope, n, values))]


def alloc_input(scope, values=None) -> Num:
    v = _vals(scope, values)
    return Num(int(alloc_codes(scope, 1, None if v is None else v[:, None, :], inputs=True)[0]), v)


def wire(batch, source) -> Num:
    """A Num of a batch block taken from outside it: a list of K enclosing-scope Nums (instance i uses
    source[i]), or a Num of a closed sibling block with the same K (Batch.wire)."""
    if isinstance(source, Num):
        v = batch.wire(Variable(source.code, source.val))
    else:
        v = batch.wire([x.code for x in source])
    return Num(v.code, v.value)


def _terms(*pairs) -> tuple[np.ndarray, np.ndarray]:
    """A one-row small-coefficient LC from (code, coeff) pairs."""
    return lc_sum(*[(np.array([code]), np.array([c])) for code, c in pairs])


def _equal(scope, a: int, b: int) -> None:
    """One row a * 1 = b on two variable codes."""
    enforce(scope, 1, lambda: (_terms((a, 1)), ONE_SPEC, _terms((b, 1))))


def inputize(scope, num: Num) -> Num:
    """AllocatedNum::inputize: a public input equal to num (input * 1 = num)."""
    inp = alloc_input(scope, num.val)
    _equal(scope, inp.code, num.code)
    return inp


def enforce_equal(scope, a: Num, b: Num) -> None:
    """constraint::equal: a * 1 = b."""
    _equal(scope, a.code, b.code)


# ---------------------------------------------------------------- bits
def to_bits_le(scope, num: Num) -> Bits:
    """AllocatedNum::to_bits_le: 255 allocated bits, least significant first, and the unpacking row."""
    vals = None
    if num.val is not None:
        raw = Fr.to_canonical_limbs(num.val).view(np.uint8)
        vals = np.unpackbits(raw, axis=1, bitorder="little")[:, :NUM_BITS].astype(bool)
    bits = boolean.alloc(scope, NUM_BITS, vals)

    def rows():
        terms = {code: 1 << i for i, code in enumerate(bits.var.tolist())}
        terms[num.code] = terms.get(num.code, 0) - 1
        return None, None, single_row(terms)
    enforce(scope, 1, rows)
    return bits


def _pack_values(bits: Bits) -> np.ndarray:
    """(K, 4) Montgomery value of sum 2^i bit_i (at most 254 bits)."""
    k, n = bits.val.shape
    padded = np.zeros((k, 256), np.uint8)
    padded[:, :n] = bits.val
    words = np.packbits(padded, axis=1, bitorder="little").view(np.uint64).reshape(k, 4)
    return Fr.from_canonical_limbs(words)


def _pack_terms(bits: Bits) -> dict[int, int]:
    codes, coeffs = bits.lc(1)
    terms: dict[int, int] = {}
    for i in range(len(bits)):
        for code, c in zip(codes[i].tolist(), coeffs[i].tolist()):
            if c:
                terms[code] = terms.get(code, 0) + c * (1 << i)
    return terms


def pack_bits(scope, bits: Bits) -> Num:
    """multipack::pack_bits: the first 254 bits as one number (num * 1 = packed)."""
    bits = bits[:CAPACITY]
    out = alloc(scope, None if bits.val is None else _pack_values(bits))
    enforce(scope, 1, lambda: (single_row(_pack_terms(bits)), ONE_SPEC, _terms((out.code, 1))))
    return out


def pack_into_inputs(scope, bits: Bits) -> list[Num]:
    """multipack::pack_into_inputs: public inputs of 254 bits each, each with its packing row."""
    out = []
    for start in range(0, len(bits), CAPACITY):
        chunk = bits[start:start + CAPACITY]
        inp = alloc_input(scope, None if chunk.val is None else _pack_values(chunk))
        enforce(scope, 1, lambda: (single_row(_pack_terms(chunk)), ONE_SPEC, _terms((inp.code, 1))))
        out.append(inp)
    return out


# ---------------------------------------------------------------- selection
def _select(cond: Bits, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per instance: a where cond's value is true, else b."""
    return np.where(cond.val[:, :1], a, b)


def _selection(scope, cond: Bits, x: Num, y: Num, out: Num) -> None:
    """One row (x - y) * cond = x - out: out = cond ? y : x."""
    enforce(scope, 1, lambda: (_terms((x.code, 1), (y.code, -1)), cond[0].lc(), _terms((x.code, 1), (out.code, -1))))


def pick(scope, cond: Bits, a: Num, b: Num) -> Num:
    """insertion::pick: c = cond ? a : b with (b - a) * cond = b - c."""
    out = alloc(scope, None if a.val is None else _select(cond, a.val, b.val))
    _selection(scope, cond, b, a, out)
    return out


def conditionally_reverse(scope, a: Num, b: Num, cond: Bits) -> tuple[Num, Num]:
    """AllocatedNum::conditionally_reverse: (a, b), swapped when cond is true."""
    c = alloc(scope, None if a.val is None else _select(cond, b.val, a.val))
    _selection(scope, cond, a, b, c)
    d = alloc(scope, None if a.val is None else _select(cond, a.val, b.val))
    _selection(scope, cond, b, a, d)
    return c, d
