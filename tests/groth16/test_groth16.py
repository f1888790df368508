"""Groth16 end to end on the CPU backend: setup, prove, verify (single and batch), against bellperson's
structure and, once, py_ecc's pairing."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError, ParameterMismatchError, ProofFormatError, SetupError
from cuzk.ff.domain import Domain
from cuzk.ff.fields import Fr
from cuzk.groth16 import (Proof, as_circuit, generate_parameters, prepare_verifying_key, prove, prove_many, setup,
                          verify, verify_batch)
from cuzk.groth16 import prover
from cuzk.groth16.synthetic import synthetic_circuit
from cuzk.r1cs import ONE, ConstraintSystem

R = Fr.modulus


def cubic(x: int) -> ConstraintSystem:
    """x^3 + x + 5 = out, out public."""
    cs = ConstraintSystem()
    out = cs.alloc_input((x**3 + x + 5) % R)
    xv = cs.alloc(x)
    x2 = cs.alloc(x * x % R)
    cs.enforce(xv, xv, x2)
    x3 = cs.alloc(x**3 % R)
    cs.enforce(x2, xv, x3)
    cs.enforce(x3 + xv + 5, ONE, out)
    return cs


def random_lc_circuit(rng: np.random.Generator, rows: int, inputs: int) -> ConstraintSystem:
    """Rows a * b = out with random 1-3 term combinations (small, big and -1 coefficients) of ONE,
    the inputs and earlier outputs; inputs appear in A, B and C alike."""
    cs = ConstraintSystem()
    variables, values = [ONE], [1]
    for _ in range(inputs):
        values.append(int(rng.integers(0, 2**63)) * int(rng.integers(1, 2**63)) % R)
        variables.append(cs.alloc_input(values[-1]))

    def lc():
        acc, val = 0, 0
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, len(variables)))
            coeff = [1, R - 1, int(rng.integers(2, 100)), int.from_bytes(rng.bytes(40), "little") % R][
                int(rng.integers(0, 4))]
            acc, val = acc + variables[i] * coeff, (val + coeff * values[i]) % R
        return acc, val

    for _ in range(rows):
        (a, av), (b, bv) = lc(), lc()
        if rng.integers(0, 3) == 0:  # some rows with a C side that is not just the output
            c, cv = lc()
            ov = (av * bv - cv) % R
            out = cs.alloc(ov)
            cs.enforce(a, b, c + out)
        else:
            ov = av * bv % R
            out = cs.alloc(ov)
            cs.enforce(a, b, out)
        variables.append(out)
        values.append(ov)
    assert cs.is_satisfied()
    return cs


def public(cs: ConstraintSystem) -> np.ndarray:
    return cs.witness()[1:cs.num_inputs]


def test_cubic(rng, cpu):
    x = int(rng.integers(0, 2**62))
    cs = cubic(x)
    params = setup(cs, rng)
    proof = prove(params, cs, backend=cpu, rng=rng)
    out = (x**3 + x + 5) % R
    assert verify(params.vk, [out], proof)
    assert not verify(params.vk, [(out + 1) % R], proof)
    assert set(proof.timings) >= {"evaluate", "ntt", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2",
                                  "total"}
    other = cubic(x + 1)  # same circuit, another witness: same parameters
    assert verify(params.vk, [(x**3 + 3 * x**2 + 4 * x + 7) % R], prove(params, other, backend=cpu))


def test_prove_many_equals_proofs_one_after_another(rng, cpu, monkeypatch):
    """Three witnesses of one circuit (an array, and callables that make theirs): the same proofs as
    prove's one after another from the same rng, each valid for its own public input."""
    params = setup(cubic(3), rng)
    circuit = as_circuit(cubic(3))
    systems = [cubic(int(x)) for x in rng.integers(1, 2**62, size=3)]
    seed = int(rng.integers(1 << 32))
    shared = np.random.default_rng(seed)
    singles = [prove(params, circuit, cs.witness(), cpu, rng=shared) for cs in systems]
    monkeypatch.setattr(prover, "_GATHER_ROWS", 1)  # the query vectors' scalars gathered row by row
    many = prove_many(params, circuit, [systems[0].witness(), systems[1].witness, lambda: systems[2].witness()],
                      cpu, rng=np.random.default_rng(seed))
    assert [p.to_bytes() for p in many] == [p.to_bytes() for p in singles]
    assert len({p.to_bytes() for p in many}) == 3
    for cs, proof in zip(systems, many):
        assert verify(params.vk, public(cs), proof)
        assert {"msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "total"} <= set(proof.timings)
    assert not verify(params.vk, public(systems[0]), many[1])


def test_random_lc_circuits(rng, cpu):
    for rows, inputs in ((int(rng.integers(5, 30)), int(rng.integers(0, 4))), (1, 1)):
        cs = random_lc_circuit(rng, rows, inputs)
        params = setup(cs, rng)
        proof = prove(params, cs, backend=cpu)
        assert verify(params.vk, public(cs), proof)
        if inputs:
            bad = Fr.to_ints(public(cs))
            bad[int(rng.integers(0, inputs))] ^= 1
            assert not verify(params.vk, bad, proof)


def test_query_points_match_bellperson_definitions(rng):
    """For the cubic, every key point against u_i, v_i, w_i evaluated at tau by plain Lagrange
    interpolation over the 8-point domain (rows 0-2 the circuit, 3-4 the input rows x_i * 0 = 0)."""
    cs = cubic(3)
    tau, alpha, beta, gamma, delta = (int.from_bytes(rng.bytes(40), "little") % R for _ in range(5))
    params = generate_parameters(cs, tau, alpha, beta, gamma, delta)
    n, w = 8, Domain(3).root
    dom = [pow(w, j, R) for j in range(n)]

    def lagrange(j):
        num = den = 1
        for m in range(n):
            if m != j:
                num, den = num * (tau - dom[m]) % R, den * (dom[j] - dom[m]) % R
        return num * pow(den, -1, R) % R

    a, b, c = (m.to_dense_ints() for m in cs.to_csr())
    lag = [lagrange(j) for j in range(n)]
    u = [sum(a[r][i] * lag[r] for r in range(3)) % R for i in range(5)]
    v = [sum(b[r][i] * lag[r] for r in range(3)) % R for i in range(5)]
    wt = [sum(c[r][i] * lag[r] for r in range(3)) % R for i in range(5)]
    u[0], u[1] = (u[0] + lag[3]) % R, (u[1] + lag[4]) % R
    ext = [(beta * u[i] + alpha * v[i] + wt[i]) % R for i in range(5)]
    zt = (pow(tau, n, R) - 1) % R
    g1 = {"ic": [e * pow(gamma, -1, R) % R for e in ext[:2]],
          "l": [e * pow(delta, -1, R) % R for e in ext[2:]],
          "h": [pow(tau, i, R) * zt * pow(delta, -1, R) % R for i in range(n - 1)],
          "a": u,  # every variable of the cubic is in A
          "b_g1": [v[0], v[2]]}  # B holds ONE and x only
    for name, scalars in g1.items():
        points = params.vk.ic if name == "ic" else getattr(params, name)
        assert G1.eq(points, G1.scalar_mul(G1.generator(), scalars)).all(), name
    assert G2.eq(params.b_g2, G2.scalar_mul(G2.generator(), [v[0], v[2]])).all()
    assert G1.eq(params.vk.alpha_g1, G1.scalar_mul(G1.generator(), alpha))
    assert G2.eq(params.vk.gamma_g2, G2.scalar_mul(G2.generator(), gamma))


def test_tampered_proofs_fail(keyed, cpu, rng):
    cs, params = keyed
    proof = prove(params, cs, backend=cpu)
    data = proof.to_bytes()
    assert verify(params.vk, public(cs), Proof.from_bytes(data))
    for bit in rng.choice(192 * 8, size=6, replace=False):
        bad = bytearray(data)
        bad[bit // 8] ^= 1 << (bit % 8)
        try:
            tampered = Proof.from_bytes(bytes(bad))
        except ProofFormatError:
            continue  # not a valid encoding any more: rejected on decoding
        assert not verify(params.vk, public(cs), tampered)
    swapped = Proof(proof.c, proof.b, proof.a)
    assert not verify(params.vk, public(cs), swapped)


def test_other_keys_fail(keyed, cpu, rng):
    cs, params = keyed
    proof = prove(params, cs, backend=cpu)
    assert not verify(setup(cs, rng).vk, public(cs), proof)  # same circuit, other toxic waste
    other = synthetic_circuit(cs.num_constraints + 1, cs.num_inputs - 1, rng)
    assert not verify(setup(other, rng).vk, public(cs), proof)  # another circuit, as many inputs


def test_batch_verification(keyed, cpu, rng):
    cs, params = keyed
    pvk = prepare_verifying_key(params.vk)
    proofs = [prove(params, cs, backend=cpu) for _ in range(3)]
    inputs = [public(cs)] * 3
    assert verify_batch(pvk, inputs, proofs, rng)
    assert verify_batch(pvk, [], [])
    wrong = Fr.add(public(cs), Fr.ones(cs.num_inputs - 1))
    assert not verify_batch(pvk, [inputs[0], wrong, inputs[2]], proofs)
    assert not verify_batch(pvk, inputs, [proofs[0], Proof(proofs[1].a, proofs[1].b, proofs[0].c), proofs[2]])
    with pytest.raises(InputError):
        verify_batch(pvk, inputs[:2], proofs)


def test_unsatisfied_witness_gives_an_invalid_proof(keyed, cpu):
    cs, params = keyed
    w = cs.witness()
    w[-1] = Fr.add(w[-1:], Fr.ones(1))[0]
    assert not verify(params.vk, public(cs), prove(params, cs, w, backend=cpu))


def test_bad_inputs(keyed, cpu, rng):
    cs, params = keyed
    small = synthetic_circuit(8, 1, rng)
    with pytest.raises(ParameterMismatchError, match="h: "):
        prove(params, small, backend=cpu)
    w = cs.witness()
    with pytest.raises(InputError, match="witness has"):
        prove(params, cs, w[:-1], backend=cpu)
    w[0] = Fr.from_ints([2])[0]
    with pytest.raises(InputError, match="ONE"):
        prove(params, cs, w, backend=cpu)
    with pytest.raises(InputError, match="public inputs"):
        verify(params.vk, [], prove(params, cs, backend=cpu))
    loose = ConstraintSystem()
    loose.alloc(1)  # never constrained
    x = loose.alloc(2)
    loose.enforce(x, x, x * 2)
    with pytest.raises(SetupError, match="appear in no constraint"):
        setup(loose, rng)


def test_against_py_ecc_pairing(keyed, cpu):
    """One verification with py_ecc's pairing instead of arkworks':
    e(A, B) e(-alpha, beta) e(-IC, gamma) e(-C, delta) = 1."""
    from py_ecc import optimized_bls12_381 as pe

    cs, params = keyed
    proof = prove(params, cs, backend=cpu)
    vk = params.vk

    def g1(p):
        x, y = G1.to_ints(p)[0]
        return (pe.FQ(x), pe.FQ(y), pe.FQ.one())

    def g2(p):
        (x0, x1), (y0, y1) = G2.to_ints(p)[0]
        return (pe.FQ2([x0, x1]), pe.FQ2([y0, y1]), pe.FQ2.one())

    ic = g1(vk.ic[0])
    for x, point in zip(Fr.to_ints(public(cs)), vk.ic[1:]):
        ic = pe.add(ic, pe.multiply(g1(point), x))
    pairs = [(g2(proof.b), g1(proof.a)), (g2(vk.beta_g2), pe.neg(g1(vk.alpha_g1))),
             (g2(vk.gamma_g2), pe.neg(ic)), (g2(vk.delta_g2), pe.neg(g1(proof.c)))]
    acc = pe.FQ12.one()
    for q, p in pairs:
        acc = acc * pe.pairing(q, p, final_exponentiate=False)
    assert pe.final_exponentiate(acc) == pe.FQ12.one()
