"""One 32GiB partition's PCE on a GPU host's CPU cores: build from the recorded circuit, size, and
`evaluate_pce` on the CPU backend with every core (a random witness: evaluation cost does not
depend on the values). Prints JSON lines; a progress measurement for issue 12, not a bench result.
    PYTHONPATH=. python3 bench/device_pce32.py
"""
from __future__ import annotations

import json
import os
import resource
import time

import numba
import numpy as np

from cuzk.backend.cpu import CpuBackend
from cuzk.ff import Fr
from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.circuit import StackedShape, circuit
from cuzk.r1cs.pce import build


def rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    t = time.perf_counter()
    cs = circuit(StackedShape.from_config(PoRepConfig.from_proof("StackedDrg32GiBV1_1")))
    record = time.perf_counter() - t
    t = time.perf_counter()
    pce = build(cs)
    built = time.perf_counter() - t
    size = sum(a.nbytes for a in pce.to_arrays().values())
    print(json.dumps({"what": "pce_build", "constraints": pce.num_constraints, "record_s": round(record, 2),
                      "build_s": round(built, 2), "bytes": size, "peak_rss_gib": round(rss_gib(), 2)}), flush=True)
    del cs
    w = Fr.random(pce.num_inputs + pce.num_aux, np.random.default_rng(1))
    backend = CpuBackend()
    small = build(circuit(StackedShape.from_config(PoRepConfig.from_proof("StackedDrg2KiBV1_1"))))
    backend.evaluate_pce(small, Fr.random(small.num_inputs + small.num_aux, np.random.default_rng(2)))  # compile
    times = []
    for _ in range(3):
        t = time.perf_counter()
        a, b, c = backend.evaluate_pce(pce, w)
        times.append(time.perf_counter() - t)
        del a, b, c
    print(json.dumps({"what": "pce_eval", "constraints": pce.num_constraints, "threads": numba.get_num_threads(),
                      "cores": os.cpu_count(), "eval_s": [round(x, 2) for x in times],
                      "peak_rss_gib": round(rss_gib(), 2)}), flush=True)


if __name__ == "__main__":
    main()
