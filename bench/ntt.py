"""NTT over Fr: forward, inverse and coset transforms per size, natural order in and out."""
from __future__ import annotations

import numpy as np

from bench.common import device_name, median_ms, print_table, record
from cuzk.backend import get_backend
from cuzk.ff.fields import Fr

# sppark on the H200, data on the GPU (shared/ANCHORS.md), forward only
SPPARK_FORWARD_MS = {20: 0.28, 22: 1.13, 24: 4.75, 26: 23.8}


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
        for kind in ("ntt", "intt", "coset_ntt", "coset_intt"):
            ms = median_ms(lambda: getattr(backend, kind)(values), args.repeat)
            peer = SPPARK_FORWARD_MS.get(log_n) if kind == "ntt" and args.backend == "cuda" else None
            rows.append({"bench": "ntt", "kind": kind, "backend": backend.name, "device": device,
                         "n": 1 << log_n, "ms": round(ms, 3), "elements_per_s": (1 << log_n) / ms * 1e3,
                         "peer": "sppark" if peer else None, "peer_ms": peer,
                         "ratio": ms / peer if peer else None})
    print(f"NTT over Fr on {device}")
    print_table(rows, [("kind", "kind", ""), ("n", "n", "d"), ("ms", "ms", ".2f"),
                       ("elements_per_s", "elem/s", ".3g"), ("ratio", "ours/sppark", ".2f")])
    print("recorded in", record(rows, f"ntt_{backend.name}.jsonl"))
