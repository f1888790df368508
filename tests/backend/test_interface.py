"""The backend interface (cuzk.backend.base.Backend): both backends define every method, and the CPU
backend, the reference, computes each one right on small inputs against plain-integer results."""
import inspect

import numpy as np
import pytest

from cuzk.groth16.prover import quotient
from cuzk.backend import Backend, get_backend
from cuzk.backend.cpu import CpuBackend
from cuzk.backend.cuda import CudaBackend
from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs.csr import CSR

R = Fr.modulus
METHODS = sorted(name for name, value in vars(Backend).items() if inspect.isfunction(value) and not name.startswith("_"))


def test_interface_lists_every_step():
    assert METHODS == sorted(["evaluate", "evaluate_pce", "first_unsatisfied", "msm_g1", "msm_g2", "msm_g1_sparse", "msm_g2_sparse", "msm_sets", "prepare_bases_g1",
                              "prepare_bases_g2", "ntt", "intt", "coset_ntt", "coset_intt", "to_coset", "mul_assign", "quotient_coefficients",
                              "offload", "run_witness_program",
                              "device_scope", "free_bytes", "memory_stats", "has_room", "asarray", "zeros", "keep",
                              "plan_vram", "reserve_beside_tables"])


def test_the_cpu_backend_has_no_device_to_place_on():
    be = CpuBackend()
    with be.device_scope():
        assert be.device is None and be.free_bytes() is None and be.memory_stats() == {}
    assert be.has_room(1 << 62) and isinstance(be.asarray([1, 2]), np.ndarray)
    assert be.zeros((2, 4), np.uint64).shape == (2, 4)
    be.keep([], [])  # nothing to prepare
    assert be.plan_vram(None, {}, 1) is None  # no device, no plan
    be.reserve_beside_tables(1 << 40, msm_points=10)


@pytest.mark.parametrize("cls", [CpuBackend, CudaBackend])
def test_backends_define_every_method(cls):
    assert isinstance(cls.name, str)
    for name in METHODS:
        want = list(inspect.signature(getattr(Backend, name)).parameters)
        got = inspect.signature(getattr(cls, name)).parameters
        assert list(got)[: len(want)] == want, name
        assert all(p.default is not inspect.Parameter.empty for p in list(got.values())[len(want):]), name


def test_get_backend_cpu():
    assert get_backend("cpu").name == "cpu"
    with pytest.raises(InputError):
        get_backend("tpu")


# ---- evaluate ---------------------------------------------------------------------------------------
def _hand_matrix():
    """A 4 x 5 matrix: coefficient ids 0 (1), 1 (-1), 2 (5), 3 (r - 2); row 2 is empty."""
    ints = [[1, 0, R - 1, 0, 5], [0, 0, 0, 0, R - 2], [0, 0, 0, 0, 0], [5, 5, 1, R - 1, 0]]
    ids = {1: 0, R - 1: 1, 5: 2, R - 2: 3}
    indptr, indices, coeff_ids = [0], [], []
    for row in ints:
        for j, v in enumerate(row):
            if v:
                indices.append(j)
                coeff_ids.append(ids[v])
        indptr.append(len(indices))
    mat = CSR(np.array(indptr, np.int64), np.array(indices, np.int32), np.array(coeff_ids, np.uint32),
              Fr.from_ints([1, R - 1, 5, R - 2]), (4, 5))
    return mat, ints


def test_evaluate_hand_matrix(rng):
    mat, ints = _hand_matrix()
    w = [int(x) for x in rng.integers(0, 2**62, size=5)]
    w[0] = R - 3
    got = Fr.to_ints(CpuBackend().evaluate(mat, Fr.from_ints(w)))
    assert got == [sum(a * x for a, x in zip(row, w)) % R for row in ints]
    assert got[2] == 0


def test_evaluate_constraint_system_rows(rng):
    cs = ConstraintSystem()
    out = cs.alloc_input(35)
    x = cs.alloc(3)
    x2 = cs.alloc(9)
    cs.enforce(x, x, x2)
    cs.enforce(x2 * 4 + x - 1, x + 2, out * 5 + 15)  # (36 + 3 - 1) 5 = 35 * 5 + 15
    a, b, c = cs.to_csr()
    w = cs.witness()
    wi = Fr.to_ints(w)
    for mat in (a, b, c):
        want = [sum(v * wi[j] for j, v in enumerate(row)) % R for row in mat.to_dense_ints()]
        assert Fr.to_ints(CpuBackend().evaluate(mat, w)) == want


def test_evaluate_rejects_a_wrong_witness():
    mat, _ = _hand_matrix()
    with pytest.raises(InputError, match=r"\(5, 4\) uint64"):
        CpuBackend().evaluate(mat, Fr.zeros(4))
    with pytest.raises(InputError):
        CpuBackend().evaluate(mat, np.zeros((5, 4), np.int64))


# ---- MSM --------------------------------------------------------------------------------------------
def _naive(curve, bases, scalars):
    acc = curve.to_jacobian(curve.identity(1))[0]
    for p, k in zip(bases, Fr.to_ints(scalars)):
        acc = curve.add(acc, curve.scalar_mul(p, k))
    return curve.to_affine(acc)


@pytest.mark.parametrize("curve, group", [(G1, "g1"), (G2, "g2")], ids=["G1", "G2"])
def test_msm_dense_sparse_prepared(curve, group, rng):
    be = CpuBackend()
    n = 9
    bases = curve.random(n, rng)
    scalars = Fr.random(n, rng)
    scalars[[1, 4]] = Fr.zeros(2)
    scalars[[2, 5, 6]] = Fr.ones(3)
    want = _naive(curve, bases, scalars)
    prepared = getattr(be, f"prepare_bases_{group}")(bases)
    for fn in (getattr(be, f"msm_{group}"), getattr(be, f"msm_{group}_sparse")):
        assert np.array_equal(fn(bases, scalars), want)
        assert np.array_equal(fn(prepared, scalars), want)
    other = Fr.random(n, rng)
    for sparse in (False, True):
        got = be.msm_sets(bases, [scalars, other, scalars], group, sparse)
        assert [p.tolist() for p in got] == [want.tolist(), _naive(curve, bases, other).tolist(), want.tolist()]


# ---- NTT and quotient -------------------------------------------------------------------------------
def _unit(n: int, i: int) -> np.ndarray:
    e = Fr.zeros(n)
    e[i] = Fr.ones(1)[0]
    return e


@pytest.mark.parametrize("log_n", [1, 3, 6])
def test_ntt_transforms(log_n, rng):
    be, n = CpuBackend(), 1 << log_n
    powers = Fr.to_ints(be.ntt(_unit(n, 1)))  # ntt(e_1)[j] = w^j
    w = powers[1]
    assert powers == [pow(w, j, R) for j in range(n)]
    assert pow(w, n, R) == 1 and pow(w, n // 2, R) == R - 1  # a primitive n-th root of unity
    assert Fr.to_ints(be.ntt(_unit(n, 0))) == [1] * n
    g = 7
    assert Fr.to_ints(be.coset_ntt(_unit(n, 1))) == [g * pow(w, j, R) % R for j in range(n)]
    a = Fr.random(n, rng)
    ai = Fr.to_ints(a)
    assert Fr.to_ints(be.ntt(a)) == [sum(x * pow(w, i * j, R) for i, x in enumerate(ai)) % R for j in range(n)]
    assert np.array_equal(be.intt(be.ntt(a)), a)
    assert np.array_equal(be.coset_intt(be.coset_ntt(a)), a)
    assert np.array_equal(be.ntt(be.intt(a)), a)


def _poly_mul(p: list[int], q: list[int]) -> list[int]:
    out = [0] * (len(p) + len(q) - 1)
    for i, x in enumerate(p):
        for j, y in enumerate(q):
            out[i + j] = (out[i + j] + x * y) % R
    return out


@pytest.mark.parametrize("log_n", [1, 3, 5])
def test_quotient_divides(log_n, rng):
    """For evaluations with a b = c on the domain, H Z = A B - C exactly, with Z = X^n - 1."""
    be, n = CpuBackend(), 1 << log_n
    a, b = Fr.random(n, rng), Fr.random(n, rng)
    c = Fr.mul(a, b)
    h = Fr.to_ints(quotient(be, [a.copy(), b.copy(), c.copy()].__getitem__))  # it overwrites its inputs
    assert len(h) == n - 1
    big_a, big_b, big_c = (Fr.to_ints(be.intt(x)) for x in (a, b, c))
    lhs = _poly_mul(big_a, big_b)
    for i, v in enumerate(big_c):
        lhs[i] = (lhs[i] - v) % R
    z = [R - 1] + [0] * (n - 1) + [1]
    rhs = _poly_mul(h, z)
    assert lhs == rhs + [0] * (len(lhs) - len(rhs))
