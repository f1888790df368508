"""Poseidon's legacy (Filecoin) circuit gadget, as neptune's `circuit::poseidon_hash` that
rust-fil-proofs uses: 311 rows for arity 2, 598 for arity 11.

The rows follow neptune's optimised static schedule (compressed round constants, pre-sparse and sparse
matrices; cuzk.hashes.poseidon_constants). Its witness is the trace of the native hash kernel
(cuzk.hashes.poseidon.hash_trace): every S-box input (allocated from its linear combination), l^2,
l^4, l^5, then the output, exactly the circuit's variables in the circuit's order.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from cuzk.errors import InputError
from cuzk.gadgets.num import Num
from cuzk.gadgets.scope import ONE_CODE, alloc_codes, enforce
from cuzk.hashes.poseidon import hash_trace, trace_length
from cuzk.hashes.poseidon_constants import R, constants


def _constraints(codes: list[int], inputs: list[int], arity: int, tag: int | None) -> list[tuple[dict, dict, dict]]:
    """Rows of neptune's legacy circuit; codes: the trace's variables in order, inputs: preimage codes.

    An element is an allocated code (int) or a linear combination {code: coeff} (neptune's Elt::Num).
    """
    c = constants(arity)
    t, crc = c.width, c.compressed
    one = ONE_CODE
    it = iter(codes)
    rows: list[tuple[dict, dict, dict]] = []

    def lc(e) -> dict:
        return {e: 1} if isinstance(e, int) else e

    def scale(e, k: int) -> dict:
        return {code: v * k % R for code, v in lc(e).items()}

    def add(a: dict, b: dict) -> dict:
        out = dict(a)
        for code, v in b.items():
            out[code] = (out.get(code, 0) + v) % R
        return out

    def product(elems, coeffs) -> dict:
        acc: dict = {}
        for e, k in zip(elems, coeffs):
            acc = add(acc, scale(e, k))
        return acc

    def sbox(e, post: int | None) -> int:
        v = next(it)
        rows.append((lc(e), {one: 1}, {v: 1}))  # ensure_allocated
        l2, l4, l5 = next(it), next(it), next(it)
        rows.append(({v: 1}, {v: 1}, {l2: 1}))
        rows.append(({l2: 1}, {l2: 1}, {l4: 1}))
        rows.append(({v: 1}, {l4: 1}, {l5: 1, one: -post % R} if post is not None else {l5: 1}))
        return l5

    def mix(state, mat) -> list:
        return [product(state, [mat[i][j] for i in range(t)]) for j in range(t)]

    # first full round
    x = ((c.domain_tag if tag is None else tag) + crc[0]) % R
    state: list = [{one: (pow(x, 5, R) + crc[t]) % R}]
    for i in range(1, t):
        pre, post = crc[i], crc[t + i]
        l2, l4, l5 = next(it), next(it), next(it)
        e = inputs[i - 1]
        rows.append(({e: 1, one: pre}, {e: 1, one: pre}, {l2: 1}))
        rows.append(({l2: 1}, {l2: 1}, {l4: 1}))
        rows.append(({e: 1, one: pre}, {l4: 1}, {l5: 1, one: -post % R}))
        state.append(l5)
    off = 2 * t
    state = mix(state, c.mds)
    for r in range(1, 4):
        state = [sbox(state[i], crc[off + i]) for i in range(t)]
        off += t
        state = mix(state, c.pre_sparse if r == 3 else c.mds)
    for r in range(c.partial_rounds):
        state[0] = sbox(state[0], crc[off])
        off += 1
        w_hat, v_rest = c.sparse[r]
        first = product(state, w_hat)
        state = [first] + [add(lc(state[j]), scale(state[0], v_rest[j - 1])) for j in range(1, t)]
    for r in range(4):
        last = r == 3
        state = [sbox(state[i], None if last else crc[off + i]) for i in range(t)]
        off += 0 if last else t
        state = mix(state, c.mds)
    out = next(it)
    rows.append((lc(state[1]), {one: 1}, {out: 1}))
    return rows


@lru_cache(maxsize=None)
def _template_rows(arity: int, tag: int | None):
    """The rows over placeholder codes: trace variable j is -2 - j, input i is -1000000 - i."""
    n = trace_length(arity)
    rows = _constraints([-2 - j for j in range(n)], [-1_000_000 - i for i in range(arity)], arity, tag)
    specs = []
    for m in range(3):
        indptr = np.zeros(len(rows) + 1, np.int64)
        codes, coeffs = [], []
        for r, row in enumerate(rows):
            terms = {k: v for k, v in row[m].items() if v % R}
            codes += terms.keys()
            coeffs += terms.values()
            indptr[r + 1] = len(codes)
        obj = np.empty(len(coeffs), dtype=object)
        obj[:] = coeffs
        specs.append((indptr, np.array(codes, np.int64), obj))
    return specs


def poseidon_hash(scope, inputs: list[Num], arity: int | None = None, tag: int | None = None) -> Num:
    """neptune's circuit::poseidon_hash of `arity` allocated numbers; `tag`: the domain tag (default
    the Merkle-tree tag; 2^40 is GenRandomness's, Poseidon_GR), a constant of the first round."""
    arity = len(inputs) if arity is None else arity
    if len(inputs) != arity:
        raise InputError(f"Poseidon-{arity} takes {arity} inputs, got {len(inputs)}")
    n = trace_length(arity)
    trace = hash_trace(np.stack([x.val for x in inputs], axis=1), arity, tag) if scope.has_values else None
    codes = alloc_codes(scope, n, trace, trusted=True)

    def rows():
        specs = []
        in_codes = np.array([x.code for x in inputs], np.int64)
        for indptr, tcodes, coeffs in _template_rows(arity, tag):
            real = tcodes.copy()
            trace_ph = (real <= -2) & (real > -1_000_000)
            real[trace_ph] = codes[-2 - real[trace_ph]]
            in_ph = real <= -1_000_000
            real[in_ph] = in_codes[-1_000_000 - real[in_ph]]
            specs.append((indptr, real, coeffs))
        return specs
    enforce(scope, n, rows)
    return Num(int(codes[-1]), None if trace is None else trace[:, -1])
