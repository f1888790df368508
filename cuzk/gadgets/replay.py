"""Constraint-mode replay of gadget calls: record a call once on placeholder inputs, stamp it many times.

A gadget's rows and new variables depend only on which input bits are constants (and their values) and
which are negated, not on which variables the others are. So a call such as one SHA256 compression is
recorded once per such *signature* into a scratch system, and every later call with that signature
allocates the same number of variables in one go and appends the scratch rows with their columns
remapped (ONE, the inputs, the new variables): numpy work instead of re-running the gadget.
Variable and row order are the gadget's own, so the result is exactly what the gadget records.
Only scopes with `replay` set (constraints mode, `ConstraintSystem(..., replay=True)`) replay; any
other scope runs the gadget as usual.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cuzk.errors import SynthesisError
from cuzk.ff.fields import Fr
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.scope import alloc_codes
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs.lc import columns


@dataclass
class Recording:
    """One recorded call: `new` allocated variables; rows of A, B, C as (counts, columns, coefficient
    ids) with column 0 = ONE, then the inputs' variable bits in order, then the new variables;
    `coeffs` the integer coefficients by id; `hints` the hint rows (lhs, rhs) in the same form;
    outputs as (column or -1 for a constant, neg) per bit."""

    new: int
    mats: tuple
    hints: tuple
    coeffs: np.ndarray
    out_cols: np.ndarray
    out_neg: np.ndarray


_CACHE: dict[tuple, Recording] = {}


def _signature(name: str, inputs: list[Bits]) -> tuple:
    return (name,) + tuple((b.is_const.tobytes(), b.neg.tobytes()) for b in inputs)


def _record(fn: Callable, inputs: list[Bits]) -> Recording:
    scratch = ConstraintSystem("constraints")  # replay off: fn runs as written
    m = int(sum((~b.is_const).sum() for b in inputs))
    codes = scratch.alloc_many(m)
    placeholders, at = [], 0
    for b in inputs:
        var = np.full(len(b), -1, np.int64)
        live = ~b.is_const
        var[live] = codes[at:at + int(live.sum())]
        at += int(live.sum())
        placeholders.append(Bits(var, b.neg.copy(), None))
    out = fn(scratch, *placeholders)
    if scratch.num_inputs != 1:
        raise SynthesisError("replayed gadgets may not allocate public inputs")
    hints = tuple((counts, columns(codes, scratch.num_inputs), cids)
                  for counts, codes, cids in (rows.arrays() for rows in scratch.hint_recording()))
    csr = scratch.to_csr()  # after the hints: their coefficients are in its table too
    mats = tuple((np.diff(mat.indptr), mat.indices.astype(np.int64), mat.coeff_ids) for mat in csr)
    const = out.var < 0
    cols = np.where(const, -1, columns(out.var, scratch.num_inputs))
    if np.any(cols[~const] < 0):
        raise SynthesisError("replayed gadget outputs must be variables of the scope or constants")
    table = Fr.to_ints(csr[0].coeffs)
    coeffs = np.empty(len(table), dtype=object)
    coeffs[:] = table
    return Recording(scratch.num_aux - m, mats, hints, coeffs, cols, out.neg.copy())


def replay(name: str, fn: Callable[..., Bits], scope, inputs: list[Bits]) -> Bits:
    """fn(scope, *inputs), recorded once per signature under `name` and stamped into a scope with
    `replay` set (any other scope runs fn directly)."""
    if not scope.replay:
        return fn(scope, *inputs)
    key = _signature(name, inputs)
    rec = _CACHE.get(key)
    if rec is None:
        rec = _CACHE[key] = _record(fn, inputs)
    live = np.concatenate([b.var[~b.is_const] for b in inputs])
    new = alloc_codes(scope, rec.new, None, trusted=True)
    colmap = np.concatenate([np.zeros(1, np.int64), live, new])
    ids = scope.intern(rec.coeffs)
    scope.enforce_interned(*[(counts, colmap[cols], ids[cids]) for counts, cols, cids in rec.mats])
    scope.hint_interned(*[(counts, colmap[cols], ids[cids]) for counts, cols, cids in rec.hints])
    var = np.where(rec.out_cols < 0, -1, colmap[np.maximum(rec.out_cols, 0)])
    return Bits(var, rec.out_neg.copy(), None)
