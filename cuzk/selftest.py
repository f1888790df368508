"""`cuzk selftest`: run MSM and NTT on a small random example and check each against a reference
computed another way (MSM: the sum of per-point scalar multiplications; NTT: a naive DFT over
Python integers, and the inverse transforms)."""
from __future__ import annotations

import time

import numpy as np

from cuzk.backend import get_backend
from cuzk.ec.curves import G1, G2, Curve
from cuzk.ff.domain import Domain
from cuzk.ff.fields import Fr


def _naive_msm(curve: Curve, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
    terms = curve.scalar_mul(bases, scalars)
    while len(terms) > 1:
        if len(terms) % 2:
            terms = np.concatenate([terms, curve.to_jacobian(curve.identity(1))])
        terms = curve.add(terms[0::2], terms[1::2])
    return curve.to_affine(terms)[0]


def _naive_dft(values: list[int]) -> list[int]:
    r, n = Fr.modulus, len(values)
    w = Domain(n.bit_length() - 1).root
    powers = [pow(w, k, r) for k in range(n)]
    return [sum(v * powers[(i * j) % n] for j, v in enumerate(values)) % r for i in range(n)]


def run_selftest(backend: str = "auto", log_n: int = 8) -> bool:
    """Print one line per check; True when every check passed."""
    impl = get_backend(backend)
    rng = np.random.default_rng()
    n = 1 << log_n
    print(f"cuzk selftest on the {impl.name} backend, n = {n} random inputs")
    results = []

    def check(label: str, compute, reference) -> None:
        start = time.perf_counter()
        ok = bool(compute())
        ms = (time.perf_counter() - start) * 1e3
        results.append(ok)
        print(f"  {label:<52} {'ok' if ok else 'FAILED':<7} {ms:9.1f} ms  ({reference})")

    for curve, msm in ((G1, impl.msm_g1), (G2, impl.msm_g2)):
        bases, scalars = curve.random(n, rng), Fr.random(n, rng)
        scalars[:4] = Fr.from_ints([0, 1, Fr.modulus - 1, 2])  # edge scalars ride along
        check(f"msm_{curve.name.lower()}: sum of k_i * P_i",
              lambda: np.array_equal(msm(bases, scalars), _naive_msm(curve, bases, scalars)),
              "per-point scalar multiplication, summed")

    values = Fr.random(n, rng)
    check("ntt: forward transform", lambda: Fr.to_ints(impl.ntt(values)) == _naive_dft(Fr.to_ints(values)),
          "naive DFT over Python integers")
    check("intt: inverse of ntt", lambda: np.array_equal(impl.intt(impl.ntt(values)), values), "round trip")
    check("coset_intt: inverse of coset_ntt",
          lambda: np.array_equal(impl.coset_intt(impl.coset_ntt(values)), values), "round trip")
    passed = all(results)
    print(f"{sum(results)}/{len(results)} checks passed" if passed else "SELFTEST FAILED")
    return passed
