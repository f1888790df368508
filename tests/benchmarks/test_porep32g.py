"""bench.porep32g's pipeline (a circuit made resident, a first proof, N proofs at once
through the engine, every partition verified, per-partition stage medians, the timeline and its
plot): on the CPU backend with the engine tests' small witness-program circuit in CI; the real
command on a 2KiB sector (slow)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import porep32g
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import GpuConfig, PipelineConfig
from cuzk.engine.engine import Engine
from cuzk.engine.timeline import plot, read_timeline
from engine.test_batch import packed_tasks, program_spec

ROOT = Path(__file__).resolve().parents[2]


def test_the_pipeline_on_a_small_circuit(tmp_path):
    spec = program_spec("porep32g-small")
    config = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1),
                          pipeline=PipelineConfig(max_parallel_synthesis=2, gpu_queue_depth=6, witness_batch=6))
    timeline = tmp_path / "timeline.jsonl"
    with Engine(config, backend="cpu", timeline=timeline, budget=MemoryBudget(1 << 34, "test RAM")) as engine:
        got = porep32g.run(engine, spec, lambda i: engine.submit(spec, packed_tasks(20 * i, 3)), proofs=3)
    assert got["partitions"] == 3 and got["first_s"] > 0 and got["sustained_s"] > 0 and got["resident_s"] > 0
    assert got["latency_s"] > 0 and got["warm_s"] >= 0
    assert {"witness", "evaluate", "ntt", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "total"} <= set(got["stages"])
    assert all(s > 0 for s in got["stages"].values())
    events = read_timeline(timeline)
    ends = [e for e in events if e["event"] == "gpu_end"]
    assert len(ends) == 5 * 3  # the first proof, one alone, 3 at once: 3 partitions each, every one proven
    pytest.importorskip("matplotlib")
    plot(events, tmp_path / "timeline.png")
    assert (tmp_path / "timeline.png").stat().st_size > 0


@pytest.mark.slow
def test_the_command_on_a_2kib_sector(tmp_path):
    """The real command: synthetic 2KiB C1s, cuzk's cached (or generated) parameters, CPU backend."""
    out = subprocess.run([sys.executable, "-m", "bench.porep32g", "--proof", "StackedDrg2KiBV1_1", "--proofs", "1",
                          "--backend", "cpu", "--synthesis", "1", "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    (line,) = [json.loads(x) for x in (tmp_path / "engine_cpu.jsonl").read_text().splitlines()]
    assert line["bench"] == "engine_prove" and line["n"] == 2048 and line["partitions"] == 1 and line["ms"] > 0
    assert line["latency_ms"] > 0 and line["first_proof_ms"] > 0
    assert line["gpu_witness"] is True and line["witness_ms"] > 0 and line["msm_h_ms"] > 0
    assert (tmp_path / "porep_engine_cpu_StackedDrg2KiBV1_1.jsonl").exists()


def test_peak_rss_per_setting_and_of_child_processes():
    """bench.common's peaks: this process's high-water mark restarts at reset_peak_rss (it held 256 MiB
    before, far less after), and a live child's peak counts in children_peak_rss_gib."""
    import numpy as np

    from bench.common import children_peak_rss_gib, peak_rss_since_reset_gib, reset_peak_rss

    if not reset_peak_rss():
        pytest.skip("this kernel refuses to reset the peak resident size")
    base = peak_rss_since_reset_gib()  # the resident size now
    big = np.ones(256 << 20, np.uint8)
    assert peak_rss_since_reset_gib() >= base + 0.24
    del big
    assert reset_peak_rss() and peak_rss_since_reset_gib() < base + 0.1
    child = subprocess.Popen([sys.executable, "-c", "import sys, numpy; a = numpy.ones(200 << 20, numpy.uint8); "
                              "print(flush=True); sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        child.stdout.readline()  # it holds its 200 MiB now
        assert children_peak_rss_gib() >= 0.19
    finally:
        child.communicate(b"")


def test_a_key_made_before_the_engine_counts_once():
    """host_budget_beside: the host budget plus the key's bytes, since the engine's start reserves the
    process's RSS (the key included) and the resident circuit reserves the key again."""
    from cuzk.engine.budget import host_limit
    from cuzk.groth16.keys import PARAMS_VECTORS

    spec, config = program_spec("porep32g-key"), EngineConfig()
    _, loaded = spec.load()
    key = sum(getattr(loaded.params, name).nbytes for name in PARAMS_VECTORS)
    host = MemoryBudget.for_host(host_limit(config.memory.host_cap), config.memory.host_margin)
    budget = porep32g.host_budget_beside(spec, config)
    assert key > 0 and budget.total == host.total + key and "key made before the engine" in budget.source
