"""What proving a PoRep C1 needs, in one place for the one-shot path (cuzk.api) and the engine: each
partition's public inputs (replica_id, comm_d, comm_r, seed -> challenges -> inputs), its packed
witness (a picklable callable: it runs in a synthesis process), and the partition circuit with its
parameters (the official ones, or with `allow_setup` cuzk's own)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from cuzk.groth16 import CompiledCircuit
from cuzk.porep import pce_cache, program_witness
from cuzk.porep.c1 import C1Output
from cuzk.porep.graph import SdrGraph
from cuzk.porep.params_cache import LoadedParams, circuit_and_params, porep_stem
from cuzk.porep.public_inputs import partition_public_inputs
from cuzk.porep.registry import RegisteredProof


def partition_inputs(c1: C1Output) -> list[tuple[int, ...]]:
    """The public inputs (without ONE) of every partition of a C1's proof."""
    config = c1.config
    graph = SdrGraph.for_config(config)
    return [tuple(partition_public_inputs(config, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed, k, graph))
            for k in range(config.partitions)]


@dataclass(frozen=True)
class PorepWitness:
    """One partition's packed witness (cuzk.porep.program_witness: its vanilla data and public inputs),
    which a GPU worker expands by the circuit's witness program on its backend."""

    proof: str
    replica_id: Any
    comm_d: Any
    comm_r: Any
    vanilla: Any
    inputs: tuple[int, ...]

    def __call__(self) -> program_witness.PackedWitness:
        from cuzk.porep.circuit import PartitionWitness

        w = PartitionWitness.from_vanilla(self.replica_id, self.comm_d, self.comm_r, self.vanilla)
        return program_witness.pack(pce_cache.shape_of(self.proof), w, list(self.inputs))


def partition_witnesses(c1: C1Output, inputs: list[tuple[int, ...]]) -> list[PorepWitness]:
    """Each partition's packed-witness callable, for the inputs partition_inputs gives."""
    return [PorepWitness(c1.registered_proof.name, c1.replica_id, c1.comm_d, c1.comm_r, c1.vanilla_proofs[k],
                         inputs[k]) for k in range(c1.config.partitions)]


def load_circuit(proof: RegisteredProof, *, allow_setup: bool, progress: bool = False,
                 keep: bool = True) -> tuple[CompiledCircuit, LoadedParams]:
    """The partition circuit of a registered seal proof (its PCE with its witness program, built on
    first use) and its parameters (params_cache.circuit_and_params; `keep`: decoded vectors kept).
    Without `allow_setup` a missing official file fails before the circuit is built."""
    build = partial(program_witness.compiled, proof.name, progress)
    return circuit_and_params(porep_stem(proof.sector_size), build, allow_setup=allow_setup, progress=progress,
                              keep=keep)


def circuit_identity(proof: RegisteredProof) -> tuple[str, Path, str]:
    """(key, calibration file, identity) of a proof's partition circuit: the shape names it among the
    resident circuits; the calibration sits beside its PCE and counts for this circuit digest only."""
    ident = pce_cache.identity(proof.name)
    path = pce_cache.path_of(proof.name)
    return ident["shape"], path.with_name(path.name + ".calibration.json"), ident["circuit_digest"]
