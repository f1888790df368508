"""32-bit words as bellperson's UInt32 (32 Booleans, least significant first), and MultiEq packing.

A word is a `Bits` of length 32. xor / ch / maj are the bitwise Boolean gadgets; `addmany` adds up to
10 words modulo 2^32 by allocating the sum's bits and handing the equality to a `MultiEq`, which packs
several equalities into one row (bellperson's gadgets/multieq.rs).
"""
from __future__ import annotations

import numpy as np

from collections.abc import Callable

from cuzk.errors import InputError
from cuzk.gadgets import boolean
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.scope import CAPACITY, ONE_SPEC, enforce, single_row

WORD = 32
_POW = np.uint64(1) << np.arange(WORD, dtype=np.uint64)


def constant(value: int, k: int | None) -> Bits:
    return boolean.constant([(value >> i) & 1 for i in range(WORD)], k)


def from_bits_be(bits: Bits) -> Bits:
    if len(bits) != WORD:
        raise InputError(f"a word needs 32 bits, got {len(bits)}")
    return bits.reversed()


def into_bits_be(word: Bits) -> Bits:
    return word.reversed()


def rotr(word: Bits, by: int) -> Bits:
    return word[(np.arange(WORD) + by) % WORD]


def shr(word: Bits, by: int) -> Bits:
    fill = boolean.constant([False] * by, None if word.val is None else word.val.shape[0])
    return boolean.concat([word[by:], fill])


def values(word: Bits) -> np.ndarray:
    """(K,) uint64 value of a word in witness mode."""
    return word.val.astype(np.uint64) @ _POW[:len(word)]


def constant_value(word: Bits) -> int:
    return sum(1 << i for i, b in enumerate(word.neg) if b)


class MultiEq:
    """Packs equalities lhs == rhs of few bits into rows lhs' * 1 = rhs' (bellperson's MultiEq).
Each equality is also recorded unpacked as a hint (`scope.hint`).

    Use as a context manager (or call close()): the pending row is recorded on close, as on Drop.
    """

    def __init__(self, scope) -> None:
        self.scope = scope
        self.bits_used = 0
        self.lhs: dict[int, int] = {}
        self.rhs: dict[int, int] = {}

    def __enter__(self) -> MultiEq:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _accumulate(self) -> None:
        lhs, rhs = self.lhs, self.rhs
        enforce(self.scope, 1, lambda: (single_row(lhs), ONE_SPEC, single_row(rhs)))
        self.lhs, self.rhs, self.bits_used = {}, {}, 0

    def enforce_equal(self, num_bits: int, sides: Callable[[], tuple[dict[int, int], dict[int, int]]]) -> None:
        """lhs == rhs, both of at most num_bits bits; sides() gives them as {code: coefficient}, called
        only when the scope records."""
        if CAPACITY <= self.bits_used + num_bits:
            self._accumulate()
        if self.bits_used + num_bits >= CAPACITY:
            raise InputError(f"MultiEq: an equality of {num_bits} bits does not fit in one row")
        if self.scope.record:
            shift = 1 << self.bits_used
            lhs, rhs = sides()
            self.scope.hint(lhs, rhs)  # the unpacked equality: what solves rhs's bits in a witness program
            for side, terms in zip((self.lhs, self.rhs), (lhs, rhs)):
                for code, c in terms.items():
                    side[code] = side.get(code, 0) + c * shift
        self.bits_used += num_bits

    def close(self) -> None:
        if self.bits_used > 0:
            self._accumulate()


def _terms(words: list[Bits]) -> dict[int, int]:
    """sum_j 2^j bit_j over all words, as {code: coefficient}."""
    codes, coeffs = [], []
    pow2 = (1 << np.arange(WORD, dtype=np.int64))
    for w in words:
        c, k = w.lc(pow2[:len(w)])
        codes.append(c.reshape(-1))
        coeffs.append(k.reshape(-1))
    codes, coeffs = np.concatenate(codes), np.concatenate(coeffs)
    keep = coeffs != 0
    out: dict[int, int] = {}
    for code, c in zip(codes[keep].tolist(), coeffs[keep].tolist()):
        out[code] = out.get(code, 0) + c
    return out


def addmany(scope, meq: MultiEq, operands: list[Bits]) -> Bits:
    """UInt32::addmany: the sum modulo 2^32 of 2..10 words (result bits allocated, equality via meq)."""
    if not 2 <= len(operands) <= 10:
        raise InputError(f"addmany takes 2 to 10 operands, got {len(operands)}")
    k = None if operands[0].val is None else operands[0].val.shape[0]
    if all(w.is_const.all() for w in operands):
        return constant(sum(constant_value(w) for w in operands) % (1 << WORD), k)
    nbits = (len(operands) * (2**WORD - 1)).bit_length()
    vals = None
    if scope.has_values:
        total = sum(values(w) for w in operands)
        vals = ((total[:, None] >> np.arange(nbits, dtype=np.uint64)) & np.uint64(1)).astype(bool)
    result = boolean.alloc(scope, nbits, vals)
    meq.enforce_equal(nbits, lambda: (_terms(operands), {code: 1 << i for i, code in enumerate(result.var.tolist())}))
    return result[:WORD]
