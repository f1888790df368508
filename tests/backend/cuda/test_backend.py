"""CudaBackend against the CPU backend, the reference: the R1CS evaluation, MSMs under VRAM budgets
(plans, eviction, typed errors), and the device's properties. Random inputs from the seeded rng."""
import numpy as np
import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.backend.cuda import CudaBackend, msm, spmv
from cuzk.backend.cuda.memory import VramBudget
from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError, VramBudgetError
from cuzk.ff.fields import Fr
from cuzk.groth16 import as_circuit
from cuzk.groth16.synthetic import synthetic_circuit
from cuzk.r1cs.csr import CSR

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
CURVES = {"g1": G1, "g2": G2}


@pytest.fixture(scope="module")
def cpu():
    return CpuBackend()


def _scalars(n, rng):
    """Random Fr scalars with about a third 0 and a third 1 (a witness's mix)."""
    s = Fr.random(n, rng)
    kind = rng.random(n)
    s[kind < 0.3] = Fr.zeros(1)[0]
    s[(kind >= 0.3) & (kind < 0.6)] = Fr.ones(1)[0]
    return s


# ---- evaluate ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows", [2, 50, 3000])  # a synthetic circuit has at least 2 rows
def test_evaluate_matches_cpu(cpu, rows, rng):
    cs = synthetic_circuit(rows, 2, rng)
    circuit, w = as_circuit(cs), cs.witness()
    gpu = CudaBackend()
    for mat in (circuit.a, circuit.b, circuit.c):
        want = cpu.evaluate(mat, w)
        np.testing.assert_array_equal(gpu.evaluate(mat, w), want)
        wide = CSR(mat.indptr, mat.indices.astype(np.int64), mat.coeff_ids, mat.coeffs, mat.shape)
        np.testing.assert_array_equal(gpu.evaluate(wide, w), want)


def test_evaluate_in_chunks_and_random_coefficients(cpu, rng, monkeypatch):
    rows, cols, ncoeff = 500, 300, 40
    counts = rng.integers(0, 12, size=rows)
    counts[7] = 100  # wider than a chunk
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    nnz = int(indptr[-1])
    mat = CSR(indptr, rng.integers(0, cols, size=nnz).astype(np.int32),
              rng.integers(0, ncoeff, size=nnz).astype(np.uint32),
              np.concatenate([Fr.from_ints([1, Fr.modulus - 1]), Fr.random(ncoeff - 2, rng)]), (rows, cols))
    w = Fr.random(cols, rng)
    want = cpu.evaluate(mat, w)
    monkeypatch.setattr(spmv, "CHUNK_NNZ", 64)
    monkeypatch.setattr(spmv, "CHUNK_ROWS", 37)
    np.testing.assert_array_equal(CudaBackend().evaluate(mat, w), want)
    with pytest.raises(InputError):
        CudaBackend().evaluate(mat, w[:-1])


# ---- MSM under a budget -----------------------------------------------------------------------------
@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_budgeted_msm_matches_cpu(cpu, group, sparse, rng):
    n = 1 << 12
    curve = CURVES[group]
    bases, scalars = curve.random(n, rng), _scalars(n, rng)
    want = getattr(cpu, f"msm_{group}")(bases, scalars)
    name = f"msm_{group}" + ("_sparse" if sparse else "")
    free = CudaBackend()
    assert np.array_equal(getattr(free, name)(bases, scalars), want)
    best = free.last_msm_plan
    tight = CudaBackend(vram_budget=best.peak_bytes - 1)  # the best plan no longer fits
    assert np.array_equal(getattr(tight, name)(bases, scalars), want)
    got = tight.last_msm_plan
    assert (got.c, got.multiples) != (best.c, best.multiples)
    assert got.peak_bytes <= tight.budget.bytes and got.sparse == sparse
    assert tight.residency.held <= tight.budget.bytes
    prepared = getattr(tight, f"prepare_bases_{group}")(bases)
    assert np.array_equal(getattr(tight, name)(prepared, scalars), want)
    assert np.array_equal(cp.asnumpy(tight.msm_device(prepared, cp.asarray(scalars), sparse=sparse))
                          .view(np.uint64).reshape(want.shape), want)


def test_a_table_too_big_for_the_budget_raises_and_its_msm_streams(cpu, rng):
    """Preparing a table the budget cannot hold is a VramBudgetError naming the MSM and the budget;
    an MSM over host bases whose table does not fit streams them instead (nothing kept)."""
    be = CudaBackend(vram_budget="1M")
    with pytest.raises(VramBudgetError, match=r"G1 MSM of 65536 points .* budget is 1\.0 MiB .*vram_budget='1M'"):
        be.prepare_bases_g1(G1.identity(1 << 16))
    bases, scalars = G1.random(1 << 12, rng), Fr.random(1 << 12, rng)
    be.stream_chunk = 1 << 10
    assert np.array_equal(be.msm_g1(bases, scalars), cpu.msm_g1(bases, scalars))
    assert be.residency.held == 0 and be.stream_stats.h2d_bytes == bases.nbytes


def test_kept_tables_are_evicted_when_a_new_one_does_not_fit(cpu, rng):
    n = 1 << 12
    items = msm.target_items(CudaBackend().info.sm_count)
    best = msm.choose_plan("g1", n, VramBudget(1 << 50, "-"), items=items)
    least = min(msm.plan_for("g1", n, c, m, True, items).peak_bytes for c in range(4, 24) for m in range(1, 17))
    assert best.peak_bytes - best.bytes.table < least  # so the second table cannot sit next to the first
    be = CudaBackend(vram_budget=best.peak_bytes)
    first, second = G1.random(n, rng), G1.random(n, rng)
    s = Fr.random(n, rng)
    assert np.array_equal(be.msm_g1(first, s), cpu.msm_g1(first, s))
    assert be.residency.lookup(first) is not None
    assert np.array_equal(be.msm_g1(second, s), cpu.msm_g1(second, s))
    assert be.residency.lookup(first) is None and be.residency.lookup(second) is not None
    assert be.residency.held <= be.budget.bytes
    assert np.array_equal(be.msm_g1(first, s), cpu.msm_g1(first, s))  # made again


def test_tables_are_reused_while_their_arrays_live(rng):
    be = CudaBackend()
    bases, s = G1.random(1000, rng), Fr.random(1000, rng)
    be.msm_g1(bases, s)
    kept = be.residency.lookup(bases)
    be.msm_g1_sparse(bases, s)
    assert be.residency.lookup(bases) is kept
    held = be.residency.held
    del bases, kept
    assert be.residency.held < held


# ---- the device ---------------------------------------------------------------------------------------
def test_device_properties_come_from_the_device(monkeypatch):
    monkeypatch.delenv("CUZK_VRAM_BUDGET", raising=False)
    be = CudaBackend()
    info = be.info
    dev = cp.cuda.Device(be.device)
    assert info.sm_count == dev.attributes["MultiProcessorCount"]
    assert "%d%d" % info.compute_capability == dev.compute_capability
    free, total = dev.mem_info
    assert info.total_bytes == total
    assert 0 < be.budget.bytes <= total and "memory.vram_fraction 0.8" in be.budget.source
    assert info.shared_mem_per_block_optin >= info.shared_mem_per_block > 0


# ---- evaluation from the template form (PCE) ---------------------------------------------------------
def test_evaluate_pce_matches_cpu(cpu, rng):
    from cuzk.r1cs import ONE, ConstraintSystem
    from cuzk.r1cs.pce import build

    cs = ConstraintSystem("constraints")
    x = cs.alloc_input()
    outside = cs.alloc()
    cs.enforce(x + outside, x, outside)
    with cs.batch(7) as blk:  # a template of 3 rows, 7 instances, wired to outside variables
        y, z = blk.alloc(), blk.alloc()
        blk.enforce(y + 3 * z, y - ONE, z * 5)
        blk.enforce(y, x, outside + y)
        blk.enforce(z, z, y)
    pce = build(cs)
    w = Fr.random(cs.num_inputs + cs.num_aux, rng)
    for got, want in zip(CudaBackend().evaluate_pce(pce, w), cpu.evaluate_pce(pce, w), strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_one_backend_per_device_and_process():
    """get_backend("cuda") is the current device's backend of device_backends: one VRAM budget and one
    residency per device, so what the GPU setup keeps there counts against the budget an engine's
    tables use (two instances each took 80% of the device: the 32GiB tables were evicted and rebuilt
    every partition)."""
    from cuzk.backend import device_backends, get_backend

    with cp.cuda.Device(0):
        shared = get_backend("cuda")
        assert shared is get_backend("cuda") is device_backends("cuda", [0])[0]
        assert shared.device == 0


def test_kept_copies_live_with_their_host_arrays(rng):
    """kept_copy: one device copy per host array (the prover's density masks), equal to it, counted
    against the budget while the array lives and dropped with it."""
    backend = CudaBackend(vram_budget=1 << 30)
    mask = rng.random(10_000) < 0.3
    first = backend.kept_copy(mask)
    assert backend.kept_copy(mask) is first and np.array_equal(first.get(), mask)
    assert backend.residency.held >= mask.nbytes
    held = backend.residency.held
    del mask, first
    import gc

    gc.collect()
    assert backend.residency.held == held - 10_000
