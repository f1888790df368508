"""Circuit synthesis rates of cuzk.gadgets on the CPU: constraints and witness values per second.

Workloads: N SHA256 compressions (512 allocated bits each, one batch block), M Poseidon-8 hashes
(one batch block), and a 2KiB-PoRep-sized witness: 4 labels of 20 chained compressions (80 in all)
plus, for 2 challenges, a 6-level binary SHA256 path, 17 Poseidon 8-ary paths of 2 levels and 15
Poseidon-2 column hashes.
Constraint generation is timed as recording (the batch template) and as record + flat CSR export;
witness generation as synthesis in witness mode + the final witness array.

Run: python -m bench synth [--sha 1000] [--poseidon 100000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from bench.common import device_name, print_table, record
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean as B
from cuzk.gadgets import merkle as M
from cuzk.gadgets import num as N
from cuzk.gadgets import poseidon as P
from cuzk.gadgets import sha256 as H
from cuzk.r1cs import ConstraintSystem


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _sha_system(k: int, mode: str, rng) -> ConstraintSystem:
    cs = ConstraintSystem(mode)
    with cs.batch(k) as blk:
        vals = rng.integers(0, 2, (k, 512)).astype(bool) if mode == "witness" else None
        H.block_no_padding(blk, B.alloc(blk, 512, vals))
    return cs


def _poseidon_system(k: int, mode: str, rng, arity: int = 8) -> ConstraintSystem:
    cs = ConstraintSystem(mode)
    with cs.batch(k) as blk:
        vals = Fr.random(k * arity, rng).reshape(k, arity, 4) if mode == "witness" else None
        P.poseidon_hash(blk, N.alloc_many(blk, arity, vals))
    return cs


def _porep_2kib_witness(rng) -> ConstraintSystem:
    """The 2KiB-sized witness workload (see the module docstring), in witness mode."""
    cs = ConstraintSystem("witness")
    labels, blocks = 4, 20
    with cs.batch(labels) as blk:
        state = H.iv(labels)
        for _ in range(blocks):
            bits = B.alloc(blk, 512, rng.integers(0, 2, (labels, 512)).astype(bool))
            state = H.compression(blk, bits, state)
    challenges = 2
    with cs.batch(challenges) as blk:  # tree_d: binary SHA256, 64 leaves
        leaf = N.alloc(blk, Fr.random(challenges, rng))
        path = [M.Level(2, rng.integers(0, 2, challenges), Fr.random(challenges, rng).reshape(challenges, 1, 4))
                for _ in range(6)]
        M.root_from_path(blk, leaf, path, "sha256")
    k = challenges * 17
    with cs.batch(k) as blk:  # tree_c / tree_r_last style 8-0-0 paths
        leaf = N.alloc(blk, Fr.random(k, rng))
        path = [M.Level(8, rng.integers(0, 8, k), Fr.random(7 * k, rng).reshape(k, 7, 4)) for _ in range(2)]
        M.root_from_path(blk, leaf, path, "poseidon")
    k = challenges * 15
    with cs.batch(k) as blk:  # column hashes of 2 layers
        P.poseidon_hash(blk, N.alloc_many(blk, 2, Fr.random(2 * k, rng).reshape(k, 2, 4)))
    return cs


def run(args) -> None:
    rng = np.random.default_rng(1)
    P.hash_many(Fr.random(8, rng).reshape(1, 8, 4), 8)  # compile / load the kernel
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
        add(f"{k} x {name}", "witness", w.shape[0], "values", t_wit + t_arr)
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
        print("recorded in", record([{**r, "device": device} for r in rows], "synth_cpu.jsonl"))


def _arguments(p) -> None:
    p.add_argument("--sha", type=int, default=1000, help="SHA256 compressions (default 1000)")
    p.add_argument("--poseidon", type=int, default=100_000, help="Poseidon-8 hashes (default 100000)")
    p.add_argument("--csr-limit", type=int, default=1_000_000,
                   help="skip the flat CSR export for batches above this many instances")
    p.add_argument("--record", action="store_true", help="append results to bench/results/synth_cpu.jsonl")


def add_parser(sub) -> None:
    p = sub.add_parser("synth", help="circuit synthesis: constraints/s and witness values/s")
    _arguments(p)
    p.set_defaults(run=run)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.synth", description=__doc__)
    _arguments(parser)
    run(parser.parse_args())
