"""GPU MSM (cuzk.backend.cuda) against a Python-int reference and exact dot-product checks.

Bases are made on the GPU as k_i * G (batched fixed-base kernel, itself checked against the
reference), so sum_i s_i * B_i = (sum_i s_i k_i mod r) * G gives an exact expected value at any n.
Fresh random inputs every run; the seed is printed on failure.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from cuzk.ec import reference

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

from cuzk.backend.cuda import CudaBackend, cuda_available  # noqa: E402
from cuzk.backend.cuda import layout  # noqa: E402
from cuzk.backend.cuda import msm as cb  # noqa: E402

if not cuda_available():
    pytest.skip("no CUDA device", allow_module_level=True)

GROUPS = ("g1", "g2")
GEN = {"g1": reference.G1, "g2": reference.G2}


@pytest.fixture
def rng():
    seed = int.from_bytes(os.urandom(8), "little")
    print("seed", seed)
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def backend():
    return CudaBackend()


def _u32_scalars(values) -> "cp.ndarray":
    """Python ints (< 2^256) -> cupy (n, 8) u32 canonical."""
    arr = np.array([[(v >> (32 * j)) & 0xFFFFFFFF for j in range(8)] for v in values], dtype=np.uint32)
    return cp.asarray(arr.reshape(-1, 8))


def make_bases(group: str, ks) -> np.ndarray:
    """k_i * G for Python-int k_i (0 gives the identity), in the shared numpy layout."""
    g = reference.encode([GEN[group]], group == "g2")[0]
    nbits = max(1, max(int(k).bit_length() for k in ks))
    pts = cb.scalar_mul_points(group, g, _u32_scalars([int(k) for k in ks]), nbits)
    return cb.to_numpy_points(group, pts)


def expected_point(group: str, total: int) -> np.ndarray:
    return make_bases(group, [total % reference.R])[0] if total % reference.R else np.zeros(layout.POINT_SHAPE[group], np.uint64)


def canonical(scalars_mont: np.ndarray) -> list[int]:
    return [reference.from_limbs(s) * pow(2**256, -1, reference.R) % reference.R for s in scalars_mont]


def check(backend, group, ks, scalars_mont, bases=None, sparse=False):
    bases = make_bases(group, ks) if bases is None else bases
    fn = getattr(backend, f"msm_{group}" + ("_sparse" if sparse else ""))
    got = fn(bases, scalars_mont)
    total = sum(s * int(k) for s, k in zip(canonical(scalars_mont), ks))
    np.testing.assert_array_equal(got, expected_point(group, total))
    return got


# ---- field and point kernels ---------------------------------------------------------------------
def test_fq_mul_matches_python(rng):
    n = 1000
    xs = [int.from_bytes(rng.bytes(48), "little") % reference.P for _ in range(2 * n)]
    enc = np.array([reference.to_limbs(x, 6) for x in xs], dtype=np.uint64).view(np.uint32)
    a, b = cp.asarray(enc[:n]), cp.asarray(enc[n:])
    out = cp.empty_like(a)
    cb._launch("fq_mul_vec", n, a, b, np.int32(n), out)
    got = out.get().view(np.uint64)
    rinv = pow(2**384, -1, reference.P)
    for i in range(n):
        assert reference.from_limbs(got[i]) == xs[i] * xs[n + i] * rinv % reference.P


@pytest.mark.parametrize("group", GROUPS)
def test_fixed_base_kernel_matches_reference(group, rng):
    ks = [0, 1, 2, reference.R - 1] + [int.from_bytes(rng.bytes(32), "little") % reference.R for _ in range(4)]
    got = make_bases(group, ks)
    for k, pt in zip(ks, got):
        assert reference.decode(pt, group == "g2") == reference.mul(GEN[group], k)


@pytest.mark.parametrize("group", GROUPS)
def test_addition_special_cases(group, rng):
    k = int(rng.integers(2, 2**62))
    ks_a = [k, k, 0, k, k, 0]
    ks_b = [k, reference.R - k, k, 0, 3 * k, 0]
    a, b = make_bases(group, ks_a), make_bases(group, ks_b)
    out = cp.empty((len(ks_a), layout.WORDS[group]), dtype=cp.uint32)
    cb._launch(f"add_pairs_{group}", len(ks_a), cp.asarray(a.view(np.uint32)),
               cp.asarray(b.view(np.uint32)), np.int32(len(ks_a)), out)
    got = cb.to_numpy_points(group, out)
    for i, (x, y) in enumerate(zip(ks_a, ks_b)):
        assert reference.decode(got[i], group == "g2") == reference.mul(GEN[group], x + y)


# ---- MSM -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 17])
def test_msm_small_vs_reference(backend, group, n, rng):
    ks = [int(k) for k in rng.integers(1, 2**63, size=n)]
    bases = make_bases(group, ks)
    svals = [int.from_bytes(rng.bytes(32), "little") % reference.R for _ in range(n)]
    svals[0] = reference.R - 1
    if n > 2:
        svals[1], svals[2] = 0, 1
    scalars = reference.fr_to_mont_array(svals)
    got = getattr(backend, f"msm_{group}")(bases, scalars)
    pts = [reference.decode(b, group == "g2") for b in bases]
    assert reference.decode(got, group == "g2") == reference.msm(pts, svals)


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("n", [1000, 1 << 10, (1 << 12) + 3, 1 << 16])
def test_msm_random(backend, group, n, rng):
    ks = [int(k) for k in rng.integers(0, 2**63, size=n)]
    check(backend, group, ks, reference.random_mont_scalars(rng, n))


@pytest.mark.parametrize("group", GROUPS)
def test_msm_prepared_matches(backend, group, rng):
    n = (1 << 14) + 5
    ks = [int(k) for k in rng.integers(0, 2**63, size=n)]
    bases = make_bases(group, ks)
    prepared = getattr(backend, f"prepare_bases_{group}")(bases)
    assert prepared.multiples > 1
    for _ in range(2):  # bases stay resident across calls
        check(backend, group, ks, reference.random_mont_scalars(rng, n), bases=prepared)


@pytest.mark.parametrize("group", GROUPS)
def test_msm_on_held_device_bases_keeps_one_table(group, rng):
    """Bases kept on the device and counted by `hold` (parameter vectors from the GPU setup or an
    upload): the first MSM makes their table, later ones reuse it, and the held bytes count the bases
    once (their first multiple is not counted again)."""
    backend = CudaBackend()
    n = (1 << 12) + 3
    ks = [int(k) for k in rng.integers(0, 2**63, size=n)]
    bases = cp.asarray(make_bases(group, ks))
    backend.hold(bases)
    assert backend.residency.held == bases.nbytes
    check(backend, group, ks, reference.random_mont_scalars(rng, n), bases=bases)
    prepared = backend.residency.lookup(bases)
    assert prepared is not None and prepared.n == n
    assert backend.residency.held == bases.nbytes * prepared.multiples
    check(backend, group, ks, reference.random_mont_scalars(rng, n), bases=bases)
    assert backend.residency.lookup(bases) is prepared


@pytest.mark.parametrize("group", GROUPS)
def test_msm_long_items_few_keys(backend, group, rng, monkeypatch):
    """Items longer than 32 points (run longest first), a crowded top window (c = 9: 4 bits) and the
    fan-in-4 passes over few keys (2 sets x 256 buckets) still give the exact sum."""
    n = (1 << 13) + 7
    ks = [int(k) for k in rng.integers(0, 2**63, size=n)]
    prepared = backend._prepare(make_bases(group, ks), group, True, c=9, m=16)
    monkeypatch.setattr(cb, "_L0_MIN", 48)
    monkeypatch.setattr(cb, "_L0_MAX", 48)
    check(backend, group, ks, reference.random_mont_scalars(rng, n), bases=prepared)


@pytest.mark.parametrize("group", GROUPS)
def test_msm_special_inputs(backend, group, rng):
    n = 3000
    ks = [int(k) for k in rng.integers(1, 2**63, size=n)]
    ks[10:20] = [0] * 10  # identity bases
    ks[20:40] = [ks[5]] * 20  # repeated points
    ks[40] = reference.R - ks[41]  # P and -P
    bases = make_bases(group, ks)
    same = reference.fr_to_mont_array([12345] * n)
    scal = reference.random_mont_scalars(rng, n)
    scal[40] = scal[41]  # same digits: P and -P land in the same buckets
    for s in (np.zeros((n, 4), np.uint64), same, scal, reference.fr_to_mont_array([reference.R - 1] * n),
              reference.fr_to_mont_array([1] * n)):
        check(backend, group, ks, s, bases=bases)
        check(backend, group, ks, s, bases=getattr(backend, f"prepare_bases_{group}")(bases))


@pytest.mark.parametrize("group", GROUPS)
def test_msm_sparse(backend, group, rng):
    n = 1 << 15
    ks = [int(k) for k in rng.integers(0, 2**63, size=n)]
    bases = make_bases(group, ks)
    scal = reference.random_mont_scalars(rng, n)
    kind = rng.random(n)
    scal[kind < 0.35] = 0
    scal[(kind >= 0.35) & (kind < 0.7)] = reference.fr_to_mont_array([1])[0]
    check(backend, group, ks, scal, bases=bases, sparse=True)
    check(backend, group, ks, scal, bases=getattr(backend, f"prepare_bases_{group}")(bases), sparse=True)


@pytest.mark.parametrize("n", [1 << 18, 1 << 20])
def test_msm_g1_large(backend, n, rng):
    k = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    g = reference.encode([reference.G1], False)[0]
    kk = cp.zeros((n, 8), dtype=cp.uint32)
    kk[:, :2] = cp.asarray(k.view(np.uint32).reshape(n, 2))
    bases = cb.scalar_mul_points("g1", g, kk, 64)
    prepared = backend.prepare_bases_g1(bases.view(cp.uint64).reshape(n, 2, 6), precompute=False)
    assert prepared.multiples == 1
    scal = reference.random_mont_scalars(rng, n)
    got = backend.msm_g1(prepared, scal)
    canon = cp.empty((n, 8), dtype=cp.uint32)
    cb._launch("fr_from_mont_vec", n, cp.asarray(scal.view(np.uint32)), np.int32(n), canon)
    np.testing.assert_array_equal(got, expected_point("g1", reference.dot_mod_r(canon, kk[:, :2])))


def test_bad_inputs(backend):
    with pytest.raises(cb.MsmInputError):
        backend.msm_g1(np.zeros((4, 2, 6), np.uint64), np.zeros((3, 4), np.uint64))
    with pytest.raises(cb.MsmInputError):
        backend.msm_g1(np.zeros((4, 2, 2, 6), np.uint64), np.zeros((4, 4), np.uint64))
    with pytest.raises(cb.MsmInputError):
        backend.msm_g2(np.zeros((4, 2, 2, 6), np.uint64), np.zeros((4, 4), np.int64))


@pytest.mark.parametrize("group", GROUPS)
def test_msm_stage_split_is_recorded_and_changes_nothing(backend, group, rng):
    """recording_msm_stages: one entry per MSM with every stage's GPU time, the results bit-exact."""
    import time

    from cuzk.backend.cuda.msm_stages import STAGES
    n = (1 << 14) + 7
    ks = [int(k) for k in rng.integers(0, 2**63, size=n)]
    bases = make_bases(group, ks)
    scalars = reference.random_mont_scalars(rng, n)
    scalars[::3] = reference.fr_to_mont_array([1])[0]  # ones and zeros take the sparse split's paths
    scalars[1::3] = 0
    plain = check(backend, group, ks, scalars, bases=bases, sparse=True)
    with backend.recording_msm_stages() as split:
        t = time.perf_counter()
        dense = check(backend, group, ks, scalars, bases=bases)
        sparse = check(backend, group, ks, scalars, bases=bases, sparse=True)
        wall_ms = (time.perf_counter() - t) * 1e3
    np.testing.assert_array_equal(dense, plain)
    np.testing.assert_array_equal(sparse, plain)
    assert [(s["msm"], s["n"]) for s in split] == [(f"msm_{group}", n), (f"msm_{group}_sparse", n)]
    for s in split:
        assert set(s) == {"msm", "n", *(f"{k}_ms" for k in STAGES)}
        assert all(s[f"{k}_ms"] > 0 for k in STAGES), s
    assert sum(s[f"{k}_ms"] for s in split for k in STAGES) < wall_ms
    check(backend, group, ks, scalars, bases=bases)  # recording is off again: it appends nothing
    assert len(split) == 2
