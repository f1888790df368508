"""Poseidon constants exactly as neptune derives them (Filecoin's Poseidon over BLS12-381 Fr).

Width t = arity + 1, x^5 S-box, 8 full rounds and 55/56/57/57 partial rounds for arity 2/4/8/11
(neptune's round_numbers with its security margin); round constants from the Grain LFSR
(round_constants.rs); MDS = Cauchy 1/(x_i + y_j), x_i = i, y_j = t + j (mds.rs); and the optimised
form used by the static hash and the legacy circuit: compressed round constants (preprocessing.rs)
and the pre-sparse / sparse matrix factorisation of the MDS for the partial rounds.
All in Python ints, computed once per arity.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from cuzk.errors import InputError
from cuzk.ff.limbs import FR_MODULUS

R = FR_MODULUS
FIELD_BITS = 255
FULL_ROUNDS = 8
PARTIAL_ROUNDS = {2: 55, 4: 56, 8: 57, 11: 57}

Matrix = list[list[int]]


def _inv(x: int) -> int:
    return pow(x, R - 2, R)


def round_constants(t: int, rf: int, rp: int) -> list[int]:
    """(rf + rp) * t constants from neptune's Grain LFSR (field 1 = GF(p), S-box 1 = x^5)."""
    init = 0
    for nbits, value in ((2, 1), (4, 1), (12, FIELD_BITS), (12, t), (10, rf), (10, rp), (30, 2**30 - 1)):
        init = (init << nbits) | value
    state = [(init >> (79 - i)) & 1 for i in range(80)]  # bit 0 first

    def step() -> int:
        new = state[62] ^ state[51] ^ state[38] ^ state[23] ^ state[13] ^ state[0]
        del state[0]
        state.append(new)
        return new

    for _ in range(160):
        step()

    def bit() -> int:  # the self-shrinking output: keep the second bit of a pair whose first is 1
        while not step():
            step()
        return step()

    out = []
    while len(out) < (rf + rp) * t:
        v = 0
        for _ in range(FIELD_BITS):  # big-endian: 7 bits, then 31 whole bytes
            v = (v << 1) | bit()
        if v < R:
            out.append(v)
    return out


def mds(t: int) -> Matrix:
    return [[_inv(i + t + j) for j in range(t)] for i in range(t)]


def mat_mul(a: Matrix, b: Matrix) -> Matrix:
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) % R for j in range(len(b[0]))] for i in range(len(a))]


def invert(m: Matrix) -> Matrix:
    """Inverse by Gauss-Jordan elimination (the inverse is unique, so any method gives neptune's)."""
    n = len(m)
    a = [row[:] + [int(i == j) for j in range(n)] for i, row in enumerate(m)]
    for col in range(n):
        piv = next(r for r in range(col, n) if a[r][col])
        a[col], a[piv] = a[piv], a[col]
        inv = _inv(a[col][col])
        a[col] = [x * inv % R for x in a[col]]
        for r in range(n):
            if r != col and a[r][col]:
                f = a[r][col]
                a[r] = [(x - f * y) % R for x, y in zip(a[r], a[col])]
    return [row[n:] for row in a]


def left_apply(m: Matrix, v: list[int]) -> list[int]:
    return [sum(x * y for x, y in zip(row, v)) % R for row in m]


def transpose(m: Matrix) -> Matrix:
    return [list(col) for col in zip(*m)]


def minor00(m: Matrix) -> Matrix:
    return [row[1:] for row in m[1:]]


def _prime_double_prime(m: Matrix) -> tuple[Matrix, Matrix]:
    """neptune's m' (1 at [0][0], m's lower-right block) and m'' (sparse: row 0 of m, w_hat, identity)."""
    t = len(m)
    hat_inv = invert(minor00(m))
    w = [m[i][0] for i in range(1, t)]
    w_hat = left_apply(hat_inv, w)
    prime = [[int(j == 0) for j in range(t)]] + [[0] + m[i][1:] for i in range(1, t)]
    dprime = [[m[0][0]] + m[0][1:]] + [[w_hat[i - 1]] + [int(j == i) for j in range(1, t)] for i in range(1, t)]
    return prime, dprime


def sparse_factors(m: Matrix, rp: int) -> tuple[Matrix, list[tuple[list[int], list[int]]]]:
    """factor_to_sparse_matrixes(transpose(m), rp): the pre-sparse matrix and rp (w_hat, v_rest) pairs."""
    base = transpose(m)
    cur, sparse = base, []
    for _ in range(rp):
        prime, dprime = _prime_double_prime(cur)
        sparse.append(dprime)
        cur = mat_mul(base, prime)
    sparse.reverse()
    return cur, [([row[0] for row in s], s[0][1:]) for s in sparse]


def compress_round_constants(t: int, rf: int, rp: int, rc: list[int], m_inv: Matrix) -> list[int]:
    """neptune's preprocessing.rs with every partial round preprocessed."""
    keys = lambda r: rc[r * t:(r + 1) * t]  # noqa: E731
    half = rf // 2
    res = list(keys(0))
    for i in range(half - 1):
        res += left_apply(m_inv, keys(i + 1))
    final = half + rp
    acc, partial = list(keys(final)), []
    for i in range(rp):
        inv = left_apply(m_inv, acc)
        partial.append(inv[0])
        inv[0] = 0
        acc = [(x + y) % R for x, y in zip(keys(final - i - 1), inv)]
    res += left_apply(m_inv, acc)
    res += partial[::-1]
    for i in range(1, half):
        res += left_apply(m_inv, keys(i + final))
    return res


@dataclass(frozen=True)
class PoseidonConstants:
    arity: int
    width: int
    full_rounds: int
    partial_rounds: int
    domain_tag: int
    round_constants: list[int]
    mds: Matrix
    compressed: list[int]
    pre_sparse: Matrix
    sparse: list[tuple[list[int], list[int]]]  # per partial round: (w_hat, v_rest)


@lru_cache(maxsize=None)
def constants(arity: int) -> PoseidonConstants:
    """Filecoin's Merkle-tree Poseidon constants for arity 2, 4, 8 or 11 (domain tag 2^arity - 1)."""
    if arity not in PARTIAL_ROUNDS:
        raise InputError(f"Poseidon arity must be one of {sorted(PARTIAL_ROUNDS)}, got {arity}")
    t, rp = arity + 1, PARTIAL_ROUNDS[arity]
    rc = round_constants(t, FULL_ROUNDS, rp)
    m = mds(t)
    pre, sparse = sparse_factors(m, rp)
    return PoseidonConstants(arity, t, FULL_ROUNDS, rp, 2**arity - 1, rc, m,
                             compress_round_constants(t, FULL_ROUNDS, rp, rc, invert(m)), pre, sparse)
