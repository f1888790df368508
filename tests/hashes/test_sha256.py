"""Native SHA-256: the numba compression and batch hash against hashlib on random messages."""
import hashlib

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.hashes.sha256 import IV_WORDS, compress, sha256_many


@pytest.mark.parametrize("length", [0, 1, 31, 55, 56, 63, 64, 65, 119, 120, 1248])
def test_sha256_many_equals_hashlib(rng, length):
    msgs = rng.integers(0, 256, (9, length), dtype=np.uint8)
    got = sha256_many(msgs)
    assert got.shape == (9, 32) and got.dtype == np.uint8
    assert [row.tobytes() for row in got] == [hashlib.sha256(m.tobytes()).digest() for m in msgs]


def test_compress_one_block(rng):
    """One compression of a padded 55-byte message from the IV is its SHA-256 digest."""
    msg = rng.integers(0, 256, 55, dtype=np.uint8)
    block = np.concatenate([msg, [0x80], np.frombuffer((55 * 8).to_bytes(8, "big"), np.uint8)]).astype(np.uint8)
    w = np.zeros(64, np.uint32)
    w[:16] = block.view(">u4")
    state = IV_WORDS.copy()
    compress(state, w)
    assert state.astype(">u4").tobytes() == hashlib.sha256(msg.tobytes()).digest()


def test_bad_input():
    with pytest.raises(InputError):
        sha256_many(np.zeros((2, 3), np.int64))
    with pytest.raises(InputError):
        sha256_many(np.zeros(3, np.uint8))
