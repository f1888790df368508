"""The `cuzk` command."""
from __future__ import annotations

import argparse
import logging
import sys

from cuzk import __version__
from cuzk.errors import CuzkError


def _selftest(args: argparse.Namespace) -> int:
    from cuzk.selftest import run_selftest

    return 0 if run_selftest(backend=args.backend, log_n=args.log_n) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cuzk", description="GPU Groth16 prover for Filecoin PoRep")
    parser.add_argument("--version", action="version", version=f"cuzk {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log stage timings")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("selftest", help="check MSM and NTT on a small example against references")
    st.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    st.add_argument("--log-n", type=int, default=8, help="log2 of the example size (default 8)")
    st.set_defaults(run=_selftest)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    try:
        return args.run(args)
    except CuzkError as e:
        print(f"cuzk: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
