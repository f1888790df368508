"""Batch: a block of a ConstraintSystem whose handles stand for k instances (`cs.batch(k)`, nested
with `blk.batch(k)`), recorded once as a template and laid out, at close, exactly as if the
instances had been synthesized one after the other (bellperson's order)."""
from __future__ import annotations

import numpy as np

from cuzk.errors import InputError, SynthesisError
from cuzk.r1cs.csr import Rows, Template
from cuzk.r1cs.lc import AUX, INPUT, KIND_BITS, LOCAL_AUX, LOCAL_INPUT, ONE, WIRE, Variable, make_code, split_code
from cuzk.r1cs.system import ConstraintSystem, Scope, fr_array


class Batch(Scope):
    """A block whose handles stand for k instances; opened by `ConstraintSystem.batch(k)` or
    `Batch.batch(k)` (nested: k instances inside each instance of the enclosing block).

    Inside instance i (i < k), template aux variable j is the parent's aux base + i*T + j and template
    row c is the parent's row base + i*C + c (T, C: per-instance counts, known at close). Values are
    (total, 4) Fr arrays, total = k times the enclosing block's total, in instance order.
    """

    def __init__(self, cs: ConstraintSystem, parent: Scope, k: int) -> None:
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"a batch needs k >= 1 instances, got {k!r}")
        self.cs, self.parent, self.k = cs, parent, int(k)
        self.total = self.k * (parent.total if isinstance(parent, Batch) else 1)
        self.serial = cs._new_serial()
        self.record, self.has_values, self.replay = cs.record, cs.has_values, cs.replay
        self.one = ONE
        self._coeffs = cs._coeffs
        self._rows = (Rows(), Rows(), Rows())
        self._hint_rows = (Rows(), Rows())
        self.num_aux = self.num_inputs = self.num_constraints = self.num_hints = 0
        self.tables: list[np.ndarray] = []
        self._aux_vals: list[np.ndarray] = []  # chunks (total, t, 4)
        self._in_vals: list[np.ndarray] = []
        self._names: dict[int, str] = {}
        self.closed = False
        self._child: Batch | None = None

    # -- scope bookkeeping
    def _limits(self):
        lim = self.parent._limits()
        lim[self.serial] = (self.num_inputs, self.num_aux, len(self.tables))
        return lim

    def _open(self) -> None:
        if self.closed:
            raise SynthesisError("this batch block is closed")
        if self._child is not None:
            raise SynthesisError("a nested batch block is open: use it (or close it) first")

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:  # leave the system unusable rather than half-recorded
            self.closed = True

    # -- allocation
    def _values(self, values) -> np.ndarray | None:
        if not self.has_values:
            return None
        if values is None:
            raise SynthesisError("witness mode needs a value for every allocation (got None)")
        return fr_array(values, self.total)

    def alloc(self, values=None) -> Variable:
        """A template aux variable; values: k*parent-total Fr values (array or ints), None in constraint mode."""
        self._open()
        vals = self._values(values)
        if vals is not None:
            self._aux_vals.append(vals[:, None, :])
        self.num_aux += 1
        return Variable(make_code(LOCAL_AUX, self.num_aux - 1, self.serial), vals)

    def alloc_input(self, values=None) -> Variable:
        """A template public input (instance i's copy follows instance i-1's in the input order)."""
        self._open()
        vals = self._values(values)
        if vals is not None:
            self._in_vals.append(vals[:, None, :])
        self.num_inputs += 1
        return Variable(make_code(LOCAL_INPUT, self.num_inputs - 1, self.serial), vals)

    def alloc_many(self, n: int, values=None) -> list[Variable]:
        """n template aux variables; values: (total, n, 4) uint64 array, or None in constraint mode."""
        self._open()
        if self.has_values:
            if values is None:
                raise SynthesisError("witness mode needs values for alloc_many")
            if not isinstance(values, np.ndarray) or values.shape != (self.total, n, 4):
                raise InputError(f"alloc_many values must be a ({self.total}, {n}, 4) Fr array")
            arr = fr_array(values.reshape(-1, 4)).reshape(self.total, n, 4)
            self._aux_vals.append(arr)
        first, self.num_aux = self.num_aux, self.num_aux + n
        return [Variable(make_code(LOCAL_AUX, first + j, self.serial),
                         arr[:, j] if self.has_values else None) for j in range(n)]

    def alloc_codes(self, n: int, values=None) -> np.ndarray:
        """Bulk path for gadgets: as alloc_many, but returns the (n,) int64 template codes, and values
        ((total, n, 4) uint64) must already be canonical Montgomery Fr: they are not re-checked."""
        self._open()
        if self.has_values:
            if not isinstance(values, np.ndarray) or values.dtype != np.uint64 or values.shape != (self.total, n, 4):
                raise InputError(f"alloc_codes values must be a ({self.total}, {n}, 4) uint64 Fr array")
            self._aux_vals.append(values)
        first, self.num_aux = self.num_aux, self.num_aux + n
        return make_code(LOCAL_AUX, first, self.serial) + (np.arange(n, dtype=np.int64) << KIND_BITS)

    def wire(self, source, values=None) -> Variable:
        """A per-instance variable from outside the block: instance i uses source[i].

        source: a variable of a closed sibling block with the same k (its k instances), or k
        enclosing-scope variables (Variables or codes). Values are taken from the source when not given.
        """
        self._open()
        vals = None
        if isinstance(source, Variable):
            block = self.cs._closed.get(split_code(source.code)[2])
            if block is None or block.parent is not self.parent:
                raise InputError("wire() takes a variable of a closed sibling block, or k variables")
            codes, vals = block.instances(source), source.value
        else:
            items = list(source) if not isinstance(source, np.ndarray) else source
            codes = np.array([v.code if isinstance(v, Variable) else int(v) for v in items], dtype=np.int64)
            if self.has_values and values is None:
                if isinstance(self.parent, ConstraintSystem):
                    vals = self.cs.values(codes)
                elif all(isinstance(v, Variable) and v.value is not None for v in items):
                    vals = np.stack([v.value for v in items], axis=1).reshape(-1, 4)
        if codes.shape != (self.k,):
            raise InputError(f"wire() needs {self.k} per-instance variables, got {codes.shape[0]}")
        if self.record:
            self.parent._check_codes(codes)
        if self.has_values:
            if values is not None:
                vals = fr_array(values, self.total)
            if vals is None:
                raise SynthesisError("witness mode: give the values of the wired variables")
        self.tables.append(codes)
        return Variable(make_code(WIRE, len(self.tables) - 1, self.serial), vals)

    # -- constraints (enforce: Scope's, one template row holding in every instance)
    def enforce_many(self, a, b, c, n: int) -> None:
        """n template rows in bulk (specs as in ConstraintSystem.enforce_many, with template codes)."""
        self._open()
        if self.record:
            self._record_many(a, b, c, n)
        self.num_constraints += n

    def batch(self, k: int) -> Batch:
        """A nested block: k instances inside each instance of this block."""
        self._open()
        self._child = Batch(self.cs, self, k)
        return self._child

    # -- closing
    def instances(self, var: Variable) -> np.ndarray:
        """(k,) codes, in the enclosing scope, of a template variable's k instances (block closed)."""
        kind, index, serial = split_code(var.code)
        if not self.closed or serial != self.serial or kind not in (LOCAL_AUX, LOCAL_INPUT, WIRE):
            raise InputError(f"{var!r} is not a variable of this closed batch block")
        if kind == WIRE:
            return self.tables[index]
        base, per = (self._aux_base, self.num_aux) if kind == LOCAL_AUX else (self._in_base, self.num_inputs)
        pkind = (AUX if kind == LOCAL_AUX else INPUT) if isinstance(self.parent, ConstraintSystem) \
            else kind
        pserial = getattr(self.parent, "serial", 0)
        first = make_code(pkind, base + index, pserial)
        return first + ((np.arange(self.k, dtype=np.int64) * per) << KIND_BITS)

    def close(self) -> None:
        """Lay the k instances into the enclosing scope (bellperson's order)."""
        self._open()
        parent, top = self.parent, isinstance(self.parent, ConstraintSystem)
        self._aux_base, self._in_base = parent.num_aux, parent.num_inputs
        row_base = parent.num_constraints
        if self.record:
            tables = np.stack(self.tables) if self.tables else np.zeros((0, self.k), np.int64)
            # rows and hints alike: a template at top level (every top-level block has one of each), else expanded
            for mine, theirs in zip(self._rows + self._hint_rows, parent._rows + parent._hint_rows):
                counts, codes, cids = mine.arrays()
                tpl = Template(counts, codes, cids, self.serial, self.k, self._aux_base, self.num_aux,
                               self._in_base, self.num_inputs, tables,
                               AUX if top else LOCAL_AUX, INPUT if top else LOCAL_INPUT,
                               0 if top else parent.serial)
                if top:
                    theirs.add_template(tpl)
                else:
                    theirs.add_many(*tpl.expand())
            if self._names and top:
                parent._templates_named.append((row_base, self.k, self.num_constraints, dict(self._names)))
            elif self._names:
                parent._names.update({row_base + i * self.num_constraints + c: f"{name}[{i}]"
                                      for c, name in self._names.items() for i in range(self.k)})
        if self.has_values:
            ptotal = self.total // self.k
            for chunks, n, store in ((self._aux_vals, self.num_aux, "aux"), (self._in_vals, self.num_inputs, "in")):
                if not n:
                    continue
                vals = np.concatenate(chunks, axis=1).reshape(ptotal, self.k * n, 4)
                if top:
                    (parent._aux if store == "aux" else parent._inputs).add_array(vals.reshape(-1, 4))
                else:
                    (parent._aux_vals if store == "aux" else parent._in_vals).append(vals)
        parent.num_aux += self.k * self.num_aux
        parent.num_inputs += self.k * self.num_inputs
        parent.num_constraints += self.k * self.num_constraints
        parent.num_hints += self.k * self.num_hints
        self.closed = True
        parent._child = None
        self.cs._closed[self.serial] = self
