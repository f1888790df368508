"""The engine's byte models: what one work item of a circuit takes in the engine process's host
memory and on its device (32 bytes per variable of a witness, 4 x 32 x domain size of prover vectors),
from which the host budget reserves and the CUDA backend keeps room beside its tables."""
from __future__ import annotations

from cuzk.engine.config import EngineConfig
from cuzk.groth16 import AnyCircuit

SYNTHESIS_GUESS_FACTOR = 8  # a first item's synthesis growth, in witnesses, when none was measured

def witness_bytes(circuit: AnyCircuit) -> int:
    """A full witness: 32 bytes per variable."""
    return 32 * (circuit.num_inputs + circuit.num_aux)


def vectors_bytes(circuit: AnyCircuit) -> int:
    """The prover's vectors a, b, c, h over the domain: 4 x 32 x domain size."""
    return 4 * 32 * circuit.domain_size


def packed_circuit(circuit: AnyCircuit) -> bool:
    """Whether its items' witnesses come packed (a circuit with a witness program)."""
    return getattr(circuit, "program", None) is not None


def engine_host_bytes(circuit: AnyCircuit, on_gpus: bool, gpu_witness: bool) -> int:
    """Host bytes one item of `circuit` takes in the engine process: on a host backend its full
    witness (32 bytes per variable) and the prover's vectors (4 x 32 x domain size). On GPUs the
    vectors are in VRAM, and so is the witness when a packed one (a circuit with a witness program)
    is expanded there (gpu_witness): then nothing beyond the packed inputs, which the synthesis
    growth counts; expanded on the host's cores, the witness."""
    if not on_gpus:
        return witness_bytes(circuit) + vectors_bytes(circuit)
    return 0 if packed_circuit(circuit) and gpu_witness else witness_bytes(circuit)


def work_bytes(config: EngineConfig, circuit: AnyCircuit) -> int:
    """Device bytes the GPU workers of one device use beside the resident tables for `circuit`: each
    worker's witnesses (a batch of pipeline.witness_batch when they come packed, else one) and one
    partition's prover vectors. A CUDA backend keeps them (and one MSM's working memory) free of new
    MSM tables."""
    batch = config.pipeline.witness_batch if packed_circuit(circuit) else 1
    return config.gpus.gpu_workers_per_device * (batch * witness_bytes(circuit) + vectors_bytes(circuit))
