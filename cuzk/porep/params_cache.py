"""Groth16 parameters for a PoRep circuit: Filecoin's official files when present, else (where a setup
is allowed: cuzk.prove, cuzk demo, a daemon with srs.allow_setup) cuzk's own, made once by a Groth16
setup and cached.

Names follow rust-fil-proofs (`parameter_cache.rs`, hashes from `parameters.json`):

    official  v28-stacked-proof-of-replication-merkletree-poseidon_hasher-<tree>-sha256_hasher-<hash>.{params,vk}
              in $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters
    cuzk's    cuzk-<the official stem>.{params,vk,meta}
              in $FIL_PROOFS_PARAMETER_CACHE if set, else $CUZK_CACHE_DIR/params, else
              $XDG_CACHE_HOME/cuzk/params (~/.cache/cuzk/params)

The `cuzk-` prefix marks parameters from cuzk's own setup, so they are never taken for the
ceremony's: proofs made with them verify only against their own .vk. The .meta file (JSON) records
the digest of the circuit they were made for and is written last, so a .params / .vk without a
matching .meta is never used: a changed circuit, or a setup cut short, means setup again.
export_params writes given parameters (a GPU setup's, vectors still on the device) under a cuzk- name
into any directory, without a .meta.
Generation holds an exclusive lock (<stem>.lock, fcntl) so that concurrent processes run one setup
and then share it; every file is written beside its final name and renamed into place, and a setup
that fails (or is interrupted) leaves no .params / .vk of its entry behind.

A broken cache is reported, never worked around: an entry path that exists but is not a regular file
(a directory where <stem>.params belongs), a cache directory that is a file, or a file that cannot be
read raises ParamsCacheError naming the path, before anything is written (treating it as absent would
start a setup, hours for 32GiB, whose result could not be stored). A .meta that is not a JSON object
within META_MAX_BYTES / META_MAX_DEPTH only makes the files stale: they are generated again.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from cuzk.errors import CuzkError, InputError, ParamsCacheError, ParamsNotFoundError
from cuzk.groth16 import AnyCircuit, Parameters, VerifyingKey, read_params, read_vk, setup, write_params, write_vk
from cuzk.util.atomic import atomic_write
from cuzk.util.cache_dirs import params_dir
from cuzk.util.fileio import locked
from cuzk.util.jsonio import load_json
from cuzk.util.progress import Progress

log = logging.getLogger("cuzk.params")

VERSION = 28
CUZK_PREFIX = "cuzk-"
DEFAULT_OFFICIAL_DIR = "/var/tmp/filecoin-proof-parameters"
META_MAX_BYTES, META_MAX_DEPTH = 1 << 16, 8  # a .meta is a flat object of some 500 bytes
# sector size -> (tree_r_last shape, SHA256 of rust's public-params identifier), from parameters.json;
# one file per size serves every API version (V1, V1_1, synthetic, non-interactive)
OFFICIAL = {
    2 << 10: ("8-0-0", "032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f"),
    8 << 20: ("8-0-0", "ecd683648512ab1765faa2a5f14bab48f676e633467f0aa8aad4b55dcb0652bb"),
    512 << 20: ("8-0-0", "6babf46ce344ae495d558e7770a585b2382d54f225af8ed0397b8be7c3fcd472"),
    32 << 30: ("8-8-0", "82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820"),
    64 << 30: ("8-8-2", "96f1b4a04c5c51e4759bbf224bbc2ef5a42c7100f16ec0637123f16a845ddfb2"),
}


def porep_stem(sector_size: int) -> str:
    """The official file stem (no extension) of the PoRep circuit of a sector size."""
    if sector_size not in OFFICIAL:
        raise ParamsNotFoundError(f"no official PoRep parameters exist for sector size {sector_size}")
    tree, digest = OFFICIAL[sector_size]
    return f"v{VERSION}-stacked-proof-of-replication-merkletree-poseidon_hasher-{tree}-sha256_hasher-{digest}"


def official_dir() -> Path:
    return Path(os.environ.get("FIL_PROOFS_PARAMETER_CACHE") or DEFAULT_OFFICIAL_DIR)


def cuzk_dir() -> Path:
    """Where cuzk writes its own parameters (see the module docstring)."""
    return params_dir()


@dataclass(frozen=True)
class ParamsFiles:
    """One set of parameter files: <directory>/<stem>.params, .vk (and .meta, .lock for cuzk's own)."""

    directory: Path
    stem: str

    @property
    def official(self) -> bool:
        return not self.stem.startswith(CUZK_PREFIX)

    def path(self, ext: str) -> Path:
        return self.directory / f"{self.stem}.{ext}"

    @property
    def params(self) -> Path:
        return self.path("params")

    @property
    def vk(self) -> Path:
        return self.path("vk")

    @property
    def meta(self) -> Path:
        return self.path("meta")

    def describe(self) -> str:
        return f"{'official' if self.official else 'cuzk-generated'} parameters {self.params}"


def official_files(stem: str) -> ParamsFiles:
    return ParamsFiles(official_dir(), stem)


def cuzk_files(stem: str) -> ParamsFiles:
    return ParamsFiles(cuzk_dir(), CUZK_PREFIX + stem)


@dataclass
class LoadedParams:
    """Parameters ready to prove with: `params` (bellperson layout, memory-mapped when read from a file),
    `vk`, the files they live in and whether this call ran the setup."""

    params: object
    vk: VerifyingKey
    files: ParamsFiles
    generated: bool


def load_or_generate(stem: str, circuit: AnyCircuit, *, allow_setup: bool = True, progress: bool = True,
                     keep: bool = True, rng: np.random.Generator | None = None) -> LoadedParams:
    """The official parameters `stem` if present, else, with `allow_setup`, cuzk's own for `circuit`
    (cached; generated by a Groth16 setup when missing or made for another circuit; a warning says once
    per process that they are not the chain's), else OfficialParamsMissingError naming the file looked
    for. Read from a file, each query vector is decoded on access and, with `keep`, kept
    (MappedParameters). `rng` fixes the setup (tests only)."""
    official = official_files(stem)
    _check_files(official.params, official.vk)
    if official.params.is_file() and official.vk.is_file():
        log.info("using %s", official.describe())
        with _cache_errors(official.directory):
            return LoadedParams(read_params(official.params, checked=False, keep=keep), read_vk(official.vk), official, False)
    if not allow_setup:
        raise OfficialParamsMissingError(official)
    own = cuzk_files(stem)
    _check_directory(own.directory)
    _check_files(own.params, own.vk, own.meta, own.path("lock"))
    _warn_own(own, official)
    digest = circuit.digest()
    with _cache_errors(own.directory):
        own.directory.mkdir(parents=True, exist_ok=True)
        with locked(own.path("lock"), lambda: _say(progress, f"cuzk: waiting for another process generating "
                                                             f"{own.params.name}")):
            if _fresh(own, digest):
                log.info("using %s", own.describe())
                return LoadedParams(read_params(own.params, checked=False, keep=keep), read_vk(own.vk), own, False)
            _generate(own, official, circuit, digest, progress, rng)
        # read back like a cached file: the setup's in-memory vectors are not held while proving
        return LoadedParams(read_params(own.params, checked=False, keep=keep), read_vk(own.vk), own, True)


C = TypeVar("C", bound=AnyCircuit)


def circuit_and_params(stem: str, build: Callable[[], C], *, allow_setup: bool, progress: bool = False,
                       keep: bool = True) -> tuple[C, LoadedParams]:
    """build()'s circuit and its parameters (load_or_generate under `stem`); without `allow_setup` a
    missing official file fails (OfficialParamsMissingError) before the circuit is built."""
    if not allow_setup:
        find_params(stem, allow_own=False)
    circuit = build()
    return circuit, load_or_generate(stem, circuit, allow_setup=allow_setup, progress=progress, keep=keep)


class OfficialParamsMissingError(ParamsNotFoundError):
    """The official parameters of a circuit are not in the parameter directory and cuzk's own (a local
    setup) are not allowed: names the file looked for and where the directory comes from."""

    def __init__(self, official: ParamsFiles) -> None:
        self.files = official
        super().__init__(f"no official parameters: {official.params} (and its .vk) not found; the directory is "
                         f"{official_dir_source()}. cuzk's own parameters (a local Groth16 setup, whose proofs "
                         "the chain rejects) are used only with srs.allow_setup = true (cuzk daemon --allow-setup)")


def official_dir_source() -> str:
    """Where official_dir() comes from, for messages."""
    if os.environ.get("FIL_PROOFS_PARAMETER_CACHE"):
        return "$FIL_PROOFS_PARAMETER_CACHE (srs.param_cache sets it)"
    return f"the default {DEFAULT_OFFICIAL_DIR} (set srs.param_cache or $FIL_PROOFS_PARAMETER_CACHE)"


_WARNED: set[str] = set()


def _warn_own(own: ParamsFiles, official: ParamsFiles) -> None:
    """Say once per process and stem that cuzk's own parameters stand in for the official ones (a
    warning: shown on stderr even where logging is not configured)."""
    if own.stem in _WARNED:
        return
    _WARNED.add(own.stem)
    log.warning("cuzk: official parameters %s not found in %s; using cuzk's own (%s): these proofs verify with "
                "cuzk's .vk, not on chain", official.params.name, official.directory, own.params)


def find_params(stem: str, allow_own: bool = True) -> ParamsFiles:
    """The parameter files that proving `stem` would read, without generating any: the official ones
    when both exist, else (with `allow_own`) cuzk's own when their .meta is a valid record; each file
    opened to check it can be read. ParamsNotFoundError naming the files looked for
    (OfficialParamsMissingError without `allow_own`), ParamsCacheError for one that cannot be read (the
    daemon's start-up check of a preloaded circuit)."""
    official, own = official_files(stem), cuzk_files(stem)
    _check_files(official.params, official.vk, own.params, own.vk, own.meta)
    if official.params.is_file() and official.vk.is_file():
        found = official
    elif not allow_own:
        raise OfficialParamsMissingError(official)
    elif own.params.is_file() and own.vk.is_file() and _is_record(read_meta(own), own):
        found = own
    else:
        raise ParamsNotFoundError(f"no parameters for {stem}: neither {official.params} (and .vk) nor cuzk's own "
                                  f"{own.params} (with a valid .meta) exists")
    for path in (found.params, found.vk):
        try:
            with open(path, "rb") as f:
                f.read(1)
        except OSError as e:
            raise ParamsCacheError(str(path), e.strerror or str(e)) from e
    return found


def find_vk(stem: str) -> tuple[VerifyingKey, ParamsFiles]:
    """The verifying key to check proofs of circuit `stem` with: the official one if present, else
    cuzk's own when its .meta is a valid record (ParamsNotFoundError when neither is usable)."""
    official, own = official_files(stem), cuzk_files(stem)
    _check_files(official.vk, own.vk, own.meta)
    if official.vk.is_file():
        with _cache_errors(official.directory):
            return read_vk(official.vk), official
    if own.vk.is_file():
        meta = read_meta(own)
        if not _is_record(meta, own) or not _vk_matches(meta, own):
            raise ParamsNotFoundError(f"no verifying key: {official.vk} does not exist and cuzk's own {own.vk} "
                                      f"is stale ({own.meta} is missing or not a valid record; prove once to "
                                      "generate cuzk's own parameters again, or pass a .vk)")
        with _cache_errors(own.directory):
            return read_vk(own.vk), own
    raise ParamsNotFoundError(f"no verifying key: neither {official.vk} nor {own.vk} exists "
                              "(prove once to generate cuzk's own parameters, or pass a .vk)")


def export_params(params: Parameters, directory: str | os.PathLike, stem: str) -> ParamsFiles:
    """Write `params` as <directory>/cuzk-<stem>.params and .vk in bellperson's layout and return the
    files: each written to a temporary file and renamed into place (write_params, write_vk), query
    vectors on the GPU encoded there and streamed out a chunk at a time. The cuzk- prefix marks them
    as cuzk's own, never the ceremony's: a stem that is empty, holds a path separator or NUL (it could
    name a file outside `directory`, without the prefix) or already starts with the prefix is refused
    (InputError). The pair carries no .meta record, so the cache never takes it for a circuit's: an
    existing .meta of the entry is removed first. A failed export (ParamsCacheError for an OSError,
    naming the path) leaves neither file of the entry behind."""
    seps = {"/", "\0", os.sep, os.altsep} - {None}
    if not isinstance(stem, str) or not stem or stem.startswith(CUZK_PREFIX) or any(c in stem for c in seps):
        raise InputError(f"export stem must be a circuit's file stem (the {CUZK_PREFIX} prefix is added here), "
                         f"without a path separator, got {stem!r}")
    files = ParamsFiles(Path(directory), CUZK_PREFIX + stem)
    _check_directory(files.directory)
    _check_files(files.params, files.vk, files.meta)
    with _cache_errors(files.directory):
        files.directory.mkdir(parents=True, exist_ok=True)
        files.meta.unlink(missing_ok=True)
        try:
            write_params(files.params, params)
            write_vk(files.vk, params.vk)
        except BaseException:
            _remove(files.params, files.vk)
            raise
    log.info("exported %s", files.describe())
    return files


def _remove(*paths: Path) -> None:
    """Unlink each path that exists, as far as it can be (cleanup after a failed write)."""
    for path in paths:
        with suppress(OSError):
            path.unlink(missing_ok=True)


def _is_record(meta: dict | None, files: ParamsFiles) -> bool:
    """Whether `meta` is a .meta record as _generate writes it for `files`: its stem, a circuit digest
    of 64 lowercase hex digits, and a record checksum that matches (so no field was changed since)."""
    digest = meta.get("circuit_digest") if meta is not None else None
    return (meta is not None and meta.get("stem") == files.stem and isinstance(digest, str) and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest) and meta.get("record_sha256") == _record_sha256(meta))


def _record_sha256(meta: dict) -> str:
    """SHA-256 of the record's canonical JSON without its own checksum field."""
    body = {k: v for k, v in meta.items() if k != "record_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _vk_matches(meta: dict, files: ParamsFiles) -> bool:
    """Whether the .vk on disk is the one the record was written with."""
    with _cache_errors(files.directory):
        return meta.get("vk_sha256") == hashlib.sha256(files.vk.read_bytes()).hexdigest()


def read_meta(files: ParamsFiles) -> dict | None:
    """The .meta record; None when it is absent or not a JSON object within the limits (the files are
    then stale). ParamsCacheError when it cannot be read (a directory, no permission)."""
    _check_files(files.meta)
    try:
        meta = load_json(files.meta, what="parameter metadata", max_bytes=META_MAX_BYTES,
                         max_depth=META_MAX_DEPTH)
    except FileNotFoundError:
        return None
    except InputError as e:  # too large, too deep, not JSON
        log.warning("%s: the parameters are treated as stale", e)
        return None
    except OSError as e:
        raise ParamsCacheError(str(files.meta), e.strerror or str(e)) from e
    return meta if isinstance(meta, dict) else None


def _check_files(*paths: Path) -> None:
    """ParamsCacheError for a path that exists but is not a regular file (or cannot be looked at)."""
    for path in paths:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            continue
        except OSError as e:  # e.g. a component of the cache directory is a regular file
            raise ParamsCacheError(str(path), e.strerror or str(e)) from e
        if stat.S_ISDIR(mode):
            raise ParamsCacheError(str(path), "a directory where a cache file belongs (remove it)")
        if not stat.S_ISREG(mode):
            raise ParamsCacheError(str(path), "not a regular file (remove it)")


def _check_directory(path: Path) -> None:
    """ParamsCacheError for a cache directory path that exists but is not a directory."""
    try:
        if not stat.S_ISDIR(path.stat().st_mode):
            raise ParamsCacheError(str(path), "not a directory, but the parameter cache directory must be one")
    except FileNotFoundError:
        pass
    except OSError as e:
        raise ParamsCacheError(str(path), e.strerror or str(e)) from e


@contextmanager
def _cache_errors(directory: Path) -> Iterator[None]:
    """Re-raise an OSError of the block as a ParamsCacheError naming its path (typed errors pass)."""
    try:
        yield
    except OSError as e:
        if isinstance(e, CuzkError):
            raise
        raise ParamsCacheError(str(e.filename or directory), e.strerror or str(e)) from e


def _fresh(files: ParamsFiles, digest: str) -> bool:
    meta = read_meta(files)
    return (_is_record(meta, files) and meta.get("circuit_digest") == digest
            and files.params.is_file() and files.vk.is_file() and _vk_matches(meta, files))


def _generate(own: ParamsFiles, official: ParamsFiles, circuit: AnyCircuit, digest: str, progress: bool,
              rng: np.random.Generator | None) -> None:
    stale = own.meta.exists()
    own.meta.unlink(missing_ok=True)  # the files are not trusted again until the new .meta lands
    why = "made for another circuit" if stale else "not found"
    _say(progress, f"cuzk: no official parameters {official.params.name} in {official.directory}; cuzk's own "
                   f"are {why}. Running a Groth16 setup of {circuit.num_constraints:,} constraints "
                   f"(domain {circuit.domain_size:,}) once; it is cached as {own.params}")
    start = time.perf_counter()
    try:
        with Progress("cuzk: Groth16 setup", enabled=progress):
            params = setup(circuit, rng)
        seconds = time.perf_counter() - start
        with Progress("cuzk: writing parameters", enabled=progress):
            write_params(own.params, params)
            write_vk(own.vk, params.vk)
        meta = {"generator": "cuzk", "stem": own.stem, "circuit_digest": digest,
                "constraints": circuit.num_constraints, "inputs": circuit.num_inputs, "aux": circuit.num_aux,
                "domain_size": circuit.domain_size, "setup_seconds": round(seconds, 1),
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "note": "cuzk's own Groth16 setup, NOT the Filecoin ceremony's parameters",
                "vk_sha256": hashlib.sha256(own.vk.read_bytes()).hexdigest()}
        meta["record_sha256"] = _record_sha256(meta)
        atomic_write(own.meta, json.dumps(meta, indent=1).encode())
    except BaseException:  # no .params / .vk without their .meta: the entry is gone, not half made
        _remove(own.params, own.vk)
        raise
    _say(progress, f"cuzk: setup done in {seconds:.1f} s; wrote {own.params} and {own.vk}")


def _say(progress: bool, message: str) -> None:
    log.info(message)
    if progress:
        print(message, file=sys.stderr, flush=True)
