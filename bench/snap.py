"""SnapDeals update proofs through a warm cuzk.engine.Engine, from synthetic updates
(cuzk.snap.synthetic: no sector sealed or encoded): N updates of one registered update proof (32GiB:
16 partitions each) proven back to back, every partition's proof verified by the engine. Records
(JSON lines, bench snap_prove, n = sector bytes, in <out>/snap_<backend>.jsonl) the seconds per proof
sustained over --proofs submitted at once (stat mean), the first proof after the parameters are
resident and the engine warm, one proof alone after it, the peak host RSS of the engine process and
of its synthesis processes, the device's peak VRAM (cuda), and per partition the median of each stage:
synthesis (the partition's witness-mode synthesis in a synthesis process, from the engine's timeline)
and the prover's stages (from the jobs' timings); submit_ms: a submission (the vanilla checks and the
witness adapter, on the caller's thread). Writes the engine's timeline (JSONL) and its plot (PNG).

    python -m bench.snap [--proof StackedDrg32GiBV1] [--proofs 3] [--backend cuda] [--synthesis 2]
        [--gpu-workers 1] [--queue 2] [--no-alone] [--out DIR]

Keys: on cuda generated on the GPU from the partition circuit's PCE and kept there (bench.porep32g's
device_key_spec; seeded toxic waste: the proofs verify against that key's vk), on cpu cuzk's own from
the parameter cache (made once, allow_setup).
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.common import VramPeak, children_peak_rss_gib, device_name, peak_rss_gib, record
from bench.porep32g import device_key_spec, run
from cuzk.engine import EngineConfig
from cuzk.engine.config import GpuConfig, PipelineConfig, SrsConfig
from cuzk.engine.engine import CircuitSpec, Engine, Job
from cuzk.engine.snap import snap_spec_of, submit_snap
from cuzk.engine.timeline import plot, read_timeline
from cuzk.snap.proving import snap_circuit
from cuzk.snap.registry import RegisteredUpdateProof, get_update_proof
from cuzk.snap.synthetic import SyntheticUpdate, synthetic_update


def snap_spec(p: RegisteredUpdateProof, backend: str) -> CircuitSpec:
    """The partition circuit's spec: its key generated on the GPU (cuda) or cuzk's own from the cache (cpu)."""
    base = snap_spec_of(p, progress=True, allow_setup=True)
    return device_key_spec(base, lambda: snap_circuit(p.circuit_shape), backend) if backend == "cuda" else base


def synthesis_median(timeline: Path, jobs: Sequence[Job]) -> float:
    """The median seconds from synthesis_start to synthesis_end of the jobs' partitions."""
    ids, start, spans = {j.id for j in jobs}, {}, []
    for e in read_timeline(timeline):
        key = (e["job"], e["partition"])
        if e["job"] in ids and e["event"] == "synthesis_start":
            start[key] = e["t"]
        elif e["job"] in ids and e["event"] == "synthesis_end" and key in start:
            spans.append(e["t"] - start.pop(key))
    return statistics.median(spans)


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proof", default="StackedDrg32GiBV1", help="a registered update proof")
    ap.add_argument("--proofs", type=int, default=3, help="proofs submitted at once for the sustained rate")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--synthesis", type=int, default=2, help="synthesis processes")
    ap.add_argument("--gpu-workers", type=int, default=1, help="GPU workers per device")
    ap.add_argument("--queue", type=int, default=2, help="GPU queue depth")
    ap.add_argument("--no-alone", action="store_true", help="skip the one proof alone before the sustained run")
    ap.add_argument("--seed", type=int, default=1, help="the synthetic updates' generator seed")
    ap.add_argument("--out", default=None,
                    help="results directory (default bench/results; timelines in $TMPDIR/cuzk-bench)")
    args = ap.parse_args(argv)

    p = get_update_proof(args.proof)
    rng = np.random.default_rng(args.seed)
    t = time.perf_counter()
    updates: list[SyntheticUpdate] = [synthetic_update(p, rng=rng, progress=False) for _ in range(args.proofs + 2)]
    generate_s = (time.perf_counter() - t) / len(updates)
    print(f"{len(updates)} synthetic {p.name} updates, {generate_s:.2f} s each", flush=True)
    config = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=args.gpu_workers),
                          pipeline=PipelineConfig(max_parallel_synthesis=args.synthesis, gpu_queue_depth=args.queue),
                          srs=SrsConfig(allow_setup=True))
    logs = Path(args.out) if args.out else Path(tempfile.gettempdir()) / "cuzk-bench"
    logs.mkdir(parents=True, exist_ok=True)
    timeline = logs / f"snap_engine_{args.backend}_{p.name}.jsonl"
    timeline.unlink(missing_ok=True)
    jobs: dict[int, Job] = {}
    submit_s: list[float] = []

    def submit(i: int) -> Job:
        u, t = updates[i], time.perf_counter()
        jobs[i] = submit_snap(engine, p, u.comm_r_old, u.comm_r_new, u.comm_d_new, list(u.vanilla))
        submit_s.append(time.perf_counter() - t)
        return jobs[i]

    spec, vram = snap_spec(p, args.backend), VramPeak() if args.backend == "cuda" else None
    with vram or contextlib.nullcontext(), Engine(config, backend=args.backend, timeline=timeline) as engine:
        got = run(engine, spec, submit, args.proofs, alone=not args.no_alone)
        synthesis_rss_gib = round((engine.preload(spec).synthesis_bytes or 0) / 2**30, 2)
        children_gib = children_peak_rss_gib()  # before the engine's synthesis processes exit
    sustained = [jobs[i] for i in range(2, args.proofs + 2)]
    stages = {"synthesis": synthesis_median(timeline, sustained), **got["stages"]}
    png = timeline.with_suffix(".png")
    try:
        plot(read_timeline(timeline), png)
    except ImportError:
        png = None
    row = {"bench": "snap_prove", "backend": args.backend, "device": device_name(args.backend), "n": p.sector_size,
           "ms": round(got["sustained_s"] * 1e3, 1), "stat": "mean", "peak_rss_gib": peak_rss_gib(),
           "peak_vram_gib": vram.gib if vram else None, "proof": p.name, "proofs": args.proofs,
           "partitions": got["partitions"], "first_proof_ms": round(got["first_s"] * 1e3, 1),
           "latency_ms": round(got["latency_s"] * 1e3, 1) if got["latency_s"] is not None else None,
           "resident_s": round(got["resident_s"], 1), "warm_s": round(got["warm_s"], 1),
           "submit_ms": round(statistics.median(submit_s) * 1e3, 1), "generate_ms": round(generate_s * 1e3, 1),
           "synthesis_workers": args.synthesis, "gpu_workers_per_device": args.gpu_workers,
           "gpu_queue_depth": args.queue, "synthesis_processes_peak_rss_gib": children_gib,
           "synthesis_rss_gib": synthesis_rss_gib, **{f"{k}_ms": round(v * 1e3, 1) for k, v in stages.items()},
           "note": f"ms: {args.proofs} synthetic updates submitted at once on a warm engine, seconds per proof "
                   "(submission, its vanilla checks included, to every partition verified); first_proof_ms: the "
                   "first after the parameters are resident (resident_s) and the engine warm (warm_s); latency_ms: "
                   "one proof alone after it; peak_rss_gib: the engine process since its start; "
                   "synthesis_processes_peak_rss_gib: the sum of its synthesis processes' peaks; <stage>_ms: per "
                   "partition, median over the sustained proofs; generate_ms: one synthetic update, not timed; "
                   f"timeline {timeline.name}" + (f", plot {png.name}" if png else "")}
    print(f"{p.name} on {row['device']}: {got['sustained_s']:.2f} s/proof sustained ({args.proofs} proofs of "
          f"{got['partitions']} partitions), first {got['first_s']:.2f} s, alone when warm {got['latency_s'] or 0:.2f} s, "
          f"peak RSS {row['peak_rss_gib']} GiB (synthesis processes {children_gib} GiB)"
          + (f", peak VRAM {vram.gib} GiB" if vram else ""))
    print("  per partition (median ms): " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in sorted(stages.items())))
    for path in record([row], "snap", args.out):
        print(f"recorded in {path}")
    return row


if __name__ == "__main__":
    main()
