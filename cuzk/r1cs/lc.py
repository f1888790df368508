"""Variables, linear combinations and the coefficient table of a constraint system.

A variable is named by one int64 *code*: ``((serial << 32 | index) << 3) | kind``.
Kinds: INPUT and AUX are the circuit's own variables (serial 0, as bellperson's Index::Input(i) and
Index::Aux(j); input 0 is the constant ONE, code 0). LOCAL_INPUT, LOCAL_AUX and WIRE live inside the
batch block numbered `serial`: a template variable, or a slot of a per-instance wiring table.
Codes are plain integers so that whole arrays of them can be remapped with numpy.
"""
from __future__ import annotations

import numpy as np

from cuzk.ff import limbs
from cuzk.errors import InputError

R = limbs.FR_MODULUS
INPUT, AUX, LOCAL_INPUT, LOCAL_AUX, WIRE = range(5)
KIND_BITS = 3
KIND_MASK = 7
INDEX_MASK = (1 << 32) - 1


def make_code(kind: int, index: int, serial: int = 0) -> int:
    return (((serial << 32) | index) << KIND_BITS) | kind


def split_code(code: int) -> tuple[int, int, int]:
    """(kind, index, serial) of a code."""
    rest = code >> KIND_BITS
    return code & KIND_MASK, rest & INDEX_MASK, rest >> 32


def columns(codes, num_inputs: int) -> np.ndarray:
    """Matrix columns of the circuit's own variables, as `ConstraintSystem.to_csr` lays them out
    (input i -> i, aux j -> num_inputs + j); -1 for any other code (batch-local, wire, negative)."""
    codes = np.asarray(codes, dtype=np.int64)
    kind, index = codes & KIND_MASK, codes >> KIND_BITS
    return np.where(kind == INPUT, index, np.where(kind == AUX, num_inputs + index, -1))


def fr_int(value) -> int:
    """A canonical Fr integer in [0, r); anything else raises InputError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"not an Fr value: {value!r} ({type(value).__name__}); give an int in [0, r)")
    value = int(value)
    if not 0 <= value < R:
        raise InputError(f"Fr value {value} is outside [0, r)")
    return value


class Variable:
    """A handle on one variable (or, inside a batch block, on one template variable for K instances).

    `value` holds its assignment when known: an int for a plain variable, a (K, 4) Fr array for a
    template variable.
    """

    __slots__ = ("code", "value")

    def __init__(self, code: int, value=None) -> None:
        self.code = code
        self.value = value

    @property
    def kind(self) -> int:
        return self.code & KIND_MASK

    @property
    def index(self) -> int:
        return (self.code >> KIND_BITS) & INDEX_MASK

    def lc(self) -> LinearCombination:
        return LinearCombination({self.code: 1})

    def __repr__(self) -> str:
        kind, index, serial = split_code(self.code)
        name = ("Input", "Aux", "LocalInput", "LocalAux", "Wire")[kind]
        return f"{name}({index})" + (f"@batch{serial}" if serial else "")

    # arithmetic builds linear combinations
    def __add__(self, other): return self.lc() + other
    def __radd__(self, other): return self.lc() + other
    def __sub__(self, other): return self.lc() - other
    def __rsub__(self, other): return as_lc(other) - self.lc()
    def __neg__(self): return -self.lc()
    def __mul__(self, k):
        if type(k) is int and 0 < k < R:
            return LinearCombination({self.code: k})
        return self.lc() * k

    __rmul__ = __mul__


ONE = Variable(0)


class LinearCombination:
    """A sparse sum of coefficient * variable terms: `terms` maps code -> coefficient in [1, r).

    Terms on the same variable merge (as bellperson's Indexer does); zero terms vanish.
    An int in arithmetic stands for that constant times ONE.
    """

    __slots__ = ("terms",)

    def __init__(self, terms: dict[int, int] | None = None) -> None:
        self.terms = terms if terms is not None else {}

    @staticmethod
    def zero() -> LinearCombination:
        return LinearCombination()

    def add_term(self, var: Variable, coeff: int = 1) -> LinearCombination:
        """In place: self += coeff * var (bellperson's `lc + (coeff, var)`); returns self."""
        code = var.code
        c = (self.terms.get(code, 0) + coeff) % R
        if c:
            self.terms[code] = c
        else:
            self.terms.pop(code, None)
        return self

    def _combine(self, other, sign: int) -> LinearCombination:
        terms = dict(self.terms)
        for code, c in as_lc(other).terms.items():
            old = terms.get(code)
            if old is None:
                terms[code] = c if sign > 0 else R - c
            else:
                s = (old + sign * c) % R
                if s:
                    terms[code] = s
                else:
                    del terms[code]
        return LinearCombination(terms)

    def __add__(self, other): return self._combine(other, 1)
    def __radd__(self, other): return self._combine(other, 1)
    def __sub__(self, other): return self._combine(other, -1)
    def __rsub__(self, other): return as_lc(other)._combine(self, -1)
    def __neg__(self): return LinearCombination({k: R - c for k, c in self.terms.items()})

    def __mul__(self, k):
        if type(k) is not int:
            if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
                raise InputError(f"a linear combination can only be scaled by an int, not {type(k).__name__}")
            k = int(k)
        if k == 1:
            return LinearCombination(dict(self.terms))
        k %= R
        if k == 0:
            return LinearCombination()
        return LinearCombination({code: c * k % R for code, c in self.terms.items()})

    __rmul__ = __mul__

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        return " + ".join(f"{c}*{Variable(code)!r}" for code, c in self.terms.items()) or "0"


def as_lc(x) -> LinearCombination:
    """A LinearCombination from an LC, a Variable, an int constant (times ONE) or None (zero)."""
    if type(x) is LinearCombination:
        return x
    if type(x) is Variable:
        return LinearCombination({x.code: 1})
    if x is None:
        return LinearCombination()
    if type(x) is int or isinstance(x, np.integer):
        c = int(x) % R
        return LinearCombination({0: c} if c else {})
    raise InputError(f"expected a LinearCombination, Variable or int, got {type(x).__name__}")


class CoeffTable:
    """Distinct coefficients of a constraint system; matrices store a uint32 id per non-zero.

    Id 0 is 1 and id 1 is r - 1 (= -1), so the SpMV adds or subtracts for the common cases.
    """

    def __init__(self) -> None:
        self.values: list[int] = [1, R - 1]
        self._ids: dict[int, int] = {1: 0, R - 1: 1}

    def __len__(self) -> int:
        return len(self.values)

    def intern(self, c: int) -> int:
        cid = self._ids.get(c)
        if cid is None:
            cid = self._ids[c] = len(self.values)
            self.values.append(c)
        return cid

    def intern_array(self, coeffs) -> np.ndarray:
        """uint32 ids of an array of integer coefficients (int64, or Python ints of any size; mod r)."""
        arr = np.asarray(coeffs)
        if arr.dtype == object:
            arr = np.array([int(c) % R for c in arr.ravel()], dtype=object).reshape(arr.shape)
        elif not np.issubdtype(arr.dtype, np.integer):
            raise InputError(f"coefficients must be integers, got dtype {arr.dtype}")
        out = np.zeros(arr.shape, dtype=np.uint32)  # id 0: coefficient 1
        if arr.dtype != object:
            out[arr == -1] = 1
            rest = (arr != 1) & (arr != -1)
            if not rest.any():
                return out
            arr_rest = arr[rest]
        else:
            rest = np.ones(arr.shape, bool)
            arr_rest = arr
        if arr_rest.size:
            uniq, inv = np.unique(arr_rest, return_inverse=True)
            ids = np.array([self.intern(int(u) % R) for u in uniq], dtype=np.uint32)
            out[rest] = ids[inv.reshape(-1)]
        return out

    def montgomery(self) -> np.ndarray:
        """(n, 4) uint64 Montgomery form of every coefficient, indexed by id."""
        from cuzk.ff.fields import Fr

        return Fr.from_ints(self.values)
