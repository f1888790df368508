"""SHA256 as bellperson's gadget (gadgets/sha256.rs): the compression function and padded hashing.

The round structure (deferred additions for a and e, MultiEq packing of the sums, the ch / maj
Boolean optimisations, constants folded away) is bellperson's, so the row and variable order and the
counts agree: 25,840 rows for one block on 512 allocated bits, 44,874 for a padded 512-bit message.
In a scope with `replay` set, each compression is recorded once per signature and stamped
(cuzk.gadgets.replay): the same rows, without running the rounds again.
"""
from __future__ import annotations

from cuzk.errors import InputError
from cuzk.gadgets import boolean, uint32
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.replay import replay
from cuzk.hashes.sha256 import IV, ROUND_CONSTANTS


def _k(bits: Bits) -> int | None:
    return None if bits.val is None else bits.val.shape[0]


def iv(k: int | None) -> list[Bits]:
    return [uint32.constant(v, k) for v in IV]


def _sigma(scope, x: Bits, r1: int, r2: int, third: Bits) -> Bits:
    s = boolean.xor(scope, uint32.rotr(x, r1), uint32.rotr(x, r2))
    return boolean.xor(scope, s, third)


def _rounds(scope, block: Bits, state: list[Bits]) -> list[Bits]:
    """The 64 rounds and the final additions of one compression (the gadget itself)."""
    k = _k(block)
    w = [uint32.from_bits_be(block[32 * i:32 * (i + 1)]) for i in range(16)]
    with uint32.MultiEq(scope) as meq:
        for i in range(16, 64):
            s0 = _sigma(scope, w[i - 15], 7, 18, uint32.shr(w[i - 15], 3))
            s1 = _sigma(scope, w[i - 2], 17, 19, uint32.shr(w[i - 2], 10))
            w.append(uint32.addmany(scope, meq, [w[i - 16], s0, w[i - 7], s1]))

        def compute(x):  # bellperson's Maybe: a deferred sum, or a concrete word
            return uint32.addmany(scope, meq, x) if isinstance(x, list) else x

        a, b, c, d, e, f, g, h = state
        for i in range(64):
            new_e = compute(e)
            s1 = _sigma(scope, new_e, 6, 11, uint32.rotr(new_e, 25))
            ch = boolean.sha256_ch(scope, new_e, f, g)
            temp1 = [h, s1, ch, uint32.constant(ROUND_CONSTANTS[i], k), w[i]]
            new_a = compute(a)
            s0 = _sigma(scope, new_a, 2, 13, uint32.rotr(new_a, 22))
            maj = boolean.sha256_maj(scope, new_a, b, c)
            h, g, f = g, f, new_e
            e = temp1 + [d]
            d, c, b = c, b, new_a
            a = temp1 + [s0, maj]
        out = [uint32.addmany(scope, meq, a + [state[0]])]
        out += [uint32.addmany(scope, meq, [state[j], x]) for j, x in ((1, b), (2, c), (3, d))]
        out.append(uint32.addmany(scope, meq, e + [state[4]]))
        out += [uint32.addmany(scope, meq, [state[j], x]) for j, x in ((5, f), (6, g), (7, h))]
    return out


def _rounds_flat(scope, block: Bits, state: Bits) -> Bits:
    """_rounds on a 256-bit state, 256 bits out: the form replay records."""
    return boolean.concat(_rounds(scope, block, [state[32 * i:32 * (i + 1)] for i in range(8)]))


def compression(scope, block: Bits, state: list[Bits]) -> list[Bits]:
    """sha256_compression_function: 512 input bits (big-endian words) and 8 state words -> 8 words."""
    if len(block) != 512 or len(state) != 8:
        raise InputError(f"compression takes 512 bits and 8 words, got {len(block)} bits and {len(state)} words")
    out = replay("sha256_compression", _rounds_flat, scope, [block, boolean.concat(state)])
    return [out[32 * i:32 * (i + 1)] for i in range(8)]


def block_no_padding(scope, block: Bits) -> Bits:
    """sha256_block_no_padding: one compression from the IV, output as 256 big-endian bits."""
    return boolean.concat([uint32.into_bits_be(x) for x in compression(scope, block, iv(_k(block)))])


def padding(nbits: int, k: int | None) -> Bits:
    """SHA256 padding of an nbits-long message: a one, zeros, the 64-bit big-endian length."""
    zeros = (-(nbits + 1 + 64)) % 512
    return boolean.constant([True] + [False] * zeros + [(nbits >> i) & 1 == 1 for i in range(63, -1, -1)], k)


def sha256(scope, message: Bits) -> Bits:
    """bellperson's sha256: pad a whole-byte message, compress block by block; 256 big-endian bits out."""
    if len(message) % 8:
        raise InputError(f"sha256 hashes whole bytes, got {len(message)} bits")
    padded = boolean.concat([message, padding(len(message), _k(message))])
    cur = iv(_k(message))
    for i in range(len(padded) // 512):
        cur = compression(scope, padded[512 * i:512 * (i + 1)], cur)
    return boolean.concat([uint32.into_bits_be(x) for x in cur])
