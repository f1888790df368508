"""An MSM over chunks of its bases, each chunk's sum added on the host (how cuzk.backend.cuda.stream
streams a key): bit-exact against the whole MSM on the CPU backend, for G1 and G2, chunk sizes that
divide n and that do not, and the identity cases of Curve.sum."""
import numpy as np
import pytest

from cuzk.backend.cpu import CpuBackend
from cuzk.backend.cuda.stream import chunk_ranges
from cuzk.ec.curves import G1, G2
from cuzk.ff.fields import Fr

CURVES = {"g1": G1, "g2": G2}


@pytest.mark.parametrize("n, chunk", [(10, 3), (12, 4), (5, 8), (1, 1), (0, 4)])
def test_chunk_ranges_cover_every_point_once(n, chunk):
    ranges = chunk_ranges(n, chunk)
    covered = [i for lo, hi in ranges for i in range(lo, hi)]
    assert covered == list(range(n))
    assert all(0 < hi - lo <= chunk for lo, hi in ranges)


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("chunk", [7, 16, 64])
def test_chunk_sums_equal_the_whole_msm(group, chunk, rng):
    curve, cpu, n = CURVES[group], CpuBackend(), 50
    bases, scalars = curve.random(n, rng), Fr.random(n, rng)
    scalars[::5] = Fr.zeros(1)[0]
    msm = getattr(cpu, f"msm_{group}")
    parts = [msm(bases[lo:hi], scalars[lo:hi]) for lo, hi in chunk_ranges(n, chunk)]
    assert np.array_equal(curve.sum(parts), msm(bases, scalars))


def test_sum_of_nothing_and_of_identities_is_the_identity(rng):
    identity = G1.identity(1)[0]
    assert np.array_equal(G1.sum([]), identity)
    p = G1.random(1, rng)[0]
    assert np.array_equal(G1.sum([identity, p, identity]), p)
    assert np.array_equal(G1.sum([p, G1.to_affine(G1.neg(p))]), identity)
