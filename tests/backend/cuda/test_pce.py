"""The CUDA evaluation of an R1CS in template form (cuzk.backend.cuda.pce) against the CPU backend's
evaluate_pce and the flat CSR evaluation, its residency on the device, and the satisfaction check.
Without a GPU: the part table (it covers every row once), the driver against a Python emulation of
the kernels (numpy standing in for CuPy) and the argument checks."""
from __future__ import annotations

import gc
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.backend.cuda import pce as pce_cuda
from cuzk.backend.cuda.memory import Residency
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, sha256
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, Variable
from cuzk.r1cs.pce import PCE, build
from r1cs.test_pce import rand_lc  # tests/ is on the path (pytest prepends the rootdir of these packages)

R = Fr.modulus
CPU = CpuBackend()
gpu = pytest.mark.gpu


# ---------------------------------------------------------------- random template circuits

def _rows(rng: np.random.Generator, scope, pool: list[Variable], n: int) -> None:
    for _ in range(n):
        scope.enforce(rand_lc(rng, pool), rand_lc(rng, pool), rand_lc(rng, pool))


def _block(cs: ConstraintSystem, k: int, rng: np.random.Generator, shape: int, fixed: list[Variable],
           sources: list[Variable]) -> None:
    """A batch of k instances whose rows depend only on `shape` (equal shapes share a template) over
    fixed variables, its own aux and inputs, and wires to per-instance picks from `sources`."""
    body = np.random.default_rng(shape)
    with cs.batch(k) as blk:
        aux = [blk.alloc() for _ in range(int(body.integers(1, 4)))]
        inputs = [blk.alloc_input() for _ in range(int(body.integers(1, 3)))]
        wires = [blk.wire([sources[int(j)] for j in rng.integers(0, len(sources), k)])
                 for _ in range(int(body.integers(1, 3)))]
        blk.enforce(aux[0] + wires[0], inputs[-1] - fixed[1], 3 * aux[-1])  # every kind of variable
        _rows(body, blk, fixed + aux + inputs + wires, int(body.integers(0, 6)))


def random_circuit(rng: np.random.Generator, ks=(1, 2, 5, 33, 300)) -> ConstraintSystem:
    """Plain rows between batch blocks of the given sizes (every other block shares a template), inputs
    and aux allocated between them; all four kinds of template variable."""
    cs = ConstraintSystem("constraints")
    pool = [ONE] + [cs.alloc_input() for _ in range(2)] + [cs.alloc() for _ in range(4)]
    base = int(rng.integers(1 << 30))
    for j, k in enumerate(ks):
        _rows(rng, cs, pool, int(rng.integers(0, 4)))
        _block(cs, k, rng, base + (j % 2 if j < len(ks) - 1 else 2), pool[:3], pool)
        pool += [cs.alloc(), cs.alloc_input()]
    _rows(rng, cs, pool, int(rng.integers(0, 3)))
    return cs


def plain_circuit(rng: np.random.Generator, rows: int = 700) -> ConstraintSystem:
    cs = ConstraintSystem("constraints")
    pool = [ONE] + [cs.alloc_input() for _ in range(3)] + [cs.alloc() for _ in range(20)]
    _rows(rng, cs, pool, rows)
    return cs


def witness(pce: PCE, rng: np.random.Generator) -> np.ndarray:
    return Fr.random(pce.shape[1], rng)


def _corrupt(c: np.ndarray, rows: list[int]) -> np.ndarray:
    """c with the given rows changed (plus one)."""
    out = c.copy()
    out[rows] = Fr.add(c[rows], Fr.ones(len(rows)))
    return out


WIDE = {"tpl_indptr": np.int64, "tpl_vars": np.int64, "plain_cols": np.int64, "tpl_cids": np.uint32,
        "plain_cids": np.uint32}


def widened(pce: PCE, names: tuple[str, ...]) -> PCE:
    """The same circuit with the named arrays (of every matrix; "wire_cols" of the circuit) stored wide."""
    mats = {m: replace(getattr(pce, m), **{n: getattr(getattr(pce, m), n).astype(WIDE[n]) for n in names if n in WIDE})
            for m in ("a", "b", "c")}
    out = replace(pce, **mats, wire_cols=pce.wire_cols.astype(np.int64) if "wire_cols" in names else pce.wire_cols)
    out.check()
    return out


# ---------------------------------------------------------------- without a GPU

WIDE_DTYPES = (np.int64, np.uint32)


def pce_evaluate(grid, block, args) -> None:
    """pce_evaluate in Python, from the kernel's arguments: the binary search for the part, item ->
    (row, columns), the `widths` bits (checked against the arrays' dtypes); arithmetic on integers."""
    parts, nparts, tpl_indptr, tpl_vars, tpl_cids, wire_cols, plain_indptr, plain_cols, plain_cids, coeffs, w, out, \
        widths = args
    assert block == (pce_cuda.THREADS,) and nparts.dtype == widths.dtype == np.uint32 and plain_indptr.dtype == np.int64
    for arr, bit in ((tpl_indptr, 1), (tpl_vars, 2), (wire_cols, 4), (plain_cols, 8), (tpl_cids, 16), (plain_cids, 32)):
        assert (arr.dtype in WIDE_DTYPES) == bool(widths & bit)
    coeffs, w = Fr.to_ints(coeffs), Fr.to_ints(w)
    values: dict[int, int] = {}
    for cta in range(grid[0]):
        lo, hi = 0, int(nparts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if parts[mid, 0] <= cta else (lo, mid)
        cta0, items, k, row, first, per, aux_col, aux_per, in_col, in_per, wire_off = parts[lo].tolist()
        for j in range((cta - cta0) * block[0], min(items, (cta - cta0 + 1) * block[0])):
            if k == 0:
                e0, e1 = plain_indptr[first + j], plain_indptr[first + j + 1]
                terms = [(plain_cols[e], plain_cids[e]) for e in range(e0, e1)]
                target = row + j
            else:
                r, i = divmod(j, k)
                terms = []
                for e in range(tpl_indptr[first + r], tpl_indptr[first + r + 1]):
                    index, kind = int(tpl_vars[e]) >> 2, int(tpl_vars[e]) & 3
                    col = (index, aux_col + i * aux_per + index, in_col + i * in_per + index,
                           wire_cols[wire_off + index * k + i] if kind == 3 else 0)[kind]
                    terms.append((col, tpl_cids[e]))
                target = row + i * per + r
            values[int(target)] = sum(coeffs[cid] * w[col] for col, cid in terms) % R
    if values:
        out[list(values)] = Fr.from_ints(list(values.values()))


def fr_first_unsatisfied(grid, block, args) -> None:
    a, b, c, n, first = args
    bad = np.flatnonzero((Fr.mul(a, b) != c).any(axis=1))
    assert n == len(a) and grid[0] * block[0] >= n and first.tolist() == [(1 << 64) - 1]
    if bad.size:
        first[0] = min(int(first[0]), int(bad[0]))


@pytest.fixture
def on_host(monkeypatch):
    """The driver with numpy standing in for CuPy and the kernels above for the compiled ones."""
    fake = SimpleNamespace(uint64=np.uint64, asarray=np.array, ascontiguousarray=np.ascontiguousarray, empty=np.empty,
                           asnumpy=np.array)
    monkeypatch.setattr(pce_cuda, "cupy", lambda: fake)
    kernels = {"pce_evaluate": pce_evaluate, "fr_first_unsatisfied": fr_first_unsatisfied}
    monkeypatch.setattr(pce_cuda.loader, "function", kernels.__getitem__)


def test_parts_cover_every_row_once(rng):
    for cs in (random_circuit(rng), random_circuit(rng, ks=(1, 1, 7)), plain_circuit(rng), ConstraintSystem("both")):
        pce = build(cs)
        for threads in (32, 256):
            table = pce_cuda.parts(pce, threads)
            assert table.dtype == np.int64 and table.shape[1] == len(pce_cuda.PART_FIELDS)
            items, k, row, per = table[:, 1], table[:, 2], table[:, 3], table[:, 5]
            assert (items > 0).all()
            ctas = -(-items // threads)
            np.testing.assert_array_equal(table[:, 0], np.cumsum(ctas) - ctas)
            rows = [r + (np.arange(n) % kk) * p + np.arange(n) // kk if kk else r + np.arange(n)
                    for n, kk, r, p in zip(items.tolist(), k.tolist(), row.tolist(), per.tolist())]
            np.testing.assert_array_equal(np.sort(np.concatenate([np.zeros(0, np.int64)] + rows)),
                                          np.arange(pce.num_constraints))
            plain = table[k == 0]  # the plain rows in order, one after the other
            np.testing.assert_array_equal(plain[:, 4], np.cumsum(plain[:, 1]) - plain[:, 1])


def test_driver_on_the_host(on_host, rng):
    """Arguments, part table, widths and residency as the driver hands them to the (emulated) kernel."""
    pce = build(random_circuit(rng, ks=(3, 40, 3, 300)))
    assert len(pce.tpl_rows) - 1 < len(pce.blocks)  # a shared template
    for circuit in (pce, widened(pce, tuple(WIDE) + ("wire_cols",)), widened(pce, ("tpl_vars", "plain_cids")),
                    build(plain_circuit(rng, 300))):
        residency, asked = Residency(), []
        w = witness(circuit, rng)
        for _ in range(2):
            got = pce_cuda.evaluate_pce(circuit, w, lambda n, what: asked.append(n), residency)
            for g, want in zip(got, CPU.evaluate_pce(circuit, w), strict=True):
                np.testing.assert_array_equal(g, want)
        resident, call = pce_cuda.resident_bytes(circuit), pce_cuda.call_bytes(circuit)
        assert asked == [resident + call, call] and residency.held == resident  # uploaded once, kept
    a, b = Fr.random(600, rng), Fr.random(600, rng)
    c = Fr.mul(a, b)
    assert pce_cuda.first_unsatisfied(a, b, c, lambda n, what: asked.append(n)) is None
    assert asked[-1] == 8 + 3 * 600 * 32
    assert pce_cuda.first_unsatisfied(a, b, _corrupt(c, [599, 300]), lambda n, what: None) == 300


def test_widths_and_resident_bytes(rng):
    pce = build(random_circuit(rng))
    assert [pce_cuda.widths(pce, m) for m in (pce.a, pce.b, pce.c)] == [0, 0, 0]
    wide = widened(pce, ("tpl_indptr", "tpl_vars", "wire_cols", "plain_cols", "tpl_cids", "plain_cids"))
    assert pce_cuda.widths(wide, wide.b) == 63
    assert pce_cuda.resident_bytes(wide) > pce_cuda.resident_bytes(pce)
    with pytest.raises(InputError, match="tpl_vars"):
        pce_cuda.widths(pce, replace(pce.a, tpl_vars=pce.a.tpl_vars.astype(np.uint64)))


def test_argument_checks_before_the_device(rng):
    pce = build(random_circuit(rng, ks=(2,)))
    with pytest.raises(InputError):
        pce_cuda.evaluate_pce(pce, witness(pce, rng)[:-1], lambda n, what: None, Residency())
    a = Fr.random(5, rng)
    for bad in ((a, a, a[:4]), (a, a, a.astype(np.int64)), (a, a, a[:, :3]), (a, a, list(a)), (a[0], a[0], a[0])):
        with pytest.raises(InputError):
            pce_cuda.first_unsatisfied(*bad, lambda n, what: None)


# ---------------------------------------------------------------- on the GPU

@pytest.fixture
def cuda():
    from cuzk.backend.cuda import CudaBackend

    return CudaBackend()


def _same(backend, pce: PCE, w: np.ndarray) -> None:
    want = CPU.evaluate_pce(pce, w)
    got = backend.evaluate_pce(pce, w)
    for g, x, m in zip(got, want, pce.to_csr(), strict=True):
        assert isinstance(g, np.ndarray) and g.shape == (pce.num_constraints, 4) and g.dtype == np.uint64
        np.testing.assert_array_equal(g, x)
        np.testing.assert_array_equal(g, CPU.evaluate(m, w))


@gpu
def test_matches_cpu_and_flat(cuda, rng):
    for ks in ((1, 2, 5, 33, 300), (1,), (64, 64, 3), (1000,)):
        pce = build(random_circuit(rng, ks))
        _same(cuda, pce, witness(pce, rng))


@gpu
@pytest.mark.parametrize("names", [("tpl_indptr",), ("tpl_vars",), ("wire_cols",), ("plain_cols",), ("tpl_cids",),
                                   ("plain_cids",), ("tpl_indptr", "tpl_vars", "wire_cols", "plain_cols", "tpl_cids",
                                                     "plain_cids")], ids=lambda n: "+".join(n))
def test_wide_arrays(cuda, rng, names):
    pce = widened(build(random_circuit(rng)), names)
    _same(cuda, pce, witness(pce, rng))


@gpu
def test_plain_only_and_empty(cuda, rng):
    pce = build(plain_circuit(rng))
    assert pce.blocks.shape == (0, 9)
    _same(cuda, pce, witness(pce, rng))
    empty = build(ConstraintSystem("both"))
    assert [x.shape for x in cuda.evaluate_pce(empty, witness(empty, rng))] == [(0, 4)] * 3


@gpu
def test_arrays_stay_on_the_device(cuda, rng):
    pce = build(random_circuit(rng))
    w = witness(pce, rng)
    assert cuda.residency.held == 0
    first = cuda.evaluate_pce(pce, w)
    held, dev = cuda.residency.held, cuda.residency.lookup(pce)
    assert held == dev.nbytes == pce_cuda.resident_bytes(pce) > 0
    for _ in range(2):
        again = cuda.evaluate_pce(pce, w)
        assert cuda.residency.held == held and cuda.residency.lookup(pce) is dev
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    del pce, dev
    gc.collect()
    assert cuda.residency.held == 0  # dropped with the circuit


@gpu
def test_budget_counts_the_upload(rng):
    from cuzk.backend.cuda import CudaBackend
    from cuzk.errors import VramBudgetError

    pce = build(random_circuit(rng))
    need = pce_cuda.resident_bytes(pce) + pce_cuda.call_bytes(pce)
    with pytest.raises(VramBudgetError):
        CudaBackend(vram_budget=need - 1).evaluate_pce(pce, witness(pce, rng))
    _same(CudaBackend(vram_budget=need), pce, witness(pce, rng))


@gpu
@pytest.mark.slow
def test_2kib_partition_circuit(cuda, rng):
    from cuzk.porep.challenges import PoRepConfig
    from cuzk.porep.circuit import StackedShape, circuit

    pce = build(circuit(StackedShape.from_config(PoRepConfig.from_proof("StackedDrg2KiBV1_1"))))
    _same(cuda, pce, witness(pce, rng))


@gpu
@pytest.mark.parametrize("on_device", [False, True], ids=["numpy", "cupy"])
def test_first_unsatisfied(cuda, rng, on_device):
    import cupy as cp

    pce = build(random_circuit(rng))
    n = pce.num_constraints
    a, b, _ = cuda.evaluate_pce(pce, witness(pce, rng))
    c = Fr.mul(a, b)
    put = cp.asarray if on_device else np.asarray
    assert cuda.first_unsatisfied(put(a), put(b), put(c)) is None
    for rows, want in (([0], 0), ([n // 2], n // 2), ([n - 1], n - 1), ([n - 1, 17], 17), ([300, 299], 299)):
        assert cuda.first_unsatisfied(put(a), put(b), put(_corrupt(c, rows))) == want
    assert cuda.first_unsatisfied(*(put(np.zeros((0, 4), np.uint64)),) * 3) is None


@gpu
def test_first_unsatisfied_of_a_real_witness(cuda, rng):
    cs = ConstraintSystem("both")
    with cs.batch(3) as blk:
        sha256.block_no_padding(blk, boolean.alloc(blk, 512, rng.integers(0, 2, (3, 512)).astype(bool)))
    pce = build(cs)
    w = cs.witness().copy()
    assert cuda.first_unsatisfied(*cuda.evaluate_pce(pce, w)) is None
    w[pce.num_inputs + 1000] = Fr.add(w[pce.num_inputs + 1000: pce.num_inputs + 1001], Fr.ones(1))[0]
    a, b, c = CPU.evaluate_pce(pce, w)
    bad = np.flatnonzero((Fr.mul(a, b) != c).any(axis=1))
    assert bad.size and cuda.first_unsatisfied(*cuda.evaluate_pce(pce, w)) == int(bad[0])
