"""The ChaCha block function (D. J. Bernstein; RFC 8439 section 2.3 state layout: 4 constant words,
8 key words, a 32-bit block counter, 3 nonce words), with any even number of rounds.

`block` / `keystream` (Python ints) serve random access into a stream: synthetic PoRep challenges
(ChaCha20, RustCrypto `chacha20` with a seek) and the DRG parents of a few nodes (ChaCha8). With a
zero nonce and a counter below 2**32 the layout equals rand_chacha's ChaCha8Rng (64-bit counter in
words 12-13, stream id in 14-15). `block_words` is the same block in numba over a prepared 16-word
state, for the SDR graph's parent kernel.
"""
from __future__ import annotations

import struct

import numpy as np
from numba import njit

from cuzk.errors import InputError

SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)  # "expand 32-byte k"
_COLUMNS_THEN_DIAGONALS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))
_M32 = np.uint64(0xFFFFFFFF)


def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


def block(key: bytes, nonce: bytes, counter: int, rounds: int = 20) -> bytes:
    """One 64-byte keystream block: ChaCha with `rounds` rounds, 32-byte key, 12-byte nonce."""
    if len(key) != 32 or len(nonce) != 12 or rounds < 2 or rounds % 2:
        raise InputError("ChaCha takes a 32-byte key, a 12-byte nonce and an even number of rounds")
    init = [*SIGMA, *struct.unpack("<8I", key), counter & 0xFFFFFFFF, *struct.unpack("<3I", nonce)]
    x = list(init)
    for _ in range(rounds // 2):
        for a, b, c, d in _COLUMNS_THEN_DIAGONALS:
            x[a] = (x[a] + x[b]) & 0xFFFFFFFF
            x[d] = _rotl(x[d] ^ x[a], 16)
            x[c] = (x[c] + x[d]) & 0xFFFFFFFF
            x[b] = _rotl(x[b] ^ x[c], 12)
            x[a] = (x[a] + x[b]) & 0xFFFFFFFF
            x[d] = _rotl(x[d] ^ x[a], 8)
            x[c] = (x[c] + x[d]) & 0xFFFFFFFF
            x[b] = _rotl(x[b] ^ x[c], 7)
    return struct.pack("<16I", *((v + w) & 0xFFFFFFFF for v, w in zip(x, init)))


def keystream(key: bytes, nonce: bytes, offset: int, length: int, rounds: int = 20) -> bytes:
    """`length` keystream bytes starting at byte `offset` (a seek, as RustCrypto's try_seek)."""
    first, last = offset // 64, (offset + length + 63) // 64
    stream = b"".join(block(key, nonce, b, rounds) for b in range(first, last))
    return stream[offset - 64 * first: offset - 64 * first + length]


@njit(cache=True)
def _rotl32(x, n):
    return ((x << n) | (x >> (np.uint64(32) - n))) & _M32


@njit(cache=True)
def _quarter_round(a, b, c, d):
    a = (a + b) & _M32
    d = _rotl32(d ^ a, np.uint64(16))
    c = (c + d) & _M32
    b = _rotl32(b ^ c, np.uint64(12))
    a = (a + b) & _M32
    d = _rotl32(d ^ a, np.uint64(8))
    c = (c + d) & _M32
    b = _rotl32(b ^ c, np.uint64(7))
    return a, b, c, d


@njit(cache=True)
def block_words(init, out, off, rounds):
    """ChaCha with `rounds` rounds on the 16-word state `init` (uint64 holding u32: SIGMA, key,
    counter, nonce); writes the 16 output words to out[off:off + 16]."""
    x0, x1, x2, x3, x4, x5, x6, x7 = init[0], init[1], init[2], init[3], init[4], init[5], init[6], init[7]
    x8, x9, x10, x11, x12, x13, x14, x15 = (
        init[8], init[9], init[10], init[11], init[12], init[13], init[14], init[15])
    for _ in range(rounds // 2):
        x0, x4, x8, x12 = _quarter_round(x0, x4, x8, x12)
        x1, x5, x9, x13 = _quarter_round(x1, x5, x9, x13)
        x2, x6, x10, x14 = _quarter_round(x2, x6, x10, x14)
        x3, x7, x11, x15 = _quarter_round(x3, x7, x11, x15)
        x0, x5, x10, x15 = _quarter_round(x0, x5, x10, x15)
        x1, x6, x11, x12 = _quarter_round(x1, x6, x11, x12)
        x2, x7, x8, x13 = _quarter_round(x2, x7, x8, x13)
        x3, x4, x9, x14 = _quarter_round(x3, x4, x9, x14)
    res = (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15)
    for i in range(16):
        out[off + i] = (res[i] + init[i]) & _M32
