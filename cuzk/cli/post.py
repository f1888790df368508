"""`cuzk post winning` and `cuzk post window` (cuzk.cli): the PoSt proof of sectors sealed by `cuzk seal`
(their directories), verified before it is printed as hex or written to a file."""
from __future__ import annotations

import argparse
import string
import time
from pathlib import Path

from cuzk.cli.checks import check_directory, check_output
from cuzk.util.atomic import atomic_write


def _randomness(text: str) -> bytes:
    """The 32 bytes of 64 hex digits (an optional 0x prefix); PoStInputError naming --randomness."""
    from cuzk.post.errors import PoStInputError

    digits = text.removeprefix("0x")
    if len(digits) != 64:
        raise PoStInputError("--randomness", f"expected 32 bytes as 64 hex digits, got {len(digits):,} characters")
    if not all(c in string.hexdigits for c in digits):
        raise PoStInputError("--randomness", "not hex")
    return bytes.fromhex(digits)


def _post(args: argparse.Namespace) -> int:
    for path in args.sectors:
        check_directory("sector", path)
    if args.out:
        check_output("--out", args.out)
    randomness = _randomness(args.randomness)
    from cuzk.porep.seal import Sector
    from cuzk.post import proving
    from cuzk.post.registry import POST_PROOFS, PoStKind, get_post_proof

    kind = PoStKind.WINNING if args.post_command == "winning" else PoStKind.WINDOW
    sectors = [Sector.open(path) for path in args.sectors]
    if args.proof:
        proof = get_post_proof(args.proof)
    else:  # the newest registered proof of this kind and sector size
        size = sectors[0].proof.sector_size
        proof = max((p for p in POST_PROOFS.values() if p.kind is kind and p.sector_size == size), key=lambda p: p.id)
    start = time.perf_counter()
    common = dict(allow_setup=args.allow_setup, backend=args.backend, progress=not args.quiet)
    if kind is PoStKind.WINNING:
        data = proving.winning_post(proof, randomness, sectors[0], **common)
    else:
        data = proving.window_post(proof, randomness, sectors, args.partition_index, **common)
    if not args.out:
        print(data.hex())
        return 0
    atomic_write(Path(args.out), data)
    print(f"wrote {len(data)} bytes ({proof.name} proof, verified) to {args.out} in "
          f"{time.perf_counter() - start:.1f} s")
    return 0


def add_commands(sub) -> None:
    pp = sub.add_parser("post", help="prove WinningPoSt or WindowPoSt over sealed sector directories")
    psub = pp.add_subparsers(dest="post_command", required=True)
    for name, nargs, what in (("winning", 1, "the challenged sector's directory"),
                              ("window", "+", "one partition's sector directories, in order")):
        cp = psub.add_parser(name, help=f"{name.title()}PoSt proof (192 bytes) of {what}; printed as hex or "
                                        "written with --out")
        cp.add_argument("sectors", nargs=nargs, metavar="SECTOR_DIR", help=what)
        cp.add_argument("--randomness", required=True, help="32 bytes hex (a canonical Fr, little-endian)")
        cp.add_argument("--proof", metavar="NAME", help=f"registered {name.title()}PoSt proof (default: the newest "
                                                        "for the sector size)")
        if name == "window":
            cp.add_argument("--partition-index", type=int, default=0, help="the partition proved (default 0)")
        cp.add_argument("--out", help="proof file to write atomically (default: print the proof as hex)")
        cp.add_argument("--allow-setup", action="store_true",
                        help="without the official parameters, use cuzk's own (a local setup; not the chain's)")
        cp.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"],
                        help="compute backend (default auto)")
        cp.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
        cp.set_defaults(run=_post, partition_index=0)
