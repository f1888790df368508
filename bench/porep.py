"""PoRep benches.

  python -m bench porep [--sector 2KiB] [--backend cpu|cuda]
      seal a 2KiB sector (temp dir), make its C1 and prove it with cuzk.api.prove_c1 (parameters from
      the cache: official if present, else cuzk's own); prints the stage breakdown.
  python -m bench porep --synth-32gib [--challenges K]
      synthesis time and peak RSS (ru_maxrss) of ONE 32GiB partition circuit: constraint generation
      and witness generation from a synthetic 32GiB C1, for K of the 18 challenges, projected
      linearly to 18 (the projection is labelled as such).
"""
from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from bench.common import device_name, print_table, record

GROTH16 = ("inputs", "params", "evaluate", "ntt", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "assemble")
CHALLENGES_32GIB = 18


def add_parser(sub) -> None:
    p = sub.add_parser("porep", help="PoRep: 2KiB seal + prove stage breakdown, or 32GiB partition synthesis")
    p.add_argument("--sector", default="2KiB", choices=["2KiB"], help="sector size to seal and prove")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--synth-32gib", action="store_true", help="time one 32GiB partition's synthesis instead")
    p.add_argument("--challenges", type=int, default=CHALLENGES_32GIB,
                   help="with --synth-32gib: synthesize K of the 18 challenges and project linearly to 18")
    p.set_defaults(run=run)


def run(args) -> None:
    if args.synth_32gib:
        synth_32gib(args.challenges)
    else:
        prove_sector(args.sector, args.backend)


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def prove_sector(sector: str, backend: str) -> None:
    import cuzk
    from cuzk.api import as_c1, prove_c1

    rng = np.random.default_rng()
    ids = dict(prover_id=bytes(rng.integers(0, 256, 32, dtype=np.uint8)), sector_id=int(rng.integers(1 << 62)),
               ticket=bytes(rng.integers(0, 256, 32, dtype=np.uint8)))
    seed = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    load_before = _load()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        sec = cuzk.seal(f"StackedDrg{sector}V1_1", Path(tmp) / "sector", progress=False, **ids)
        seal_s = time.perf_counter() - t
        t = time.perf_counter()
        c1, _ = as_c1(sec, seed)
        c1_s = time.perf_counter() - t
        result = prove_c1(c1, backend=backend, progress=False)
    tm = result.timings
    parts = len(result.partitions)

    def total(prefix: str) -> float:
        return sum(v for k, v in tm.items() if k.startswith(prefix))

    stages = {"seal": seal_s, "c1": c1_s, "vanilla_verify": tm["vanilla"], "circuit": tm["circuit"],
              "witness": total("witness."), "synthesis": tm["circuit"] + total("witness."),
              "params_load": tm["params"], "check": total("check."),
              **{s: sum(tm.get(f"prove.{k}.{s}", 0.0) for k in range(parts)) for s in GROTH16},
              "msms": sum(tm.get(f"prove.{k}.msm_{m}", 0.0) for k in range(parts)
                          for m in ("h", "l", "a", "b_g1", "b_g2")),
              "groth16_prove": sum(tm.get(f"prove.{k}.total", 0.0) for k in range(parts)),
              "verify": total("verify."), "prove_c1_total": tm["total"]}
    device = device_name(backend)
    meta = {"bench": "porep_prove", "sector": sector, "backend": backend, "device": device,
            "threads": numba.get_num_threads(), "partitions": parts, "params": result.params.describe(),
            "generated_params": result.generated_params, "load_avg_before": load_before, "load_avg_after": _load()}
    rows = [{**meta, "stage": s, "ms": round(v * 1e3, 1)} for s, v in stages.items()]
    print(f"PoRep {sector} on {device} ({parts} partition(s); {result.params.describe()}); "
          f"load avg {load_before} -> {meta['load_avg_after']} (noisy: shared machine)")
    print_table(rows, [("stage", "stage", "s"), ("ms", "ms", ".0f")])
    print("recorded in", record(rows, f"porep_{backend}.jsonl"))


def synth_32gib(k: int) -> None:
    from cuzk.porep import circuit as C
    from cuzk.porep.challenges import PoRepConfig
    from cuzk.porep.synthetic import synthetic_c1

    if not 1 <= k <= CHALLENGES_32GIB:
        raise SystemExit(f"--challenges must be in 1..{CHALLENGES_32GIB}, got {k}")
    load_before = _load()
    rss0 = _maxrss_mib()
    rng = np.random.default_rng()
    t = time.perf_counter()
    c1 = synthetic_c1("StackedDrg32GiBV1_1", prover_id=bytes(32), sector_id=1, ticket=bytes(range(32)),
                      seed=bytes(range(32, 64)), rng=rng, progress=False)
    c1_s, rss_c1 = time.perf_counter() - t, _maxrss_mib()
    full = C.StackedShape.from_config(PoRepConfig.from_proof(c1.registered_proof))
    shape = C.StackedShape(full.nodes, full.layers, k, full.tree_r)

    t = time.perf_counter()
    stats = C.count(shape)
    cons_s, rss_cons = time.perf_counter() - t, _maxrss_mib()

    t = time.perf_counter()
    w = C.PartitionWitness.from_vanilla(c1.replica_id, c1.comm_d, c1.comm_r, c1.vanilla_proofs[0][:k])
    values = C.circuit(shape, w, mode="witness").witness()
    wit_s, rss_wit = time.perf_counter() - t, _maxrss_mib()

    scale = CHALLENGES_32GIB / k
    row = {"bench": "synth", "sector": "32GiB", "what": "one partition circuit", "backend": "cpu",
           "device": device_name("cpu"), "threads": numba.get_num_threads(),
           "challenges_measured": k, "challenges_full": CHALLENGES_32GIB,
           "measured": {"constraints": stats["num_constraints"], "aux": stats["num_aux"],
                        "witness_len": int(len(values)), "synthetic_c1_s": round(c1_s, 2),
                        "constraints_s": round(cons_s, 2), "witness_s": round(wit_s, 2),
                        "maxrss_start_mib": round(rss0), "maxrss_after_c1_mib": round(rss_c1),
                        "maxrss_after_constraints_mib": round(rss_cons),
                        "maxrss_after_witness_mib": round(rss_wit)},
           "projected_18": None if k == CHALLENGES_32GIB else {
               "method": f"linear: measured x {scale:g} (fixed per-partition costs overcounted)",
               "constraints": round(stats["num_constraints"] * scale),
               "constraints_s": round(cons_s * scale, 1), "witness_s": round(wit_s * scale, 1),
               "witness_rss_growth_mib": round((rss_wit - rss_cons) * scale)},
           "count_stats": stats, "load_avg_before": load_before, "load_avg_after": _load()}
    m = row["measured"]
    print(f"32GiB partition synthesis, {k} of {CHALLENGES_32GIB} challenges MEASURED "
          f"(load avg {load_before} -> {row['load_avg_after']}; noisy shared machine):")
    print(f"  synthetic C1 (all partitions): {m['synthetic_c1_s']} s, maxrss {m['maxrss_after_c1_mib']} MiB")
    print(f"  constraints: {m['constraints']:,} in {m['constraints_s']} s, maxrss {m['maxrss_after_constraints_mib']} MiB")
    print(f"  witness: {m['witness_len']:,} values in {m['witness_s']} s, maxrss {m['maxrss_after_witness_mib']} MiB")
    if row["projected_18"]:
        p = row["projected_18"]
        print(f"  PROJECTION to 18 challenges ({p['method']}): ~{p['constraints']:,} constraints, "
              f"constraints {p['constraints_s']} s, witness {p['witness_s']} s, "
              f"witness RSS growth ~{p['witness_rss_growth_mib']} MiB")
    print("recorded in", record([row], "synth_cpu.jsonl"))
