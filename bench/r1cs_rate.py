"""R1CS recording rates (single, bulk, batch-template paths) and SpMV time of cuzk.r1cs on the CPU.

Run: python -m bench r1cs [--constraints 2000000] [--spmv-constraints 1000000] [--record]
--record appends `pce_build` lines (record + flat CSR export of the batch-template and bulk paths;
the flat CSR stands in for the PCE until there is one) and a `pce_eval` line (A, B and C times the
witness) to bench/results/pce_cpu.jsonl; the other recording rates are printed only.
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from bench.common import device_name, median_ms, print_table, record
from cuzk.ff.fields import Fr
from cuzk.r1cs import ONE, ConstraintSystem, evaluate

BITS = 32
BIT_VALUES = Fr.from_ints([0, 1])


def word_template(scope, k: int, with_values: bool, rng) -> None:
    """SHA-like rows per instance: two 32-bit words as booleans, packing, and their XOR (130 rows)."""
    words = []
    for _ in range(2):
        bits = []
        for i in range(BITS):
            b = scope.alloc(BIT_VALUES[rng.integers(0, 2, k)] if with_values else None)
            scope.enforce(ONE - b, b, None)  # boolean: (1 - b) * b = 0
            bits.append(b)
        packed = scope.alloc(Fr.random(1, rng).repeat(k, 0) if with_values else None)
        lc = bits[0].lc()
        for i in range(1, BITS):
            lc.add_term(bits[i], 1 << i)
        scope.enforce(lc, ONE, packed)
        words.append(bits)
    for a, b in zip(*words):  # xor: (2a) * b = a + b - c
        c = scope.alloc(BIT_VALUES[rng.integers(0, 2, k)] if with_values else None)
        scope.enforce(a * 2, b, a + b - c)


ROWS_PER_INSTANCE = 2 * (BITS + 1) + BITS


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def batch_system(k: int, mode: str, rng) -> ConstraintSystem:
    cs = ConstraintSystem(mode)
    with cs.batch(k) as blk:
        word_template(blk, k, mode != "constraints", rng)
    return cs


def bulk_system(n: int) -> ConstraintSystem:
    """n rows a0 + 2 a1 - a2 times b = c over fresh aux variables, recorded with enforce_many."""
    cs = ConstraintSystem("constraints")
    v = cs.alloc_many(3 * n + 2)
    rows = np.arange(n)
    a = (np.stack([v[rows], v[rows + 1], v[rows + 2]], axis=1), np.array([1, 2, -1]))
    cs.enforce_many(a, (v[rows + 3][:, None], np.array([1])), (v[3 * rows + 2][:, None], np.array([1])))
    return cs


def single_system(n: int) -> ConstraintSystem:
    cs = ConstraintSystem("constraints")
    x = cs.alloc()
    for _ in range(n):
        y = cs.alloc()
        cs.enforce(x + 2 * y, y, x - 1)
        x = y
    return cs


def run(args) -> None:
    rng = np.random.default_rng(1)
    n = args.constraints
    rows = []

    def add(path, what, count, seconds):
        rows.append({"bench": "r1cs", "path": path, "what": what, "constraints": count,
                     "s": round(seconds, 3), "per_s": count / seconds})

    lines = []
    warm = batch_system(10, "both", rng)  # load the numba kernels before timing
    warm.is_satisfied()
    bulk_system(10).to_csr()
    k = n // ROWS_PER_INSTANCE
    for mode in ("constraints", "witness"):
        cs, t_rec = timed(lambda: batch_system(k, mode, rng))
        add(f"batch ({mode})", f"record {ROWS_PER_INSTANCE} rows x K={k}", cs.num_constraints, t_rec)
        if mode == "constraints":
            _, t_csr = timed(cs.to_csr)
            add("batch (constraints)", "to_csr (tile + offsets + sort)", cs.num_constraints, t_csr)
            add("batch (constraints)", "record + to_csr", cs.num_constraints, t_rec + t_csr)
            lines.append({"bench": "pce_build", "n": cs.num_constraints, "ms": round((t_rec + t_csr) * 1e3, 1),
                          "workload": f"batch template, {ROWS_PER_INSTANCE} rows x K={k}", "record_ms":
                          round(t_rec * 1e3, 1), "to_csr_ms": round(t_csr * 1e3, 1)})
        else:
            _, t_w = timed(cs.witness)
            add("batch (witness)", "record + witness()", cs.num_constraints, t_rec + t_w)
    cs, t_rec = timed(lambda: bulk_system(n))
    _, t_csr = timed(cs.to_csr)
    add("bulk enforce_many", "record", n, t_rec)
    add("bulk enforce_many", "record + to_csr", n, t_rec + t_csr)
    lines.append({"bench": "pce_build", "n": n, "ms": round((t_rec + t_csr) * 1e3, 1), "workload": "bulk enforce_many",
                  "record_ms": round(t_rec * 1e3, 1), "to_csr_ms": round(t_csr * 1e3, 1)})
    m = min(n, 100_000)
    cs, t_rec = timed(lambda: single_system(m))
    add("single enforce", "record", m, t_rec)

    # SpMV at about args.spmv_constraints rows of the batch template, with a satisfying-shape witness
    k = args.spmv_constraints // ROWS_PER_INSTANCE
    cs = batch_system(k, "both", rng)
    mats = cs.to_csr()
    w = cs.witness()
    evaluate(mats[0], w[:])  # compile / load
    for name, mat in zip("ABC", mats):
        ms = median_ms(lambda: evaluate(mat, w), args.repeat)
        rows.append({"bench": "spmv", "path": f"spmv {name}", "what": f"nnz={mat.nnz}",
                     "constraints": mat.shape[0], "s": round(ms / 1e3, 4), "per_s": mat.nnz / ms * 1e3})
    ms = median_ms(lambda: [evaluate(mat, w) for mat in mats], args.repeat)
    lines.append({"bench": "pce_eval", "n": cs.num_constraints, "ms": round(ms, 2), "stat": "median",
                  "workload": f"batch template, {ROWS_PER_INSTANCE} rows x K={k}",
                  "nnz": int(sum(mat.nnz for mat in mats)), "note": f"A, B and C times the witness "
                  f"(flat CSR SpMV, cuzk.r1cs.evaluate), median of {args.repeat}"})
    ms = median_ms(cs.is_satisfied, 1, warmup=0)
    rows.append({"bench": "spmv", "path": "is_satisfied", "what": "to_csr + 3 spmv + check",
                 "constraints": cs.num_constraints, "s": round(ms / 1e3, 3), "per_s": cs.num_constraints / ms * 1e3})
    device = device_name("cpu")
    print(f"cuzk.r1cs on {device}  (per_s: constraints/s; for spmv rows: non-zeros/s)")
    print_table(rows, [("path", "path", ""), ("what", "what", ""), ("constraints", "constraints", "d"),
                       ("s", "seconds", ".3f"), ("per_s", "per s", ".3g")])
    if args.record:
        threads = numba.get_num_threads()
        lines = [{**r, "backend": "cpu", "device": device, "threads": threads,
                  "note": r.get("note") or "one run; the flat CSR stands in for the PCE"} for r in lines]
        print("recorded in", *record(lines, "pce"))


def add_parser(sub) -> None:
    p = sub.add_parser("r1cs", help="R1CS recording rates and SpMV")
    _arguments(p)
    p.set_defaults(run=run)


def _arguments(p) -> None:
    p.add_argument("--constraints", type=int, default=2_000_000)
    p.add_argument("--spmv-constraints", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--record", action="store_true",
                   help="append pce_build / pce_eval lines to bench/results/pce_cpu.jsonl")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.r1cs_rate", description=__doc__)
    _arguments(parser)
    run(parser.parse_args())
