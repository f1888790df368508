"""Poseidon as neptune computes it over BLS12-381 Fr (Filecoin's Merkle-tree hash), natively.

`hash_many` hashes n preimages at once with a numba kernel over Montgomery limb arrays, using neptune's
optimised static schedule (compressed round constants, pre-sparse and sparse matrices; neptune
`poseidon.rs` hash_optimized_static), which gives the same output as the plain permutation
(`hash_reference`, Python ints; HashMode::Correct). `hash_trace` also returns every S-box input
(from the second round on), l^2, l^4, l^5 and the output: the aux variables of neptune's legacy circuit
`circuit::poseidon_hash`, in its order, which the gadget (cuzk.gadgets.poseidon) allocates as its witness.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit, prange

from cuzk.errors import InputError
from cuzk.ff import limbs
from cuzk.ff.fields import Fr
from cuzk.hashes.poseidon_constants import R, constants, left_apply


def hash_reference(inputs: list[int], arity: int, tag: int | None = None) -> int:
    """The plain permutation in Python ints (neptune's HashMode::Correct); output state[1]. `tag`:
    the domain tag in state[0] (default the Merkle-tree tag; 2^40 is GenRandomness's, Poseidon_GR)."""
    c = constants(arity)
    if len(inputs) != arity:
        raise InputError(f"Poseidon-{arity} takes {arity} inputs, got {len(inputs)}")
    t, half = c.width, c.full_rounds // 2
    state = [c.domain_tag if tag is None else tag % R] + [int(x) % R for x in inputs]
    for r in range(c.full_rounds + c.partial_rounds):
        state = [(x + k) % R for x, k in zip(state, c.round_constants[r * t:(r + 1) * t])]
        if r < half or r >= half + c.partial_rounds:
            state = [pow(x, 5, R) for x in state]
        else:
            state[0] = pow(state[0], 5, R)
        state = left_apply(c.mds, state)
    return state[1]


def trace_length(arity: int) -> int:
    """Variables (and rows) of one circuit hash: 3 per input S-box of the first round, 4 per later
    S-box, 1 for the output."""
    c = constants(arity)
    return 3 * arity + 4 * ((c.full_rounds - 1) * c.width + c.partial_rounds) + 1


@lru_cache(maxsize=None)
def _tables(arity: int, tag: int | None = None):
    c = constants(arity)
    t = c.width
    mont = lambda xs: Fr.from_ints([x % R for x in xs])  # noqa: E731
    return (mont(c.compressed), mont([x for row in c.mds for x in row]).reshape(t, t, 4),
            mont([x for row in c.pre_sparse for x in row]).reshape(t, t, 4),
            mont([x for w, _ in c.sparse for x in w]).reshape(c.partial_rounds, t, 4),
            mont([x for _, v in c.sparse for x in v]).reshape(c.partial_rounds, t - 1, 4),
            mont([c.domain_tag if tag is None else tag]), c.partial_rounds)


@njit(cache=True)
def _mix(state, mat, tmp):
    """state <- column products with mat: new[j] = sum_i mat[i, j] * state[i]."""
    t = state.shape[0]
    for j in range(t):
        acc = limbs.FR_ZERO
        for i in range(t):
            acc = limbs.fr_add(acc, limbs.fr_mul(limbs.fr_load(mat[i, j]), limbs.fr_load(state[i])))
        limbs.fr_store(tmp[j], acc)
    for j in range(t):
        limbs.fr_store(state[j], limbs.fr_load(tmp[j]))


@njit(cache=True)
def _sbox(state, i, key, use_key, trace, n, pos, record):
    """state[i] <- state[i]^5 (+ key); records the S-box input, l^2, l^4, l^5."""
    v = limbs.fr_load(state[i])
    l2 = limbs.fr_sqr(v)
    l4 = limbs.fr_sqr(l2)
    l5 = limbs.fr_mul(l4, v)
    if use_key:
        l5 = limbs.fr_add(l5, limbs.fr_load(key))
    if record:
        limbs.fr_store(trace[n, pos], v)
        limbs.fr_store(trace[n, pos + 1], l2)
        limbs.fr_store(trace[n, pos + 2], l4)
        limbs.fr_store(trace[n, pos + 3], l5)
    limbs.fr_store(state[i], l5)
    return pos + 4


@njit(parallel=True, cache=True)
def _hash_kernel(inp, out, crc, mds, pre, w_hat, v_rest, tag, rp, trace, record):
    """Hash inp[n] (arity, 4) into out[n]; when record, write the circuit's aux values to trace[n]."""
    count, arity = inp.shape[0], inp.shape[1]
    t = arity + 1
    for n in prange(count):
        state = np.empty((t, 4), np.uint64)
        tmp = np.empty((t, 4), np.uint64)
        pos = 0
        # first full round: pre-add keys crc[0:t], post-add keys crc[t:2t]; the tag's S-box is constant
        x = limbs.fr_add(limbs.fr_load(tag[0]), limbs.fr_load(crc[0]))
        x5 = limbs.fr_mul(limbs.fr_sqr(limbs.fr_sqr(x)), x)
        limbs.fr_store(state[0], limbs.fr_add(x5, limbs.fr_load(crc[t])))
        for i in range(1, t):
            x = limbs.fr_add(limbs.fr_load(inp[n, i - 1]), limbs.fr_load(crc[i]))
            l2 = limbs.fr_sqr(x)
            l4 = limbs.fr_sqr(l2)
            l5 = limbs.fr_add(limbs.fr_mul(l4, x), limbs.fr_load(crc[t + i]))
            if record:
                limbs.fr_store(trace[n, pos], l2)
                limbs.fr_store(trace[n, pos + 1], l4)
                limbs.fr_store(trace[n, pos + 2], l5)
                pos += 3
            limbs.fr_store(state[i], l5)
        off = 2 * t
        _mix(state, mds, tmp)
        for r in range(1, 4):
            for i in range(t):
                pos = _sbox(state, i, crc[off + i], True, trace, n, pos, record)
            off += t
            _mix(state, pre if r == 3 else mds, tmp)
        for r in range(rp):
            pos = _sbox(state, 0, crc[off], True, trace, n, pos, record)
            off += 1
            s0 = limbs.fr_load(state[0])
            acc = limbs.FR_ZERO
            for i in range(t):
                acc = limbs.fr_add(acc, limbs.fr_mul(limbs.fr_load(w_hat[r, i]), limbs.fr_load(state[i])))
            for j in range(1, t):
                vs0 = limbs.fr_mul(limbs.fr_load(v_rest[r, j - 1]), s0)
                limbs.fr_store(state[j], limbs.fr_add(limbs.fr_load(state[j]), vs0))
            limbs.fr_store(state[0], acc)
        for r in range(4):
            last = r == 3
            for i in range(t):
                pos = _sbox(state, i, crc[off + i if not last else 0], not last, trace, n, pos, record)
            if not last:
                off += t
            _mix(state, mds, tmp)
        if record:
            limbs.fr_store(trace[n, pos], limbs.fr_load(state[1]))
        limbs.fr_store(out[n], limbs.fr_load(state[1]))


def _run(inputs: np.ndarray, arity: int, record: bool, tag: int | None) -> tuple[np.ndarray, np.ndarray]:
    if not (isinstance(inputs, np.ndarray) and inputs.dtype == np.uint64 and inputs.ndim == 3
            and inputs.shape[1:] == (arity, 4)):
        raise InputError(f"Poseidon-{arity} inputs must be an (n, {arity}, 4) uint64 Montgomery Fr array, "
                         f"got {getattr(inputs, 'dtype', type(inputs).__name__)} {getattr(inputs, 'shape', '')}")
    crc, mds, pre, w_hat, v_rest, tag_fr, rp = _tables(arity, tag)
    n = inputs.shape[0]
    out = np.empty((n, 4), np.uint64)
    trace = np.empty((n, trace_length(arity) if record else 0, 4), np.uint64)
    _hash_kernel(np.ascontiguousarray(inputs), out, crc, mds, pre, w_hat, v_rest, tag_fr, rp, trace, record)
    return out, trace


def hash_many(inputs: np.ndarray, arity: int, tag: int | None = None) -> np.ndarray:
    """Poseidon of n preimages: (n, arity, 4) Montgomery Fr -> (n, 4); `tag` as hash_reference's
    (default Filecoin's Merkle-tree tag)."""
    return _run(inputs, arity, False, tag)[0]


def hash_trace(inputs: np.ndarray, arity: int, tag: int | None = None) -> np.ndarray:
    """(n, trace_length(arity), 4): the circuit's aux values of each hash, the output last."""
    return _run(inputs, arity, True, tag)[1]


def hash_ints(rows: list[list[int]], arity: int) -> list[int]:
    """Convenience: Poseidon of integer preimages."""
    flat = Fr.from_ints([int(x) % R for row in rows for x in row]).reshape(len(rows), arity, 4)
    return Fr.to_ints(hash_many(flat, arity))
