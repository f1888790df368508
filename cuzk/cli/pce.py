"""`cuzk pce build`, `show` and `verify` (cuzk.cli): the compiled partition circuit (PCE) cached beside
the parameters."""
from __future__ import annotations

import argparse
import time

from cuzk.errors import InputError


def _pce_build(args: argparse.Namespace) -> int:
    from cuzk.porep import pce_cache

    t0 = time.perf_counter()
    pce = pce_cache.load_or_build(args.proof, progress=not args.quiet)
    path = pce_cache.path_of(args.proof)
    print(f"{path}: {path.stat().st_size:,} bytes, {pce.num_constraints:,} constraints, "
          f"{pce.num_inputs:,} inputs, {pce.num_aux:,} aux; ready in {time.perf_counter() - t0:.2f} s")
    return 0


def _pce_show(args: argparse.Namespace) -> int:
    from cuzk.errors import PceNotFoundError
    from cuzk.porep import pce_cache
    from cuzk.r1cs.pce_file import read_header

    path = pce_cache.path_of(args.proof)
    try:
        header = read_header(path)
    except PceNotFoundError:
        print(f"{path}: no PCE cached (build it with `cuzk pce build --proof {args.proof}`)")
        return 1
    want = pce_cache.identity(args.proof)
    print(f"{path}: {header.file_size:,} bytes, {len(header.sections)} sections, "
          f"{'current' if header.identity == want else 'STALE (made for another identity; rebuilt on use)'}")
    for key, value in sorted(header.identity.items()):
        print(f"  {key:<16} {value}")
    for sec in header.sections:
        print(f"  {sec.name:<16} {sec.dtype.str:<4} {str(list(sec.shape)):<16} {sec.nbytes:>12,} bytes "
              f"at {sec.offset:,}")
    return 0


def _pce_verify(args: argparse.Namespace) -> int:
    from cuzk.errors import PceFormatError, PceMismatchError, PceNotFoundError
    from cuzk.porep import pce_cache

    path = pce_cache.path_of(args.proof)
    t0 = time.perf_counter()
    try:
        pce = pce_cache.verify(args.proof)
    except PceNotFoundError:
        print(f"{path}: INVALID: no such file")
        return 1
    except (PceFormatError, PceMismatchError, InputError) as e:  # unreadable (PceReadError): exit 2
        print(f"{path}: INVALID: {' '.join(str(e).splitlines())}")
        return 1
    print(f"{path}: valid ({pce.num_constraints:,} constraints, checked in {time.perf_counter() - t0:.2f} s)")
    return 0


def add_commands(sub) -> None:
    pp = sub.add_parser("pce", help="the compiled partition circuit (PCE), cached beside the parameters: build, "
                                    "show, verify")
    psub = pp.add_subparsers(dest="pce_command", required=True)
    proof = dict(required=True, metavar="NAME", help="registered seal proof, e.g. StackedDrg2KiBV1_1")
    bp = psub.add_parser("build", help="build the PCE (or load the cached one): print its path, size and constraints")
    bp.add_argument("--proof", **proof)
    bp.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    bp.set_defaults(run=_pce_build)
    sp = psub.add_parser("show", help="the cached PCE's header: identity, sections, size; exit 1 when absent")
    sp.add_argument("--proof", **proof)
    sp.set_defaults(run=_pce_show)
    vp = psub.add_parser("verify", help="read and check the cached PCE in full; exit status 0 valid, 1 invalid")
    vp.add_argument("--proof", **proof)
    vp.set_defaults(run=_pce_verify)
