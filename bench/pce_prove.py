"""A whole PoRep proof in a fresh process, with the PCE (cuzk.prove's path: the compiled circuit read
from its cache file, witness-only synthesis, evaluation from the template form) and without it (the
path before the PCE: the circuit synthesized in the process and evaluated as flat CSR matrices), side
by side: wall time from start to a verified proof, and the process's peak RSS.

    python -m bench.pce_prove --c1 C1.json [--backend cuda] [--reps 3] [--out DIR]

Both modes use the same cached parameters and PCE file (one untimed `cuzk.prove` first makes them;
the flat mode also reads the PCE, 0.1 s for 2KiB, for the digest the parameters are cached under).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from bench.common import device_name, peak_rss_gib, record


def one(c1: str, backend: str, flat: bool) -> dict:
    """Prove in this process (the child's side); prints {"s": seconds, "rss_gib": peak}."""
    start = time.perf_counter()
    from cuzk import api
    from cuzk.groth16.circuit import Circuit, flat as flat_circuit
    from cuzk.porep.circuit import StackedShape
    from cuzk.porep.circuit import circuit as stacked_circuit

    if flat:  # the circuit as the process built it before the PCE: synthesized, then flat CSR
        compiled, load_params = api.partition_circuit, api.load_or_generate

        def partition_circuit(config, progress: bool = True) -> Circuit:
            return flat_circuit(stacked_circuit(StackedShape.from_config(config)))

        def load_or_generate(stem, circuit, **kw):  # the cached parameters are named by the PCE's digest
            return load_params(stem, compiled(api.as_c1(c1)[0].config, False), **kw)

        api.partition_circuit, api.load_or_generate = partition_circuit, load_or_generate
    result = api.prove_c1(c1, backend=backend, progress=False)
    assert len(result.proof) == 192 * len(result.partitions)
    return {"s": time.perf_counter() - start, "rss_gib": peak_rss_gib()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--c1", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", choices=["pce", "flat"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.c1, args.backend, args.child == "flat")))
        return
    from cuzk import api

    c1 = api.as_c1(args.c1)[0]
    api.prove(args.c1, backend=args.backend, progress=False)  # the PCE and parameters cached, kernels compiled
    runs: dict[str, list[dict]] = {"pce": [], "flat": []}
    for _ in range(args.reps):
        for mode in runs:
            out = subprocess.run([sys.executable, "-m", "bench.pce_prove", "--c1", args.c1, "--backend", args.backend,
                                  "--child", mode], check=True, capture_output=True, text=True).stdout
            runs[mode].append(json.loads(out.splitlines()[-1]))
    med = {mode: statistics.median(r["s"] for r in rs) * 1e3 for mode, rs in runs.items()}
    rss = {mode: round(max(r["rss_gib"] for r in rs), 2) for mode, rs in runs.items()}
    for mode in runs:
        print(f"{mode:5s} {med[mode] / 1e3:7.2f} s  peak RSS {rss[mode]:.2f} GiB  runs "
              + " ".join(f"{r['s']:.2f}" for r in runs[mode]))
    row = {"bench": "porep_prove", "backend": args.backend, "device": device_name(args.backend),
           "n": c1.registered_proof.sector_size, "ms": round(med["pce"], 1), "stat": "median",
           "peer": "no PCE: the circuit synthesized in the process, flat CSR evaluation", "peer_ms": round(med["flat"], 1),
           "peak_rss_gib": rss["pce"], "peer_peak_rss_gib": rss["flat"], "proof": c1.registered_proof.name,
           "note": f"fresh process per proof (imports, PCE or circuit, parameters, witness, prove, verify), {args.reps} "
                   "runs each, cached parameters and PCE; peak RSS: the largest of the runs"}
    for path in record([row], "porep", args.out):
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
