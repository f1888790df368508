"""`cuzk pce build`, `show` and `verify` (cuzk.cli): the compiled partition circuit (PCE) of a seal,
PoSt or SnapDeals proof, cached beside the parameters (cuzk.porep.circuit_cache)."""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from cuzk.errors import InputError
from cuzk.util.jsonio import quote

if TYPE_CHECKING:
    from cuzk.porep.circuit_cache import CachedCircuit

# kind -> what its registry holds
KINDS = {"porep": "seal proof", "post": "PoSt proof", "snap": "update proof"}


def _families() -> dict[str, tuple[Callable[[str], object], Callable[[object], CachedCircuit]]]:
    """kind -> (its registry's lookup by name, raising InputError; the proof's circuit as cached)."""
    from cuzk.porep import pce_cache as porep_cache
    from cuzk.porep.registry import get_proof
    from cuzk.post import pce_cache as post_cache
    from cuzk.post.registry import get_post_proof
    from cuzk.snap import pce_cache as snap_cache
    from cuzk.snap.registry import get_update_proof

    return {"porep": (get_proof, porep_cache.cached),
            "post": (get_post_proof, lambda p: post_cache.cached(p.circuit_shape)),
            "snap": (get_update_proof, lambda p: snap_cache.cached(p.circuit_shape))}


def cached_circuit(name: str, kind: str | None = None) -> CachedCircuit:
    """The partition circuit of the registered proof `name` as cached: a seal proof's, a PoSt proof's
    or an update proof's; `kind` (a key of KINDS) picks the registry, needed for a name in two (the
    seal proofs StackedDrg<size>V1 share their names with the update proofs). InputError naming
    --proof for a name in no registry (or not in `kind`'s) or in two without `kind`."""
    families = _families()
    found = {}
    for k, (lookup, _) in families.items():
        if kind in (None, k):
            try:
                found[k] = lookup(name)
            except InputError:
                pass
    if not found:
        what = KINDS[kind] if kind else "seal proof, PoSt proof or update proof"
        raise InputError(f"--proof {quote(name)}: unknown registered {what}")
    if len(found) > 1:
        raise InputError(f"--proof {quote(name)}: names a {' and an '.join(KINDS[k] for k in found)}; "
                         f"choose one with --kind {' or --kind '.join(found)}")
    (k, proof), = found.items()
    return families[k][1](proof)


def _pce_build(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    circuit = cached_circuit(args.proof, args.kind)
    pce, _ = circuit.load(progress=not args.quiet)
    path = circuit.path
    print(f"{path}: {path.stat().st_size:,} bytes, {pce.num_constraints:,} constraints, "
          f"{pce.num_inputs:,} inputs, {pce.num_aux:,} aux; ready in {time.perf_counter() - t0:.2f} s")
    return 0


def _pce_show(args: argparse.Namespace) -> int:
    from cuzk.errors import PceNotFoundError
    from cuzk.r1cs.pce_file import read_header

    circuit = cached_circuit(args.proof, args.kind)
    path = circuit.path
    try:
        header = read_header(path)
    except PceNotFoundError:
        kind = f" --kind {args.kind}" if args.kind else ""
        print(f"{path}: no PCE cached (build it with `cuzk pce build --proof {args.proof}{kind}`)")
        return 1
    print(f"{path}: {header.file_size:,} bytes, {len(header.sections)} sections, "
          f"{'current' if header.identity == circuit.identity else 'STALE (made for another identity; rebuilt on use)'}")
    for key, value in sorted(header.identity.items()):
        print(f"  {key:<16} {value}")
    for sec in header.sections:
        print(f"  {sec.name:<16} {sec.dtype.str:<4} {str(list(sec.shape)):<16} {sec.nbytes:>12,} bytes "
              f"at {sec.offset:,}")
    return 0


def _pce_verify(args: argparse.Namespace) -> int:
    from cuzk.errors import PceFormatError, PceMismatchError, PceNotFoundError

    circuit = cached_circuit(args.proof, args.kind)
    path = circuit.path
    t0 = time.perf_counter()
    try:
        pce = circuit.verify()
    except PceNotFoundError:
        print(f"{path}: INVALID: no such file")
        return 1
    except (PceFormatError, PceMismatchError, InputError) as e:  # unreadable (PceReadError): exit 2
        print(f"{path}: INVALID: {' '.join(str(e).splitlines())}")
        return 1
    print(f"{path}: valid ({pce.num_constraints:,} constraints, checked in {time.perf_counter() - t0:.2f} s)")
    return 0


def add_commands(sub) -> None:
    pp = sub.add_parser("pce", help="the compiled partition circuit (PCE) of a seal, PoSt or SnapDeals proof, cached "
                                    "beside the parameters: build, show, verify")
    psub = pp.add_subparsers(dest="pce_command", required=True)
    bp = psub.add_parser("build", help="build the PCE (or load the cached one): print its path, size and constraints")
    sp = psub.add_parser("show", help="the cached PCE's header: identity, sections, size; exit 1 when absent")
    vp = psub.add_parser("verify", help="read and check the cached PCE in full; exit status 0 valid, 1 invalid")
    for p in (bp, sp, vp):
        p.add_argument("--proof", required=True, metavar="NAME",
                       help="registered proof: seal (e.g. StackedDrg2KiBV1_1), PoSt (StackedDrgWindow32GiBV1_2) "
                            "or SnapDeals update (StackedDrg32GiBV1, with --kind snap)")
        p.add_argument("--kind", choices=list(KINDS),
                       help="the registry NAME is in (needed for StackedDrg<size>V1: a seal and an update proof)")
    bp.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    bp.set_defaults(run=_pce_build)
    sp.set_defaults(run=_pce_show)
    vp.set_defaults(run=_pce_verify)
