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
    rows, setups = [], []
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
        totals = [p.timings["total"] * 1e3 for p in proofs[1:]]
        rows.append({"bench": "prove", "backend": backend.name, "device": device, "n": 1 << log_n,
                     "ms": round(float(np.median(totals)), 1), "stat": "median",
                     "threads": numba.get_num_threads(), "constraints": cs.num_constraints, "aux": cs.num_aux,
                     "load_avg": round(os.getloadavg()[0], 1),
                     **{f"{s}_ms": round(best.timings[s] * 1e3, 1) for s in STAGES},
                     "note": f"synthetic circuit; median of {args.repeat} proofs after a warm-up; the stages are "
                             f"those of the fastest proof ({min(totals):.1f} ms)"})
        setups.append({"bench": "setup", "backend": "cpu", "device": device_name("cpu"), "n": cs.num_constraints,
                       "ms": round(setup_s * 1e3, 1), "threads": numba.get_num_threads(),
                       "note": f"one run: Groth16 setup of the synthetic 2^{log_n} circuit (on the CPU "
                               f"whatever the backend)"})
    print(f"Groth16 prove on {device}: synthetic circuits, median of {args.repeat} after a warm-up "
          f"(stages of the fastest proof, ms)")
    shown = [{**r, "log_n": r["n"].bit_length() - 1, "setup_s": s["ms"] / 1e3} for r, s in zip(rows, setups)]
    print_table(shown, [("log_n", "2^k", "d"), *((f"{s}_ms", s, ".0f") for s in STAGES),
                        ("ms", "median", ".0f"), ("setup_s", "setup s", ".1f")])
    print("recorded in", *record(rows, "prove"), *record(setups, "setup"))
