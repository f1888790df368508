"""MSM in G1 and G2 per size, with py-arkworks-bls12381 (CPU) or sppark (GPU) side by side."""
from __future__ import annotations

import time

import numpy as np

from bench import peers
from bench.common import device_name, median_ms, print_table, record
from cuzk.backend import get_backend
from cuzk.ec.curves import G1, G2
from cuzk.ff.fields import Fq, Fr


def add_parser(sub) -> None:
    p = sub.add_parser("msm", help="multi-scalar multiplication in G1 and G2")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--log-sizes", default="12,16", help="comma-separated log2 sizes")
    p.add_argument("--groups", default="g1,g2")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-peer", action="store_true", help="skip the arkworks comparison on the CPU")
    p.set_defaults(run=run)


def _arkworks_msm(group: str, bases: np.ndarray, scalars: np.ndarray):
    """(time in ms of arkworks' multiexp on the same inputs, its result as xy bytes)."""
    import py_arkworks_bls12381 as ark

    point_cls = ark.G1Point if group == "g1" else ark.G2Point
    coords = 2 if group == "g1" else 4
    xy = Fq.to_bytes(bases.reshape(-1, 6))
    size = 48 * coords
    points = [point_cls.from_xy_bytes_unchecked_be(xy[i * size:(i + 1) * size]) for i in range(len(bases))]
    raw = Fr.to_bytes(scalars)
    ark_scalars = [ark.Scalar.from_le_bytes(raw[i * 32:(i + 1) * 32]) for i in range(len(scalars))]
    start = time.perf_counter()
    result = point_cls.multiexp_unchecked(points, ark_scalars)
    return (time.perf_counter() - start) * 1e3, bytes(result.to_xy_bytes_be())


def run(args) -> None:
    backend = get_backend(args.backend)
    device = device_name(args.backend)
    rows = []
    for group in args.groups.split(","):
        curve = G1 if group == "g1" else G2
        msm = backend.msm_g1 if group == "g1" else backend.msm_g2
        for log_n in map(int, args.log_sizes.split(",")):
            rng = np.random.default_rng(log_n)
            n = 1 << log_n
            bases, scalars = curve.random(n, rng), Fr.random(n, rng)
            ms = median_ms(lambda: msm(bases, scalars), args.repeat)
            row = {"bench": f"msm_{group}", "backend": backend.name, "device": device, "n": n,
                   "ms": round(ms, 2), **peers.peer_fields(f"msm_{group}", n, backend.name)}
            if args.backend == "cpu" and not args.no_peer:
                peer_ms, peer_xy = _arkworks_msm(group, bases, scalars)
                ours_xy = Fq.to_bytes(msm(bases, scalars).reshape(-1, 6))
                if peer_xy != ours_xy:
                    raise SystemExit(f"msm_{group} n={n}: result differs from arkworks")
                row.update(peer="arkworks (1 thread)", peer_ms=round(peer_ms, 2))
            elif "peer" in row:
                row["note"] = "peer: sppark on the H200 from ANCHORS.md (2026-11-30), not run here"
            rows.append(row)
    print(f"MSM on {device} (median of {args.repeat}; results checked against the peer on the CPU)")
    shown = [{**r, "points_per_s": r["n"] / r["ms"] * 1e3,
              "ratio": r["ms"] / r["peer_ms"] if r.get("peer_ms") else None} for r in rows]
    print_table(shown, [("bench", "bench", ""), ("n", "n", "d"), ("ms", "ms", ".1f"),
                        ("points_per_s", "points/s", ".3g"), ("peer", "peer", ""),
                        ("peer_ms", "peer ms", ".1f"), ("ratio", "ours/peer", ".2f")])
    print("recorded in", *record(rows, "msm"))
