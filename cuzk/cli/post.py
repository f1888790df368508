"""`cuzk post winning` and `cuzk post window` (cuzk.cli): the PoSt proof of sectors sealed by `cuzk seal`
(their directories), verified before it is printed as hex or written to a file; `cuzk post verify
winning|window` checks a proof file against those sectors' public data (exit 0 valid, 1 invalid)."""
from __future__ import annotations

import argparse
import string
import time
from pathlib import Path

from cuzk.cli.checks import check_directory, check_input, check_output
from cuzk.util.atomic import atomic_write
from cuzk.util.jsonio import read_limited

VK_MAX_BYTES = 1 << 20  # a .vk is 672 bytes plus 96 per public input


def _randomness(text: str) -> bytes:
    """The 32 bytes of 64 hex digits (an optional 0x prefix); PoStInputError naming --randomness."""
    from cuzk.post.errors import PoStInputError

    digits = text.removeprefix("0x")
    if len(digits) != 64:
        raise PoStInputError("--randomness", f"expected 32 bytes as 64 hex digits, got {len(digits):,} characters")
    if not all(c in string.hexdigits for c in digits):
        raise PoStInputError("--randomness", "not hex")
    return bytes.fromhex(digits)


def _sectors_and_proof(args: argparse.Namespace, command: str):
    """The sealed sectors of args.sectors and the registered PoSt proof: --proof, else the newest of
    `command`'s kind (winning, window) for their sector size."""
    from cuzk.porep.seal import Sector
    from cuzk.post.registry import POST_PROOFS, PoStKind, get_post_proof

    kind = PoStKind.WINNING if command == "winning" else PoStKind.WINDOW
    sectors = [Sector.open(path) for path in args.sectors]
    if args.proof:
        return sectors, get_post_proof(args.proof)
    size = sectors[0].proof.sector_size
    return sectors, max((p for p in POST_PROOFS.values() if p.kind is kind and p.sector_size == size), key=lambda p: p.id)


def _post(args: argparse.Namespace) -> int:
    for path in args.sectors:
        check_directory("sector", path)
    if args.out:
        check_output("--out", args.out)
    randomness = _randomness(args.randomness)
    from cuzk.post import proving

    sectors, proof = _sectors_and_proof(args, args.post_command)
    start = time.perf_counter()
    common = dict(allow_setup=args.allow_setup, backend=args.backend, progress=not args.quiet)
    if args.post_command == "winning":
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


def _verify(args: argparse.Namespace) -> int:
    check_input("PROOF_FILE", args.proof_file)
    if args.vk:
        check_input("--vk", args.vk)
    for path in args.sectors:
        check_directory("sector", path)
    randomness = _randomness(args.randomness)
    from cuzk.errors import ProofFormatError
    from cuzk.groth16 import PROOF_BYTES, vk_from_bytes
    from cuzk.post import proving

    sectors, proof = _sectors_and_proof(args, args.kind)
    data = read_limited(args.proof_file, what="PROOF_FILE", max_bytes=PROOF_BYTES)
    if len(data) != PROOF_BYTES:
        raise ProofFormatError(f"PROOF_FILE {args.proof_file}: {len(data):,} bytes, a {proof.name} proof is "
                               f"{PROOF_BYTES}")
    vk = vk_from_bytes(read_limited(args.vk, what="--vk", max_bytes=VK_MAX_BYTES), args.vk) if args.vk else None
    public = [(s.sector_id, s.comm_r) for s in sectors]
    if args.kind == "winning":  # a --proof of the other kind is refused there (PoStInputError)
        ok = proving.verify_winning_post(proof, randomness, *public[0], data, vk=vk)
    else:
        ok = proving.verify_window_post(proof, randomness, public, data, args.partition_index, vk=vk)
    print(f"{args.proof_file}: {proof.name} proof is {'valid' if ok else 'INVALID'}")
    return 0 if ok else 1


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
    vp = psub.add_parser("verify", help="verify a WinningPoSt or WindowPoSt proof file against sealed sectors' "
                                        "public data; exit status 0 valid, 1 invalid")
    vp.add_argument("kind", choices=["winning", "window"])
    vp.add_argument("proof_file", metavar="PROOF_FILE", help="the 192-byte proof")
    vp.add_argument("sectors", nargs="+", metavar="SECTOR_DIR", help="the proved sectors' directories, in order")
    vp.add_argument("--randomness", required=True, help="32 bytes hex, as proved")
    vp.add_argument("--proof", metavar="NAME", help="registered PoSt proof (default: the newest of the kind for the "
                                                    "sector size)")
    vp.add_argument("--partition-index", type=int, default=0, help="WindowPoSt: the partition proved (default 0)")
    vp.add_argument("--vk", help="verifying key file (default: official if present, else cuzk's own)")
    vp.set_defaults(run=_verify)
