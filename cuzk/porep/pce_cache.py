"""The compiled partition circuit (PCE and witness program) of a registered seal proof, cached on disk
by cuzk.porep.circuit_cache: one file per StackedShape, cuzk-porep-<nodes>n-<layers>l-<challenges>c-
r<base>-<sub>-<top>.pce, shared by every proof of that shape."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.circuit import StackedShape, circuit
from cuzk.porep.circuit_cache import CORE_MODULES, SHA256_SECTION, CachedCircuit, cuzk_version, digest_section
from cuzk.porep.registry import RegisteredProof
from cuzk.r1cs.pce import PCE, build
from cuzk.r1cs.witness_program import WitnessProgram

__all__ = ["CIRCUIT_MODULES", "SHA256_SECTION", "cached", "cuzk_version", "digest_section", "identity",
           "load_compiled", "load_or_build", "path_of", "shape_of", "verify"]

# the modules whose code decides the constraints (a change to any of them is a new circuit)
CIRCUIT_MODULES = ("cuzk/porep/circuit.py", *CORE_MODULES)
ProofOrConfig = RegisteredProof | int | str | PoRepConfig


def shape_of(proof: ProofOrConfig) -> StackedShape:
    """The partition circuit shape of a registered seal proof (name, id, RegisteredProof) or PoRepConfig."""
    config = proof if isinstance(proof, PoRepConfig) else PoRepConfig.from_proof(proof)
    return StackedShape.from_config(config)


def cached(proof: ProofOrConfig) -> CachedCircuit:
    """`proof`'s partition circuit as cached."""
    s = shape_of(proof)
    return CachedCircuit("porep", f"{s.nodes}n-{s.layers}l-{s.challenges}c-r{'-'.join(map(str, s.tree_r))}",
                         {"nodes": s.nodes, "layers": s.layers, "challenges": s.challenges, "tree_r": list(s.tree_r)},
                         CIRCUIT_MODULES, cuzk_version(), partial(circuit, s))


def identity(proof: ProofOrConfig) -> dict[str, str]:
    """The PCE file identity of `proof`'s partition circuit (cuzk.porep.circuit_cache)."""
    return cached(proof).identity


def path_of(proof: ProofOrConfig) -> Path:
    """Where `proof`'s PCE is cached."""
    return cached(proof).path


def load_compiled(proof: ProofOrConfig, *, progress: bool = True) -> tuple[PCE, WitnessProgram]:
    """The PCE and the witness program of `proof`'s partition circuit (CachedCircuit.load: built and
    written to the cache when missing, corrupt or stale)."""
    return cached(proof).load(progress=progress, build=build)


def load_or_build(proof: ProofOrConfig, *, progress: bool = True) -> PCE:
    """The PCE of `proof`'s partition circuit (load_compiled without the program)."""
    return load_compiled(proof, progress=progress)[0]


def verify(proof: ProofOrConfig) -> PCE:
    """The cached PCE of `proof`, fully checked (CachedCircuit.verify)."""
    return cached(proof).verify()
