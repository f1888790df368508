"""The peer numbers the benches print and record side by side: one home, copied from ANCHORS.md.

All are sppark on the lent NVIDIA H200 (2026-11-30, ../shared/ANCHORS.md, "Peer: sppark"): random
distinct points and uniform scalars, median of 5 after a warm-up. CPU peers (py-arkworks, snarkjs)
are measured in the same run by the benches themselves, so they have no entry here.

`python -m bench.peers [ANCHORS.md]` checks these tables against the file (default ../shared/ANCHORS.md).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

DEVICE = "NVIDIA H200"
PEER = "sppark"

# MSM, milliseconds, keyed by (bench, log2 n): points and scalars already on the GPU / from pinned host memory
MSM_MS = {("msm_g1", 20): 20, ("msm_g1", 22): 53, ("msm_g1", 24): 154, ("msm_g2", 20): 47, ("msm_g2", 22): 138}
MSM_PINNED_HOST_MS = {("msm_g1", 20): 21, ("msm_g1", 22): 55, ("msm_g1", 24): 163, ("msm_g2", 20): 48,
                      ("msm_g2", 22): 142}

# NTT over Fr, milliseconds, natural order in and out, data on the GPU, keyed by (bench, log2 n)
NTT_MS = {
    **{("ntt", k): v for k, v in {20: 0.28, 22: 1.13, 24: 4.75, 26: 23.8}.items()},
    **{("intt", k): v for k, v in {20: 0.30, 22: 1.19, 24: 5.00, 26: 25.0}.items()},
    **{("coset_ntt", k): v for k, v in {20: 0.32, 22: 1.28, 24: 5.35, 26: 26.3}.items()},
    **{("coset_intt", k): v for k, v in {20: 0.34, 22: 1.35, 24: 5.59, 26: 27.4}.items()},
}
NTT_PINNED_HOST_MS = {("ntt", 20): 1.5, ("ntt", 22): 6.0, ("ntt", 24): 24.2, ("ntt", 26): 102}


def sppark_ms(bench: str, n: int) -> float | None:
    """sppark's time for this bench at n points / elements (data on the GPU), if ANCHORS.md has one."""
    log_n = n.bit_length() - 1
    if n != 1 << log_n:
        return None
    return {**MSM_MS, **NTT_MS}.get((bench, log_n))


def peer_fields(bench: str, n: int, backend: str) -> dict:
    """{"peer": "sppark", "peer_ms": ...} for a CUDA row that has a peer number, else {}."""
    ms = sppark_ms(bench, n) if backend == "cuda" else None
    return {"peer": PEER, "peer_ms": ms} if ms is not None else {}


def _anchor_tables(text: str) -> dict[tuple[str, int], float]:
    """The sppark MSM (on GPU) and NTT tables of ANCHORS.md, in this module's keys."""
    found: dict[tuple[str, int], float] = {}
    section = text.split("## Peer: sppark", 1)[1].split("\n## ", 1)[0]
    for group, log_n, ms in re.findall(r"^\| (G[12]) 2\^(\d+) \| (\d+(?:\.\d+)?) ms \|", section, re.M):
        found[f"msm_{group.lower()}", int(log_n)] = float(ms)
    header = re.search(r"^\| NTT \|(.*)$", section, re.M)
    logs = [int(x) for x in re.findall(r"2\^(\d+)", header.group(1))]
    rows = {"forward": ("ntt",), "inverse": ("intt",), "coset forward / coset inverse": ("coset_ntt", "coset_intt")}
    for label, benches in rows.items():
        line = re.search(rf"^\| {re.escape(label)} \|(.*)$", section, re.M).group(1)
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for log_n, cell in zip(logs, cells):
            for bench, value in zip(benches, re.findall(r"(\d+(?:\.\d+)?)", cell)):
                found[bench, log_n] = float(value)
    return found


def check(path: Path) -> list[str]:
    """Differences between this module and ANCHORS.md (empty when they agree)."""
    anchors = _anchor_tables(path.read_text())
    ours = {**MSM_MS, **NTT_MS}
    return [f"{key}: bench/peers.py {ours.get(key)} vs ANCHORS.md {anchors.get(key)}"
            for key in sorted(set(anchors) | set(ours)) if ours.get(key) != anchors.get(key)]


if __name__ == "__main__":
    anchors = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "ANCHORS.md"
    differences = check(anchors)
    print("\n".join(differences) or f"bench/peers.py agrees with {anchors}")
    sys.exit(1 if differences else 0)
