"""Booleans in bulk, as bellperson's Boolean (Is / Not / Constant) and AllocatedBit, n bits x K instances.

`Bits` holds n booleans: `var` (n,) variable codes (-1 for a constant), `neg` (n,) the Not flag (for a
constant: its value), `val` (K, n) bool values (None in constraint mode). Every operation works on whole
vectors: it decides bellperson's case per bit with numpy masks, allocates the new variables in one call
and records the rows in one call, both in bellperson's order (bit by bit).
"""
from __future__ import annotations

import numpy as np

from cuzk.errors import InputError
from cuzk.gadgets.scope import RowSpecs, alloc_bits, enforce, lc_sum


class Bits:
    """n booleans for K instances (see module docstring)."""

    __slots__ = ("var", "neg", "val")

    def __init__(self, var: np.ndarray, neg: np.ndarray, val: np.ndarray | None) -> None:
        self.var, self.neg, self.val = var, neg, val

    def __len__(self) -> int:
        return self.var.shape[0]

    def __getitem__(self, idx) -> Bits:
        if isinstance(idx, (int, np.integer)):
            idx = [idx]
        return Bits(self.var[idx], self.neg[idx], None if self.val is None else self.val[:, idx])

    @property
    def is_const(self) -> np.ndarray:
        return self.var < 0

    def not_(self) -> Bits:
        return Bits(self.var, ~self.neg, None if self.val is None else ~self.val)

    def reversed(self) -> Bits:
        return self[::-1]

    def lc(self, coeffs=1) -> tuple[np.ndarray, np.ndarray]:
        """Each bit's Boolean::lc(one, coeff) as 2-term rows: (codes (n, 2), coeffs (n, 2))."""
        c = np.broadcast_to(np.asarray(coeffs, dtype=np.int64), self.var.shape)
        const = self.is_const
        codes = np.stack([np.zeros_like(self.var), np.where(const, 0, self.var)], axis=1)
        ks = np.stack([np.where(self.neg, c, 0), np.where(const, 0, np.where(self.neg, -c, c))], axis=1)
        return codes, ks


def constant(bits, k: int | None) -> Bits:
    """Constant bits (a sequence of bools); k instances of values, or None for no values."""
    b = np.asarray(bits, dtype=bool).reshape(-1)
    return Bits(np.full(b.shape, -1, np.int64), b.copy(), None if k is None else np.broadcast_to(b, (k, b.size)).copy())


def concat(parts: list[Bits]) -> Bits:
    vals = None if any(p.val is None for p in parts) else np.concatenate([p.val for p in parts], axis=1)
    return Bits(np.concatenate([p.var for p in parts]), np.concatenate([p.neg for p in parts]), vals)


def alloc(scope, n: int, values: np.ndarray | None = None) -> Bits:
    """AllocatedBit::alloc for n bits: each a new variable with (1 - b) * b = 0. values: (K, n) bools."""
    if scope.has_values:
        if values is None:
            raise InputError("witness mode: give the bit values")
        values = np.asarray(values).astype(bool)
        if values.size != scope.total * n:
            raise InputError(f"alloc of {n} bits needs ({scope.total}, {n}) values, got {values.shape}")
        values = values.reshape(scope.total, n)
    codes = alloc_bits(scope, values, n)
    enforce(scope, n, lambda: (lc_sum((np.zeros(n, np.int64), 1), (codes, -1)),
                               (codes[:, None], np.ones((n, 1), np.int64)), None))
    return Bits(codes, np.zeros(n, bool), values if scope.has_values else None)


def bytes_to_bits_le(data: np.ndarray) -> np.ndarray:
    """(K, nbytes) uint8 -> (K, 8 nbytes) bools, least significant bit of each byte first."""
    return np.unpackbits(np.asarray(data, np.uint8), axis=-1, bitorder="little").astype(bool)


def bytes_to_bits_be(data: np.ndarray) -> np.ndarray:
    """(K, nbytes) uint8 -> (K, 8 nbytes) bools, most significant bit of each byte first."""
    return np.unpackbits(np.asarray(data, np.uint8), axis=-1, bitorder="big").astype(bool)


def bits_to_bytes_be(bits: np.ndarray) -> np.ndarray:
    return np.packbits(np.asarray(bits, dtype=np.uint8), axis=-1, bitorder="big")


def reverse_bit_numbering(bits: Bits) -> Bits:
    """rust-fil-proofs' reverse_bit_numbering: pad with false to whole bytes, reverse bits in each byte."""
    pad = (-len(bits)) % 8
    if pad:
        bits = concat([bits, constant([False] * pad, None if bits.val is None else bits.val.shape[0])])
    idx = np.arange(len(bits)).reshape(-1, 8)[:, ::-1].reshape(-1)
    return bits[idx]


# ---------------------------------------------------------------- one vectorised operation
class _BulkRecorder:
    """Collects the new variables and rows of one bulk operation (several per-bit cases), then
    allocates and records them all at once in bellperson's order, sorted by a per-bit key.

    Variables made here get placeholder codes (-2 - j) until `finish` allocates them.
    """

    def __init__(self, scope) -> None:
        self.scope = scope
        self.record = scope.record
        self.keys: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.rows: list[tuple] = []
        self.count = self.nrows = 0

    def new(self, keys: np.ndarray, vals: np.ndarray | None) -> np.ndarray:
        m = keys.shape[0]
        self.keys.append(keys)
        if vals is not None:
            self.vals.append(vals)
        codes = -2 - np.arange(self.count, self.count + m, dtype=np.int64)
        self.count += m
        return codes

    def row(self, keys: np.ndarray, rows: RowSpecs) -> None:
        """Rows for the items `keys`; rows() gives their (a, b, c) specs, called only when recording."""
        if self.record:
            self.rows.append((keys, *rows()))
        self.nrows += keys.shape[0]

    def finish(self, *outs: Bits) -> None:
        """Allocate, record, and replace placeholders in `outs` (in place)."""
        mapping = np.zeros(0, np.int64)
        if self.count:
            if len(self.keys) == 1:  # one batch of new variables: already in key order
                vals = self.vals[0] if self.vals else None
                mapping = alloc_bits(self.scope, vals, self.count)
            else:
                order = np.argsort(np.concatenate(self.keys), kind="stable")
                vals = np.concatenate(self.vals, axis=1)[:, order] if self.vals else None
                mapping = np.empty(self.count, np.int64)
                mapping[order] = alloc_bits(self.scope, vals, self.count)
            for out in outs:
                ph = out.var <= -2
                out.var = np.where(ph, mapping[np.where(ph, -2 - out.var, 0)], out.var)
        enforce(self.scope, self.nrows, lambda: self._specs(mapping))

    def _specs(self, mapping: np.ndarray) -> list:
        """The recorded rows as (a, b, c) bulk specs in key order, placeholders replaced by `mapping`."""
        keys = np.concatenate([r[0] for r in self.rows])
        n = keys.shape[0]
        order = np.argsort(keys, kind="stable")
        specs = []
        for m in range(3):
            parts = [r[1 + m] for r in self.rows]
            width = max((p[0].shape[1] for p in parts if p is not None), default=0)
            codes = np.zeros((n, width), np.int64)
            coeffs = np.zeros((n, width), np.int64)
            at = 0
            for (k, *_), p in zip(self.rows, parts):
                rows = k.shape[0]
                if p is not None:
                    codes[at:at + rows, :p[0].shape[1]] = p[0]
                    coeffs[at:at + rows, :p[1].shape[1]] = p[1]
                at += rows
            ph = codes <= -2
            if ph.any():
                codes[ph] = mapping[-2 - codes[ph]]
            specs.append((codes[order], coeffs[order]) if width else None)
        return specs


def _and_into(op: _BulkRecorder, keys: np.ndarray, x: Bits, y: Bits) -> Bits:
    """Boolean::and of x and y, bit by bit (keys order the new rows and variables)."""
    xc, yc = x.is_const, y.is_const
    false = (xc & ~x.neg) | (yc & ~y.neg)
    x_true = xc & x.neg  # a true constant y leaves x as the result: no case of its own
    var = np.where(x_true, y.var, x.var)
    neg = np.where(x_true, y.neg, x.neg)
    both = ~xc & ~yc & ~false
    var = np.where(false, -1, var)
    neg = np.where(false, False, neg)
    vals = None if x.val is None else x.val & y.val
    if both.any():
        sel = np.flatnonzero(both)
        new = op.new(keys[sel], None if vals is None else vals[:, sel])
        var[sel], neg[sel] = new, False

        def rows():
            xs, ys = x[sel], y[sel]
            swap = xs.neg & ~ys.neg  # (Not, Is): and_not(is, not) puts the Is operand in A
            first = Bits(np.where(swap, ys.var, xs.var), np.where(swap, ys.neg, xs.neg), None)
            second = Bits(np.where(swap, xs.var, ys.var), np.where(swap, xs.neg, ys.neg), None)
            return first.lc(), second.lc(), (new[:, None], np.ones((sel.size, 1), np.int64))
        op.row(keys[sel], rows)
    return Bits(var, neg, vals)


def and_(scope, x: Bits, y: Bits) -> Bits:
    """Boolean::and, bit by bit."""
    op = _BulkRecorder(scope)
    out = _and_into(op, np.arange(len(x)), x, y)
    op.finish(out)
    return out


def xor(scope, a: Bits, b: Bits) -> Bits:
    """Boolean::xor, bit by bit: one variable and (2a) * b = a + b - c per non-constant pair."""
    op = _BulkRecorder(scope)
    ac, bc = a.is_const, b.is_const
    var = np.where(ac, b.var, a.var)
    neg = a.neg ^ b.neg  # a constant operand passes the other through, negated when it is true
    vals = None if a.val is None else a.val ^ b.val
    both = ~ac & ~bc
    if both.any():
        sel = np.flatnonzero(both)
        under = None if vals is None else vals[:, sel] ^ a.neg[sel] ^ b.neg[sel]
        new = op.new(sel, under)
        var[sel] = new

        def rows():
            swap = a.neg[sel] & ~b.neg[sel]  # (Not a, Is b): AllocatedBit::xor(b, a)
            first = np.where(swap, b.var[sel], a.var[sel])
            second = np.where(swap, a.var[sel], b.var[sel])
            one = np.ones((sel.size, 1), np.int64)
            return (first[:, None], 2 * one), (second[:, None], one), lc_sum((first, 1), (second, 1), (new, -1))
        op.row(sel, rows)
    out = Bits(var, neg, vals)
    op.finish(out)
    return out


def _false(x: Bits) -> np.ndarray:
    return x.is_const & ~x.neg


def _true(x: Bits) -> np.ndarray:
    return x.is_const & x.neg


def _sha_cases(conds: list[np.ndarray], n: int) -> np.ndarray:
    """Index of the first true condition per bit (len(conds) when none holds)."""
    case = np.full(n, len(conds))
    for i in range(len(conds) - 1, -1, -1):
        case = np.where(conds[i], i, case)
    return case


def sha256_ch(scope, a: Bits, b: Bits, c: Bits) -> Bits:
    """Boolean::sha256_ch, bit by bit: (a and b) xor ((not a) and c)."""
    n = len(a)
    op = _BulkRecorder(scope)
    vals = None if a.val is None else (a.val & b.val) ^ (~a.val & c.val)
    allc = a.is_const & b.is_const & c.is_const
    case = _sha_cases([allc, _false(a), _false(b), _false(c), _true(c), _true(b)], n)
    out = Bits(np.full(n, -1, np.int64), np.zeros(n, bool), vals)
    out.neg[case == 0] = ((a.neg & b.neg) ^ (~a.neg & c.neg))[case == 0]
    m = case == 1
    out.var[m], out.neg[m] = c.var[m], c.neg[m]
    keys = np.arange(n)
    for k, (x, y, flip) in {2: (a.not_(), c, False), 3: (a, b, False), 4: (a, b.not_(), True),
                            5: (a.not_(), c.not_(), True)}.items():
        sel = np.flatnonzero(case == k)
        if sel.size:
            r = _and_into(op, keys[sel], x[sel], y[sel])
            out.var[sel], out.neg[sel] = r.var, r.neg ^ flip
    sel = np.flatnonzero(case == 6)
    if sel.size:
        new = op.new(keys[sel], None if vals is None else vals[:, sel])
        out.var[sel], out.neg[sel] = new, False

        def rows():
            bl, cl, al = b[sel].lc(), c[sel].lc(), a[sel].lc()
            return lc_sum(bl, (cl[0], -cl[1])), al, lc_sum((new, 1), (cl[0], -cl[1]))
        op.row(keys[sel], rows)
    op.finish(out)
    return out


def sha256_maj(scope, a: Bits, b: Bits, c: Bits) -> Bits:
    """Boolean::sha256_maj, bit by bit: (a and b) xor (a and c) xor (b and c)."""
    n = len(a)
    op = _BulkRecorder(scope)
    vals = None if a.val is None else (a.val & b.val) ^ (a.val & c.val) ^ (b.val & c.val)
    allc = a.is_const & b.is_const & c.is_const
    case = _sha_cases([allc, _false(a), _false(b), _false(c), _true(c), _true(b), _true(a)], n)
    out = Bits(np.full(n, -1, np.int64), np.zeros(n, bool), vals)
    cst = (a.neg & b.neg) ^ (a.neg & c.neg) ^ (b.neg & c.neg)
    out.neg[case == 0] = cst[case == 0]
    keys = 2 * np.arange(n)
    for k, (x, y, flip) in {1: (b, c, False), 2: (a, c, False), 3: (a, b, False), 4: (a.not_(), b.not_(), True),
                            5: (a.not_(), c.not_(), True), 6: (b.not_(), c.not_(), True)}.items():
        sel = np.flatnonzero(case == k)
        if sel.size:
            r = _and_into(op, keys[sel], x[sel], y[sel])
            out.var[sel], out.neg[sel] = r.var, r.neg ^ flip
    sel = np.flatnonzero(case == 7)
    if sel.size:
        maj = op.new(keys[sel], None if vals is None else vals[:, sel])  # allocated before b and c
        bc = _and_into(op, keys[sel] + 1, b[sel], c[sel])
        out.var[sel], out.neg[sel] = maj, False

        def rows():
            bl, cl = b[sel].lc(), c[sel].lc()
            return (lc_sum((bc.var, 2), (bl[0], -bl[1]), (cl[0], -cl[1])), a[sel].lc(),
                    lc_sum((bc.var, 1), (maj, -1)))
        op.row(keys[sel] + 1, rows)
    op.finish(out)
    return out


def enforce_equal(scope, a: Bits, b: Bits) -> None:
    """Boolean::enforce_equal bit by bit (0 * 0 = a - b); both constant bits must agree."""
    both = a.is_const & b.is_const
    if np.any(both & (a.neg != b.neg)):
        raise InputError("enforce_equal: two constant bits differ (unsatisfiable)")
    sel = np.flatnonzero(~both)

    def rows():
        al, bl = a[sel].lc(), b[sel].lc()
        return None, None, lc_sum(al, (bl[0], -bl[1]))
    enforce(scope, sel.size, rows)
