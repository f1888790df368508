"""`cuzk snap encode`, `prove` and `verify` (cuzk.cli): new data encoded into a CC sector sealed by `cuzk
seal` (the new replica and curio's snap-vproof.json written atomically, the commitments printed); the
SnapDeals (EmptySectorUpdate) proof of an update from its snap-vproof.json and the three commitments,
one 192-byte proof per partition, verified before it is written atomically; and its check from the
commitments alone."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from cuzk.cli.checks import check_directory, check_input, check_output
from cuzk.util.atomic import atomic_write
from cuzk.util.jsonio import as_hex, read_limited

COMMITMENTS = ("comm_r_old", "comm_r_new", "comm_d_new")
PROOFS_MAX_BYTES = 16 * 192  # 16 partitions at most
VK_MAX_BYTES = 1 << 20  # a .vk is 672 bytes plus 96 per public input


def _commitments(args: argparse.Namespace) -> tuple[bytes, bytes, bytes]:
    """The three commitments, 64 hex digits each (an optional 0x prefix); FieldError naming the option."""
    out = []
    for name in COMMITMENTS:
        option = "--" + name.replace("_", "-")
        out.append(as_hex(getattr(args, name).removeprefix("0x"), option, 32))
    return out[0], out[1], out[2]


def _encode(args: argparse.Namespace) -> int:
    check_directory("SECTOR_DIR", args.sector)
    check_input("DATA_FILE", args.data)
    for option in ("--vproof", "--replica"):
        check_output(option, getattr(args, option[2:]))
    from cuzk.porep.seal import Sector
    from cuzk.snap.bincode import write_vproof_json
    from cuzk.snap.encode import encode
    from cuzk.snap.vanilla import prove_all

    sector = Sector.open(Path(args.sector))
    data = read_limited(args.data, what="DATA_FILE", max_bytes=sector.proof.sector_size)
    update = encode(sector, data)
    atomic_write(Path(args.replica), update.replica)
    atomic_write(Path(args.vproof), write_vproof_json(prove_all(update), update.proof))
    for name in COMMITMENTS:
        print(f"{name} {getattr(update, name).hex()}")
    print(f"proof {update.proof.name}")
    return 0


def _prove(args: argparse.Namespace) -> int:
    check_input("VPROOF_JSON", args.vproof)
    if args.out:
        check_output("--out", args.out)
    comms = _commitments(args)
    from cuzk.snap.bincode import VPROOF_MAX_BYTES
    from cuzk.snap.proving import snap_prove
    from cuzk.snap.registry import get_update_proof

    proof = get_update_proof(int(args.proof) if args.proof.isdigit() else args.proof)
    vanilla = read_limited(args.vproof, what="VPROOF_JSON", max_bytes=VPROOF_MAX_BYTES)
    start = time.perf_counter()
    proofs = snap_prove(proof, *comms, vanilla, allow_setup=args.allow_setup, backend=args.backend,
                        progress=not args.quiet)
    if not args.out:
        print("\n".join(p.hex() for p in proofs))
        return 0
    atomic_write(Path(args.out), b"".join(proofs))
    print(f"wrote {len(proofs) * 192} bytes ({proof.name}, {len(proofs)} partition proofs, verified) to "
          f"{args.out} in {time.perf_counter() - start:.1f} s")
    return 0


def _verify(args: argparse.Namespace) -> int:
    for option, path in (("PROOF_FILE", args.proof_file), ("--vk", args.vk)):
        if path:
            check_input(option, path)
    comms = _commitments(args)
    from cuzk.errors import ProofFormatError
    from cuzk.groth16 import vk_from_bytes
    from cuzk.snap.proving import snap_verify
    from cuzk.snap.registry import get_update_proof

    proof = get_update_proof(int(args.proof) if args.proof.isdigit() else args.proof)
    data = read_limited(args.proof_file, what="PROOF_FILE", max_bytes=PROOFS_MAX_BYTES)
    if len(data) != proof.partitions * 192:
        raise ProofFormatError(f"PROOF_FILE {args.proof_file}: {len(data):,} bytes, a {proof.name} proof is "
                               f"{proof.partitions} x 192")
    vk = vk_from_bytes(read_limited(args.vk, what="--vk", max_bytes=VK_MAX_BYTES), args.vk) if args.vk else None
    ok = snap_verify(proof, *comms, [data[i:i + 192] for i in range(0, len(data), 192)], vk=vk)
    print(f"{args.proof_file}: proof is {'valid' if ok else 'INVALID'}")
    return 0 if ok else 1


def add_commands(sub) -> None:
    sp = sub.add_parser("snap", help="prove or verify a SnapDeals (EmptySectorUpdate) update")
    ssub = sp.add_subparsers(dest="snap_command", required=True)
    ep = ssub.add_parser("encode", help="encode new data into a sealed CC sector: write the new replica and "
                                        "snap-vproof.json, print the commitments")
    ep.add_argument("sector", metavar="SECTOR_DIR", help="a CC sector sealed by `cuzk seal`")
    ep.add_argument("data", metavar="DATA_FILE", help="the new data: the sector size, every 32 bytes a canonical Fr")
    ep.add_argument("--vproof", required=True, help="snap-vproof.json to write atomically (the vanilla proofs)")
    ep.add_argument("--replica", required=True, help="the new replica to write atomically")
    ep.set_defaults(run=_encode)
    pp = ssub.add_parser("prove", help="the update's proof (192 bytes per partition) from curio's snap-vproof.json; "
                                       "printed as hex (a line per partition) or written with --out")
    pp.add_argument("vproof", metavar="VPROOF_JSON", help="snap-vproof.json: one base64 vanilla proof per partition")
    vp = ssub.add_parser("verify", help="verify an update's proof file; exit status 0 valid, 1 invalid")
    vp.add_argument("proof_file", metavar="PROOF_FILE", help="the proof (192 bytes per partition, in order)")
    for p in (pp, vp):
        p.add_argument("--proof", required=True, metavar="NAME",
                       help="registered update proof: a name (StackedDrg2KiBV1) or an id (0..4)")
        for name in COMMITMENTS:
            p.add_argument("--" + name.replace("_", "-"), dest=name, required=True, metavar="HEX",
                           help="32 bytes as 64 hex digits")
    pp.add_argument("--out", help="proof file to write atomically (default: print the proofs as hex)")
    pp.add_argument("--allow-setup", action="store_true",
                    help="without the official parameters, use cuzk's own (a local setup; not the chain's)")
    pp.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"], help="compute backend (default auto)")
    pp.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    pp.set_defaults(run=_prove)
    vp.add_argument("--vk", help="verifying key file (default: official if present, else cuzk's own)")
    vp.set_defaults(run=_verify)
