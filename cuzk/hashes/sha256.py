"""SHA-256 (FIPS 180-4): its constants, a numba compression function over big-endian u32 words, and
a batch hash of equal-length messages.

The constants are shared by the SHA256 circuit gadget (cuzk.gadgets.sha256). `compress` is the
kernel the SDR labelling runs (cuzk.porep.labels); `sha256_many` pads and hashes many messages with
it in parallel (tree_d nodes, cuzk.porep.trees). Scalars stay np.uint32 (each sum truncated) so LLVM
emits 32-bit adds and rotates (rorx).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from cuzk.errors import InputError

ROUND_CONSTANTS = (
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
)
IV = (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)

_K = np.array(ROUND_CONSTANTS, dtype=np.uint32)
IV_WORDS = np.array(IV, dtype=np.uint32)


@njit(cache=True, inline="always")  # scalar-only helpers: inlined, or every round pays calls
def _rotr(x, n):
    return np.uint32((x >> np.uint32(n)) | (x << np.uint32(32 - n)))


@njit(cache=True, inline="always")
def _round(a, b, c, d, e, f, g, h, kw):
    """One SHA256 round; returns the new (d, h), the other six words just change roles."""
    t1 = np.uint32(h + (_rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)) + (g ^ (e & (f ^ g))) + kw)
    t2 = np.uint32((_rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)) + ((a & b) | (c & (a | b))))
    return np.uint32(d + t1), np.uint32(t1 + t2)


@njit(cache=True)
def compress(state, w):
    """SHA256 compression of the 16 message words in w[:16] (uint32, room for 64) into state (8 uint32)."""
    for t in range(16, 64):
        x, y = w[t - 15], w[t - 2]
        s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ np.uint32(x >> np.uint32(3))
        s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ np.uint32(y >> np.uint32(10))
        w[t] = np.uint32(w[t - 16] + s0 + w[t - 7] + s1)
    a, b, c, d, e, f, g, h = state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7]
    for t in range(0, 64, 8):
        d, h = _round(a, b, c, d, e, f, g, h, np.uint32(_K[t] + w[t]))
        c, g = _round(h, a, b, c, d, e, f, g, np.uint32(_K[t + 1] + w[t + 1]))
        b, f = _round(g, h, a, b, c, d, e, f, np.uint32(_K[t + 2] + w[t + 2]))
        a, e = _round(f, g, h, a, b, c, d, e, np.uint32(_K[t + 3] + w[t + 3]))
        h, d = _round(e, f, g, h, a, b, c, d, np.uint32(_K[t + 4] + w[t + 4]))
        g, c = _round(d, e, f, g, h, a, b, c, np.uint32(_K[t + 5] + w[t + 5]))
        f, b = _round(c, d, e, f, g, h, a, b, np.uint32(_K[t + 6] + w[t + 6]))
        e, a = _round(b, c, d, e, f, g, h, a, np.uint32(_K[t + 7] + w[t + 7]))
    state[0] = np.uint32(state[0] + a)
    state[1] = np.uint32(state[1] + b)
    state[2] = np.uint32(state[2] + c)
    state[3] = np.uint32(state[3] + d)
    state[4] = np.uint32(state[4] + e)
    state[5] = np.uint32(state[5] + f)
    state[6] = np.uint32(state[6] + g)
    state[7] = np.uint32(state[7] + h)


@njit(cache=True, parallel=True)
def _hash_blocks(blocks, out):
    """out[i] <- the final state after compressing blocks[i] (nblocks * 16 padded BE words) from the IV."""
    per = blocks.shape[1] // 16
    for i in prange(blocks.shape[0]):
        w = np.empty(64, np.uint32)
        state = IV_WORDS.copy()
        for b in range(per):
            w[:16] = blocks[i, 16 * b:16 * b + 16]
            compress(state, w)
        out[i] = state


def sha256_many(messages: np.ndarray) -> np.ndarray:
    """SHA256 of each row of an (m, length) uint8 array of equal-length messages -> (m, 32) uint8."""
    msgs = np.asarray(messages)
    if msgs.dtype != np.uint8 or msgs.ndim != 2:
        raise InputError(f"sha256_many takes an (m, length) uint8 array, got {msgs.dtype} {msgs.shape}")
    m, length = msgs.shape
    padded_len = -(-(length + 9) // 64) * 64  # message, 0x80, zeros, u64 BE bit length
    padded = np.zeros((m, padded_len), np.uint8)
    padded[:, :length] = msgs
    padded[:, length] = 0x80
    padded[:, -8:] = np.frombuffer((8 * length).to_bytes(8, "big"), np.uint8)
    words = padded.view(">u4").astype(np.uint32)
    out = np.empty((m, 8), np.uint32)
    _hash_blocks(words, out)
    return out.astype(">u4").view(np.uint8).reshape(m, 32)
