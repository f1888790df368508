"""PoRep benches.

  python -m bench porep [--sector 2KiB] [--backend cpu|cuda]
      seal a 2KiB sector (temp dir), make its C1 and prove it with cuzk.api.prove_c1 (parameters from
      the cache: official if present, else cuzk's own); prints the stage breakdown.
  python -m bench porep --synth-32gib [--challenges K]
      synthesis time and peak RSS (ru_maxrss) of ONE 32GiB partition circuit: constraint generation
      and witness generation from a synthetic 32GiB C1, for K of the 18 challenges. The linear
      projection to 18 challenges is printed and written to the line's `note`, never to `ms`.

Lines: porep_prove (n = sector bytes, ms = cuzk.api.prove_c1 end to end, stages as <stage>_ms) in
bench/results/porep_<backend>.jsonl; witness (n = the measured circuit's constraints) in
bench/results/witness_cpu.jsonl.
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

SECTOR_BYTES = {"2KiB": 2048, "8MiB": 8 << 20, "512MiB": 512 << 20, "32GiB": 32 << 30, "64GiB": 64 << 30}
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
    total_ms = stages.pop("prove_c1_total") * 1e3
    row = {"bench": "porep_prove", "backend": backend, "device": device, "n": SECTOR_BYTES[sector],
           "ms": round(total_ms, 1), "threads": numba.get_num_threads(), "peak_rss_gib": round(_maxrss_mib() / 1024, 2),
           "sector": sector, "partitions": parts, "params": result.params.describe(),
           "generated_params": result.generated_params, "load_avg_before": load_before, "load_avg_after": _load(),
           **{f"{s}_ms": round(v * 1e3, 1) for s, v in stages.items()},
           "note": "one proof: ms is cuzk.api.prove_c1 from the C1 output to a verified proof; seal_ms and c1_ms "
                   "come before it and are not in ms"}
    print(f"PoRep {sector} on {device} ({parts} partition(s); {result.params.describe()}); "
          f"load avg {load_before} -> {row['load_avg_after']} (noisy: shared machine)")
    shown = [{"stage": s, "ms": v * 1e3} for s, v in stages.items()] + [{"stage": "prove_c1 total", "ms": total_ms}]
    print_table(shown, [("stage", "stage", "s"), ("ms", "ms", ".0f")])
    print("recorded in", *record([row], "porep"))


def synth_32gib(k: int) -> None:
    from cuzk.porep import circuit as porep_circuit
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
    full = porep_circuit.StackedShape.from_config(PoRepConfig.from_proof(c1.registered_proof))
    shape = porep_circuit.StackedShape(full.nodes, full.layers, k, full.tree_r)

    t = time.perf_counter()
    stats = porep_circuit.count(shape)
    cons_s, rss_cons = time.perf_counter() - t, _maxrss_mib()

    t = time.perf_counter()
    w = porep_circuit.PartitionWitness.from_vanilla(c1.replica_id, c1.comm_d, c1.comm_r, c1.vanilla_proofs[0][:k])
    values = porep_circuit.circuit(shape, w, mode="witness").witness()
    wit_s, rss_wit = time.perf_counter() - t, _maxrss_mib()

    scale = CHALLENGES_32GIB / k
    projection = None if k == CHALLENGES_32GIB else (
        f"projected linearly to {CHALLENGES_32GIB} challenges (measured x {scale:g}; fixed per-partition costs "
        f"overcounted): ~{round(stats['num_constraints'] * scale):,} constraints, constraints "
        f"{cons_s * scale:.1f} s, witness {wit_s * scale:.1f} s, witness RSS growth "
        f"~{round((rss_wit - rss_cons) * scale)} MiB")
    row = {"bench": "witness", "backend": "cpu", "device": device_name("cpu"), "n": stats["num_constraints"],
           "ms": round(wit_s * 1e3, 1), "threads": numba.get_num_threads(),
           "peak_rss_gib": round(rss_wit / 1024, 2), "workload": f"32GiB partition circuit, {k} of "
           f"{CHALLENGES_32GIB} challenges", "challenges": k, "inputs": stats["num_inputs"], "aux": stats["num_aux"],
           "nnz_a": stats["nnz_a"], "nnz_b": stats["nnz_b"], "nnz_c": stats["nnz_c"],
           "witness_len": int(len(values)), "synthetic_c1_ms": round(c1_s * 1e3, 1),
           "constraints_ms": round(cons_s * 1e3, 1), "load_avg_before": load_before, "load_avg_after": _load(),
           "note": "; ".join(filter(None, [
               "one run; ms: witness generation of the partition circuit (circuit in witness mode); "
               "constraints_ms: recording its constraints, timed apart; synthetic_c1_ms: the synthetic C1 of "
               "all partitions", f"maxrss MiB: start {rss0:.0f}, after C1 {rss_c1:.0f}, after constraints "
               f"{rss_cons:.0f}, after witness {rss_wit:.0f}", projection]))}
    print(f"32GiB partition synthesis, {k} of {CHALLENGES_32GIB} challenges MEASURED "
          f"(load avg {load_before} -> {row['load_avg_after']}; noisy shared machine):")
    print(f"  synthetic C1 (all partitions): {c1_s:.2f} s, maxrss {rss_c1:.0f} MiB")
    print(f"  constraints: {stats['num_constraints']:,} in {cons_s:.2f} s, maxrss {rss_cons:.0f} MiB")
    print(f"  witness: {len(values):,} values in {wit_s:.2f} s, maxrss {rss_wit:.0f} MiB")
    if projection:
        print(f"  PROJECTION (not a measurement): {projection}")
    print("recorded in", *record([row], "witness"))
