"""Streamed MSMs (cuzk.backend.cuda.stream) against the CPU backend, the reference: host bases cross
to the device in chunks, every scalar set shares a chunk's crossing; a proof whose key does not fit
the budget streams it and verifies; a VRAM cap limits CuPy's pool and the plan follows it."""
import numpy as np
import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.backend.cuda import CudaBackend
from cuzk.ec.curves import G1, G2
from cuzk.ff.fields import Fr
from cuzk.groth16 import as_circuit, prove, setup, verify
from cuzk.groth16.keys import PARAMS_VECTORS
from cuzk.groth16.synthetic import synthetic_circuit
from tests.backend.cuda.test_backend import _scalars

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
CURVES = {"g1": G1, "g2": G2}
POINT_BYTES = {"g1": 96, "g2": 192}
GIB = 1 << 30


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("n, chunk", [(5000, 1024), (700, 4096), (3, 1)])
def test_streamed_msm_matches_cpu(group, sparse, n, chunk, rng):
    """Uneven chunks, one chunk, one point a chunk; two scalar sets in host memory share each crossing;
    the bytes moved are the bases' once and each set's once."""
    curve, cpu = CURVES[group], CpuBackend()
    bases = curve.random(n, rng)
    sets = [_scalars(n, rng), _scalars(n, rng)]
    be = CudaBackend()
    be.stream_chunk = chunk
    got = be.msm_streamed(bases, sets, group, sparse)
    want = [getattr(cpu, f"msm_{group}")(bases, s) for s in sets]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert be.stream_stats.h2d_bytes == n * POINT_BYTES[group] + 2 * 32 * n
    assert be.memory_stats()["pinned_bytes"] >= bases.nbytes  # registered in place


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msm_sets_share_the_crossing_of_bases_that_stream(group, rng):
    """msm_sets over bases whose table does not fit the budget: the bases cross once for three sets
    (two in host memory, one on the device); over resident bases, one MSM per set. Both equal the CPU's."""
    curve, cpu, n = CURVES[group], CpuBackend(), 3000
    bases = curve.random(n, rng)
    sets = [_scalars(n, rng), _scalars(n, rng)]
    sets.append(cp.asarray(sets[0]))
    want = cpu.msm_sets(bases, sets[:2], group, True)
    streamed = CudaBackend(vram_budget=n * POINT_BYTES[group] // 2)
    streamed.stream_chunk = 1024
    got = streamed.msm_sets(bases, sets, group, True)
    assert all(np.array_equal(g, w) for g, w in zip(got, want + want[:1]))
    assert streamed.stream_stats.h2d_bytes == n * POINT_BYTES[group] + 2 * 32 * n
    resident = CudaBackend()
    assert all(np.array_equal(g, w) for g, w in zip(resident.msm_sets(bases, sets, group, False), want + want[:1]))
    assert resident.stream_stats.h2d_bytes == 0


def test_strided_bases_stream_from_a_copy(rng):
    bases, scalars = G1.random(2000, rng)[::2], _scalars(1000, rng)
    be = CudaBackend()
    be.stream_chunk = 300
    assert np.array_equal(be.msm_streamed(bases, [scalars], "g1", True)[0], CpuBackend().msm_g1(bases, scalars))


def test_a_key_that_does_not_fit_streams_and_the_proof_verifies(rng):
    """A budget with room for the witness and the quotient's three vectors but for no MSM table: the
    prover's MSMs stream the key (nothing kept), and the proof verifies."""
    cs = synthetic_circuit(3000, 2, rng)
    params = setup(cs, rng)
    circuit, witness = as_circuit(cs), cs.witness()
    lean = 32 * circuit.num_columns + 3 * 32 * circuit.domain_size
    be = CudaBackend(vram_budget=lean + (64 << 10))
    be.stream_chunk = 1000
    proof = prove(params, circuit, witness, be)
    assert verify(params.vk, Fr.to_ints(witness[1:cs.num_inputs]), proof)
    assert be.residency.held == 0
    assert be.stream_stats.h2d_bytes == sum(getattr(params, v).nbytes for v in PARAMS_VECTORS)


def test_the_offloaded_quotient_proves(rng):
    """Room for the witness and two vectors only: A's and A B's coset values wait in host memory."""
    cs = synthetic_circuit(3000, 2, rng)
    params = setup(cs, rng)
    circuit, witness = as_circuit(cs), cs.witness()
    be = CudaBackend(vram_budget=32 * circuit.num_columns + 2 * 32 * circuit.domain_size + (64 << 10))
    proof = prove(params, circuit, witness, be)
    assert verify(params.vk, Fr.to_ints(witness[1:cs.num_inputs]), proof)
    assert be.memory_stats()["pinned_bytes"] >= 32 * circuit.domain_size  # the offload buffer


def test_a_cap_limits_the_pool_and_plans(rng):
    """use_vram_cap: the pool limited to the cap less 1 GiB, the budget that limit; a small circuit's
    plan keeps every vector resident."""
    pool = cp.get_default_memory_pool()
    be = CudaBackend(device=0)
    be.use_vram_cap("3GiB")
    try:
        assert be.budget.cap == 3 * GIB and be.budget.bytes == 2 * GIB
        assert pool.get_limit() == 2 * GIB
        cs = synthetic_circuit(3000, 2, rng)
        params = setup(cs, rng)
        vectors = {v: getattr(params, v) for v in PARAMS_VECTORS}
        plan = be.plan_vram(as_circuit(cs), vectors, 2)
        assert plan.streamed == () and set(plan.tables) == set(PARAMS_VECTORS) and plan.peak <= plan.usable
        stats = be.memory_stats()
        assert stats["vram_cap_bytes"] == 3 * GIB and stats["vram_budget_bytes"] == 2 * GIB
    finally:
        pool.set_limit(size=0)


def test_a_host_witness_proves_beside_two_vectors(rng):
    """The witness in host memory (a plan's quotient "host"): room for two domain vectors and one
    evaluation beside its uploaded witness, not for the witness beside the offloaded quotient; the
    evaluations upload it, A's and A B's coset values wait in host memory, and the proof verifies."""
    cs = synthetic_circuit(3000, 2, rng)
    params = setup(cs, rng)
    circuit, witness = as_circuit(cs), cs.witness()
    w, v = 32 * circuit.num_columns, 32 * circuit.domain_size
    budget = w + 2 * v - (8 << 10)  # room for an evaluation (the matrix, the witness, its rows), not W + 2 V
    be = CudaBackend(vram_budget=budget)
    proof = prove(params, circuit, witness, be)
    assert verify(params.vk, Fr.to_ints(witness[1:cs.num_inputs]), proof)
    assert be.memory_stats()["pinned_bytes"] >= v  # the offload buffer
