"""The `cuzk` command: selftest; seal, prove, verify a PoRep; demo (all three on a built-in 2KiB sector);
gpu info and gpu build (CUDA devices; compile the kernels ahead); pce build, show and verify (the
compiled partition circuit cached beside the parameters); config show (the engine's effective
configuration); timeline summary and plot (an engine timeline). Each group of commands is a
module of this package (porep, gpu, pce, engine, service); this one builds the parser and runs a
command, turning its errors into the exit statuses of EPILOG."""
from __future__ import annotations

import argparse
import logging
import re
import sys
import traceback
from typing import NoReturn

from cuzk import __version__
from cuzk.cli import engine, fleet, gpu, pce, porep, post, service, snap
from cuzk.cli.checks import number_in
from cuzk.errors import CuzkError
from cuzk.util.jsonio import QUOTE_CHARS

EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED = 2, 3, 130  # 0 success, 1 invalid (see EPILOG)
EPILOG = """exit status:
  0    success (verify: the proof is valid)
  1    verify: the proof is INVALID; selftest or demo failed; gpu info: no CUDA device;
       pce show: no PCE cached; pce verify: the cached PCE is absent or INVALID
  2    an error in what was asked: bad usage, a file that is missing, a directory, unreadable or
       unwritable, or malformed input (a configuration file or CUZK_<TABLE>_<KEY> variable, a
       timeline line); one line on stderr, "cuzk: error: <message>", naming the path, field, key
       or variable (output paths are checked before any long work starts)
  3    an internal error (a bug in cuzk): one line on stderr; `cuzk --debug ...` shows the traceback
  130  interrupted (Ctrl-C)
"""
SELFTEST_LOG_N = (2, 12)  # the smallest example that holds the edge scalars; the naive DFT is quadratic


def _selftest(args: argparse.Namespace) -> int:
    from cuzk.selftest import run_selftest

    return 0 if run_selftest(backend=args.backend, log_n=args.log_n) else 1


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|\S+")  # quoted values, else single words
ERROR_MAX_CHARS = 200  # of a usage error's message, before any list of choices


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors (exit 2) quote at most QUOTE_CHARS characters of any value."""

    def error(self, message: str) -> NoReturn:
        def cut(m: re.Match) -> str:
            text = m.group()
            if len(text) <= QUOTE_CHARS:
                return text
            close = text[0] if text[0] in "'\"" else ""
            return f"{text[:QUOTE_CHARS]}{close}... ({len(text) - 2 * len(close):,} characters)"
        head, sep, choices = _QUOTED.sub(cut, message).partition(" (choose from ")  # choices: ours, kept
        if len(head) > ERROR_MAX_CHARS:
            head = head[:ERROR_MAX_CHARS] + "..."
        super().error(head + sep + choices)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cuzk", description="GPU Groth16 prover for Filecoin PoRep",
                                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"cuzk {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log stage timings")
    parser.add_argument("--debug", action="store_true", help="on an error, also print the traceback")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("selftest", help="check MSM and NTT on a small example against references")
    st.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    st.add_argument("--log-n", type=number_in(int, *SELFTEST_LOG_N), default=8,
                    help=f"log2 of the example size, {SELFTEST_LOG_N[0]} to {SELFTEST_LOG_N[1]} (default 8; the "
                         "references' time grows with its square)")
    st.set_defaults(run=_selftest)
    for group in (porep, post, snap, gpu, pce, engine, service, fleet):
        group.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return _fail(args, EXIT_INTERRUPTED, "interrupted")
    except CuzkError as e:
        return _fail(args, EXIT_ERROR, f"error: {e}")
    except OSError as e:
        return _fail(args, EXIT_ERROR, f"error: {_os_message(e)}")
    except Exception as e:
        return _fail(args, EXIT_INTERNAL, f"internal error (a bug in cuzk): {type(e).__name__}: {e}",
                     "; run with --debug (cuzk --debug ...) for the traceback")


def _os_message(e: OSError) -> str:
    """An OSError as '<path>: <reason>' (both paths for a rename)."""
    if e.filename is None:
        return e.strerror or str(e)
    paths = f"{e.filename} -> {e.filename2}" if e.filename2 is not None else f"{e.filename}"
    return f"{paths}: {e.strerror or e}"


def _fail(args: argparse.Namespace, code: int, message: str, hint: str = "", limit: int = 1000) -> int:
    """Print one line 'cuzk: <message><hint>' on stderr (the message cut at `limit` characters; after
    the traceback with --debug); return `code`."""
    if args.debug:
        traceback.print_exc()
    line = " ".join(message.splitlines())
    print(f"cuzk: {line if len(line) <= limit else line[:limit] + '...'}{hint}", file=sys.stderr)
    return code
