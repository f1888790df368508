"""PoRep proofs through the real gRPC proving daemon: `cuzk daemon` started as a subprocess (a unix
socket, a status port), one warm-up proof, then the latency of Prove calls one at a time and the
throughput of N proofs through SubmitProof + AwaitProof from K client threads; every proof verified.
JSON lines (daemon_prove) in DIR/daemon_<backend>.jsonl, and the daemon's /status (JSON), /metrics
(Prometheus text) and log saved in DIR as daemon_status.json, daemon_metrics.txt and daemon.log, and
/status 1 s into the throughput run (jobs live) as daemon_status_busy.json.

    python -m bench.daemon --c1 C1.json [--backend cuda] [--proofs 6] [--concurrency K] [--latency-runs 3]
                           [--config FILE] [--out DIR]

Each proof is sent as curio sends it (its C1 wrapper JSON) with a request_id of its own. Peak RSS is
the daemon process's (VmHWM, read before it is stopped) and the largest of its child processes'
(the synthesis workers). The daemon is stopped with SIGTERM and must exit 0, or nothing is recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.common import device_name, record
from cuzk import api
from cuzk.porep.c1 import C1Output
from cuzk.service.client import Client
from cuzk.service.payload import wrap

CLI = "import sys; from cuzk.cli import main; sys.exit(main())"


@dataclass
class Daemon:
    """A running `cuzk daemon` subprocess: its gRPC address, status port and state directory."""

    proc: subprocess.Popen
    address: str
    status_port: int
    state_dir: Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daemon(work: Path, backend: str, config: str | None) -> Daemon:
    """Start `cuzk daemon` with its state, socket and stderr in `work`."""
    state, port = work / "state", free_port()
    address = f"unix://{work}/cuzk.sock"
    args = [sys.executable, "-c", CLI, "daemon", "--backend", backend, "--state-dir", str(state), "--allow-setup",
            "--listen", address, "--status-listen", f"127.0.0.1:{port}", *(["--config", config] if config else [])]
    with (work / "daemon.stderr").open("w") as err:
        # a session of its own: signals reach it only from here; no stdout: a pipe after us is not held open
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    return Daemon(proc, address, port, state)


def http_get(port: int, path: str) -> tuple[int, str]:
    """The status code and body of GET http://127.0.0.1:<port><path>."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_ready(daemon: Daemon, timeout_s: float) -> float:
    """Seconds until the daemon's /readyz answers 200; RuntimeError if it exits or takes too long."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        if daemon.proc.poll() is not None:
            raise RuntimeError(f"the daemon exited with {daemon.proc.returncode} before it was ready")
        try:
            if http_get(daemon.status_port, "/readyz")[0] == 200:
                return time.perf_counter() - start
        except OSError:  # not listening yet
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the daemon was not ready after {timeout_s:.0f} s")


def vm_hwm_gib(pid: int) -> float | None:
    """Peak resident set size (VmHWM) of process `pid`, GiB; None if it has gone or /proc has no VmHWM."""
    try:
        for row in Path(f"/proc/{pid}/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return round(int(row.split()[1]) / 2**20, 2)
    except OSError:
        pass
    return None


def descendants(pid: int) -> list[int]:
    """The process ids of every live descendant of `pid` (parents read from /proc/*/stat)."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    found, frontier = [], {pid}
    while frontier:
        frontier = {child for child, p in parent.items() if p in frontier}
        found += frontier
    return found


def prove_once(client: Client, payload: bytes, request_id: str, timeout_s: float) -> tuple[float, bytes]:
    """One Prove call: its wall seconds and the proof."""
    start = time.perf_counter()
    proof = client.prove(payload, request_id, timeout_s)
    return time.perf_counter() - start, proof


def submit_and_await(client: Client, payload: bytes, request_id: str, timeout_s: float) -> bytes:
    """SubmitProof then AwaitProof of one job: the proof."""
    return client.await_proof(client.submit(payload, request_id), timeout_s)


def throughput(client: Client, payload: bytes, proofs: int, concurrency: int,
               timeout_s: float) -> tuple[float, list[bytes]]:
    """Wall seconds of `proofs` jobs through SubmitProof + AwaitProof from `concurrency` threads, and the proofs.
    On an exception (a SIGTERM) the threads are not waited for: closing the client ends their calls."""
    start = time.perf_counter()
    pool = ThreadPoolExecutor(concurrency)
    try:
        futures = [pool.submit(submit_and_await, client, payload, f"bench-batch-{i}", timeout_s) for i in range(proofs)]
        out = [f.result() for f in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return time.perf_counter() - start, out


@dataclass
class Measured:
    """What one run measured: the warm-up, the Prove calls one at a time, the batch, and every proof."""

    submit_cold_s: float
    first_s: float
    latencies_s: list[float]
    batch_s: float
    proofs: list[bytes]


def measure(daemon: Daemon, payload: bytes, latency_runs: int, proofs: int, concurrency: int,
            timeout_s: float, logs: Path) -> Measured:
    """Warm-up proof, `latency_runs` Prove calls one at a time, then the throughput run (printed as it goes;
    the /status page 1 s into the throughput run saved in `logs`)."""
    with Client(daemon.address, timeout_s=60) as client:
        client.status()  # the channel connected: the submission below times the daemon, not the connection
        start = time.perf_counter()
        job = client.submit(payload, "bench-warm")
        submit_cold = time.perf_counter() - start
        proof = client.await_proof(job, timeout_s)
        first = time.perf_counter() - start
        print(f"SubmitProof on the cold daemon {submit_cold * 1e3:.1f} ms; warm-up proof {first:.2f} s", flush=True)
        got, latencies = [proof], []
        for i in range(latency_runs):
            seconds, proof = prove_once(client, payload, f"bench-seq-{i}", timeout_s)
            latencies.append(seconds)
            got.append(proof)
            print(f"Prove {i}: {seconds:.2f} s", flush=True)
        busy = threading.Timer(1.0, save_busy_status, (daemon, logs))
        busy.daemon = True
        busy.start()
        batch, batch_proofs = throughput(client, payload, proofs, concurrency, timeout_s)
        busy.cancel()
        print(f"{proofs} proofs, {concurrency} threads: {batch:.2f} s", flush=True)
    return Measured(submit_cold, first, latencies, batch, got + batch_proofs)


def save_busy_status(daemon: Daemon, logs: Path) -> None:
    """Save /status as it is now, with jobs live, into logs/daemon_status_busy.json."""
    try:
        (logs / "daemon_status_busy.json").write_text(http_get(daemon.status_port, "/status")[1])
    except OSError as e:
        print(f"the status port did not answer: {e}")


def save_pages(daemon: Daemon, out: Path) -> None:
    """Save the daemon's /status and /metrics into `out` and print an excerpt of each."""
    _, status = http_get(daemon.status_port, "/status")
    _, metrics = http_get(daemon.status_port, "/metrics")
    (out / "daemon_status.json").write_text(status)
    (out / "daemon_metrics.txt").write_text(metrics)
    doc = json.loads(status)
    print(f"/status: jobs {doc['jobs']}, live {len(doc['live'])}, host memory {doc['memory']}, "
          f"resident {doc['resident_circuits']}, uptime {doc['uptime_seconds']} s")
    print("/metrics:", *(m for m in metrics.splitlines() if m.startswith("cuzk_") and "_bucket" not in m),
          sep="\n  ")


def peaks(daemon: Daemon) -> tuple[float | None, float | None]:
    """Peak RSS (GiB) of the daemon process and the largest of its descendants' (None: unknown)."""
    pid = daemon.proc.pid
    children = [g for g in map(vm_hwm_gib, descendants(pid)) if g is not None]
    return vm_hwm_gib(pid), max(children, default=None)


def finish(daemon: Daemon, logs: Path) -> int:
    """Save the daemon's pages (if it still answers) and log into `logs`, SIGTERM it, its exit code."""
    try:
        save_pages(daemon, logs)
    except OSError as e:
        print(f"the status port did not answer: {e}")
    code = stop_daemon(daemon)
    shutil.copyfile(daemon.state_dir / "daemon.log", logs / "daemon.log")
    print(f"daemon exit {code} after SIGTERM{' (SIGKILLed after 30 s)' if code == -signal.SIGKILL else ''}")
    return code


def stop_daemon(daemon: Daemon) -> int:
    """SIGTERM the daemon and its exit code. It finishes a running proof first; after 30 s it and its
    process group (its synthesis workers) are SIGKILLed."""
    daemon.proc.send_signal(signal.SIGTERM)
    try:
        return daemon.proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(daemon.proc.pid, signal.SIGKILL)
        return daemon.proc.wait()


def on_sigterm(signum: int, frame: object) -> None:
    """A SIGTERM (the device script's timeout) unwinds main, so the daemon is stopped and its pages saved."""
    raise SystemExit(128 + signum)


def result_row(backend: str, c1: C1Output, m: Measured, proofs: int, concurrency: int,
               rss: tuple[float | None, float | None]) -> dict:
    """The daemon_prove line of a run (BENCH.md's fields; ms: the median Prove latency)."""
    per_proof = m.batch_s / proofs
    return {"bench": "daemon_prove", "backend": backend, "device": device_name(backend),
            "n": c1.registered_proof.sector_size, "ms": round(statistics.median(m.latencies_s) * 1e3, 1),
            "stat": "median", "proof": c1.registered_proof.name, "min_ms": round(min(m.latencies_s) * 1e3, 1),
            "max_ms": round(max(m.latencies_s) * 1e3, 1), "first_proof_ms": round(m.first_s * 1e3, 1),
            "sustained_ms": round(per_proof * 1e3, 1), "proofs_per_hour": round(3600 / per_proof), "proofs": proofs,
            "concurrency": concurrency, "peak_rss_gib": rss[0], "children_peak_rss_gib": rss[1],
            "transport": "unix socket",
            "note": f"ms: one Prove call at a time on a warm daemon ({len(m.latencies_s)} runs, after one warm-up "
                    f"proof: first_proof_ms); sustained: {proofs} proofs through SubmitProof + AwaitProof from "
                    f"{concurrency} client threads; every proof verified; peak_rss_gib: the daemon process's "
                    f"VmHWM, children_peak_rss_gib: the largest of its child processes'; the daemon's /status "
                    f"and /metrics at the end in daemon_status.json and daemon_metrics.txt, /status 1 s into the "
                    f"batch in daemon_status_busy.json"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--c1", required=True, help="a C1 JSON file")
    ap.add_argument("--backend", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--proofs", type=int, default=6, help="proofs of the throughput run")
    ap.add_argument("--concurrency", type=int, default=None,
                    help="client threads of the throughput run (default: --proofs)")
    ap.add_argument("--latency-runs", type=int, default=3, help="Prove calls one at a time after the warm-up")
    ap.add_argument("--config", default=None, help="the daemon's engine configuration TOML")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds one proof may take")
    ap.add_argument("--out", default=None,
                    help="results and daemon pages (default: bench/results, and the pages in $TMPDIR/cuzk-bench)")
    args = ap.parse_args()
    if min(args.proofs, args.latency_runs, args.concurrency or 1) < 1:
        ap.error("--proofs, --latency-runs and --concurrency must be at least 1")
    concurrency = args.concurrency or args.proofs
    logs = Path(args.out) if args.out else Path(tempfile.gettempdir()) / "cuzk-bench"
    logs.mkdir(parents=True, exist_ok=True)
    c1 = api.as_c1(args.c1)[0]
    signal.signal(signal.SIGTERM, on_sigterm)
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-daemon-") as tmp:
        daemon = start_daemon(Path(tmp), args.backend, args.config)
        try:
            print(f"daemon pid {daemon.proc.pid} ready in {wait_ready(daemon, 300):.1f} s", flush=True)
            m = measure(daemon, wrap(c1), args.latency_runs, args.proofs, concurrency, args.timeout, logs)
        finally:
            rss = peaks(daemon)
            code = finish(daemon, logs)
            if code != 0:
                print((Path(tmp) / "daemon.stderr").read_text()[-2000:], end="")
    if code != 0:
        sys.exit(f"the daemon exited {code} on SIGTERM (expected 0): nothing recorded")
    bad = sum(not api.verify(c1, p) for p in m.proofs)
    if bad:
        sys.exit(f"{bad} of {len(m.proofs)} proofs do not verify: nothing recorded")
    print(f"all {len(m.proofs)} proofs verify")
    row = result_row(args.backend, c1, m, args.proofs, concurrency, rss)
    submit = {"bench": "daemon_submit", "backend": args.backend, "device": device_name(args.backend),
              "n": c1.registered_proof.sector_size, "ms": round(m.submit_cold_s * 1e3, 2), "stat": "median",
              "cold": True, "proof": c1.registered_proof.name, "transport": "unix socket",
              "note": "one SubmitProof on a daemon that had loaded no circuit (its PCE and parameters then "
                      "loaded after the reply), the client's channel already connected; the job's proof came "
                      f"{m.first_s:.2f} s after the submission"}
    print(f"latency {row['ms'] / 1e3:.2f} s (min {row['min_ms'] / 1e3:.2f}, max {row['max_ms'] / 1e3:.2f}), "
          f"sustained {row['sustained_ms'] / 1e3:.2f} s/proof ({row['proofs_per_hour']}/h), first "
          f"{m.first_s:.1f} s, daemon peak RSS {rss[0]} GiB, children {rss[1]} GiB")
    print(f"cold SubmitProof {submit['ms']} ms")
    for path in record([row, submit], "daemon", args.out):
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
