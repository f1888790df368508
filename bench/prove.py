"""Groth16 prove of a synthetic 2^k-row circuit (PoRep-like witness), with its stage breakdown."""
from __future__ import annotations

import os
import time

import numba
import numpy as np

from bench.common import device_name, print_table, record
from cuzk.backend import get_backend
from cuzk.groth16 import as_circuit, prove, setup, verify
from cuzk.groth16.synthetic import synthetic_circuit

STAGES = ("inputs", "params", "evaluate", "ntt", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "assemble")
NUM_INPUTS = 2  # public inputs besides ONE


def add_parser(sub) -> None:
    p = sub.add_parser("prove", help="Groth16 prove of a synthetic circuit, per stage")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--log-sizes", default="12,16", help="comma-separated log2 domain sizes")
    p.add_argument("--repeat", type=int, default=3, help="timed proofs per size (after one warm-up)")
    p.set_defaults(run=run)


def run(args) -> None:
    backend = get_backend(args.backend)
    device = device_name(args.backend)
    rows = []
    for log_n in map(int, args.log_sizes.split(",")):
        rng = np.random.default_rng(log_n)
        cs = synthetic_circuit((1 << log_n) - NUM_INPUTS - 1, NUM_INPUTS, rng)  # domain exactly 2^k
        start = time.perf_counter()
        params = setup(cs, rng)
        setup_s = time.perf_counter() - start
        circuit, witness = as_circuit(cs), cs.witness()  # the cached R1CS and one witness
        proofs = [prove(params, circuit, witness, backend=backend) for _ in range(args.repeat + 1)]
        if not verify(params.vk, cs.witness()[1:cs.num_inputs], proofs[-1]):
            raise SystemExit(f"2^{log_n}: the proof does not verify")
        best = min(proofs[1:], key=lambda p: p.timings["total"])
        row = {"bench": "prove", "backend": backend.name, "device": device, "threads": numba.get_num_threads(),
               "load_avg": round(os.getloadavg()[0], 1), "log_n": log_n, "constraints": cs.num_constraints, "aux": cs.num_aux, "setup_s": round(setup_s, 2),
               **{f"{s}_ms": round(best.timings[s] * 1e3, 1) for s in STAGES},
               "total_ms": round(best.timings["total"] * 1e3, 1),
               "median_total_ms": round(float(np.median([p.timings["total"] for p in proofs[1:]])) * 1e3, 1)}
        rows.append(row)
    print(f"Groth16 prove on {device}: synthetic circuits, fastest of {args.repeat} after a warm-up (ms)")
    print_table(rows, [("log_n", "2^k", "d"), *((f"{s}_ms", s, ".0f") for s in STAGES),
                       ("total_ms", "total", ".0f"), ("median_total_ms", "median", ".0f"),
                       ("setup_s", "setup s", ".1f")])
    print("recorded in", record(rows, f"prove_{backend.name}.jsonl"))
