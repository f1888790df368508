"""Constraint-mode replay of gadget calls: record a call once on placeholder inputs, stamp it many times.

A gadget's rows and new variables depend only on which input bits are constants (and their values) and
which are negated, not on which variables the others are. So a call such as one SHA256 compression is
recorded once per such *signature* into a scratch system, and every later call with that signature
allocates the same number of variables in one go and appends the scratch rows with their columns
remapped (ONE, the inputs, the new variables): numpy work instead of re-running the gadget.
Variable and row order are the gadget's own, so the result is exactly what the gadget records.
Only for scopes that record and hold no values; otherwise the gadget runs as usual.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cuzk.errors import SynthesisError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean as B
from cuzk.gadgets import scope as S
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs.lc import AUX, KIND_BITS, KIND_MASK


@dataclass
class Recording:
    """One recorded call: `inputs` placeholder columns, `new` allocated variables, rows of A, B, C as
    (counts, columns, coefficient ids) with column 0 = ONE, 1..inputs = the inputs' variable bits in
    order, then the new variables; `coeffs` the integer coefficients by id; outputs as (column or -1
    for a constant, neg) per output bit."""

    inputs: int
    new: int
    mats: tuple
    coeffs: np.ndarray
    out_cols: np.ndarray
    out_neg: np.ndarray


_CACHE: dict[tuple, Recording] = {}


def _signature(name: str, inputs: list[B.Bits]) -> tuple:
    return (name,) + tuple((b.is_const.tobytes(), b.neg.tobytes()) for b in inputs)


def _record(fn: Callable, inputs: list[B.Bits]) -> Recording:
    scratch = ConstraintSystem("constraints")
    m = int(sum((~b.is_const).sum() for b in inputs))
    codes = scratch.alloc_many(m)
    placeholders, at = [], 0
    for b in inputs:
        var = np.full(len(b), -1, np.int64)
        live = ~b.is_const
        var[live] = codes[at:at + int(live.sum())]
        at += int(live.sum())
        placeholders.append(B.Bits(var, b.neg.copy(), None))
    out = fn(scratch, *placeholders)
    if scratch.num_inputs != 1:
        raise SynthesisError("replayed gadgets may not allocate public inputs")
    csr = scratch.to_csr()
    mats = tuple((np.diff(mat.indptr), mat.indices.astype(np.int64), mat.coeff_ids) for mat in csr)
    const = out.var < 0
    if np.any((out.var[~const] & KIND_MASK) != AUX):
        raise SynthesisError("replayed gadget outputs must be variables of the scope or constants")
    cols = np.where(const, -1, (out.var >> KIND_BITS) + 1)
    table = Fr.to_ints(csr[0].coeffs)
    coeffs = np.empty(len(table), dtype=object)
    coeffs[:] = table
    return Recording(m, scratch.num_aux - m, mats, coeffs, cols, out.neg.copy())


def replay(name: str, fn: Callable, scope, inputs: list[B.Bits]) -> B.Bits:
    """fn(scope, *inputs) -> Bits, recorded once per signature and stamped into a constraint-mode scope
    (a scope with values runs fn directly)."""
    if S.has_values(scope) or not S.records(scope):
        return fn(scope, *inputs)
    key = _signature(name, inputs)
    rec = _CACHE.get(key)
    if rec is None:
        rec = _CACHE[key] = _record(fn, inputs)
    live = np.concatenate([b.var[~b.is_const] for b in inputs])
    new = S.alloc(scope, rec.new, None, trusted=True)
    colmap = np.concatenate([np.zeros(1, np.int64), live, new])
    ids = scope.intern(rec.coeffs)
    scope.enforce_interned(*[(counts, colmap[cols], ids[cids]) for counts, cols, cids in rec.mats])
    var = np.where(rec.out_cols < 0, -1, colmap[np.maximum(rec.out_cols, 0)])
    return B.Bits(var, rec.out_neg.copy(), None)
