"""Allocated field elements in bulk (bellperson's AllocatedNum), bit decomposition and packing.

A `Num` is one variable for K instances: `code` and `val` ((K, 4) Montgomery Fr, None in constraint
mode). The gadgets follow bellpepper's num.rs / multipack.rs and rust-fil-proofs' insertion.rs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.ff import limbs
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean as B
from cuzk.gadgets import scope as S

NUM_BITS = 255
CAPACITY = 254
_ONE = (np.array([[S.ONE_CODE]]), np.array([[1]]))


@dataclass
class Num:
    code: int
    val: np.ndarray | None


def _vals(scope, values) -> np.ndarray | None:
    if not S.has_values(scope):
        return None
    if values is None:
        raise InputError("witness mode: give the values")
    if not (isinstance(values, np.ndarray) and values.dtype == np.uint64):
        values = Fr.from_ints([int(v) for v in np.asarray(values, dtype=object).reshape(-1)])
    return values.reshape(S.instances(scope), 4)


def alloc(scope, values=None) -> Num:
    """AllocatedNum::alloc: values (K, 4) Montgomery Fr, or K ints; None in constraint mode."""
    v = _vals(scope, values)
    return Num(int(S.alloc(scope, 1, None if v is None else v[:, None, :])[0]), v)


def alloc_many(scope, n: int, values=None) -> list[Num]:
    """n AllocatedNums at once; values (K, n, 4)."""
    codes = S.alloc(scope, n, values if S.has_values(scope) else None)
    return [Num(int(c), None if values is None or not S.has_values(scope) else values[:, j]) for j, c in enumerate(codes)]


def alloc_input(scope, values=None) -> Num:
    v = _vals(scope, values)
    return Num(int(S.alloc(scope, 1, None if v is None else v[:, None, :], inputs=True)[0]), v)


def wire(batch, source) -> Num:
    """A Num of a batch block taken from outside it: a list of K enclosing-scope Nums (instance i uses
    source[i]), or a Num of a closed sibling block with the same K (Batch.wire)."""
    from cuzk.r1cs import Variable

    if isinstance(source, Num):
        v = batch.wire(Variable(source.code, source.val))
    else:
        v = batch.wire([x.code for x in source])
    return Num(v.code, v.value)


def _row(scope, a, b, c) -> None:
    if S.records(scope):
        S.enforce(scope, a, b, c, 1)
    else:
        S.enforce(scope, None, None, None, 1)


def _terms(*pairs) -> tuple[np.ndarray, np.ndarray]:
    """A one-row small-coefficient LC from (code, coeff) pairs."""
    return S.lc_sum(*[(np.array([code]), np.array([c])) for code, c in pairs])


def inputize(scope, num: Num) -> Num:
    """AllocatedNum::inputize: a public input equal to num (input * 1 = num)."""
    inp = alloc_input(scope, num.val)
    _row(scope, _terms((inp.code, 1)), _ONE, _terms((num.code, 1)))
    return inp


def enforce_equal(scope, a: Num, b: Num) -> None:
    """constraint::equal: a * 1 = b."""
    _row(scope, _terms((a.code, 1)), _ONE, _terms((b.code, 1)))


# ---------------------------------------------------------------- bits
def canonical(val: np.ndarray) -> np.ndarray:
    """(K, 4) canonical uint64 limbs of Montgomery values."""
    out = np.empty_like(val)
    limbs.fr_from_mont_arr(np.ascontiguousarray(val), out)
    return out


def from_canonical(words: np.ndarray) -> np.ndarray:
    out = np.empty_like(words)
    limbs.fr_to_mont_arr(np.ascontiguousarray(words), out)
    return out


def to_bits_le(scope, num: Num) -> B.Bits:
    """AllocatedNum::to_bits_le: 255 allocated bits, least significant first, and the unpacking row."""
    vals = None
    if num.val is not None:
        raw = canonical(num.val).view(np.uint8)
        vals = np.unpackbits(raw, axis=1, bitorder="little")[:, :NUM_BITS].astype(bool)
    bits = B.alloc(scope, NUM_BITS, vals)
    if S.records(scope):
        terms = {code: 1 << i for i, code in enumerate(bits.var.tolist())}
        terms[num.code] = terms.get(num.code, 0) - 1
        S.enforce(scope, None, None, S.single_row(terms), 1)
    else:
        S.enforce(scope, None, None, None, 1)
    return bits


def _pack_values(bits: B.Bits) -> np.ndarray:
    """(K, 4) Montgomery value of sum 2^i bit_i (at most 254 bits)."""
    k, n = bits.val.shape
    padded = np.zeros((k, 256), np.uint8)
    padded[:, :n] = bits.val
    words = np.packbits(padded, axis=1, bitorder="little").view(np.uint64).reshape(k, 4)
    return from_canonical(words)


def _pack_terms(bits: B.Bits) -> dict[int, int]:
    codes, coeffs = bits.lc(1)
    terms: dict[int, int] = {}
    for i in range(len(bits)):
        for code, c in zip(codes[i].tolist(), coeffs[i].tolist()):
            if c:
                terms[code] = terms.get(code, 0) + c * (1 << i)
    return terms


def pack_bits(scope, bits: B.Bits) -> Num:
    """multipack::pack_bits: the first 254 bits as one number (num * 1 = packed)."""
    bits = bits[:CAPACITY]
    out = alloc(scope, None if bits.val is None else _pack_values(bits))
    if S.records(scope):
        S.enforce(scope, S.single_row(_pack_terms(bits)), _ONE, _terms((out.code, 1)), 1)
    else:
        S.enforce(scope, None, None, None, 1)
    return out


def pack_into_inputs(scope, bits: B.Bits) -> list[Num]:
    """multipack::pack_into_inputs: public inputs of 254 bits each, each with its packing row."""
    out = []
    for start in range(0, len(bits), CAPACITY):
        chunk = bits[start:start + CAPACITY]
        inp = alloc_input(scope, None if chunk.val is None else _pack_values(chunk))
        if S.records(scope):
            S.enforce(scope, S.single_row(_pack_terms(chunk)), _ONE, _terms((inp.code, 1)), 1)
        else:
            S.enforce(scope, None, None, None, 1)
        out.append(inp)
    return out


# ---------------------------------------------------------------- selection
def _select(cond: B.Bits, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per instance: a where cond's value is true, else b."""
    return np.where(cond.val[:, :1], a, b)


def pick(scope, cond: B.Bits, a: Num, b: Num) -> Num:
    """insertion::pick: c = cond ? a : b with (b - a) * cond = b - c."""
    out = alloc(scope, None if a.val is None else _select(cond, a.val, b.val))
    if S.records(scope):
        _row(scope, _terms((b.code, 1), (a.code, -1)), cond[0].lc(), _terms((b.code, 1), (out.code, -1)))
    else:
        _row(scope, None, None, None)
    return out


def conditionally_reverse(scope, a: Num, b: Num, cond: B.Bits) -> tuple[Num, Num]:
    """AllocatedNum::conditionally_reverse: (a, b), swapped when cond is true."""
    c = alloc(scope, None if a.val is None else _select(cond, b.val, a.val))
    if S.records(scope):
        _row(scope, _terms((a.code, 1), (b.code, -1)), cond[0].lc(), _terms((a.code, 1), (c.code, -1)))
    else:
        _row(scope, None, None, None)
    d = alloc(scope, None if a.val is None else _select(cond, a.val, b.val))
    if S.records(scope):
        _row(scope, _terms((b.code, 1), (a.code, -1)), cond[0].lc(), _terms((b.code, 1), (d.code, -1)))
    else:
        _row(scope, None, None, None)
    return c, d
