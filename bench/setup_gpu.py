"""The Groth16 setup on the GPU (cuzk.backend.cuda.setup) for synthetic circuits of 2^k rows: wall time
per stage with the query vectors kept on the device, the pool's peak VRAM, a proof verified against
each key, and a projection of every stage to the 32GiB PoRep partition from the largest size's rates.

    python -m bench.setup_gpu [--log-rows 20,22] [--cpu-log-rows 14] [--no-prove] [--out DIR]

Rows are the synthetic circuit's (cuzk.groth16.synthetic: half booleanity rows, every one naming
ONE in B, so the transposed product's atomics meet their worst hot column) as a PCE of plain rows.
Kernels are compiled and the generator tables built by an untimed small setup first. --cpu-log-rows:
sizes at which the CPU setup also runs (the peer) and its key is compared with the GPU's point for
point. The projection scales Lagrange by rows, the QAP stage by non-zeros, and each point stage by
its point count (32GiB: ANCHORS.md sizes and densities); it is an estimate (note), never `ms`.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from bench.common import device_name, gib, print_table, record

# the 32GiB PoRep partition (../shared/ANCHORS.md): rows, columns, nnz(A + B + C), points per stage
M32, K32, AUX32 = 130_278_541, 328, 130_169_893
NNZ32 = 309_400_000 + 130_300_000 + 282_700_000
A32, B32 = K32 + int(0.997 * AUX32), K32 + int(0.254 * AUX32)
SIZES32 = {"lagrange": M32 + K32, "qap": NNZ32, "select": AUX32, "l": AUX32, "a": A32, "b": B32, "h": (1 << 27) - 1}


def nnz(pce) -> int:
    """Terms of A, B and C with the templates expanded: what pce_transpose visits."""
    total = 0
    for name in ("a", "b", "c"):
        mat = getattr(pce, name)
        per_tpl = np.diff(mat.tpl_indptr[pce.tpl_rows]) if len(pce.tpl_rows) > 1 else np.zeros(0, np.int64)
        total += int(mat.plain_indptr[-1]) + sum(int(per_tpl[t]) * int(k) for t, k in pce.blocks[:, :2].tolist())
    return total


def measure(pce, rng: np.random.Generator) -> tuple[dict, object, list[int]]:
    """One setup of `pce` on the GPU with the query vectors kept there: (row, KeyPoints, toxic waste)."""
    import cupy as cp

    from cuzk.backend import get_backend
    from cuzk.groth16.setup import random_scalar

    k = pce.num_inputs
    a_dense = np.concatenate([np.ones(k, bool), pce.a_aux_density])
    b_dense = np.concatenate([pce.b_input_density, pce.b_aux_density])
    toxic = [random_scalar(rng) for _ in range(5)]
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    base = pool.total_bytes()
    t = time.perf_counter()
    kp = get_backend("cuda").setup_key_points(pce, *toxic, a_dense, b_dense, keep_on_device=True)
    cp.cuda.Device().synchronize()
    wall = time.perf_counter() - t
    counts = {"lagrange": pce.num_constraints + k, "qap": nnz(pce), "select": pce.num_aux, "l": pce.num_aux,
              "a": int(a_dense.sum()), "b": int(b_dense.sum()), "h": len(kp.queries["h"])}
    row = {"m": pce.num_constraints, "cols": pce.shape[1], "wall_s": wall, "peak_vram_gib": gib(pool.total_bytes() - base),
           "points": sum(len(x) for x in kp.queries.values()), "counts": counts,
           **{f"{s}_s": v for s, v in kp.timings.items()}}
    return row, kp, toxic


def run(log_rows: int, cpu: bool, prove_it: bool, rng: np.random.Generator) -> dict:
    """measure() on the synthetic circuit of 2^log_rows rows, then a proof verified against the key
    and (cpu) the CPU setup's key compared with it."""
    import cupy as cp

    from cuzk.backend import get_backend
    from cuzk.ff.fields import Fr
    from cuzk.groth16 import CompiledCircuit, prove, verify
    from cuzk.groth16.keys import PARAMS_VECTORS, Parameters
    from cuzk.groth16.setup import generate_parameters
    from cuzk.groth16.setup_device import parameters
    from cuzk.groth16.synthetic import synthetic_circuit
    from cuzk.r1cs.pce import build

    cs = synthetic_circuit((1 << log_rows) - 3, 2, rng)  # + 3 input rows: a domain of exactly 2^log_rows
    pce = build(cs)
    row, kp, toxic = measure(pce, rng)
    row["circuit"] = f"synthetic 2^{log_rows}"
    params = parameters(kp)
    del kp
    if prove_it:
        witness = cs.witness()
        t = time.perf_counter()
        proof = prove(params, CompiledCircuit(pce), witness, backend=get_backend("cuda"))
        row["prove_s"] = time.perf_counter() - t
        row["verified"] = bool(verify(params.vk, Fr.to_ints(witness[1:pce.num_inputs]), proof))
    if cpu:
        t = time.perf_counter()
        want = generate_parameters(pce, *toxic)
        row["cpu_s"] = time.perf_counter() - t
        host = Parameters(params.vk, *(cp.asnumpy(getattr(params, q)) for q in PARAMS_VECTORS))
        row["equal_cpu"] = host == want
    return row


def project(row: dict) -> dict[str, float]:
    """Seconds per stage for the 32GiB partition at this row's rates (stage time / its count; the
    select stage, a few element-wise passes, scales with the columns like l)."""
    return {s: row[f"{s}_s"] / max(row["counts"][s], 1) * SIZES32[s] for s in SIZES32}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-rows", default="20,22")
    ap.add_argument("--cpu-log-rows", default="", help="sizes where the CPU setup runs too and keys are compared")
    ap.add_argument("--no-prove", action="store_true")
    ap.add_argument("--proof", default="", help="also set up this registered proof's partition circuit (its PCE from "
                                                "cuzk.porep.pce_cache, built when missing; no proof, no CPU peer)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    cpu_sizes = {int(x) for x in args.cpu_log_rows.split(",") if x}
    sizes = sorted({int(x) for x in args.log_rows.split(",") if x} | cpu_sizes)
    t = time.perf_counter()
    run(10, False, False, rng)  # compile the kernels, build the generator tables
    print(f"warm-up (compile + tables): {time.perf_counter() - t:.1f} s", flush=True)
    rows = []
    for log_rows in sizes:
        row = run(log_rows, log_rows in cpu_sizes, not args.no_prove, rng)
        rows.append(row)
        print(f"2^{log_rows}: {row['wall_s']:.2f} s" + (f", verified {row['verified']}" if "verified" in row else ""),
              flush=True)
    if args.proof:
        from cuzk.porep import pce_cache

        row, kp, _ = measure(pce_cache.load_or_build(args.proof), rng)
        del kp
        rows.append({**row, "circuit": args.proof})
        print(f"{args.proof}: {row['wall_s']:.2f} s", flush=True)
    stages = ["lagrange", "qap", "tables", "select", "l", "a", "b", "h"]
    cols = [("circuit", "circuit", ""), ("m", "rows", ",d"), ("points", "points", ",d")]
    cols += [(f"{s}_s", s, ".2f") for s in stages] + [("wall_s", "total s", ".2f"), ("peak_vram_gib", "VRAM GiB", ".2f"),
                                                      ("verified", "verified", ""), ("equal_cpu", "= CPU", ""),
                                                      ("cpu_s", "CPU s", ".1f")]
    print()
    print_table(rows, cols)
    big = max(rows, key=lambda r: r["m"])
    proj = project(big)
    print(f"\nprojected to the 32GiB partition from {big['circuit']}'s rates (s): "
          + ", ".join(f"{s} {v:.1f}" for s, v in proj.items()) + f"; total {sum(proj.values()):.1f}")
    device = device_name("cuda")
    lines = [{"bench": "setup", "backend": "cuda", "device": device, "n": r["m"], "ms": round(r["wall_s"] * 1e3, 1),
              "peak_vram_gib": r["peak_vram_gib"], "circuit": r["circuit"],
              **{f"{s}_ms": round(r[f"{s}_s"] * 1e3, 1) for s in stages},
              "peer": "CPU generate_parameters (same key)" if "cpu_s" in r else None,
              "peer_ms": round(r["cpu_s"] * 1e3, 1) if "cpu_s" in r else None,
              "note": f"one run: {r['circuit']}"
                      + (" (a PCE of plain rows)" if r["circuit"].startswith("synthetic") else " partition circuit's PCE")
                      + f", query vectors kept on the device, kernels compiled before; proof verified: "
                      f"{r.get('verified', 'not run')}; "
                      f"equal to the CPU key: {r.get('equal_cpu', 'not compared')}; projection to the 32GiB partition "
                      f"at these rates: {sum(project(r).values()):.1f} s"} for r in rows]
    for path in record(lines, "setup", args.out):
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
