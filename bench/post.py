"""WinningPoSt and WindowPoSt on a warm cuzk.engine.Engine, from synthetic vanilla proofs
(cuzk.post.synthetic: no sector sealed): seconds per full WindowPoSt partition (32GiB: 2,349 sectors x
10 challenges; median over --runs, each run a fresh partition) with the engine process's peak host RSS;
WinningPoSt's latency on the warm engine; then WinningPoSt's latency while the engine is busy with
PoRep (--busy synthetic C1s of the same sector size, cuzk.porep.synthetic, submitted just before each
WinningPoSt). Every proof is verified by the engine. JSON lines window_post and winning_post (`busy`),
in <out>/post_<backend>.jsonl.

    python -m bench.post [--proof StackedDrgWindow32GiBV1_2,StackedDrgWinning32GiBV1] [--backend cuda]
        [--runs 3] [--busy 1] [--synthesis 2] [--out DIR]

Keys: on cuda generated on the GPU from each circuit's PCE and kept there (bench.porep32g's
device_key_spec; seeded toxic waste: the proofs verify against that key's vk), on cpu cuzk's own from
the parameter cache (made once, allow_setup). Each circuit is made resident and warm (Engine.warm) and
proves one untimed proof first; a PoSt circuit is evicted once its measurements are done, so the 32GiB
WindowPoSt key and the PoRep key are never on the device together. Timed: submission (the vanilla
checks and the packed witness, on the caller's thread: `submit_ms`) to the verified proof.
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

from bench.common import (VramPeak, children_peak_rss_gib, device_name, peak_rss_since_reset_gib, record,
                          reset_peak_rss)
from bench.porep32g import device_key_spec, gpu_params_spec, stage_medians
from cuzk.engine import EngineConfig
from cuzk.engine.config import PipelineConfig, SrsConfig
from cuzk.engine.engine import CircuitSpec, Engine, Job
from cuzk.engine.porep import porep_spec_of
from cuzk.engine.post import post_spec_of, submit_post
from cuzk.porep.registry import SECTOR_SIZES, get_proof
from cuzk.porep.synthetic import synthetic_c1
from cuzk.post.proving import post_circuit
from cuzk.post.registry import PoStKind, RegisteredPoStProof, get_post_proof
from cuzk.post.synthetic import SyntheticPoSt, synthetic_post


def post_spec(p: RegisteredPoStProof, backend: str) -> CircuitSpec:
    """The PoSt circuit's spec: its key generated on the GPU (cuda) or cuzk's own from the cache (cpu)."""
    base = post_spec_of(p, progress=True, allow_setup=True)
    return device_key_spec(base, lambda: post_circuit(p.circuit_shape), backend) if backend == "cuda" else base


def prove(engine: Engine, s: SyntheticPoSt) -> tuple[float, float, Job]:
    """Seconds from submission to the verified proof, seconds of the submission alone, and the job."""
    t = time.perf_counter()
    job = submit_post(engine, s.proof, s.randomness, s.vanilla, s.partition_index, allow_setup=True)
    submitted = time.perf_counter() - t
    job.result()
    return time.perf_counter() - t, submitted, job


def warm(engine: Engine, spec: CircuitSpec) -> float:
    t = time.perf_counter()
    engine.warm(spec)
    return time.perf_counter() - t


def vram(backend: str) -> VramPeak | contextlib.nullcontext:
    return VramPeak() if backend == "cuda" else contextlib.nullcontext()


def ms(seconds: Sequence[float]) -> float:
    return round(statistics.median(seconds) * 1e3, 1)


def window(engine: Engine, p: RegisteredPoStProof, backend: str, runs: int, rng: np.random.Generator) -> dict:
    """One untimed partition on the warm engine, then `runs` fresh ones one at a time (each made just
    before it is submitted); the peak RSS counts from the first timed run."""
    spec = post_spec(p, backend)
    with vram(backend) as peak:
        warm_s = warm(engine, spec)
        first_s, _, _ = prove(engine, synthetic_post(p, rng=rng))
        fresh = reset_peak_rss()
        made, timed = [], []
        for _ in range(runs):
            t = time.perf_counter()
            s = synthetic_post(p, rng=rng)
            made.append(time.perf_counter() - t)
            timed.append(prove(engine, s))
            print(f"{p.name}: partition of {len(s.vanilla)} sectors in {timed[-1][0]:.2f} s "
                  f"(submission {timed[-1][1]:.2f} s)", flush=True)
        rss, children = peak_rss_since_reset_gib(), children_peak_rss_gib()
    engine.evict(spec.key)
    return {"bench": "window_post", "n": p.sector_size, "ms": ms([t for t, _, _ in timed]), "stat": "median",
            "peak_rss_gib": rss, "peak_vram_gib": peak.gib if backend == "cuda" else None, "proof": p.name,
            "sectors": p.sector_count, "challenges": p.challenge_count, "runs": runs,
            "first_ms": round(first_s * 1e3, 1), "warm_s": round(warm_s, 1), "submit_ms": ms([s for _, s, _ in timed]),
            "generate_ms": ms(made), "synthesis_processes_peak_rss_gib": children,
            **{f"{k}_ms": round(v * 1e3, 1) for k, v in stage_medians([j for _, _, j in timed]).items()},
            "note": f"ms: one full synthetic partition ({p.sector_count} sectors) at a time on the warm engine, "
                    f"median of {runs}, submission (submit_ms: vanilla checks and packed witness) to the verified "
                    "proof; first_ms: the untimed first after Engine.warm (warm_s); generate_ms: making one "
                    "synthetic partition, not timed; peak_rss_gib: the engine process during the timed runs"
                    + ("" if fresh else " (its reset was refused: since the start)")
                    + "; <stage>_ms: the engine's per-partition stages, median"}


def winning(engine: Engine, p: RegisteredPoStProof, spec: CircuitSpec, backend: str, runs: int,
            rng: np.random.Generator) -> dict:
    """Warm latency: `runs` proofs one at a time after an untimed first."""
    with vram(backend) as peak:
        warm_s = warm(engine, spec)
        first_s, _, _ = prove(engine, synthetic_post(p, rng=rng, progress=False))
        timed = [prove(engine, synthetic_post(p, rng=rng, progress=False)) for _ in range(runs)]
    alone = [t for t, _, _ in timed]
    print(f"{p.name}: warm latency {statistics.median(alone):.3f} s (median of {runs})", flush=True)
    return {"bench": "winning_post", "n": p.sector_size, "ms": ms(alone), "stat": "median", "busy": False,
            "peak_vram_gib": peak.gib if backend == "cuda" else None, "proof": p.name, "runs": runs,
            "first_ms": round(first_s * 1e3, 1), "warm_s": round(warm_s, 1), "submit_ms": ms([s for _, s, _ in timed]),
            **{f"{k}_ms": round(v * 1e3, 1) for k, v in stage_medians([j for _, _, j in timed]).items()},
            "note": f"ms: one WinningPoSt (66 challenges) at a time on the warm engine, median of {runs}, "
                    "submission to the verified proof; first_ms: the untimed first after Engine.warm (warm_s); "
                    "<stage>_ms: the engine's stages, median"}


def busy_winning(engine: Engine, p: RegisteredPoStProof, backend: str, runs: int, busy: int,
                 rng: np.random.Generator) -> dict:
    """Per run, `busy` PoRep proofs submitted and a WinningPoSt right after them (its circuit resident),
    its latency timed; the PoRep circuit made resident and warm first."""
    porep = get_proof(f"StackedDrg{SECTOR_SIZES[p.sector_size].label}V1_1")
    spec = gpu_params_spec(porep.name, backend) if backend == "cuda" else \
        porep_spec_of(porep, progress=True, allow_setup=True)
    c1s = [synthetic_c1(porep, prover_id=bytes(range(32)), sector_id=i + 1, ticket=bytes([i + 1]) * 32,
                        seed=b"\x06" * 32, rng=rng, progress=False) for i in range(busy)]
    with vram(backend) as peak:
        porep_warm_s = warm(engine, spec)
        latencies, porep_s, overlapped = [], [], 0
        for _ in range(runs):
            s = synthetic_post(p, rng=rng, progress=False)
            t = time.perf_counter()
            jobs = [engine.submit_porep(c1) for c1 in c1s]
            latencies.append(prove(engine, s)[0])
            overlapped += not all(j.done for j in jobs)
            for j in jobs:
                j.result()
            porep_s.append(time.perf_counter() - t)
            print(f"{p.name} beside {busy} {porep.name}: {latencies[-1]:.3f} s; the PoRep done in "
                  f"{porep_s[-1]:.1f} s", flush=True)
    return {"bench": "winning_post", "n": p.sector_size, "ms": ms(latencies), "stat": "median", "busy": True,
            "peak_vram_gib": peak.gib if backend == "cuda" else None, "proof": p.name, "runs": runs,
            "porep": porep.name, "porep_proofs": busy, "porep_running_at_end": overlapped,
            "porep_ms": ms(porep_s), "porep_warm_s": round(porep_warm_s, 1),
            "note": f"ms: one WinningPoSt submitted just after {busy} {porep.name} proofs (synthetic C1s) on the warm "
                    f"engine, submission to the verified proof, median of {runs}; porep_running_at_end: runs in "
                    "which some PoRep was still unfinished when the WinningPoSt proof came back; porep_ms: "
                    "submission to the last PoRep proof"}


def main(argv: Sequence[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proof", default="StackedDrgWindow32GiBV1_2,StackedDrgWinning32GiBV1",
                    help="registered PoSt proofs, comma separated (WindowPoSt and / or WinningPoSt)")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--runs", type=int, default=3, help="timed proofs per measurement")
    ap.add_argument("--busy", type=int, default=1, help="PoRep proofs beside each busy WinningPoSt (0: none)")
    ap.add_argument("--synthesis", type=int, default=2, help="synthesis processes")
    ap.add_argument("--seed", type=int, default=1, help="of the synthetic inputs")
    ap.add_argument("--out", default=None,
                    help="results directory (default bench/results; the timeline in $TMPDIR/cuzk-bench)")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.busy < 0:
        ap.error("--runs must be >= 1 and --busy >= 0")
    proofs = [get_post_proof(name) for name in args.proof.split(",")]
    rng = np.random.default_rng(args.seed)
    big = any(p.sector_size >= 32 << 30 for p in proofs)
    config = EngineConfig(srs=SrsConfig(allow_setup=True),
                          pipeline=PipelineConfig(max_parallel_synthesis=args.synthesis,
                                                  **({"witness_batch": 2} if big else {})))
    logs = Path(args.out) if args.out else Path(tempfile.gettempdir()) / "cuzk-bench"
    logs.mkdir(parents=True, exist_ok=True)
    timeline = logs / f"post_engine_{args.backend}.jsonl"
    timeline.unlink(missing_ok=True)
    rows: list[dict] = []

    def save(row: dict) -> None:  # each as it ends: a run cut short keeps those
        row.update(backend=args.backend, device=device_name(args.backend), note=f"{row['note']}; timeline {timeline.name}")
        for path in record([row], "post", args.out):
            print(f"recorded in {path}", flush=True)
        rows.append(row)

    with Engine(config, backend=args.backend, timeline=timeline) as engine:
        for p in sorted(proofs, key=lambda p: p.kind is not PoStKind.WINDOW):  # WindowPoSt's key gone before PoRep's
            if p.kind is PoStKind.WINDOW:
                save(window(engine, p, args.backend, args.runs, rng))
                continue
            spec = post_spec(p, args.backend)
            save(winning(engine, p, spec, args.backend, args.runs, rng))
            if args.busy:
                save(busy_winning(engine, p, args.backend, args.runs, args.busy, rng))
            engine.evict(spec.key)
    return rows


if __name__ == "__main__":
    main()
