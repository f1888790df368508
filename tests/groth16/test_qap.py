"""cuzk.groth16.qap (and cuzk.ff.domain.QapRows): the rows, domains, padding, input-row term and H
queries of bellperson's and snarkjs's reductions, against small cases worked by hand with Python
integers (Lagrange bases from Domain.lagrange_at over the whole domain, which tests/ff/test_domain.py
checks against the product formula)."""
from __future__ import annotations


import numpy as np
import pytest

from cuzk.errors import SetupError
from cuzk.ff.domain import Domain, QapRows
from cuzk.ff.fields import Fr
from cuzk.groth16.circuit import as_circuit
from cuzk.groth16.qap import BellpersonQap, SnarkjsQap
from cuzk.groth16.synthetic import synthetic_circuit

R = Fr.modulus


def scalar(rng: np.random.Generator) -> int:
    return int.from_bytes(rng.bytes(40), "little") % (R - 1) + 1


@pytest.mark.parametrize("m, k, rows, n", [(0, 1, 1, 1), (1, 1, 2, 2), (3, 2, 5, 8), (5, 3, 8, 8), (6, 3, 9, 16)])
def test_rows_domain_and_h_length(m, k, rows, n):
    """m constraint rows, then k input rows; the domain the next power of two; H: n - 1 points for
    bellperson, n for snarkjs (on roots of 5 of the same size)."""
    for qap in (QapRows(m, k), BellpersonQap(m, k)):
        assert (qap.rows, qap.input_rows, qap.domain, qap.h_len) == (rows, slice(m, rows), Domain(n.bit_length() - 1),
                                                                     n - 1)
    snark = SnarkjsQap(m, k)
    assert (snark.rows, snark.input_rows, snark.h_len) == (rows, slice(m, rows), n)
    assert snark.domain == Domain.snarkjs(n.bit_length() - 1)


def test_padded_places_the_input_rows_in_a():
    """m = 3, k = 2, n = 8: a = (A w, x, 0, 0, 0), b = (B w, 0 ..), c = (C w, 0 ..)."""
    qap = BellpersonQap(3, 2)
    a = qap.padded(Fr.from_ints([1, 2, 3]), Fr.from_ints([10, 11]))
    b, c = qap.padded(Fr.from_ints([4, 5, 6])), qap.padded(Fr.from_ints([7, 8, 9]))
    assert all(v.shape == (8, 4) and v.dtype == np.uint64 for v in (a, b, c))
    assert Fr.to_ints(a) == [1, 2, 3, 10, 11, 0, 0, 0]
    assert Fr.to_ints(b) == [4, 5, 6, 0, 0, 0, 0, 0]
    assert Fr.to_ints(c) == [7, 8, 9, 0, 0, 0, 0, 0]


def test_input_term_adds_the_input_rows_lagrange(rng):
    """u_i += L_(m+i)(tau) for the inputs only: m = 3, k = 2, 5 columns."""
    qap = BellpersonQap(3, 2)
    tau = scalar(rng)
    basis = Fr.to_ints(Domain(3).lagrange_at(tau))
    lag = qap.lagrange(tau)
    assert Fr.to_ints(lag) == basis[:5]
    u = [scalar(rng) for _ in range(5)]
    got = Fr.from_ints(u)
    qap.add_input_term(got, lag)
    assert Fr.to_ints(got) == [(u[0] + basis[3]) % R, (u[1] + basis[4]) % R, *u[2:]]


def test_h_queries(rng):
    """bellperson: tau^j Z(tau), j < 7, Z = X^8 - 1; snarkjs: the 16-domain's L'_(2j+1)(tau), j < 8
    (roots of 5); SetupError for tau an odd point of snarkjs's 16-domain."""
    tau = scalar(rng)
    z = (pow(tau, 8, R) - 1) % R
    assert Fr.to_ints(BellpersonQap(3, 2).h_query(tau)) == [pow(tau, j, R) * z % R for j in range(7)]
    double = Domain.snarkjs(4)
    assert Fr.to_ints(SnarkjsQap(3, 2).h_query(tau)) == Fr.to_ints(double.lagrange_at(tau))[1::2]
    with pytest.raises(SetupError, match="point of the evaluation domain"):
        SnarkjsQap(3, 2).h_query(double.root)


def test_circuit_reduction(rng):
    """A circuit's qap is bellperson's of its size, and its domain size and H query length follow."""
    circuit = as_circuit(synthetic_circuit(13, 3, rng))
    qap = circuit.qap
    assert qap == BellpersonQap(circuit.num_constraints, circuit.num_inputs)
    assert circuit.domain_size == qap.domain.n and circuit.query_lengths["h"] == qap.h_len
