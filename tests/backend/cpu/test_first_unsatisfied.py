"""CpuBackend.first_unsatisfied: the row check a_r b_r = c_r on evaluations, against Fr.mul on ints."""
from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.errors import InputError
from cuzk.ff.fields import Fr

R = Fr.modulus


def _triple(rng, rows: int):
    a, b = (Fr.from_ints([int(x) % R for x in rng.integers(0, 2**63, rows)]) for _ in range(2))
    a[::3] = Fr.zeros(len(a[::3]))  # zero rows are common in real circuits
    return a, b, Fr.mul(a, b)


@pytest.mark.parametrize("rows", [1, 2, 777, 4096])
def test_satisfied_triples_pass(rng, rows):
    assert get_backend("cpu").first_unsatisfied(*_triple(rng, rows)) is None


@pytest.mark.parametrize("where", [[0], [388], [776], [500, 120], [1, 0, 776]])
def test_the_first_failing_row_is_named(rng, where):
    a, b, c = _triple(rng, 777)
    for r in where:
        c[r] = Fr.add(c[r:r + 1], Fr.ones(1))[0]
    assert get_backend("cpu").first_unsatisfied(a, b, c) == min(where)


def test_a_non_canonical_product_is_caught(rng):
    """c[5] holding its Montgomery limbs plus r (the same value, not canonical) is a mismatch."""
    a, b, c = _triple(rng, 8)
    raw = sum(int(x) << (64 * i) for i, x in enumerate(c[5])) + R
    assert raw < 2**256
    c[5] = np.array([(raw >> (64 * i)) & (2**64 - 1) for i in range(4)], np.uint64)
    assert get_backend("cpu").first_unsatisfied(a, b, c) == 5


def test_empty_is_satisfied():
    z = Fr.zeros(0)
    assert get_backend("cpu").first_unsatisfied(z, z, z) is None


@pytest.mark.parametrize("bad", [lambda x: x[:-1], lambda x: x.astype(np.int64), lambda x: x[:, :3], lambda x: x[:, 0]])
def test_bad_arguments_are_typed_errors(rng, bad):
    a, b, c = _triple(rng, 5)
    with pytest.raises(InputError, match="a, b, c must be"):
        get_backend("cpu").first_unsatisfied(a, b, bad(c))
