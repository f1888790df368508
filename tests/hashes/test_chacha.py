"""ChaCha: RFC 8439's test vectors, random access into the keystream, and the numba block."""
import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.hashes.chacha import SIGMA, block, block_words, keystream

KEY = bytes(range(32))


def test_rfc8439_block():
    """RFC 8439 section 2.3.2: the serialized block for counter 1."""
    nonce = bytes.fromhex("000000090000004a00000000")
    assert block(KEY, nonce, 1).hex() == (
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")


def test_rfc8439_encryption():
    """RFC 8439 section 2.4.2: the first 16 ciphertext bytes (keystream from counter 1)."""
    nonce = bytes.fromhex("000000000000004a00000000")
    plain = b"Ladies and Gentl"
    stream = keystream(KEY, nonce, 64, len(plain))
    assert bytes(p ^ k for p, k in zip(plain, stream)).hex() == "6e2e359a2568f98041ba0728dd0d6981"


def test_keystream_seeks(rng):
    key, nonce = rng.bytes(32), rng.bytes(12)
    whole = b"".join(block(key, nonce, c) for c in range(4))
    for offset, length in [(0, 256), (5, 10), (60, 8), (129, 100)]:
        assert keystream(key, nonce, offset, length) == whole[offset:offset + length]


@pytest.mark.parametrize("rounds", [8, 20])
def test_numba_block_equals_python(rng, rounds):
    key, nonce = rng.bytes(32), rng.bytes(12)
    counter = int(rng.integers(0, 1 << 32))
    init = np.array([*SIGMA, *np.frombuffer(key, "<u4"), counter, *np.frombuffer(nonce, "<u4")], np.uint64)
    out = np.zeros(20, np.uint64)
    block_words(init, out, 3, rounds)
    assert out[3:19].astype("<u4").tobytes() == block(key, nonce, counter, rounds)


def test_bad_input():
    with pytest.raises(InputError):
        block(bytes(31), bytes(12), 0)
    with pytest.raises(InputError):
        block(KEY, bytes(12), 0, rounds=7)
