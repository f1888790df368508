"""The `cuzk` command: selftest; seal, prove, verify a PoRep; demo (all three on a built-in 2KiB sector);
gpu info and gpu build (CUDA devices; compile the kernels ahead); pce build, show and verify (the
compiled partition circuit cached beside the parameters); config show (the engine's effective
configuration); timeline summary and plot (an engine timeline)."""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import secrets
import string
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from cuzk import __version__
from cuzk.errors import CuzkError, InputError
from cuzk.util.atomic import atomic_write
from cuzk.util.fileio import irregular_reason, is_regular, open_regular
from cuzk.util.jsonio import QUOTE_CHARS, quote, read_limited

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
PROOF_MAX_BYTES, VK_MAX_BYTES = 1 << 20, 1 << 24  # a proof is 192 bytes per partition (126 at most)


RESULTS_TTL_H = (0.01, 87660)  # 36 seconds to 10 years (the expiry runs every tenth of it)
SELFTEST_LOG_N = (2, 12)  # the smallest example that holds the edge scalars; the naive DFT is quadratic


def _number_in(kind: type[int] | type[float], low: float, high: float) -> Callable[[str], int | float]:
    """An argparse type: an int (or a float) from `low` to `high`."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {quote(text)}") from None
        if not low <= value <= high:  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}, got {value:g}")
        return value
    return parse


def _selftest(args: argparse.Namespace) -> int:
    from cuzk.selftest import run_selftest

    return 0 if run_selftest(backend=args.backend, log_n=args.log_n) else 1


# ---------------------------------------------------------------- PoRep: seal, prove, verify, demo

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


# ---------------------------------------------------------------- paths, checked before the work

def _check_input(option: str, path: str | os.PathLike) -> None:
    """`path` is a regular file that opens for reading (InputError naming the option: missing, a
    directory, a FIFO, no permission, a path below a regular file); opening never blocks."""
    try:
        with open_regular(path) as (_, st):
            pass
    except OSError as e:
        raise InputError(f"{option} {os.fspath(path)}: {e.strerror or e}") from None
    if not is_regular(st):
        raise InputError(f"{option} {os.fspath(path)}: {irregular_reason(st)[1]}")


def _check_directory(option: str, path: str | os.PathLike) -> None:
    """`path` is a directory that can be listed (InputError naming the option)."""
    try:
        with os.scandir(path):
            pass
    except OSError as e:
        raise InputError(f"{option} {os.fspath(path)}: {e.strerror or e}") from None


def _check_output(option: str, path: str | os.PathLike, *, directory: bool = False, parents: bool = False) -> None:
    """`path` can be made by the writer, checked in milliseconds before the work: a file that is not a
    directory (nor a device or pipe, which a rename would replace), or a directory that does not exist
    yet; and files can be created in its directory (with `parents`, or for a directory, in its nearest
    existing ancestor, below which the writer makes the missing directories)."""
    path = Path(path)
    if directory and os.path.lexists(path):
        raise InputError(f"{option} {path}: already exists")
    if path.is_dir():
        raise InputError(f"{option} {path}: is a directory")
    if os.path.lexists(path) and not path.is_file():
        raise InputError(f"{option} {path}: not a regular file")
    where = path.parent
    if directory or parents:
        where = next(d for d in (where, *where.parents) if os.path.lexists(d))
    try:
        with tempfile.TemporaryFile(dir=where):
            pass
    except OSError as e:
        raise InputError(f"{option} {path}: cannot create files in {where}: {e.strerror or e}") from None


def _print_timings(timings: dict[str, float]) -> None:
    for stage, seconds in timings.items():
        print(f"  {stage:<24} {seconds:9.3f} s")


def _seal(args: argparse.Namespace) -> int:
    _check_output("sector directory", args.out, directory=True)
    if args.data:
        _check_input("--data", args.data)
    if args.parents_dir:
        _check_directory("--parents-dir", args.parents_dir)
    if args.seed is not None and args.c1:
        _check_output("--c1", args.c1)
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
    _check_input("--c1", args.c1)
    out = Path(args.out) if args.out else Path(args.c1).with_suffix(".proof")
    _check_output("--out", out)
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
            _check_input(option, path)
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
        _check_output("--dir", Path(args.dir) / "sector", directory=True)
        for name in ("c1.json", "proof.bin"):
            _check_output("--dir", Path(args.dir) / name, parents=True)
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


def _add_porep_commands(sub) -> None:
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


# ---------------------------------------------------------------- GPU: info, build

def _arch_arg(text: str) -> str:
    if not (text.startswith("sm_") and text[3:].isdigit()):
        raise argparse.ArgumentTypeError(f"expected an architecture like sm_90, got {text!r}")
    return text


def _gpu_info(args: argparse.Namespace) -> int:
    from cuzk.backend.cuda import device

    if not device.cuda_available():
        print("no CUDA device visible (needs cupy and an NVIDIA GPU)")
        return 1
    for i in range(device.cupy().cuda.runtime.getDeviceCount()):
        d = device.info(i)
        print(f"{i}: {d.name}  sm_{d.compute_capability[0]}{d.compute_capability[1]}  {d.sm_count} SMs  VRAM "
              f"{device.free_bytes(i) / 2**30:.1f} GiB free of {d.total_bytes / 2**30:.1f} GiB")
    return 0


def _gpu_build(args: argparse.Namespace) -> int:
    from cuzk.backend.cuda import loader

    archs = list(dict.fromkeys(args.arch or loader.local_archs()))
    if not archs:
        raise InputError("no CUDA device visible: name the architectures with --arch sm_XY")
    compiler = args.compiler or loader.default_compiler(bool(args.arch))
    t0 = time.perf_counter()
    built = loader.build(tuple(loader.MODULES) if args.tests else loader.PRODUCTION, archs, compiler)
    print(f"{'module':<18} {'arch':<7} {'seconds':>7}  cubin")
    for b in built:
        print(f"{b.module:<18} {b.arch:<7} {'cached' if b.cached else f'{b.seconds:.1f}':>7}  {b.path}")
    print(f"{len(built)} module(s) ready in {time.perf_counter() - t0:.1f} s ({compiler})")
    return 0


def _add_gpu_commands(sub) -> None:
    gp = sub.add_parser("gpu", help="CUDA devices and kernels: info, build")
    gsub = gp.add_subparsers(dest="gpu_command", required=True)
    gsub.add_parser("info", help="list the CUDA devices (name, architecture, SMs, VRAM)").set_defaults(run=_gpu_info)
    bp = gsub.add_parser("build", help="compile the CUDA kernels ahead into the cache (for the local GPUs by default)")
    bp.add_argument("--arch", action="append", type=_arch_arg, metavar="sm_XY",
                    help="compile for this architecture instead (repeatable; no GPU needed)")
    bp.add_argument("--compiler", choices=["nvrtc", "nvcc"],
                    help="default: nvcc for --arch when on PATH, else NVRTC (what the runtime uses)")
    bp.add_argument("--tests", action="store_true", help="also the test and benchmark kernels")
    bp.set_defaults(run=_gpu_build)


# ---------------------------------------------------------------- PCE: build, show, verify

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


def _add_pce_commands(sub) -> None:
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


# ---------------------------------------------------------------- engine: config show, timeline

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

    _check_output("--out", args.out)
    events = read_timeline(args.file)
    plot(events, args.out)
    print(f"{args.out}: {len(events)} events of {args.file}")
    return 0


def _daemon(args: argparse.Namespace) -> int:
    from cuzk.service.run import DaemonOptions, run

    return run(DaemonOptions(args.listen, Path(args.state_dir), args.config, args.backend,
                             Path(args.log_file) if args.log_file else None, args.status_listen,
                             args.results_ttl * 3600, tuple(args.preload), args.allow_setup, args.log_level))


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
    _check_input("c1", args.c1)
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


def _add_service_commands(sub) -> None:
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
    dp.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR),
                    help=f"journal, lock and log directory, one daemon per directory (default {DEFAULT_STATE_DIR})")
    dp.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    dp.add_argument("--log-file", help="the log file (default <state-dir>/daemon.log)")
    dp.add_argument("--results-ttl", type=_number_in(float, *RESULTS_TTL_H), default=168.0, metavar="HOURS",
                    help=f"keep finished jobs' results this long, {RESULTS_TTL_H[0]} to {RESULTS_TTL_H[1]} (10 years; "
                         "default 168 = 7 days)")
    dp.add_argument("--preload", action="append", default=[], metavar="CIRCUIT",
                    help="load this circuit's parameters before ready (porep-2k, porep-8m, porep-512m, porep-32g, "
                         "porep-64g; repeatable); missing or unreadable files: exit 7")
    dp.set_defaults(run=_daemon)


def _add_engine_commands(sub) -> None:
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
    st.add_argument("--log-n", type=_number_in(int, *SELFTEST_LOG_N), default=8,
                    help=f"log2 of the example size, {SELFTEST_LOG_N[0]} to {SELFTEST_LOG_N[1]} (default 8; the "
                         "references' time grows with its square)")
    st.set_defaults(run=_selftest)
    _add_porep_commands(sub)
    _add_gpu_commands(sub)
    _add_pce_commands(sub)
    _add_engine_commands(sub)
    _add_service_commands(sub)
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


if __name__ == "__main__":
    sys.exit(main())
