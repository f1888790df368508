"""cuzk.r1cs: recording, bellperson order of batch templates, CSR export, SpMV, satisfiability."""
from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.errors import InputError, SynthesisError, UnallocatedVariableError, UnsatisfiedConstraintError
from cuzk.ff.fields import Fr
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, Variable, evaluate

R = Fr.modulus
BIG = 2**200 + 12345  # a coefficient that needs the side table


def rand_fr(n: int = 1) -> list[int]:
    return [random.randrange(R) for _ in range(n)]


def assert_same_system(cs1: ConstraintSystem, cs2: ConstraintSystem) -> None:
    assert cs1.stats()["num_constraints"] == cs2.num_constraints
    assert (cs1.num_inputs, cs1.num_aux) == (cs2.num_inputs, cs2.num_aux)
    for m1, m2 in zip(cs1.to_csr(), cs2.to_csr()):
        assert m1.shape == m2.shape
        np.testing.assert_array_equal(m1.indptr, m2.indptr)
        np.testing.assert_array_equal(m1.indices, m2.indices)
        np.testing.assert_array_equal(m1.values(), m2.values())
    np.testing.assert_array_equal(cs1.witness(), cs2.witness())


# ---------------------------------------------------------------- a small circuit by hand
def cubic(cs: ConstraintSystem, x: int) -> None:
    """x^3 + x + 5 = out, out public (the classic example)."""
    out = cs.alloc_input((x**3 + x + 5) % R)
    xv = cs.alloc(x)
    x2 = cs.alloc(x * x % R)
    cs.enforce(xv, xv, x2, name="square")
    x3 = cs.alloc(x**3 % R)
    cs.enforce(x2, xv, x3, name="cube")
    cs.enforce(x3 + xv + 5, ONE, out, name="sum")


def test_cubic_35():
    cs = ConstraintSystem()
    cubic(cs, 3)
    a, b, c = cs.to_csr()
    assert a.shape == (3, 2 + 3)  # ONE, out | x, x2, x3
    assert a.to_dense_ints() == [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [5, 0, 1, 0, 1]]
    assert b.to_dense_ints() == [[0, 0, 1, 0, 0], [0, 0, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert c.to_dense_ints() == [[0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [0, 1, 0, 0, 0]]
    assert Fr.to_ints(cs.witness()) == [1, 35, 3, 9, 27]
    assert cs.is_satisfied()
    w = cs.witness()
    w[1] = Fr.from_ints([36])[0]
    with pytest.raises(UnsatisfiedConstraintError, match=r"constraint 2 \(sum\)"):
        cs.assert_satisfied(w)


def test_cubic_random_x_and_spmv_values():
    x = rand_fr()[0]
    cs = ConstraintSystem()
    cubic(cs, x)
    a, b, c = cs.to_csr()
    w = cs.witness()
    assert Fr.to_ints(evaluate(a, w)) == [x, x * x % R, (x**3 + x + 5) % R]
    assert Fr.to_ints(evaluate(c, w)) == [x * x % R, x**3 % R, (x**3 + x + 5) % R]
    assert cs.is_satisfied()


# ---------------------------------------------------------------- random circuits
def random_circuit(m: int, n_aux: int, seed: int) -> tuple[ConstraintSystem, list[list[tuple[int, int]]]]:
    """m random rows whose C is chosen to satisfy them; returns the system and its dense rows."""
    rnd = random.Random(seed)
    cs = ConstraintSystem()
    ins = [cs.alloc_input(v) for v in rand_fr(2)]
    aux = [cs.alloc(v) for v in rand_fr(n_aux)]
    pool = [ONE] + ins + aux
    vals = {v.code: (1 if v is ONE else v.value) for v in pool}
    for _ in range(m):
        def lc():
            out = LinearCombination()
            for v in rnd.sample(pool, rnd.randint(0, 4)):
                out.add_term(v, rnd.choice([1, R - 1, 2, 2**31, BIG, rnd.randrange(R)]))
            return out
        a, b = lc(), lc()
        ev = lambda l: sum(c * vals[k] for k, c in l.terms.items()) % R  # noqa: E731
        target = ev(a) * ev(b) % R
        z = cs.alloc(target)
        vals[z.code] = target
        cs.enforce(a, b, z - 0)
        pool.append(z)
    return cs, vals


def test_random_circuit_satisfied_and_corruption_named():
    cs, _ = random_circuit(300, 20, seed=random.randrange(2**32))
    assert cs.is_satisfied()
    # corrupt the output variable of a random constraint: that row is the first to fail
    a, b, c = cs.to_csr()
    row = random.randrange(cs.num_constraints)
    col = int(c.indices[c.indptr[row]])
    w = cs.witness()
    w[col] = Fr.from_ints([rand_fr()[0]])[0]
    first_user = min(r for r in range(cs.num_constraints)
                     if col in a.indices[a.indptr[r]:a.indptr[r + 1]].tolist() + b.indices[b.indptr[r]:b.indptr[r + 1]].tolist()
                     + c.indices[c.indptr[r]:c.indptr[r + 1]].tolist())
    assert first_user == row
    assert cs.first_unsatisfied(w) == row
    with pytest.raises(UnsatisfiedConstraintError, match=f"constraint {row} "):
        cs.assert_satisfied(w)


def test_spmv_against_python_ints():
    cs, _ = random_circuit(200, 30, seed=random.randrange(2**32))
    w_ints = rand_fr(cs.num_inputs + cs.num_aux)
    w = Fr.from_ints(w_ints)
    for m in cs.to_csr():
        dense = m.to_dense_ints()
        expect = [sum(c * x for c, x in zip(row, w_ints)) % R for row in dense]
        assert Fr.to_ints(evaluate(m, w)) == expect


# ---------------------------------------------------------------- batched template == sequential
def gadget(scope, pack, xs: list[int], e, e_vals: list[int]) -> tuple:
    """Per instance: y = x^2 + 3e, z = BIG*y + x (public), t = (x + e)*(y - 1); returns (y, t) handles.

    `xs` / `e_vals` hold one int per instance; `pack` turns such a list into scope values.
    """
    x = scope.alloc(pack(xs))
    y_vals = [(v * v + 3 * ev) % R for v, ev in zip(xs, e_vals)]
    y = scope.alloc(pack(y_vals))
    scope.enforce(x, x, y - 3 * e, name="y")
    z = scope.alloc_input(pack([(BIG * yv + v) % R for yv, v in zip(y_vals, xs)]))
    scope.enforce(BIG * y + x, ONE, z)
    t = scope.alloc(pack([(v + ev) * (yv - 1) % R for v, ev, yv in zip(xs, e_vals, y_vals)]))
    scope.enforce(x + e, y - ONE, t, name="t")
    scope.enforce(x + x - x + e * 0, None, None)  # empty B and C; x's terms merge to 1*x
    return y, t, y_vals


def test_batch_equals_sequential():
    k = random.randint(2, 9)
    xs, es = rand_fr(k), rand_fr(k)
    seq = ConstraintSystem()
    shared = seq.alloc_input(7)
    e_seq = [seq.alloc(v) for v in es]
    ys = []
    for i in range(k):
        y, t, _ = gadget(seq, lambda v: v[0], [xs[i]], e_seq[i], [es[i]])
        ys.append((y, t))
        seq.enforce(y, shared, t)  # not satisfied: fine, only the layout is compared
    for i in range(k):  # a second gadget family using the first one's outputs
        u = seq.alloc((xs[i] + 1) % R)
        seq.enforce(ys[i][0] + u, ONE, u + ys[i][0])

    bat = ConstraintSystem()
    shared = bat.alloc_input(7)
    e_codes = bat.alloc_many(es)
    with bat.batch(k) as blk:
        e = blk.wire(e_codes)
        y, t, _ = gadget(blk, Fr.from_ints, xs, e, es)
        blk.enforce(y, shared, t)
    with bat.batch(k) as blk2:
        u = blk2.alloc(Fr.from_ints([(v + 1) % R for v in xs]))
        yw = blk2.wire(y)
        blk2.enforce(yw + u, ONE, u + yw)
    assert_same_system(seq, bat)
    np.testing.assert_array_equal(blk.instances(y), [v.code for v, _ in ys])


def test_nested_batch_equals_sequential():
    k1, k2 = random.randint(2, 4), random.randint(2, 4)
    xs = rand_fr(k1 * k2)
    es = rand_fr(k1)
    seq = ConstraintSystem()
    for i in range(k1):
        e = seq.alloc(es[i])
        for j in range(k2):
            gadget(seq, lambda v: v[0], [xs[i * k2 + j]], e, [es[i]])
        seq.enforce(e, e, e)
    bat = ConstraintSystem()
    with bat.batch(k1) as outer:
        e = outer.alloc(Fr.from_ints(es))
        with outer.batch(k2) as inner:
            ew = inner.wire([e] * k2)  # shared by every inner instance of one outer instance
            gadget(inner, Fr.from_ints, xs, ew, [v for v in es for _ in range(k2)])
        outer.enforce(e, e, e)
    assert_same_system(seq, bat)


def test_batch_template_names_and_failure():
    k = 5
    xs, es = rand_fr(k), rand_fr(k)
    cs = ConstraintSystem()
    e_codes = cs.alloc_many(es)
    with cs.batch(k) as blk:
        gadget(blk, Fr.from_ints, xs, blk.wire(e_codes), es)
    assert cs.is_satisfied()
    w = cs.witness()
    inst = random.randrange(k)
    # instance `inst`'s y (aux k + inst*3 + 1, after k e's and ONE + k inputs) broken: its row "y" fails
    col = cs.num_inputs + k + inst * 3 + 1
    w[col] = Fr.from_ints([rand_fr()[0]])[0]
    with pytest.raises(UnsatisfiedConstraintError, match=rf"constraint {inst * 4} \(y\[{inst}\]\)"):
        cs.assert_satisfied(w)


def test_modes_agree():
    xs, es = rand_fr(3), rand_fr(3)

    def build(mode):
        cs = ConstraintSystem(mode)
        e_codes = cs.alloc_many(es if mode != "constraints" else 3)
        with cs.batch(3) as blk:
            gadget(blk, Fr.from_ints if mode != "constraints" else (lambda v: None), xs, blk.wire(e_codes), es)
        cubic(cs, xs[0]) if mode != "constraints" else None
        return cs

    both, cons, wit = build("both"), build("constraints"), build("witness")
    cubic(cons, 0)
    assert (wit.num_constraints, wit.num_aux, wit.num_inputs) == (both.num_constraints, both.num_aux, both.num_inputs)
    np.testing.assert_array_equal(wit.witness(), both.witness())
    for m1, m2 in zip(cons.to_csr(), both.to_csr()):
        np.testing.assert_array_equal(m1.indices, m2.indices)
    assert cons.first_unsatisfied(both.witness()) is None
    with pytest.raises(SynthesisError):
        wit.to_csr()
    with pytest.raises(SynthesisError):
        cons.witness()


# ---------------------------------------------------------------- bulk recording
def test_enforce_many_equals_single():
    n = 50
    vals = rand_fr(2 * n)
    single, bulk = ConstraintSystem(), ConstraintSystem()
    xs = [single.alloc(v) for v in vals]
    for i in range(n):
        single.enforce(xs[2 * i] * 2 - xs[2 * i + 1], xs[2 * i + 1] + BIG, xs[i])
    codes = bulk.alloc_many(Fr.from_ints(vals))
    one = np.zeros(n, np.int64)
    a = (np.stack([codes[0::2], codes[1::2]], axis=1), np.array([2, -1]))
    b = (np.stack([codes[1::2], one], axis=1), np.array([1, BIG], dtype=object))
    c = (np.arange(n + 1), codes[:n], np.ones(n, np.int64))
    bulk.enforce_many(a, b, c)
    assert_same_system(single, bulk)


# ---------------------------------------------------------------- typed errors
def test_errors():
    cs = ConstraintSystem()
    x = cs.alloc(1)
    with pytest.raises(UnallocatedVariableError):
        cs.enforce(Variable(x.code + 8), x, x)  # aux 1 was never allocated
    with pytest.raises(UnallocatedVariableError):
        cs.enforce_many((np.array([[x.code + 80]]), np.array([1])), None, None)
    for bad in (R, -1, 1.5, "3", None):
        with pytest.raises((InputError, SynthesisError)):
            cs.alloc(bad)
    with pytest.raises(InputError):
        cs.alloc_many(np.full((2, 4), 2**64 - 1, dtype=np.uint64))  # not below r
    with pytest.raises(InputError):
        cs.alloc_many(np.zeros((2, 4), dtype=np.int64))
    cs.enforce(x, x, x)
    with pytest.raises(InputError):
        cs.is_satisfied(cs.witness()[:-1])  # wrong witness length
    with pytest.raises(InputError):
        cs.enforce(x, 1.0, x)
    with cs.batch(2) as blk:
        v = blk.alloc(Fr.from_ints([1, 1]))
        with pytest.raises(SynthesisError):
            cs.alloc(1)  # the block is open
        with pytest.raises(InputError):
            blk.alloc(Fr.from_ints([1, 2, 3]))  # k = 2 values needed
        with pytest.raises(InputError):
            blk.wire(np.zeros(3, np.int64))
        blk.enforce(v, v, v)
    with pytest.raises(UnallocatedVariableError, match="closed or foreign"):
        cs.enforce(v, v, v)  # a template variable outside its block
    with pytest.raises(SynthesisError):
        blk.alloc(Fr.from_ints([1, 1]))
    assert cs.is_satisfied()


def test_wired_duplicates_merge_like_bellperson():
    """A wired variable that equals a shared one in some instance merges (or cancels) as an LC would."""
    vals = rand_fr(3)
    seq, bat = ConstraintSystem(), ConstraintSystem()
    for cs in (seq, bat):
        g = cs.alloc(vals[0])
        h = cs.alloc(vals[1])
    others = [g, h, g]  # instance i is wired to others[i]
    for i in range(3):
        seq.enforce(Variable(others[i].code) + 2 * g, Variable(others[i].code) - h, ONE)
    with bat.batch(3) as blk:
        e = blk.wire(others)
        blk.enforce(e + 2 * g, e - h, ONE)
    assert_same_system(seq, bat)
    a, b, _ = bat.to_csr()
    assert a.to_dense_ints()[0][1] == 3 and b.to_dense_ints()[1][2] == 0 and b.nnz == 4


def test_values_as_arrays_and_bulk_inputs():
    vals = rand_fr(4)
    cs = ConstraintSystem()
    x = cs.alloc(Fr.from_ints([vals[0]])[0])  # a (4,) Fr array
    ins = cs.alloc_input_many(vals[1:3])
    cs.enforce_many((ins[:, None], np.array([1])), None, None)
    assert Fr.to_ints(cs.witness()) == [1, vals[1], vals[2], vals[0]]
    assert Fr.to_ints(cs.values(np.array([x.code, ins[1]]))) == [vals[0], vals[2]]
    assert cs.stats() == {"num_constraints": 2, "num_inputs": 3, "num_aux": 1, "nnz_a": 2, "nnz_b": 0, "nnz_c": 0}
