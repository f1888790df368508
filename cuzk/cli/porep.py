"""`cuzk seal`, `prove`, `verify` and `demo` (cuzk.cli): a small sector sealed into a directory (and
its C1 output), a C1 output proved, a proof verified, and all three on a built-in 2KiB sector."""
from __future__ import annotations

import argparse
import hashlib
import secrets
import string
import tempfile
import time
from pathlib import Path

from cuzk.cli.checks import check_directory, check_input, check_output
from cuzk.errors import InputError
from cuzk.util.atomic import atomic_write
from cuzk.util.jsonio import quote, read_limited

PROOF_MAX_BYTES, VK_MAX_BYTES = 1 << 20, 1 << 24  # a proof is 192 bytes per partition (126 at most)
SMALL_SIZES = (2 << 10, 8 << 20)


def _hex32(text: str) -> bytes:
    """32 bytes from exactly 64 hex digits (an optional 0x prefix; no spaces)."""
    digits = text.removeprefix("0x")
    if len(digits) != 64:
        raise argparse.ArgumentTypeError(f"expected 32 bytes (64 hex digits), got {len(digits):,} characters")
    if not all(c in string.hexdigits for c in digits):
        raise argparse.ArgumentTypeError(f"not hex: {quote(text)}")
    return bytes.fromhex(digits)


def _seed_arg(text: str) -> bytes:
    return secrets.token_bytes(32) if text == "random" else _hex32(text)


def _print_timings(timings: dict[str, float]) -> None:
    for stage, seconds in timings.items():
        print(f"  {stage:<24} {seconds:9.3f} s")


def _seal(args: argparse.Namespace) -> int:
    check_output("sector directory", args.out, directory=True)
    if args.data:
        check_input("--data", args.data)
    if args.parents_dir:
        check_directory("--parents-dir", args.parents_dir)
    if args.seed is not None and args.c1:
        check_output("--c1", args.c1)
    from cuzk.api import as_c1, seal
    from cuzk.porep.registry import get_proof

    proof = get_proof(args.proof)
    if proof.sector_size not in SMALL_SIZES:
        raise InputError(f"cuzk seal makes 2KiB or 8MiB sectors; {proof.name} is {proof.sector_size} bytes")
    start = time.perf_counter()
    ticket = args.ticket or secrets.token_bytes(32)
    sector = seal(proof, args.out, prover_id=args.prover_id, sector_id=args.sector_id, ticket=ticket,
                  data=args.data, parents_dir=args.parents_dir, progress=not args.quiet)
    print(f"sealed {proof.name} into {sector.path} in {time.perf_counter() - start:.1f} s")
    for name in ("prover_id", "ticket", "replica_id", "comm_d", "comm_r"):
        print(f"  {name:<10} {getattr(sector, name).hex()}")
    print(f"  sector_id  {sector.sector_id}")
    if args.seed is not None:
        c1, _ = as_c1(sector, args.seed)
        path = Path(args.c1) if args.c1 else sector.path / "c1.json"
        c1.write(path)
        print(f"  seed       {args.seed.hex()}\nwrote C1 output {path}")
    return 0


def _prove(args: argparse.Namespace) -> int:
    check_input("--c1", args.c1)
    out = Path(args.out) if args.out else Path(args.c1).with_suffix(".proof")
    check_output("--out", out)
    from cuzk.api import prove_c1

    result = prove_c1(args.c1, backend=args.backend, progress=not args.quiet)
    atomic_write(out, result.proof)
    print(f"wrote {len(result.proof)} bytes ({len(result.partitions)} partition proof(s), each verified) to "
          f"{out} in {result.timings['total']:.1f} s, with {result.params.describe()}")
    if args.verbose:
        _print_timings(result.timings)
    return 0


def _verify(args: argparse.Namespace) -> int:
    for option, path in (("--c1", args.c1), ("--proof", args.proof), ("--vk", args.vk)):
        if path:
            check_input(option, path)
    from cuzk.api import verify
    from cuzk.groth16 import vk_from_bytes
    from cuzk.porep.params_cache import find_vk, porep_stem
    from cuzk.porep.c1 import C1Output

    c1 = C1Output.read(args.c1, check_paths=False)
    proof = read_limited(args.proof, what="--proof", max_bytes=PROOF_MAX_BYTES)
    if args.vk:
        vk, where = vk_from_bytes(read_limited(args.vk, what="--vk", max_bytes=VK_MAX_BYTES), args.vk), args.vk
    else:
        vk, files = find_vk(porep_stem(c1.registered_proof.sector_size))
        owner = "the official" if files.official else "cuzk's own"
        where = f"{owner} verifying key {files.vk}"
    ok = verify(c1, proof, vk=vk)
    print(f"{args.proof}: proof is {'valid' if ok else 'INVALID'} (checked with {where})")
    return 0 if ok else 1


def demo_data(size: int = 2 << 10) -> bytes:
    """The built-in sector: node i = SHA256("cuzk demo" || u32 LE i) with the top two bits cleared (an Fr)."""
    nodes = [bytearray(hashlib.sha256(b"cuzk demo" + i.to_bytes(4, "little")).digest()) for i in range(size // 32)]
    for node in nodes:
        node[31] &= 0x3F
    return b"".join(nodes)


def _demo(args: argparse.Namespace) -> int:
    from cuzk.api import as_c1, prove_c1, seal, verify

    seed, ticket = hashlib.sha256(b"cuzk demo seed").digest(), hashlib.sha256(b"cuzk demo ticket").digest()
    if args.dir:
        check_output("--dir", Path(args.dir) / "sector", directory=True)
        for name in ("c1.json", "proof.bin"):
            check_output("--dir", Path(args.dir) / name, parents=True)
    with tempfile.TemporaryDirectory(prefix="cuzk-demo-") as tmp:
        base = Path(args.dir) if args.dir else Path(tmp)
        steps, t0 = [], time.perf_counter()

        def step(text: str, start: float) -> None:
            steps.append(time.perf_counter() - start)
            print(f"[{len(steps)}/4] {text} ({steps[-1]:.1f} s)", flush=True)

        t = time.perf_counter()
        sector = seal("StackedDrg2KiBV1_1", base / "sector", prover_id=bytes(32), sector_id=1, ticket=ticket,
                      data=demo_data(), progress=False)
        step(f"sealed a 2KiB sector in {sector.path}: comm_r {sector.comm_r.hex()}", t)
        t = time.perf_counter()
        c1, _ = as_c1(sector, seed)
        c1.write(base / "c1.json")
        step(f"C1 output (vanilla proofs for the seed) written to {base / 'c1.json'}", t)
        t = time.perf_counter()
        result = prove_c1(c1, backend=args.backend, progress=not args.quiet)
        atomic_write(base / "proof.bin", result.proof)
        step(f"proved: {len(result.proof)} bytes with {result.params.describe()}", t)
        if args.verbose:
            _print_timings(result.timings)
        t = time.perf_counter()
        ok = verify(base / "c1.json", result.proof, vk=result.params.vk)
        step(f"verified: proof is {'valid' if ok else 'INVALID'}", t)
    print(f"demo {'passed' if ok else 'FAILED'} in {time.perf_counter() - t0:.1f} s")
    return 0 if ok else 1



def add_commands(sub) -> None:
    from cuzk.porep.registry import PROOFS

    small = [p.name for p in PROOFS.values() if p.sector_size in SMALL_SIZES]
    backend = dict(default="auto", choices=["auto", "cpu", "cuda"], help="compute backend (default auto)")
    quiet = dict(action="store_true", help="no progress messages on stderr")
    verbose = dict(action="store_true", default=argparse.SUPPRESS, help="log and print stage timings")

    sp = sub.add_parser("seal", help="seal a small sector (2KiB or 8MiB) into a directory; --seed also writes C1")
    sp.add_argument("out", help="sector directory to create (must not exist)")
    sp.add_argument("--proof", default="StackedDrg2KiBV1_1", choices=small, metavar="NAME",
                    help="registered seal proof (default StackedDrg2KiBV1_1; any 2KiB or 8MiB one)")
    sp.add_argument("--data", help="unsealed data file of exactly the sector size (default: zeros, a CC sector)")
    sp.add_argument("--prover-id", type=_hex32, default=bytes(32), help="32 bytes hex (default zeros)")
    sp.add_argument("--sector-id", type=int, default=1, help="sector number (default 1)")
    sp.add_argument("--ticket", type=_hex32, default=None, help="32 bytes hex (default random)")
    sp.add_argument("--seed", type=_seed_arg, help="interactive seed, 32 bytes hex or 'random': write a C1 output")
    sp.add_argument("--c1", help="where to write the C1 JSON (default <out>/c1.json)")
    sp.add_argument("--parents-dir", help="directory caching the graph's parents file")
    sp.add_argument("-q", "--quiet", **quiet)
    sp.add_argument("-v", "--verbose", **verbose)
    sp.set_defaults(run=_seal)

    pp = sub.add_parser("prove", help="prove a C1 output (PoRep C2): write the proof bytes")
    pp.add_argument("--c1", required=True, help="C1 output JSON (filecoin-ffi's SealCommitPhase1Output)")
    pp.add_argument("--out", help="proof file to write (default: the C1 path with suffix .proof)")
    pp.add_argument("--backend", **backend)
    pp.add_argument("-q", "--quiet", **quiet)
    pp.add_argument("-v", "--verbose", **verbose)
    pp.set_defaults(run=_prove)

    vp = sub.add_parser("verify", help="verify a PoRep proof against a C1 output; exit status 0 valid, 1 invalid")
    vp.add_argument("--c1", required=True, help="C1 output JSON")
    vp.add_argument("--proof", required=True, help="proof file (192 bytes per partition)")
    vp.add_argument("--vk", help="verifying key file (default: official if present, else cuzk's own)")
    vp.add_argument("-v", "--verbose", **verbose)
    vp.set_defaults(run=_verify)

    dp = sub.add_parser("demo", help="seal a built-in 2KiB sector, prove it and verify the proof")
    dp.add_argument("--backend", **backend)
    dp.add_argument("--dir", help="keep the sector, C1 and proof in this directory (default: a temporary one)")
    dp.add_argument("-q", "--quiet", **quiet)
    dp.add_argument("-v", "--verbose", **verbose)
    dp.set_defaults(run=_demo)
