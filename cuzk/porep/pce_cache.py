"""The compiled partition circuit (PCE) of a registered seal proof, built once and cached on disk beside
the parameters (cuzk.r1cs.pce_file.pce_path: <params_dir()>/cuzk-<shape stem>.pce).

The file's identity is known before anything is read or synthesized:

    shape           porep-<nodes>n-<layers>l-<challenges>c-r<base>-<sub>-<top>: the StackedShape, also the
                    file stem (one file per circuit shape, shared by every proof of that shape)
    cuzk_version    the installed cuzk's version
    circuit_digest  SHA-256 over the shape parameters, the cuzk version, the PCE file format version and
                    the source of the modules that synthesize the circuit (CIRCUIT_MODULES)

so a file from another shape, version, format or circuit code is refused (moved aside and rebuilt). The file also
holds SHA256_SECTION, a SHA-256 over the PCE arrays themselves (names, dtypes, shapes and bytes),
which `verify` recomputes: an end-to-end check beyond the container's per-section checksums, and
the circuit's witness program (cuzk.r1cs.witness_program, compiled from the same recording), its
arrays named with PROGRAM_PREFIX.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from cuzk.errors import PceFormatError
from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.circuit import StackedShape, circuit
from cuzk.porep.registry import RegisteredProof
from cuzk.r1cs.pce import PCE, arrays_digest, build
from cuzk.r1cs.pce_file import FORMAT_VERSION, build_or_load, pce_path, read_pce
from cuzk.r1cs.witness_program import WitnessProgram, compile_program, hint_matrices

log = logging.getLogger("cuzk.pce")

SHA256_SECTION = "arrays_sha256"
PROGRAM_PREFIX = "wp_"  # the witness program's arrays (cuzk.r1cs.witness_program) share the file
# the packages and modules whose code decides the constraints (a change to any of them is a new circuit)
CIRCUIT_MODULES = ("cuzk/porep/circuit.py", "cuzk/gadgets", "cuzk/r1cs", "cuzk/ff/fields.py", "cuzk/ff/limbs.py")
ProofOrConfig = RegisteredProof | int | str | PoRepConfig


def cuzk_version() -> str:
    """cuzk.__version__ (read here: the facade is a higher layer)."""
    try:
        return version("cuzk")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0.0.0+source"


def shape_of(proof: ProofOrConfig) -> StackedShape:
    """The partition circuit shape of a registered seal proof (name, id, RegisteredProof) or PoRepConfig."""
    config = proof if isinstance(proof, PoRepConfig) else PoRepConfig.from_proof(proof)
    return StackedShape.from_config(config)


def identity(proof: ProofOrConfig) -> dict[str, str]:
    """The PCE file identity of `proof`'s partition circuit (the module doc)."""
    s = shape_of(proof)
    stem = f"porep-{s.nodes}n-{s.layers}l-{s.challenges}c-r{'-'.join(map(str, s.tree_r))}"
    params = {"nodes": s.nodes, "layers": s.layers, "challenges": s.challenges, "tree_r": list(s.tree_r),
              "cuzk_version": cuzk_version(), "pce_format": FORMAT_VERSION, "code": circuit_code_digest()}
    digest = hashlib.sha256(b"cuzk-porep-pce-1 " + json.dumps(params, sort_keys=True).encode()).hexdigest()
    return {"shape": stem, "cuzk_version": cuzk_version(), "circuit_digest": digest}


@functools.cache
def circuit_code_digest() -> str:
    """SHA-256 over the source files of CIRCUIT_MODULES (paths and bytes, sorted by path)."""
    root = Path(__file__).resolve().parents[2]
    files = sorted(f for entry in CIRCUIT_MODULES
                   for f in ((root / entry).rglob("*.py") if (root / entry).is_dir() else [root / entry]))
    h = hashlib.sha256(b"cuzk-circuit-code-1")
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def path_of(proof: ProofOrConfig) -> Path:
    """Where `proof`'s PCE is cached."""
    return pce_path(identity(proof))


def digest_section(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The SHA256_SECTION array: (32,) uint8 arrays_digest of the PCE arrays."""
    return np.frombuffer(arrays_digest(arrays), np.uint8).copy()


def load_compiled(proof: ProofOrConfig, *, progress: bool = True) -> tuple[PCE, WitnessProgram]:
    """The PCE and the witness program of `proof`'s partition circuit: read from its cache file, or built
    (saying so on stderr when `progress`) and written there when missing, corrupt or made for another
    identity (one warning line for a bad file, which is moved aside)."""
    ident, shape = identity(proof), shape_of(proof)
    path = pce_path(ident)

    def make() -> dict[str, np.ndarray]:
        _say(progress, f"cuzk: building the PCE of the {ident['shape']} partition circuit once; cached as {path}")
        cs = circuit(shape)
        pce = build(cs)
        program = compile_program(pce, hint_matrices(cs, pce))
        del cs
        arrays = {**pce.to_arrays(), **{PROGRAM_PREFIX + k: v for k, v in program.to_arrays().items()}}
        return {**arrays, SHA256_SECTION: digest_section(arrays)}

    arrays = build_or_load(path, ident, make, warn=lambda line: _warn(progress, line))
    arrays.pop(SHA256_SECTION, None)
    return _split(arrays)


def load_or_build(proof: ProofOrConfig, *, progress: bool = True) -> PCE:
    """The PCE of `proof`'s partition circuit (load_compiled without the program)."""
    return load_compiled(proof, progress=progress)[0]


def verify(proof: ProofOrConfig) -> PCE:
    """The cached PCE of `proof`, fully checked: identity, every section checksum, the arrays' SHA-256
    and PCE.from_arrays. Raises PceFileError (PceNotFoundError when absent) or InputError."""
    path = path_of(proof)
    arrays = read_pce(path, identity(proof))
    stored = arrays.pop(SHA256_SECTION, None)
    if stored is None or not np.array_equal(stored, digest_section(arrays)):
        raise PceFormatError(str(path), "the arrays' SHA-256 is missing or does not match", section=SHA256_SECTION)
    return _split(arrays)[0]


def _split(arrays: dict[str, np.ndarray]) -> tuple[PCE, WitnessProgram]:
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
