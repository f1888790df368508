"""SHA256 as bellperson's gadget (gadgets/sha256.rs): the compression function and padded hashing.

The round structure (deferred additions for a and e, MultiEq packing of the sums, the ch / maj
Boolean optimisations, constants folded away) is bellperson's, so the row and variable order and the
counts agree: 25,840 rows for one block on 512 allocated bits, 44,874 for a padded 512-bit message.
"""
from __future__ import annotations

from cuzk.errors import InputError
from cuzk.gadgets import boolean as B
from cuzk.gadgets import uint32 as U
from cuzk.hashes.sha256 import IV, ROUND_CONSTANTS


def _k(bits: B.Bits) -> int | None:
    return None if bits.val is None else bits.val.shape[0]


def iv(k: int | None) -> list[B.Bits]:
    return [U.constant(v, k) for v in IV]


def _sigma(scope, x: B.Bits, r1: int, r2: int, third: B.Bits) -> B.Bits:
    s = B.xor(scope, U.rotr(x, r1), U.rotr(x, r2))
    return B.xor(scope, s, third)


def compression(scope, block: B.Bits, state: list[B.Bits]) -> list[B.Bits]:
    """sha256_compression_function: 512 input bits (big-endian words) and 8 state words -> 8 words."""
    if len(block) != 512 or len(state) != 8:
        raise InputError(f"compression takes 512 bits and 8 words, got {len(block)} bits and {len(state)} words")
    k = _k(block)
    w = [U.from_bits_be(block[32 * i:32 * (i + 1)]) for i in range(16)]
    with U.MultiEq(scope) as meq:
        for i in range(16, 64):
            s0 = _sigma(scope, w[i - 15], 7, 18, U.shr(w[i - 15], 3))
            s1 = _sigma(scope, w[i - 2], 17, 19, U.shr(w[i - 2], 10))
            w.append(U.addmany(scope, meq, [w[i - 16], s0, w[i - 7], s1]))

        def compute(x):  # bellperson's Maybe: a deferred sum, or a concrete word
            return U.addmany(scope, meq, x) if isinstance(x, list) else x

        a, b, c, d, e, f, g, h = state
        for i in range(64):
            new_e = compute(e)
            s1 = _sigma(scope, new_e, 6, 11, U.rotr(new_e, 25))
            ch = B.sha256_ch(scope, new_e, f, g)
            temp1 = [h, s1, ch, U.constant(ROUND_CONSTANTS[i], k), w[i]]
            new_a = compute(a)
            s0 = _sigma(scope, new_a, 2, 13, U.rotr(new_a, 22))
            maj = B.sha256_maj(scope, new_a, b, c)
            h, g, f = g, f, new_e
            e = temp1 + [d]
            d, c, b = c, b, new_a
            a = temp1 + [s0, maj]
        out = [U.addmany(scope, meq, a + [state[0]])]
        out += [U.addmany(scope, meq, [state[j], x]) for j, x in ((1, b), (2, c), (3, d))]
        out.append(U.addmany(scope, meq, e + [state[4]]))
        out += [U.addmany(scope, meq, [state[j], x]) for j, x in ((5, f), (6, g), (7, h))]
    return out


def block_no_padding(scope, block: B.Bits) -> B.Bits:
    """sha256_block_no_padding: one compression from the IV, output as 256 big-endian bits."""
    return B.concat([U.into_bits_be(x) for x in compression(scope, block, iv(_k(block)))])


def padding(nbits: int, k: int | None) -> B.Bits:
    """SHA256 padding of an nbits-long message: a one, zeros, the 64-bit big-endian length."""
    zeros = (-(nbits + 1 + 64)) % 512
    return B.constant([True] + [False] * zeros + [(nbits >> i) & 1 == 1 for i in range(63, -1, -1)], k)


def sha256(scope, message: B.Bits) -> B.Bits:
    """bellperson's sha256: pad a whole-byte message, compress block by block; 256 big-endian bits out."""
    if len(message) % 8:
        raise InputError(f"sha256 hashes whole bytes, got {len(message)} bits")
    padded = B.concat([message, padding(len(message), _k(message))])
    cur = iv(_k(message))
    for i in range(len(padded) // 512):
        cur = compression(scope, padded[512 * i:512 * (i + 1)], cur)
    return B.concat([U.into_bits_be(x) for x in cur])
