"""The Groth16 setup on the GPU (cuzk.backend.cuda.setup, cuzk.groth16.setup_device) against the CPU
setup, point for point.

Without a GPU: the signed-digit recoding the fixed-base kernels use, the memory model, and the whole
driver (launch arguments, constants, chunking, the order of the stages) against Python emulations
of its kernels, written from the kernels' comments (numpy standing in for CuPy): its parameters
equal cuzk.groth16.setup.generate_parameters'. On the GPU: fixed-base G1 / G2 on edge scalars
against the CPU curve code, the Lagrange and transposed kernels against cuzk.ff.domain and the flat
CSR product, the parameters of random and template circuits against the CPU's, and proofs that
verify against a GPU-made key."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from backend.cuda.test_pce import random_circuit, widened  # tests/ is on the path (see test_pce)
from cuzk.backend.cuda import CudaBackend, setup as setup_cuda
from cuzk.backend.cuda import ntt as ntt_cuda
from cuzk.backend.cuda import pce as pce_cuda
from cuzk.backend.cuda import backend as backend_cuda
from cuzk.backend.cuda import layout
from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError, SetupError, VramBudgetError
from cuzk.ff.domain import Domain
from cuzk.ff.fields import Fr, int_limbs
from cuzk.groth16.setup import generate_parameters
from cuzk.groth16.setup_device import generate_parameters_on, template_form
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs.pce import build

R = Fr.modulus
CURVES = {"g1": G1, "g2": G2}
EDGES = [0, 1, 2, 3, R - 1, R - 2, (R - 1) // 2, 2**128 + 7, 2**254 + 5]
gpu = pytest.mark.gpu


def toxic(rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int.from_bytes(rng.bytes(40), "little") % (R - 1) + 1 for _ in range(5))


def signed_digits(s: int, c: int) -> list[int]:
    """The recoding of fb_mul (kernels/setup/fixed_base.cuh): digit d = bits + carry, d > 2^(c-1)
    becomes d - 2^c with a carry into the next window."""
    half, carry, out = 1 << (c - 1), 0, []
    for w in range(setup_cuda.windows(c)):
        d = ((s >> (c * w)) & ((1 << c) - 1)) + carry
        carry = int(d > half)
        out.append(d - (carry << c))
    return out


# ---------------------------------------------------------------- without a GPU

@pytest.mark.parametrize("c", [2, 4, 5, 8, 13, 16, 20, 24])
def test_signed_digits_cover_every_scalar(c, rng):
    """sum_w d_w 2^(c w) = s with -2^(c-1) < d_w <= 2^(c-1) for canonical s, and windows(c) suffice."""
    half = 1 << (c - 1)
    assert setup_cuda.windows(c) * c >= 256
    for s in EDGES + [int.from_bytes(rng.bytes(32), "little") % R for _ in range(50)]:
        d = signed_digits(s, c)
        assert sum(x << (c * w) for w, x in enumerate(d)) == s
        assert all(-half < x <= half for x in d)


def test_window_bases():
    for group, curve in CURVES.items():
        bases = setup_cuda.window_bases(group, 16)
        assert bases.shape == (16, *curve.affine_shape)
        want = curve.scalar_mul(curve.generator(), [1 << (16 * w) for w in range(16)])
        assert curve.eq(bases, want).all()


def test_memory_model_of_a_32gib_partition():
    """The module docstring's numbers: the 32GiB partition (ANCHORS.md sizes and densities)."""
    m, k, aux = 130_278_541, 328, 130_169_893
    a, b = k + int(0.997 * aux), k + int(0.254 * aux)
    kept = setup_cuda.stage_bytes(m + k, k + aux, k, 1 << 27, a, b, keep=True)
    out = setup_cuda.stage_bytes(m + k, k + aux, k, 1 << 27, a, b, keep=False)
    assert max(kept, key=kept.get) == "h" and round(kept["h"] / 1e9, 1) == 51.7
    assert max(out, key=out.get) == "qap" and round(out["qap"] / 1e9, 1) == 25.1
    outputs = 96 * ((1 << 27) - 1 + aux + a + b) + 192 * b
    assert round(outputs / 1e9, 1) == 47.4


def test_template_form_and_cpu_fallback(rng):
    cs = random_circuit(np.random.default_rng(0), ks=(1, 2, 5, 33, 40))
    pce = build(cs)
    assert template_form(pce) is pce and template_form(cs).digest() == pce.digest()
    assert template_form(cs.to_csr() + (cs.num_inputs,)) is None
    with pytest.raises(InputError):
        template_form("circuit")
    t = toxic(rng)
    assert generate_parameters_on("cpu", pce, *t) == generate_parameters(cs, *t)
    with pytest.raises(InputError, match="keep_on_device"):
        generate_parameters_on("cpu", pce, *t, keep_on_device=True)


# ---- the kernels in Python, from their arguments (numpy arrays stand in for device arrays)

def _points(group: str, words) -> np.ndarray:
    """u32 (n, words) or uint64 (n, *affine) device points as a uint64 (n, *affine) view."""
    return words.reshape(-1).view(np.uint64).reshape(-1, *CURVES[group].affine_shape)


def fb_table(group: str):
    def kernel(grid, block, args):
        bases, half, count, table = args
        assert block == (setup_cuda.FB_THREADS,) and grid[0] * block[0] >= count
        e = np.arange(int(count))
        curve = CURVES[group]
        pts = curve.scalar_mul(_points(group, bases)[e // int(half)], (e % int(half) + 1).tolist())
        _points(group, table)[:] = curve.to_affine(pts)
    return kernel


def fb_mul(group: str):
    def kernel(grid, block, args):
        table, c, nw, scalars, n, spread, out, zs, pre = args
        c, nw, n, spread = int(c), int(nw), int(n), int(spread)
        curve, half = CURVES[group], 1 << (c - 1)
        assert block == (setup_cuda.FB_THREADS,) and grid[0] * block[0] >= spread and 0 < spread <= n
        assert scalars.shape == (n, 4) and zs.shape[0] >= n and pre.shape[0] >= n
        assert zs.shape[1] == pre.shape[1] == layout.WORDS[group] // 2
        tab = _points(group, table)
        acc = curve.to_jacobian(curve.identity(n))
        digits = np.array([signed_digits(s, c) for s in Fr.to_ints(scalars)]).reshape(n, nw)
        lanes = (-1, *([1] * (tab.ndim - 1)))
        for w in range(nw):
            d = digits[:, w]
            pts = np.where((d != 0).reshape(lanes), tab[w * half + np.abs(d) - 1], np.uint64(0))
            acc = curve.add(acc, np.where((d < 0).reshape(lanes), curve.neg(pts), pts))
        _points(group, out)[:] = curve.to_affine(acc)
    return kernel


def setup_lagrange(grid, block, args):
    consts, out, count, spread = args
    count, spread = int(count), int(spread)
    one, w, ws, ws_inv, tau, c = Fr.to_ints(consts[:6])
    assert one == 1 and ws == pow(w, spread, R) and ws * ws_inv % R == 1
    assert tuple(consts[6]) == int_limbs(R - 2, 4) and grid[0] * block[0] >= spread
    vals = [0] * count
    for t in range(min(spread, count)):  # the kernel's own order: prefix products, one inversion, back
        x, acc, es = pow(w, t, R), 1, list(range(t, count, spread))
        pre = []
        for _ in es:
            pre.append(acc)
            acc, x = acc * (tau - x) % R, x * ws % R
        inv = pow(acc, R - 2, R)
        for e, p in zip(reversed(es), reversed(pre)):
            x = x * ws_inv % R
            vals[e], inv = c * x * inv * p % R, inv * (tau - x) % R
    out[:] = Fr.from_ints(vals)


def pce_transpose(grid, block, args):
    """acc[col] += the 32-bit limbs of the Montgomery product of each term, walking the parts as
    kernels/pce/walk.cuh does; mark[col] = 1."""
    parts, nparts, tpl_indptr, tpl_vars, tpl_cids, wire_cols, plain_indptr, plain_cols, plain_cids, coeffs, lag, \
        acc, mark, widths = args
    assert block == (pce_cuda.THREADS,) and acc.shape[1] == 8 and acc.dtype == np.uint64
    coeffs, lag = Fr.to_ints(coeffs), Fr.to_ints(lag)
    cols, prods = [], []
    for cta0, items, k, row, first, per, aux_col, aux_per, in_col, in_per, wire_off in parts[:int(nparts)].tolist():
        for j in range(items):
            if k == 0:
                e0, e1, target = plain_indptr[first + j], plain_indptr[first + j + 1], row + j
                terms = [(int(plain_cols[e]), int(plain_cids[e])) for e in range(e0, e1)]
            else:
                r, i = divmod(j, k)
                target, terms = row + i * per + r, []
                for e in range(tpl_indptr[first + r], tpl_indptr[first + r + 1]):
                    index, kind = int(tpl_vars[e]) >> 2, int(tpl_vars[e]) & 3
                    col = (index, aux_col + i * aux_per + index, in_col + i * in_per + index,
                           wire_cols[wire_off + index * k + i] if kind == 3 else 0)[kind]
                    terms.append((int(col), int(tpl_cids[e])))
            for col, cid in terms:
                cols.append(col)
                prods.append(coeffs[cid] * lag[target] % R)
    if cols:
        np.add.at(acc, np.array(cols), Fr.from_ints(prods).view(np.uint32).reshape(-1, 8).astype(np.uint64))
        mark[np.array(cols)] = 1


def setup_fold(grid, block, args):
    acc, pow32, out, n = args
    assert Fr.to_ints(pow32) == [1 << (32 * q) for q in range(8)] and grid[0] * block[0] >= n
    sums = [sum(int(s) << (32 * q) for q, s in enumerate(row)) % R for row in acc[:int(n)]]
    out[:] = np.array([int_limbs(s, 4) for s in sums], np.uint64).reshape(-1, 4)  # raw: Montgomery sums


def fr_lincomb(grid, block, args):
    x0, x1, x2, c, terms, out, n = args
    cs, xs = Fr.to_ints(c), [Fr.to_ints(x[:int(n)]) for x in (x0, x1, x2)[:int(terms)]]
    assert grid[0] * block[0] >= n and len(cs) == terms
    out[:] = Fr.from_ints([sum(cq * x[i] for cq, x in zip(cs, xs)) % R for i in range(int(n))])


def fr_powers(grid, block, args):
    base, c, out, count = args
    b, f = Fr.to_ints(base)[0], Fr.to_ints(c)[0]
    out[:] = Fr.from_ints([f * pow(b, i, R) % R for i in range(int(count))])


KERNELS = {"fb_table_g1": fb_table("g1"), "fb_table_g2": fb_table("g2"), "fb_mul_g1": fb_mul("g1"),
           "fb_mul_g2": fb_mul("g2"), "setup_lagrange": setup_lagrange, "pce_transpose": pce_transpose,
           "setup_fold": setup_fold, "fr_lincomb": fr_lincomb, "fr_powers": fr_powers}


@pytest.fixture
def on_host(monkeypatch):
    """The driver with numpy standing in for CuPy, the kernels above for the compiled ones, 6-bit
    windows (a small table), and launches cut small so that threads take several elements and
    vectors several launches."""
    device = SimpleNamespace(id=0, synchronize=lambda: None)
    fake = SimpleNamespace(uint8=np.uint8, uint32=np.uint32, uint64=np.uint64, asarray=np.array, empty=np.empty,
                           zeros=np.zeros, ascontiguousarray=np.ascontiguousarray, asnumpy=np.array, nonzero=np.nonzero,
                           cuda=SimpleNamespace(Device=lambda *a: device))
    for module in (setup_cuda, pce_cuda):
        monkeypatch.setattr(module, "cupy", lambda: fake)
    monkeypatch.setattr(ntt_cuda, "_cupy", lambda: fake)
    monkeypatch.setattr(backend_cuda, "cupy", lambda: fake)
    monkeypatch.setattr(CudaBackend, "_on_device", lambda self: _Nothing())
    monkeypatch.setattr(setup_cuda.loader, "function", KERNELS.__getitem__)
    monkeypatch.setattr(setup_cuda, "WINDOW_BITS", 6)
    monkeypatch.setattr(setup_cuda, "_tables", {})
    monkeypatch.setattr(setup_cuda, "_resident_threads", lambda kernel, threads: 3)
    monkeypatch.setattr(setup_cuda, "_MAX_CHUNK", 100)
    monkeypatch.setattr(setup_cuda, "_LAGRANGE_THREADS", 5)


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_fixed_base_driver_on_the_host(on_host, rng):
    for group, curve in CURVES.items():
        ints = EDGES + [int.from_bytes(rng.bytes(32), "little") % R for _ in range(8)]
        got = setup_cuda.fixed_base_mul(setup_cuda.generator_table(group), Fr.from_ints(ints))
        np.testing.assert_array_equal(got, curve.generator_mul(Fr.from_ints(ints)))
        assert setup_cuda.fixed_base_mul(setup_cuda.generator_table(group), Fr.zeros(0)).shape == (0, *curve.affine_shape)
    with pytest.raises(InputError):
        setup_cuda.fixed_base_mul(setup_cuda.generator_table("g1"), Fr.zeros(3)[:, :3])
    with pytest.raises(InputError):
        setup_cuda.fixed_base_table("g3")


def test_lagrange_driver_on_the_host(on_host, rng):
    tau = toxic(rng)[0]
    for log_n, count in ((0, 1), (3, 8), (4, 11), (5, 32)):
        domain = Domain(log_n)
        np.testing.assert_array_equal(setup_cuda.lagrange(domain, tau, count), domain.lagrange_at(tau, count))
    with pytest.raises(SetupError, match="point of the evaluation domain"):
        setup_cuda.lagrange(Domain(3), Domain(3).root, 8)


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_parameters_driver_on_the_host(on_host, seed):
    """Every point of the GPU pipeline (emulated kernels) equals generate_parameters' for seeded random
    template circuits (plain rows, blocks of 1 to 40 instances, a shared template, every kind of
    variable), with the vectors kept on the "device" or copied out."""
    rng = np.random.default_rng(seed)
    cs = random_circuit(rng, ks=(1, 2, 5, 33, 40))
    t = toxic(rng)
    want = generate_parameters(cs, *t)
    backend = CudaBackend(device=0, vram_budget=1 << 40)
    for keep in (False, True):
        got = generate_parameters_on(backend, build(cs), *t, keep_on_device=keep)
        assert got == want


def test_refusals_on_the_host(on_host, rng):
    """SetupError where the CPU setup raises one (an unconstrained aux, tau in the domain), the
    VRAM budget before any work, and bad arguments."""
    cs = random_circuit(np.random.default_rng(1), ks=(1, 2, 5, 33, 40))
    t = toxic(rng)
    with pytest.raises(SetupError) as cpu:
        generate_parameters(cs, *t)
    backend = CudaBackend(device=0, vram_budget=1 << 40)
    with pytest.raises(SetupError) as dev:
        generate_parameters_on(backend, cs, *t)
    assert str(dev.value) == str(cpu.value)
    ok = random_circuit(np.random.default_rng(0), ks=(1, 2, 5, 33, 40))
    root = Domain.for_size(ok.num_constraints + ok.num_inputs).root
    with pytest.raises(SetupError, match="point of the evaluation domain"):
        generate_parameters_on(backend, ok, root, *t[1:])
    with pytest.raises(VramBudgetError):
        generate_parameters_on(CudaBackend(device=0, vram_budget=1000), ok, *t)
    pce = build(ok)
    with pytest.raises(InputError):
        backend.setup_key_points(pce, 0, *t[1:], np.ones(pce.shape[1], bool), np.ones(pce.shape[1], bool))
    with pytest.raises(InputError):
        backend.setup_key_points(pce, *t, np.ones(3, bool), np.ones(pce.shape[1], bool))


# ---------------------------------------------------------------- on the GPU

@gpu
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_edges(group, rng):
    curve = CURVES[group]
    ints = EDGES + [int.from_bytes(rng.bytes(32), "little") % R for _ in range(200)]
    scalars = Fr.from_ints(ints)
    want = curve.generator_mul(scalars)
    got = setup_cuda.fixed_base_mul(setup_cuda.generator_table(group), scalars)
    np.testing.assert_array_equal(got.get(), want)
    point = curve.random(1, rng)[0]  # another base, narrower windows
    table = setup_cuda.fixed_base_table(group, 8, point)
    np.testing.assert_array_equal(setup_cuda.fixed_base_mul(table, scalars).get(),
                                  curve.to_affine(curve.scalar_mul(point, scalars)))


@gpu
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_many_points_per_thread(group, rng, monkeypatch):
    """Threads taking ~40 points each (Montgomery's trick over them, identities among them), several
    launches."""
    monkeypatch.setattr(setup_cuda, "_resident_threads", lambda kernel, threads: 50)
    monkeypatch.setattr(setup_cuda, "_MAX_CHUNK", 1500)
    curve = CURVES[group]
    scalars = Fr.random(4000, rng)
    scalars[rng.integers(0, 4000, 40)] = 0
    got = setup_cuda.fixed_base_mul(setup_cuda.generator_table(group), scalars)
    np.testing.assert_array_equal(got.get(), curve.generator_mul(scalars))


@gpu
def test_lagrange_matches_the_domain(rng, monkeypatch):
    tau = toxic(rng)[0]
    for threads in (setup_cuda._LAGRANGE_THREADS, 7):
        monkeypatch.setattr(setup_cuda, "_LAGRANGE_THREADS", threads)
        for log_n, count in ((0, 1), (3, 8), (10, 1000), (12, 4096)):
            domain = Domain(log_n)
            np.testing.assert_array_equal(setup_cuda.lagrange(domain, tau, count).get(), domain.lagrange_at(tau, count))


@gpu
@pytest.mark.parametrize("ks", [(1, 2, 5, 33, 300), (64, 64, 3), (1000,)], ids=str)
def test_transposed_matches_the_flat_product(ks, rng):
    """u = M^T L for A, B, C from the template form equals the flat CSR's transpose times L (CPU),
    narrow and wide index arrays; blocks of 64 and 1000 instances take the warp-summed atomics."""
    import cupy as cp

    from cuzk.backend.cpu import CpuBackend
    from cuzk.groth16.circuit import transpose

    pce = build(random_circuit(rng, ks))
    for circuit in (pce, widened(pce, ("tpl_indptr", "tpl_vars", "wire_cols", "plain_cols", "tpl_cids", "plain_cids"))):
        lag = Fr.random(circuit.num_constraints, rng)
        dev = pce_cuda.upload(circuit)
        ncols = circuit.shape[1]
        acc, mark = cp.empty((ncols, 8), cp.uint64), cp.zeros(ncols, cp.uint8)
        for q, mat in enumerate(circuit.to_csr()):
            out = cp.empty((ncols, 4), cp.uint64)
            setup_cuda.transposed(dev, q, cp.asarray(lag), ncols, acc, mark, out)
            np.testing.assert_array_equal(out.get(), CpuBackend().evaluate(transpose(mat), lag))


def _gpu_params_equal(r1cs, rng) -> None:
    t = toxic(rng)
    want = generate_parameters(r1cs, *t)
    got = generate_parameters_on("cuda", r1cs if not isinstance(r1cs, ConstraintSystem) else build(r1cs), *t)
    assert got == want
    kept = generate_parameters_on("cuda", template_form(r1cs), *t, keep_on_device=True)
    assert kept.vk == want.vk
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        np.testing.assert_array_equal(getattr(kept, name).get(), getattr(want, name))


def constrained_random_circuit(seed: int, tries: int = 50):
    """The first random_circuit, drawing from `seed` on, whose every aux variable is constrained (the
    setup refuses the others: test_unconstrained_aux_refused_as_on_the_cpu), and its rng."""
    for k in range(tries):
        rng = np.random.default_rng([seed, k])
        cs = random_circuit(rng, ks=(1, 2, 5, 33, 300))
        try:
            generate_parameters(cs, *toxic(np.random.default_rng([seed, k])))
        except SetupError:
            continue
        return cs, rng
    raise AssertionError(f"no constrained random circuit in {tries} draws from seed {seed}")


def test_constrained_random_circuits_are_found():
    """Each seed of the GPU comparison below gets a circuit (none is skipped)."""
    for seed in (0, 2, 3, 7):
        cs, _ = constrained_random_circuit(seed)
        assert cs.num_constraints > 0


@gpu
@pytest.mark.parametrize("seed", [0, 2, 3, 7])
def test_parameters_equal_cpu_random_circuits(seed):
    cs, rng = constrained_random_circuit(seed)
    _gpu_params_equal(cs, rng)


@gpu
def test_parameters_equal_cpu_sha256_blocks(rng):
    """A template circuit of gadget rows: three SHA-256 compressions in one batch."""
    from cuzk.gadgets import boolean, sha256

    cs = ConstraintSystem("both")
    with cs.batch(3) as blk:
        sha256.block_no_padding(blk, boolean.alloc(blk, 512, rng.integers(0, 2, (3, 512)).astype(bool)))
    _gpu_params_equal(build(cs), rng)


@gpu
def test_unconstrained_aux_refused_as_on_the_cpu(rng):
    cs = random_circuit(np.random.default_rng(1), ks=(1, 2, 5, 33, 40))
    t = toxic(rng)
    with pytest.raises(SetupError) as cpu:
        generate_parameters(cs, *t)
    with pytest.raises(SetupError) as dev:
        generate_parameters_on("cuda", cs, *t)
    assert str(dev.value) == str(cpu.value)


@gpu
@pytest.mark.parametrize("keep", [False, True], ids=["host", "device"])
def test_proofs_verify_against_a_gpu_key(keep, rng):
    from cuzk.backend import get_backend
    from cuzk.groth16 import CompiledCircuit, prove, verify
    from cuzk.groth16.synthetic import synthetic_circuit
    from cuzk.groth16.setup_device import setup_on

    cs = synthetic_circuit(3000, 2, rng)
    pce = build(cs)
    params = setup_on("cuda", pce, rng, keep_on_device=keep)
    witness = cs.witness()
    inputs = Fr.to_ints(witness[1:cs.num_inputs])
    proof = prove(params, CompiledCircuit(pce), witness, backend=get_backend("cuda"))
    assert verify(params.vk, inputs, proof)
    assert not verify(params.vk, [inputs[0] + 1, *inputs[1:]], proof)
