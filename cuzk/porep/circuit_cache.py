"""A compiled partition circuit (its PCE and witness program) cached on disk beside the parameters
(cuzk.r1cs.pce_file.pce_path: <params_dir()>/cuzk-<family>-<shape>.pce), for every circuit family:
PoRep, PoSt and SnapDeals each describe theirs as a CachedCircuit (cuzk.porep.pce_cache,
cuzk.post.pce_cache, cuzk.snap.pce_cache).

The file's identity is known before anything is read or synthesized:

    shape           <family>-<shape name>: the file stem (one file per circuit shape, shared by every
                    proof of that shape)
    cuzk_version    the installed cuzk's version
    circuit_digest  SHA-256 over the family, the shape parameters, the cuzk version, the PCE file
                    format version and the source of the modules that synthesize the circuit

so a file from another shape, version, format or circuit code is refused (moved aside and rebuilt).
The file also holds SHA256_SECTION, a SHA-256 over the PCE arrays themselves (names, dtypes, shapes
and bytes), which `verify` recomputes: an end-to-end check beyond the container's per-section
checksums, and the circuit's witness program (cuzk.r1cs.witness_program, compiled from the same
recording), its arrays named with PROGRAM_PREFIX.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from cuzk.errors import PceFormatError
from cuzk.groth16 import CompiledCircuit
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs.pce import PCE, arrays_digest, build
from cuzk.r1cs.pce_file import FORMAT_VERSION, build_or_load, pce_path, read_pce
from cuzk.r1cs.witness_program import WitnessProgram, compile_program, hint_matrices

log = logging.getLogger("cuzk.pce")

SHA256_SECTION = "arrays_sha256"
PROGRAM_PREFIX = "wp_"  # the witness program's arrays (cuzk.r1cs.witness_program) share the file
# the packages and modules below every family's circuit whose code decides the constraints
CORE_MODULES = ("cuzk/gadgets", "cuzk/r1cs", "cuzk/ff/fields.py", "cuzk/ff/limbs.py")
_KEPT: dict[tuple[str, str], CompiledCircuit] = {}


def cuzk_version() -> str:
    """cuzk.__version__ (read here: the facade is a higher layer)."""
    try:
        return version("cuzk")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0.0.0+source"


@functools.cache
def code_digest(modules: tuple[str, ...]) -> str:
    """SHA-256 over the source files of `modules` (paths relative to the repository; a package counts
    with every .py below it): paths and bytes, sorted by path."""
    root = Path(__file__).resolve().parents[2]
    files = sorted(f for entry in modules
                   for f in ((root / entry).rglob("*.py") if (root / entry).is_dir() else [root / entry]))
    h = hashlib.sha256(b"cuzk-circuit-code-1")
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class CachedCircuit:
    """One partition circuit as cached: `family` ("porep", "post", "snap") and `shape` name the file,
    `params` (JSON values) are the shape's parameters, `modules` the source whose code decides its
    constraints (CORE_MODULES included), `version` the cuzk version; `synthesize` records the
    circuit in constraints mode."""

    family: str
    shape: str
    params: Mapping[str, object]
    modules: tuple[str, ...]
    version: str
    synthesize: Callable[[], ConstraintSystem] = field(compare=False, repr=False)

    @property
    def identity(self) -> dict[str, str]:
        """The file's identity (the module doc)."""
        body = {**self.params, "cuzk_version": self.version, "pce_format": FORMAT_VERSION,
                "code": code_digest(self.modules)}
        digest = hashlib.sha256(f"cuzk-{self.family}-pce-1 ".encode() + json.dumps(body, sort_keys=True).encode())
        return {"shape": f"{self.family}-{self.shape}", "cuzk_version": self.version,
                "circuit_digest": digest.hexdigest()}

    @property
    def path(self) -> Path:
        """Where the circuit is cached."""
        return pce_path(self.identity)

    def load(self, *, progress: bool = True, build: Callable[[ConstraintSystem], PCE] = build
             ) -> tuple[PCE, WitnessProgram]:
        """The PCE and the witness program: read from the cache file, or synthesized, compiled (`build`
        makes the PCE) and written there (saying so on stderr when `progress`) when it is missing,
        corrupt or made for another identity (one warning line for a bad file, which is moved aside)."""
        ident = self.identity
        path = pce_path(ident)

        def make() -> dict[str, np.ndarray]:
            _say(progress, f"cuzk: building the PCE of the {ident['shape']} partition circuit once; cached as {path}")
            cs = self.synthesize()
            pce = build(cs)
            program = compile_program(pce, hint_matrices(cs, pce))
            del cs
            return file_arrays(pce, program)

        arrays = build_or_load(path, ident, make, warn=lambda line: _warn(progress, line))
        arrays.pop(SHA256_SECTION, None)
        return split(arrays)

    def kept(self, *, progress: bool = False) -> CompiledCircuit:
        """The circuit as a CompiledCircuit (`load`), loaded once per process and identity and kept."""
        ident = self.identity
        key = (ident["shape"], ident["circuit_digest"])
        if key not in _KEPT:
            _KEPT[key] = CompiledCircuit(*self.load(progress=progress))
        return _KEPT[key]

    def verify(self) -> PCE:
        """The cached PCE, fully checked: identity, every section checksum, the arrays' SHA-256 and
        PCE.from_arrays. Raises PceFileError (PceNotFoundError when absent) or InputError."""
        path = self.path
        arrays = read_pce(path, self.identity)
        stored = arrays.pop(SHA256_SECTION, None)
        if stored is None or not np.array_equal(stored, digest_section(arrays)):
            raise PceFormatError(str(path), "the arrays' SHA-256 is missing or does not match", section=SHA256_SECTION)
        return split(arrays)[0]


def digest_section(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The SHA256_SECTION array: (32,) uint8 arrays_digest of the PCE arrays."""
    return np.frombuffer(arrays_digest(arrays), np.uint8).copy()


def file_arrays(pce: PCE, program: WitnessProgram) -> dict[str, np.ndarray]:
    """The arrays a cache file holds: the PCE's, the program's (PROGRAM_PREFIX) and SHA256_SECTION."""
    arrays = {**pce.to_arrays(), **{PROGRAM_PREFIX + k: v for k, v in program.to_arrays().items()}}
    return {**arrays, SHA256_SECTION: digest_section(arrays)}


def split(arrays: dict[str, np.ndarray]) -> tuple[PCE, WitnessProgram]:
    """The PCE and the witness program of a cache file's arrays (without SHA256_SECTION)."""
    n = len(PROGRAM_PREFIX)
    program = {k[n:]: v for k, v in arrays.items() if k.startswith(PROGRAM_PREFIX)}
    pce = PCE.from_arrays({k: v for k, v in arrays.items() if not k.startswith(PROGRAM_PREFIX)})
    return pce, WitnessProgram.from_arrays(program)


def _say(progress: bool, message: str) -> None:
    log.info(message)
    if progress:
        print(message, file=sys.stderr, flush=True)


def _warn(progress: bool, message: str) -> None:
    if progress:
        print(f"cuzk: warning: {message}", file=sys.stderr, flush=True)
    else:
        log.warning(message)
