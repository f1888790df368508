"""PoRep proofs through a warm cuzk.engine.Engine: the latency of one proof at a time, then the
throughput of N proofs submitted at once, for each (synthesis workers, GPU workers per device)
setting; every proof verified by the engine. JSON lines (engine_prove) and a timeline JSONL.

    python -m bench.engine --c1 C1.json [--backend cuda] [--proofs 6] [--settings 1x1,2x1,2x2x8] [--out DIR]

A setting is S x G [x Q]: S synthesis workers, G GPU workers per device, a GPU queue Q deep (default
S); the GPU witness batches up to Q queued partitions (pipeline.witness_batch).

The engine is warmed by one proof first (its PCE, parameters and GPU tables resident; first_proof_ms),
then by S proofs at once, so that every synthesis process has done one. Per setting: peak RSS of
this process (the engine and its GPU workers; its high-water mark reset as the setting starts), the
sum of its synthesis processes' peaks (`synthesis_processes_peak_rss_gib`), peak VRAM the device's
memory in use sampled during the setting (cuda), and the largest measured growth of one synthesis
(`synthesis_rss_gib`, what the engine reserves per item).
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import (VramPeak, children_peak_rss_gib, device_name, peak_rss_since_reset_gib, record,
                          reset_peak_rss)
from cuzk import api
from cuzk.engine import EngineConfig
from cuzk.engine.config import GpuConfig, PipelineConfig, SrsConfig
from cuzk.engine.engine import Engine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--c1", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--proofs", type=int, default=6)
    ap.add_argument("--settings", default="1x1,2x1,2x2x8",
                    help="synthesis workers x GPU workers per device [x GPU queue depth], comma separated")
    ap.add_argument("--out", default=None, help="results and timelines (default: bench/results, and the "
                                                 "timelines in $TMPDIR/cuzk-bench)")
    args = ap.parse_args()
    c1 = api.as_c1(args.c1)[0]
    rows = []
    for setting in args.settings.split(","):
        synth, gpu, *rest = (int(x) for x in setting.split("x"))
        depth = rest[0] if rest else synth
        config = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=gpu),
                              pipeline=PipelineConfig(max_parallel_synthesis=synth, gpu_queue_depth=depth),
                              srs=SrsConfig(allow_setup=True))  # cuzk's own parameters where no official ones are
        runs = Path(args.out) if args.out else Path(tempfile.gettempdir()) / "cuzk-bench"
        timeline = runs / f"engine_timeline_{args.backend}_{setting}.jsonl"
        timeline.parent.mkdir(parents=True, exist_ok=True)
        timeline.unlink(missing_ok=True)
        vram = VramPeak() if args.backend == "cuda" else None
        fresh = reset_peak_rss()  # the peaks below are this setting's
        with vram or contextlib.nullcontext(), Engine(config, backend=args.backend, timeline=timeline) as engine:
            t = time.perf_counter()
            engine.submit_porep(c1).result()
            cold = time.perf_counter() - t
            for job in [engine.submit_porep(c1) for _ in range(synth)]:  # every synthesis process warm
                job.result()
            latencies = []
            for _ in range(3):
                t = time.perf_counter()
                engine.submit_porep(c1).result()
                latencies.append(time.perf_counter() - t)
            t = time.perf_counter()
            jobs = [engine.submit_porep(c1) for _ in range(args.proofs)]
            for job in jobs:
                job.result()
            batch = time.perf_counter() - t
            res = engine.preload(jobs[0].spec)
            stages = {k.split(".", 2)[2]: v for k, v in jobs[-1].timings.items() if k.startswith("prove.0.")}
            rss, synthesis_rss = peak_rss_since_reset_gib(), children_peak_rss_gib()  # before its processes exit
        per_proof = batch / args.proofs
        rows.append({"bench": "engine_prove", "backend": args.backend, "device": device_name(args.backend),
                     "n": c1.registered_proof.sector_size, "ms": round(statistics.median(latencies) * 1e3, 1),
                     "stat": "median", "proof": c1.registered_proof.name, "synthesis_workers": synth,
                     "gpu_workers_per_device": gpu, "gpu_queue_depth": depth,
                     "witness_batch": config.pipeline.witness_batch, "first_proof_ms": round(cold * 1e3, 1),
                     "sustained_ms": round(per_proof * 1e3, 1), "proofs_per_hour": round(3600 / per_proof),
                     "peak_rss_gib": rss, **({"peak_vram_gib": vram.gib} if vram else {}),
                     "synthesis_processes_peak_rss_gib": synthesis_rss,
                     "synthesis_rss_gib": round((res.synthesis_bytes or 0) / 2**30, 2),
                     **{f"{s}_ms": round(v * 1e3, 1) for s, v in stages.items()},
                     "note": f"ms: one proof at a time on a warm engine (3 runs); sustained: {args.proofs} proofs "
                             "submitted at once; peak_rss_gib: the engine process's peak "
                             + ("in this setting" if fresh else "since it started (its reset was refused)")
                             + "; synthesis_processes_peak_rss_gib: the sum of its synthesis processes' peaks; "
                             f"timeline in {timeline.name}"})
        print(f"{setting}: latency {rows[-1]['ms'] / 1e3:.2f} s, sustained {per_proof:.2f} s/proof "
              f"({rows[-1]['proofs_per_hour']}/h), first {cold:.1f} s, peak RSS {rows[-1]['peak_rss_gib']} GiB"
              + (f", peak VRAM {vram.gib} GiB" if vram else ""), flush=True)
        for path in record(rows[-1:], "engine", args.out):  # each setting as it ends: a cut run keeps those
            print(f"recorded in {path}")


if __name__ == "__main__":
    main()
