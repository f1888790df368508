"""`cuzk config show` and `cuzk timeline summary` / `plot` (cuzk.cli): the engine's effective
configuration and where each value came from; an engine timeline summed up or drawn."""
from __future__ import annotations

import argparse
import json

from cuzk.cli.checks import check_output


def _config_show(args: argparse.Namespace) -> int:
    """Every key with its effective value and where it came from; curio's keys that are no fields of
    cuzk's as comments saying what they do in cuzk."""
    from cuzk.engine.config import CURIO_KEYS, resolve

    config, sources = resolve(args.config)
    for dotted, source in sources.items():
        if dotted in CURIO_KEYS:
            print(f"# {dotted}  # {source}; curio's key: {CURIO_KEYS[dotted]}")
            continue
        table, key = dotted.split(".")
        value = getattr(getattr(config, table), key)
        line = (f"# {dotted} (not set)" if value is None
                else f"{dotted} = {json.dumps(list(value) if isinstance(value, tuple) else value, default=str)}")
        print(f"{line}  # {source}")
    return 0


def _timeline_summary(args: argparse.Namespace) -> int:
    from cuzk.engine.timeline import read_timeline, summary
    from cuzk.errors import format_size

    s = summary(read_timeline(args.file))
    print(f"{args.file}: {s['events']} events over {s['span_s']:.3f} s, {len(s['jobs'])} job(s)")
    print(f"GPU busy {s['gpu_busy_s']:.3f} s ({s['gpu_busy_fraction']:.1%} of the span); at most "
          f"{s['max_gpu_queue']} waiting for a GPU; peak host reserved {format_size(s['peak_host_reserved'])}")
    print(f"{'job':<16} {'partitions':>10} {'proved':>6} {'queued at':>10} {'done at':>10} {'seconds':>10}")
    for job, j in s["jobs"].items():
        times = " ".join(f"{'-':>10}" if v is None else f"{v:10.3f}"
                         for v in (j["queued_s"], j["done_s"], j["seconds"]))
        print(f"{job:<16} {j['partitions']:>10} {j['proved']:>6} {times}")
    return 0


def _timeline_plot(args: argparse.Namespace) -> int:
    from cuzk.engine.timeline import plot, read_timeline

    check_output("--out", args.out)
    events = read_timeline(args.file)
    plot(events, args.out)
    print(f"{args.out}: {len(events)} events of {args.file}")
    return 0


def add_commands(sub) -> None:
    cp = sub.add_parser("config", help="the engine's configuration: show")
    csub = cp.add_subparsers(dest="config_command", required=True)
    sp = csub.add_parser("show", help="print the effective configuration (defaults, --config file, CUZK_<TABLE>_<KEY> "
                                      "variables) and where each value came from")
    sp.add_argument("-c", "--config", metavar="FILE", help="a TOML configuration file (see cuzk.example.toml)")
    sp.set_defaults(run=_config_show)
    tp = sub.add_parser("timeline", help="an engine timeline (JSONL): summary, plot")
    tsub = tp.add_subparsers(dest="timeline_command", required=True)
    sm = tsub.add_parser("summary", help="per job its partitions and time; GPU busy share, GPU queue, peak host memory")
    sm.add_argument("file", metavar="FILE")
    sm.set_defaults(run=_timeline_summary)
    pl = tsub.add_parser("plot", help="draw GPU and synthesis intervals, queue depths and host memory into a PNG "
                                      "(needs matplotlib: pip install 'cuzk[plot]')")
    pl.add_argument("file", metavar="FILE")
    pl.add_argument("--out", required=True, metavar="PNG", help="the PNG to write (atomically)")
    pl.set_defaults(run=_timeline_plot)
