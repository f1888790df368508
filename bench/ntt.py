"""NTT over Fr: forward, inverse and coset transforms per size, natural order in and out."""
from __future__ import annotations

import numpy as np

from bench import peers
from bench.common import device_name, median_ms, print_table, record
from cuzk.backend import get_backend
from cuzk.ff.fields import Fr

KINDS = ("ntt", "intt", "coset_ntt", "coset_intt")  # bench names of BENCH.md and Backend methods alike


def add_parser(sub) -> None:
    p = sub.add_parser("ntt", help="forward / inverse / coset NTT over Fr")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--log-sizes", default="16,20", help="comma-separated log2 sizes")
    p.add_argument("--repeat", type=int, default=5)
    p.set_defaults(run=run)


def run(args) -> None:
    backend = get_backend(args.backend)
    device = device_name(args.backend)
    rows = []
    for log_n in map(int, args.log_sizes.split(",")):
        values = Fr.random(1 << log_n, np.random.default_rng(log_n))
        for kind in KINDS:
            ms = median_ms(lambda: getattr(backend, kind)(values), args.repeat)
            peer = peers.peer_fields(kind, 1 << log_n, backend.name)
            rows.append({"bench": kind, "backend": backend.name, "device": device, "n": 1 << log_n,
                         "ms": round(ms, 3), **peer, "note": "numpy in and out (host copies included); "
                         "peer: sppark from ANCHORS.md, data on the GPU" if peer else None})
    print(f"NTT over Fr on {device}")
    shown = [{**r, "elements_per_s": r["n"] / r["ms"] * 1e3,
              "ratio": r["ms"] / r["peer_ms"] if r.get("peer_ms") else None} for r in rows]
    print_table(shown, [("bench", "transform", ""), ("n", "n", "d"), ("ms", "ms", ".2f"),
                        ("elements_per_s", "elem/s", ".3g"), ("ratio", "ours/sppark", ".2f")])
    print("recorded in", *record(rows, "ntt"))
