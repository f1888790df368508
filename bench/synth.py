"""Circuit synthesis rates of cuzk.gadgets on the CPU: constraints and witness values per second.

Workloads: N SHA256 compressions (512 allocated bits each, one batch block), M Poseidon-8 hashes
(one batch block), and a 2KiB-PoRep-sized witness: 4 labels of 20 chained compressions (80 in all)
plus, for 2 challenges, a 6-level binary SHA256 path, 17 Poseidon 8-ary paths of 2 levels and 15
Poseidon-2 column hashes.
Constraint generation is timed as recording (the batch template) and as record + flat CSR export;
witness generation as synthesis in witness mode + the final witness array.

Run: python -m bench synth [--sha 1000] [--poseidon 100000] [--record]
--record appends the witness timings as `witness` lines (n = constraints of the workload) to
bench/results/witness_cpu.jsonl; the recording rates are printed only.
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from bench.common import device_name, print_table, record
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean
from cuzk.gadgets import merkle
from cuzk.gadgets import num
from cuzk.gadgets import poseidon
from cuzk.gadgets import sha256
from cuzk.hashes.poseidon import hash_many
from cuzk.r1cs import ConstraintSystem


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _sha_system(k: int, mode: str, rng) -> ConstraintSystem:
    cs = ConstraintSystem(mode)
    with cs.batch(k) as blk:
        vals = rng.integers(0, 2, (k, 512)).astype(bool) if mode == "witness" else None
        sha256.block_no_padding(blk, boolean.alloc(blk, 512, vals))
    return cs


def _poseidon_system(k: int, mode: str, rng, arity: int = 8) -> ConstraintSystem:
    cs = ConstraintSystem(mode)
    with cs.batch(k) as blk:
        vals = Fr.random(k * arity, rng).reshape(k, arity, 4) if mode == "witness" else None
        poseidon.poseidon_hash(blk, num.alloc_many(blk, arity, vals))
    return cs


def _porep_2kib_witness(rng) -> ConstraintSystem:
    """The 2KiB-sized witness workload (see the module docstring), in witness mode."""
    cs = ConstraintSystem("witness")
    labels, blocks = 4, 20
    with cs.batch(labels) as blk:
        state = sha256.iv(labels)
        for _ in range(blocks):
            bits = boolean.alloc(blk, 512, rng.integers(0, 2, (labels, 512)).astype(bool))
            state = sha256.compression(blk, bits, state)
    challenges = 2
    with cs.batch(challenges) as blk:  # tree_d: binary SHA256, 64 leaves
        leaf = num.alloc(blk, Fr.random(challenges, rng))
        path = [merkle.Level(2, rng.integers(0, 2, challenges), Fr.random(challenges, rng).reshape(challenges, 1, 4))
                for _ in range(6)]
        merkle.root_from_path(blk, leaf, path, "sha256")
    k = challenges * 17
    with cs.batch(k) as blk:  # tree_c / tree_r_last style 8-0-0 paths
        leaf = num.alloc(blk, Fr.random(k, rng))
        path = [merkle.Level(8, rng.integers(0, 8, k), Fr.random(7 * k, rng).reshape(k, 7, 4)) for _ in range(2)]
        merkle.root_from_path(blk, leaf, path, "poseidon")
    k = challenges * 15
    with cs.batch(k) as blk:  # column hashes of 2 layers
        poseidon.poseidon_hash(blk, num.alloc_many(blk, 2, Fr.random(2 * k, rng).reshape(k, 2, 4)))
    return cs


def run(args) -> None:
    rng = np.random.default_rng(1)
    hash_many(Fr.random(8, rng).reshape(1, 8, 4), 8)  # compile / load the kernel
    _sha_system(1, "witness", rng)
    rows = []

    def add(workload, stage, count, unit, seconds, **extra):
        rows.append({"bench": "synth", "workload": workload, "stage": stage, "count": count, "unit": unit,
                     "s": round(seconds, 3), "per_s": count / seconds, **extra})

    for name, build, k in (("sha256 compression", _sha_system, args.sha), ("poseidon-8 hash", _poseidon_system,
                                                                         args.poseidon)):
        cs, t_rec = _timed(lambda: build(k, "constraints", rng))
        add(f"{k} x {name}", "record (templates)", cs.num_constraints, "constraints", t_rec)
        if k <= args.csr_limit:
            _, t_csr = _timed(cs.to_csr)
            add(f"{k} x {name}", "record + flat CSR", cs.num_constraints, "constraints", t_rec + t_csr)
        del cs
        cs, t_wit = _timed(lambda: build(k, "witness", rng))
        w, t_arr = _timed(cs.witness)
        add(f"{k} x {name}", "witness", w.shape[0], "values", t_wit + t_arr, constraints=cs.num_constraints)
        del cs, w
    cs, t = _timed(lambda: _porep_2kib_witness(rng))
    w, t_arr = _timed(cs.witness)
    add("2KiB PoRep-sized (80 compressions + paths)", "witness", w.shape[0], "values", t + t_arr,
        constraints=cs.num_constraints)
    device = device_name("cpu")
    print(f"cuzk.gadgets synthesis on {device} (per_s: constraints/s or witness values/s)")
    print_table(rows, [("workload", "workload", ""), ("stage", "stage", ""), ("count", "count", "d"),
                       ("unit", "unit", ""), ("s", "seconds", ".2f"), ("per_s", "per s", ".3g")])
    if args.record:
        lines = [{"bench": "witness", "backend": "cpu", "device": device, "n": r["constraints"],
                  "ms": round(r["s"] * 1e3, 1), "threads": numba.get_num_threads(), "workload": r["workload"],
                  "witness_len": r["count"],
                  "note": "one run: gadget synthesis in witness mode + the witness array (not a partition circuit)"}
                 for r in rows if r["stage"] == "witness"]
        print("recorded in", *record(lines, "witness"), "(recording rates have no bench name in BENCH.md: "
              "printed only)")


def _arguments(p) -> None:
    p.add_argument("--sha", type=int, default=1000, help="SHA256 compressions (default 1000)")
    p.add_argument("--poseidon", type=int, default=100_000, help="Poseidon-8 hashes (default 100000)")
    p.add_argument("--csr-limit", type=int, default=1_000_000,
                   help="skip the flat CSR export for batches above this many instances")
    p.add_argument("--record", action="store_true",
                   help="append the witness timings to bench/results/witness_cpu.jsonl")


def add_parser(sub) -> None:
    p = sub.add_parser("synth", help="circuit synthesis: constraints/s and witness values/s")
    _arguments(p)
    p.set_defaults(run=run)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.synth", description=__doc__)
    _arguments(parser)
    run(parser.parse_args())
