"""`cuzk daemon` and `cuzk supervise`, and the daemon's clients `cuzk submit`, `await`, `status` and
`metrics` (cuzk.cli)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cuzk.cli.checks import check_input, number_in
from cuzk.errors import InputError
from cuzk.util.atomic import atomic_write

RESULTS_TTL_H = (0.01, 87660)  # 36 seconds to 10 years (the expiry runs every tenth of it)


def _daemon(args: argparse.Namespace) -> int:
    from cuzk.service.run import DaemonOptions, run

    return run(DaemonOptions(args.listen, Path(args.state_dir), args.config, args.backend,
                             Path(args.log_file) if args.log_file else None, args.status_listen,
                             args.results_ttl * 3600, tuple(args.preload), args.allow_setup, args.log_level,
                             args.vram_budget, args.cluster, args.cluster_resource, args.cluster_heartbeat))


def _supervise(args: argparse.Namespace) -> int:
    from cuzk.service.supervise import SupervisorOptions, supervise

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise InputError("supervise needs a command after --, e.g. cuzk supervise --state-dir D -- cuzk daemon ...")
    return supervise(SupervisorOptions(command, Path(args.state_dir), args.max_exits, args.window, args.backoff))


def _client(args: argparse.Namespace):
    from cuzk.service.client import Client

    return Client(args.address)


def _submit(args: argparse.Namespace) -> int:
    check_input("c1", args.c1)
    payload = Path(args.c1).read_bytes()
    with _client(args) as client:
        print(client.submit(payload, args.request_id))
    return 0


def _await(args: argparse.Namespace) -> int:
    with _client(args) as client:
        proof = client.await_proof(args.job_id, args.timeout)
    if args.out:
        atomic_write(args.out, proof)
        print(f"{args.out}: {len(proof)} bytes")
    else:
        print(proof.hex())
    return 0


def _status(args: argparse.Namespace) -> int:
    with _client(args) as client:
        print(json.dumps(client.status(), indent=1))
    return 0


def _metrics(args: argparse.Namespace) -> int:
    with _client(args) as client:
        sys.stdout.write(client.metrics())
    return 0


def _add_client_commands(sub) -> None:
    def parser(name: str, help: str, run):
        p = sub.add_parser(name, help=help)
        p.add_argument("--address", default="unix:///run/curio/cuzk.sock", help="the daemon (unix:///path or host:port)")
        p.set_defaults(run=run)
        return p
    p = parser("submit", "queue a PoRep proof of a C1 file on a daemon; print its job id", _submit)
    p.add_argument("c1", help="C1 JSON, or curio's wrapper JSON")
    p.add_argument("--request-id", default="", help="idempotency key (default: the daemon picks one)")
    p = parser("await", "wait for a daemon's job and write its proof", _await)
    p.add_argument("job_id")
    p.add_argument("--timeout", type=float, default=0, help="seconds to wait (0: until it ends)")
    p.add_argument("--out", help="write the proof bytes here (default: print them in hex)")
    parser("status", "a daemon's status (GetStatus) as JSON", _status)
    parser("metrics", "a daemon's Prometheus metrics", _metrics)


def add_commands(sub) -> None:
    _add_client_commands(sub)
    sp = sub.add_parser("supervise", help="run a daemon, restart it with backoff, record why each run ended")
    sp.add_argument("--state-dir", required=True, help="where exits are journaled and supervisor.log is written")
    sp.add_argument("--max-exits", type=int, default=5, help="exits within --window that make a crash loop (default 5)")
    sp.add_argument("--window", type=float, default=60.0, help="crash-loop window in seconds (default 60)")
    sp.add_argument("--backoff", type=float, default=1.0, help="first restart delay in seconds, doubling (default 1)")
    sp.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ... (e.g. -- cuzk daemon --state-dir D)")
    sp.set_defaults(run=_supervise)

    from cuzk.service.run import DEFAULT_CONFIG, DEFAULT_STATE_DIR

    dp = sub.add_parser("daemon", help="serve cuzk.v1.ProvingEngine (curio's cuzk daemon's gRPC contract) with a "
                                       "durable job journal")
    dp.add_argument("-c", "--config", metavar="FILE",
                    help=f"configuration TOML (see cuzk.example.toml; default {DEFAULT_CONFIG} when it exists, "
                         "else the defaults)")
    dp.add_argument("-l", "--listen", metavar="ADDRESS",
                    help="unix:///path or host:port (default: daemon.listen, unix:///run/curio/cuzk.sock)")
    dp.add_argument("--status-listen", metavar="HOST:PORT",
                    help="serve GET /status, /metrics, /healthz, /readyz on this port (default: daemon.status_listen, "
                         "off)")
    dp.add_argument("--log-level", metavar="LEVEL",
                    help="trace, debug, info, warn, warning or error (default: logging.level, info)")
    dp.add_argument("--allow-setup", action="store_true",
                    help="run a Groth16 setup for a circuit without official parameters (srs.allow_setup; tests and "
                         "private networks only)")
    dp.add_argument("--vram-budget", metavar="SIZE",
                    help='cap each GPU\'s whole use at SIZE, e.g. 24GiB (memory.vram_budget; "" = no cap): the prover '
                         "plans within it")
    dp.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR),
                    help=f"journal, lock and log directory, one daemon per directory (default {DEFAULT_STATE_DIR})")
    dp.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    dp.add_argument("--log-file", help="the log file (default <state-dir>/daemon.log)")
    dp.add_argument("--results-ttl", type=number_in(float, *RESULTS_TTL_H), default=168.0, metavar="HOURS",
                    help=f"keep finished jobs' results this long, {RESULTS_TTL_H[0]} to {RESULTS_TTL_H[1]} (10 years; "
                         "default 168 = 7 days)")
    dp.add_argument("--preload", action="append", default=[], metavar="CIRCUIT",
                    help="load this circuit's parameters before ready (curio's porep-32g, porep-64g, wpost-32g, "
                         "winning-32g, snap-32g, snap-64g, or another size: 2k, 8m, 512m, e.g. wpost-2k; "
                         "repeatable); missing or unreadable files: exit 7")
    dp.add_argument("--cluster", metavar="ADDRESS",
                    help="prove on a Ray cluster's GPU nodes, one prover per GPU: auto (the cluster this host "
                         "joined with `ray start`), HOST:PORT or ray://HOST:PORT; needs pip install \"cuzk[cluster]\"")
    dp.add_argument("--cluster-resource", default="GPU", metavar="NAME",
                    help="the Ray node resource a prover claims one unit of (default GPU; a custom one for CPU provers, "
                         "with --backend cpu)")
    dp.add_argument("--cluster-heartbeat", type=number_in(float, 0.1, 60), default=5.0, metavar="SECONDS",
                    help="how often the front asks each prover for its health (default 5); one silent for three "
                         "of these is flagged")
    dp.set_defaults(run=_daemon)
