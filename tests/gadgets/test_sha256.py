"""SHA256 gadget: bellperson's exact counts, satisfiability, outputs equal to hashlib, and replayed
compressions equal to the gadget's own rows."""
import hashlib

import numpy as np
import pytest

from cuzk.gadgets import boolean, merkle, num, sha256
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.scope import FR_BITS
from cuzk.hashes.sha256 import IV, ROUND_CONSTANTS
from cuzk.r1cs import ConstraintSystem


def digest_bytes(bits: Bits) -> list[bytes]:
    return [row.tobytes() for row in boolean.bits_to_bytes_be(bits.val)]


def compress_python(block: bytes) -> bytes:
    """SHA256 compression of one 64-byte block from the IV (reference, plain Python)."""
    def rotr(x, n):
        return ((x >> n) | (x << (32 - n))) & 0xFFFFFFFF
    w = [int.from_bytes(block[4 * i:4 * i + 4], "big") for i in range(16)]
    for i in range(16, 64):
        s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
        s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
        w.append((w[i - 16] + s0 + w[i - 7] + s1) & 0xFFFFFFFF)
    a, b, c, d, e, f, g, h = IV
    for i in range(64):
        t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + ROUND_CONSTANTS[i] + w[i])
        t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))
        h, g, f, e, d, c, b, a = g, f, e, (d + t1) & 0xFFFFFFFF, c, b, a, (t1 + t2) & 0xFFFFFFFF
    return b"".join(((x + y) & 0xFFFFFFFF).to_bytes(4, "big") for x, y in zip(IV, [a, b, c, d, e, f, g, h]))


def test_compression_counts_and_values(rng):
    """25,840 rows after the 512 bit allocations (bellperson test_full_block), satisfied, correct."""
    cs = ConstraintSystem("both")
    block = rng.integers(0, 256, (1, 64), dtype=np.uint8)
    bits = boolean.alloc(cs, 512, boolean.bytes_to_bits_be(block))
    assert cs.num_constraints == 512
    out = sha256.block_no_padding(cs, bits)
    assert cs.num_constraints - 512 == 25_840
    assert digest_bytes(out) == [compress_python(block[0].tobytes())]
    assert cs.is_satisfied()
    # a flipped output bit of a random xor is caught
    w = cs.witness()
    a, b, c = cs.to_csr()
    row = 512 + int(rng.integers(0, 1000))
    col = int(c.indices[c.indptr[row + 1] - 1])
    flip = not np.array_equal(w[col], FR_BITS[1])
    w[col] = FR_BITS[int(flip)]
    assert cs.first_unsatisfied(w) is not None


def test_full_hash_counts_and_hashlib(rng):
    """44,874 rows for a padded 512-bit message (bellperson test_full_hash); equals hashlib."""
    cs = ConstraintSystem("both")
    msg = rng.integers(0, 256, (1, 64), dtype=np.uint8)
    bits = boolean.alloc(cs, 512, boolean.bytes_to_bits_be(msg))
    out = sha256.sha256(cs, bits)
    assert cs.num_constraints - 512 == 44_874
    assert digest_bytes(out) == [hashlib.sha256(msg[0].tobytes()).digest()]
    assert cs.is_satisfied()


def test_constant_input_needs_no_rows():
    """bellperson test_blank_hash: constant input, no constraints, digest of the empty string."""
    cs = ConstraintSystem("both")
    block = boolean.constant([True] + [False] * 511, 1)
    out = sha256.block_no_padding(cs, block)
    assert cs.num_constraints == 0 and cs.num_aux == 0
    assert digest_bytes(out) == [hashlib.sha256(b"").digest()]


def test_batched_lengths_against_hashlib(rng):
    """K messages at once in a batch block, several lengths (1 to 3 blocks); witness mode only."""
    k = 5
    for nbytes in (0, 3, 55, 56, 100):
        msgs = rng.integers(0, 256, (k, nbytes), dtype=np.uint8)
        cs = ConstraintSystem("witness")
        with cs.batch(k) as blk:
            out = sha256.sha256(blk, boolean.alloc(blk, 8 * nbytes, boolean.bytes_to_bits_be(msgs)))
        assert digest_bytes(out) == [hashlib.sha256(m.tobytes()).digest() for m in msgs]


def test_batch_matches_sequential(rng):
    """A batch of K compressions lays out exactly as K compressions synthesized one after another."""
    k = 2
    blocks = rng.integers(0, 2, (k, 512)).astype(bool)
    seq = ConstraintSystem("both")
    for i in range(k):
        sha256.block_no_padding(seq, boolean.alloc(seq, 512, blocks[i:i + 1]))
    bat = ConstraintSystem("both")
    with bat.batch(k) as blk:
        sha256.block_no_padding(blk, boolean.alloc(blk, 512, blocks))
    assert (seq.num_constraints, seq.num_aux) == (bat.num_constraints, bat.num_aux)
    for m1, m2 in zip(seq.to_csr(), bat.to_csr()):
        np.testing.assert_array_equal(m1.indptr, m2.indptr)
        np.testing.assert_array_equal(m1.indices, m2.indices)
        np.testing.assert_array_equal(m1.values(), m2.values())
    np.testing.assert_array_equal(seq.witness(), bat.witness())
    assert bat.is_satisfied()


def _same_matrices(cs1: ConstraintSystem, cs2: ConstraintSystem) -> None:
    assert cs1.stats() == cs2.stats()
    for m1, m2 in zip(cs1.to_csr(), cs2.to_csr()):
        np.testing.assert_array_equal(m1.indptr, m2.indptr)
        np.testing.assert_array_equal(m1.indices, m2.indices)
        np.testing.assert_array_equal(m1.values(), m2.values())


@pytest.mark.parametrize("const_frac", [0.0, 0.3])
def test_replayed_compression_equals_gadget(rng, const_frac):
    """With `replay` the first call of a signature records it and the second stamps it: both give the
    gadget's own rows, variables and outputs."""
    const = rng.random(512) < const_frac
    neg = np.where(const, rng.random(512) < 0.5, rng.random(512) < 0.2)

    def run(cs):
        outs = []
        for _ in range(2):
            cs.alloc_many(3)  # some variables before the block's
            var = np.full(512, -1, np.int64)
            var[~const] = boolean.alloc(cs, int((~const).sum())).var
            outs.append(boolean.concat(sha256.compression(cs, Bits(var, neg, None), sha256.iv(None))))
        return outs

    direct, replayed = ConstraintSystem("constraints"), ConstraintSystem("constraints", replay=True)
    for out1, out2 in zip(run(direct), run(replayed)):
        assert np.array_equal(out1.var, out2.var) and np.array_equal(out1.neg, out2.neg)
    _same_matrices(direct, replayed)


def test_replayed_tree_node_in_a_batch():
    """sha256_hash_leaves (two compressions per node) inside a batch block, replayed or not."""
    systems = [ConstraintSystem("constraints", replay=flag) for flag in (False, True)]
    for cs in systems:
        with cs.batch(3) as blk:
            merkle.sha256_hash_leaves(blk, [num.alloc(blk), num.alloc(blk)])
    _same_matrices(*systems)


def test_replay_only_in_constraint_mode():
    assert ConstraintSystem("constraints", replay=True).replay
    assert not ConstraintSystem("both", replay=True).replay
    assert not ConstraintSystem("witness", replay=True).replay
    assert not ConstraintSystem("constraints").replay
