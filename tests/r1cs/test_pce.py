"""cuzk.r1cs.pce: the template form equals the flat CSR (row for row), its evaluation equals three flat
evaluations, its densities equal the prover's, and its arrays round-trip and are checked on the way in."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, num, sha256
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.groth16.circuit import Circuit
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination, Variable
from cuzk.r1cs.pce import COEFF_FULL, COEFF_MINUS_ONE, COEFF_ONE, COEFF_POW2, COEFF_SMALL, PCE, build, coeff_classes

R = Fr.modulus
BACKEND = CpuBackend()


def check_pce(cs: ConstraintSystem, rng: np.random.Generator) -> PCE:
    """Build the PCE of cs and compare it with cs's flat matrices in every way; returns it."""
    pce = build(cs)  # before cs.to_csr: both start from the same coefficient table
    flat = cs.to_csr()
    for want, got in zip(flat, pce.to_csr()):
        assert got.shape == want.shape
        for field in ("indptr", "indices", "coeff_ids", "coeffs"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
            assert getattr(got, field).dtype == getattr(want, field).dtype, field
    w = Fr.random(cs.num_inputs + cs.num_aux, rng)
    for got, m in zip(BACKEND.evaluate_pce(pce, w), flat):
        np.testing.assert_array_equal(got, BACKEND.evaluate(m, w))
    circuit = Circuit(*flat, cs.num_inputs)
    np.testing.assert_array_equal(pce.a_aux_density, circuit.a_aux_density)
    np.testing.assert_array_equal(pce.b_input_density, circuit.b_input_density)
    np.testing.assert_array_equal(pce.b_aux_density, circuit.b_aux_density)
    assert pce.a_aux_density is pce.a_aux_density  # unpacked once: a GPU keeps its copy by this array
    pickled = pickle.loads(pickle.dumps(pce))  # without the unpacked masks, remade on use
    assert "a_aux_density" not in pickled.__dict__
    np.testing.assert_array_equal(pickled.b_aux_density, pce.b_aux_density)
    again = PCE.from_arrays({name: arr.copy() for name, arr in pce.to_arrays().items()})
    for name, arr in pce.to_arrays().items():
        np.testing.assert_array_equal(again.to_arrays()[name], arr, err_msg=name)
    return pce


# ---------------------------------------------------------------- random template circuits

def rand_coeff(rng: np.random.Generator) -> int:
    kind = int(rng.integers(5))
    if kind == 0:
        return 1
    if kind == 1:
        return R - 1
    if kind == 2:
        return int(rng.integers(2, 1000)) * (1 if rng.integers(2) else -1) % R
    if kind == 3:
        return 1 << int(rng.integers(1, 255))
    return Fr.to_ints(Fr.random(1, rng))[0] or 7


def rand_lc(rng: np.random.Generator, pool: list[Variable], most: int = 4) -> LinearCombination:
    lc = LinearCombination()
    for _ in range(int(rng.integers(0, most + 1))):
        lc.add_term(pool[int(rng.integers(len(pool)))], rand_coeff(rng))
    return lc


def rand_rows(rng: np.random.Generator, scope, pool: list[Variable], n: int) -> None:
    """n rows over the pool, one by one, then a few in bulk with repeated codes (which merge in the CSR)."""
    for _ in range(n):
        scope.enforce(rand_lc(rng, pool), rand_lc(rng, pool), rand_lc(rng, pool))
    rows = int(rng.integers(1, 4))
    codes = np.array([v.code for v in pool], np.int64)[rng.integers(0, len(pool), (rows, 3))]
    codes[:, 2] = codes[:, 0]  # a repeat in every bulk row of A
    coeffs = np.array([1, -1, int(rng.integers(2, 50))], np.int64)
    scope.enforce_many((codes, coeffs), (codes[:, :1], np.array([-1])), None, rows)


def rand_block(rng: np.random.Generator, blk, outside: list[Variable], outside_codes: np.ndarray,
               nested: bool) -> list[Variable]:
    """Allocations, wires and rows in a batch block; returns its aux variables."""
    total = blk.total
    own = [blk.alloc(Fr.random(total, rng)) for _ in range(int(rng.integers(1, 5)))]
    own += [blk.alloc_input(Fr.random(total, rng)) for _ in range(int(rng.integers(0, 3)))]
    wires = []
    if outside_codes is not None:
        for _ in range(int(rng.integers(0, 4))):  # per instance an outside variable, ONE included
            wires.append(blk.wire(outside_codes[rng.integers(0, len(outside_codes), blk.k)]))
    rand_rows(rng, blk, outside + own + wires, int(rng.integers(1, 8)))
    if nested:
        with blk.batch(int(rng.integers(1, 4))) as inner:
            picks = [own[int(rng.integers(len(own)))] for _ in range(inner.k)]
            inner_own = [inner.alloc(Fr.random(inner.total, rng)) for _ in range(int(rng.integers(1, 3)))]
            rand_rows(rng, inner, [ONE, inner.wire(picks)] + inner_own + outside[:2], int(rng.integers(1, 5)))
        rand_rows(rng, blk, outside + own, 2)
    return [v for v in own if v.kind == 3]  # LOCAL_AUX


def random_circuit(rng: np.random.Generator) -> ConstraintSystem:
    """Plain rows, batch blocks (wired to outside variables and to a closed sibling block, nested,
    shared templates) and inputs allocated after the blocks, with coefficients +-1, small, 2^e and full."""
    cs = ConstraintSystem("both")
    pool = [ONE] + [cs.alloc_input(Fr.random(1, rng)[0]) for _ in range(2)] + \
        [cs.alloc(Fr.random(1, rng)[0]) for _ in range(4)]
    for step in range(int(rng.integers(2, 5))):
        rand_rows(rng, cs, pool, int(rng.integers(0, 5)))
        k = int(rng.integers(1, 6))
        codes = np.array([v.code for v in pool], np.int64)
        with cs.batch(k) as blk:
            aux = rand_block(rng, blk, pool[:3], codes, nested=bool(rng.integers(2)))
        with cs.batch(k) as sibling:  # wired to the first block's instances
            y = sibling.wire(aux[0])
            z = sibling.alloc(Fr.random(k, rng))
            sibling.enforce(y + 2 * z, y - ONE, z * rand_coeff(rng))
        pool += [cs.alloc(Fr.random(1, rng)[0]), cs.alloc_input(Fr.random(1, rng)[0])]
    return cs


def test_random_template_circuits(rng):
    for _ in range(8):
        check_pce(random_circuit(rng), rng)


def test_plain_only_and_empty(rng):
    cs = ConstraintSystem("both")
    check_pce(cs, rng)
    pool = [ONE] + [cs.alloc(Fr.random(1, rng)[0]) for _ in range(3)]
    rand_rows(rng, cs, pool, 5)
    pce = check_pce(cs, rng)
    assert pce.blocks.shape == (0, 9) and pce.plain_segs.tolist() == [[0, cs.num_constraints]]


def test_equal_templates_are_stored_once(rng):
    """Two blocks with equal rows but other wires share one template; their wire tables differ."""
    cs = ConstraintSystem("both")
    g = [cs.alloc(Fr.random(1, rng)[0]) for _ in range(3)]
    for wires in ([g[0], g[1]], [g[2], ONE]):
        with cs.batch(2) as blk:
            x, e = blk.alloc(Fr.random(2, rng)), blk.wire(wires)
            blk.enforce(x + e, x - g[0], 5 * e)
    pce = check_pce(cs, rng)
    assert pce.tpl_rows.shape == (2,) and pce.blocks[:, 0].tolist() == [0, 0]
    assert pce.wire_cols.tolist() == [cs.num_inputs + 0, cs.num_inputs + 1, cs.num_inputs + 2, 0]


def test_cancelling_wire_drops_density(rng):
    """A wired variable equal to a shared one cancels (bellperson's LC merge): B's row e - h is empty
    in every instance when e is h, so h is not dense in B (it is in A, through e + 2g)."""
    cs = ConstraintSystem("both")
    g, h = cs.alloc(Fr.random(1, rng)[0]), cs.alloc(Fr.random(1, rng)[0])
    with cs.batch(2) as blk:
        e = blk.wire([h, h])
        blk.enforce(e + 2 * g, e - h, ONE)
    pce = check_pce(cs, rng)
    assert pce.a_aux_density.tolist() == [True, True] and pce.b_aux_density.tolist() == [False, False]


def test_coefficient_classes():
    values = [1, R - 1, 2, R - 2**200, 12345, R - 2**63 - 1, 2**64, 3 * 2**70]
    assert coeff_classes(values).tolist() == [COEFF_ONE, COEFF_MINUS_ONE, COEFF_POW2, COEFF_POW2, COEFF_SMALL,
                                              COEFF_SMALL, COEFF_POW2, COEFF_FULL]


def test_from_arrays_refuses_inconsistent_arrays(rng):
    cs = random_circuit(rng)
    arrays = build(cs).to_arrays()

    def refused(name, change):
        bad = {n: a.copy() for n, a in arrays.items()}
        bad[name] = change(bad[name])
        with pytest.raises(InputError):
            PCE.from_arrays(bad)

    tvars = next(n for n in ("a_tpl_vars", "b_tpl_vars", "c_tpl_vars") if arrays[n].size)
    refused(tvars, lambda a: np.concatenate([a[:-1], [a[-1] + (1 << 20 << 2)]]).astype(a.dtype))  # index past its block
    refused(tvars, lambda a: a.astype(np.float64))
    refused("a_plain_cids", lambda a: np.full_like(a, 60000) if a.size else np.array([0], a.dtype))
    refused("wire_cols", lambda a: np.full_like(a, cs.num_inputs + cs.num_aux) if a.size else np.array([0], a.dtype))
    refused("blocks", lambda a: a + np.array([0, 0, 1, 0, 0, 0, 0, 0, 0]))  # rows no longer covered
    refused("coeffs", lambda a: a[::-1].copy())
    refused("b_aux_bits", lambda a: a[:-1])
    refused("sizes", lambda a: a + np.array([0, 0, 1]))
    with pytest.raises(InputError):
        PCE.from_arrays({n: a for n, a in arrays.items() if n != "plain_segs"})


def test_evaluate_pce_checks_the_witness(rng):
    pce = build(random_circuit(rng))
    with pytest.raises(InputError):
        BACKEND.evaluate_pce(pce, Fr.random(pce.num_inputs + pce.num_aux - 1, rng))


# ---------------------------------------------------------------- gadget circuits

@pytest.mark.parametrize("mode,replay", [("both", False), ("constraints", True)])
def test_sha256_compression(mode, replay, rng):
    """One compression at top level and one batch of 3 (replayed rows in constraints mode)."""
    cs = ConstraintSystem(mode, replay=replay)
    vals = lambda k: None if mode == "constraints" else rng.integers(0, 2, (k, 512)).astype(bool)  # noqa: E731
    sha256.block_no_padding(cs, boolean.alloc(cs, 512, vals(1)))
    with cs.batch(3) as blk:
        sha256.block_no_padding(blk, boolean.alloc(blk, 512, vals(3)))
    pce = check_pce(cs, rng)
    assert pce.blocks[:, 1].tolist() == [3]
    if mode == "both":
        a, b, c = BACKEND.evaluate_pce(pce, cs.witness())
        np.testing.assert_array_equal(Fr.mul(a, b), c)


def test_poseidon_hash(rng):
    cs = ConstraintSystem("both")
    poseidon_hash(cs, num.alloc_many(cs, 2, Fr.random(2, rng).reshape(1, 2, 4)))
    with cs.batch(4) as blk:
        poseidon_hash(blk, num.alloc_many(blk, 11, Fr.random(44, rng).reshape(4, 11, 4)))
    pce = check_pce(cs, rng)
    a, b, c = BACKEND.evaluate_pce(pce, cs.witness())
    np.testing.assert_array_equal(Fr.mul(a, b), c)
    assert (Fr.mul(a, b) != c).any(axis=1).sum() == 0


# ---------------------------------------------------------------- the 2KiB PoRep partition circuit

@pytest.mark.slow
def test_2kib_partition_circuit(rng):
    from cuzk.porep.challenges import PoRepConfig
    from cuzk.porep.circuit import StackedShape, circuit

    cs = circuit(StackedShape.from_config(PoRepConfig.from_proof("StackedDrg2KiBV1_1")))
    pce = check_pce(cs, rng)
    assert pce.blocks[:, 1].tolist() == [2] and pce.nbytes * 2.5 < sum(
        m.indptr.nbytes + m.indices.nbytes + m.coeff_ids.nbytes for m in cs.to_csr())
