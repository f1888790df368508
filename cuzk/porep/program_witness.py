"""PoRep partition witnesses from the witness program (cuzk.r1cs.witness_program): the free values are
the partition's external data, packed here in the order the circuit allocates them; the program
computes everything else, on all CPU cores or on the GPU (cuzk.backend.cuda.witness).

Free values (cuzk.porep.circuit): at top level comm_r_last, comm_c; per challenge the data leaf, the
comm_d path's siblings, then for each of the 14 parents its column (one label per layer) and its
tree_c path's siblings, then the comm_r_last path's and the comm_c path's siblings (levels leaf first).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from cuzk.backend import Backend
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.groth16.circuit import CompiledCircuit
from cuzk.porep.circuit import PartitionWitness, StackedShape
from cuzk.porep.registry import DEGREE
from cuzk.r1cs.pce import PCE
from cuzk.r1cs.witness_program import WitnessProgram, seed
from cuzk.util.arrays import to_host

_LOADED: dict[str, CompiledCircuit] = {}
S = TypeVar("S")
W = TypeVar("W")


def free_values(w: PartitionWitness) -> tuple[np.ndarray, np.ndarray]:
    """(top level (2, 4), per challenge (K, nfree, 4)) Montgomery free values of one partition."""
    parts = [w.data_leaves[:, None, :]] + [lv.siblings for lv in w.comm_d_paths]
    for j in range(DEGREE):
        parts.append(w.parent_columns[:, j])
        parts += [lv.siblings for lv in w.parent_paths[j]]
    parts += [lv.siblings for lv in w.comm_r_last_paths] + [lv.siblings for lv in w.comm_c_paths]
    return Fr.from_ints([w.comm_r_last, w.comm_c]), np.concatenate(parts, axis=1)


@dataclass(frozen=True)
class PackedWitness:
    """What one partition's witness is computed from, a few hundred values per challenge (what a
    synthesis process hands a GPU worker): the public inputs with ONE first ((num_inputs, 4)), the top
    level's free values ((nfree, 4)) and the challenges' ((K, nfree, 4)), Montgomery."""

    inputs: np.ndarray
    plain_free: np.ndarray
    block_free: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.inputs.nbytes + self.plain_free.nbytes + self.block_free.nbytes


@dataclass(frozen=True)
class FreeValuesWitness(Generic[S, W]):
    """One partition's packed witness as a picklable call (an engine runs it in a synthesis process):
    ONE and `inputs` (the public inputs after ONE) with `free_values(shape, witness)`, the (top level
    (n, 4), per block instance (K, nfree, 4)) Montgomery free values; `free_values` is a module-level
    function, so that the call pickles (PoSt's and SnapDeals' partitions)."""

    free_values: Callable[[S, W], tuple[np.ndarray, np.ndarray]]
    shape: S
    witness: W
    inputs: tuple[int, ...]

    def __call__(self) -> PackedWitness:
        plain, per = self.free_values(self.shape, self.witness)
        return PackedWitness(Fr.from_ints([1, *self.inputs]), plain, per)

    def full(self, circuit: CompiledCircuit, backend: Backend):
        """The full witness (ONE, inputs, aux; Montgomery Fr) by the circuit's witness program; on a
        device backend it stays on the device."""
        return expand(circuit, [self()], backend, host=backend.device is None)[0]


def pack(shape: StackedShape, w: PartitionWitness, inputs: list[int]) -> PackedWitness:
    """One partition's PackedWitness from its vanilla data and public inputs (without ONE)."""
    w.check(shape)
    if len(inputs) != shape.num_inputs - 1:
        raise InputError(f"a partition has {shape.num_inputs - 1} public inputs, got {len(inputs)}")
    plain, per = free_values(w)
    return PackedWitness(Fr.from_ints([1, *inputs]), plain, per)


def blank(circuit: CompiledCircuit) -> PackedWitness:
    """A pack that fits `circuit` (a CompiledCircuit with `program`): ONE = 1, every other input and
    free value 0. Not a partition's: its expansion may fail a decomposition (SynthesisError); an
    engine rehearses a proof from it (Engine.warm). InputError for a circuit without one block of free
    values (_free_block)."""
    pce, program = circuit.pce, circuit.program
    _, k, _, _, free = _free_block(pce, program)
    return PackedWitness(Fr.from_ints([1] + [0] * (pce.num_inputs - 1)),
                         np.zeros((program.free_plain.shape[0], 4), np.uint64),
                         np.zeros((k, free.shape[0], 4), np.uint64))


def _free_block(pce: PCE, program: WitnessProgram) -> tuple[int, int, int, int, np.ndarray]:
    """The block whose instances take free values (a PoRep partition's challenges, a PoSt partition's
    sectors, a SnapDeals partition's challenges): (its index, K instances, first aux column, aux columns
    per instance, its template's free aux). It is the circuit's only block, or among several the only
    one whose template has free values (a SnapDeals partition's apex tree levels have none); InputError
    otherwise."""
    def free_of(b: int) -> np.ndarray:
        t = int(pce.blocks[b, 0])
        return program.free_tpl[program.free_tpl_ptr[t]:program.free_tpl_ptr[t + 1]]

    nblocks = pce.blocks.shape[0]
    with_free = [b for b in range(nblocks) if free_of(b).shape[0]]
    if nblocks != 1 and len(with_free) != 1:
        raise InputError(f"a packed witness needs one block of free values, the circuit has {nblocks} blocks, "
                         f"{len(with_free)} with free values")
    b = 0 if nblocks == 1 else with_free[0]
    k, aux_col, aux_per = (int(pce.blocks[b, j]) for j in (1, 3, 4))
    return b, k, aux_col, aux_per, free_of(b)


def _layout(pce: PCE, program: WitnessProgram, packs: list[PackedWitness]) -> tuple[int, np.ndarray]:
    """The free block's index and the columns of its free values, (K * nfree,); checks that the packs
    fit the circuit."""
    b, k, aux_col, aux_per, free = _free_block(pce, program)
    for p in packs:
        if p.inputs.shape != (pce.num_inputs, 4) or p.plain_free.shape != (program.free_plain.shape[0], 4) \
                or p.block_free.shape != (k, free.shape[0], 4):
            raise InputError("packed witness values do not fit the circuit's witness program")
    return b, (aux_col + np.arange(k)[:, None] * aux_per + free[None, :]).reshape(-1)


def seeded(pce: PCE, program: WitnessProgram, packs: list[PackedWitness]) -> np.ndarray:
    """(P, ncols, 4): the packs' inputs and free values in place, the rest zero: what the program
    starts from."""
    b, _ = _layout(pce, program, packs)
    P = len(packs)
    block_free = [np.stack([p.block_free for p in packs]) if i == b else np.zeros((P, int(blk[1]), 0, 4), np.uint64)
                  for i, blk in enumerate(pce.blocks)]
    return seed(pce, program, np.stack([p.inputs for p in packs]), np.stack([p.plain_free for p in packs]),
                block_free)


def seeded_device(pce: PCE, program: WitnessProgram, packs: list[PackedWitness], backend: Backend):
    """`seeded` built on the backend's device: zeros there, then only the inputs and free values
    copied in (the witness itself is never in host memory). A (P, ncols, 4) uint64 device array."""
    _, cols = _layout(pce, program, packs)
    out = backend.zeros((len(packs), pce.num_inputs + pce.num_aux, 4), np.uint64)
    out[:, :pce.num_inputs] = backend.asarray(np.stack([p.inputs for p in packs]))
    out[:, backend.asarray(program.free_plain)] = backend.asarray(np.stack([p.plain_free for p in packs]))
    out[:, backend.asarray(cols)] = backend.asarray(np.stack([p.block_free.reshape(-1, 4) for p in packs]))
    return out


def expand(circuit: CompiledCircuit, packs: list[PackedWitness], backend: Backend, host: bool = True):
    """The partitions' full witnesses from their packs by the circuit's witness program
    (a CompiledCircuit with `program`) on `backend`: (P, ncols, 4); on a device backend computed on
    its device and left there unless `host`."""
    pce, program = circuit.pce, circuit.program
    if program is None:
        raise InputError("this circuit carries no witness program")
    if backend.device is None:
        w = seeded(pce, program, packs)
        backend.run_witness_program(pce, program, w)
        return w
    with backend.device_scope():
        w = seeded_device(pce, program, packs, backend)
        backend.run_witness_program(pce, program, w)
        return to_host(w) if host else w


def compiled(proof, progress: bool = False) -> CompiledCircuit:
    """The partition circuit of a registered proof (or PoRepConfig) as its PCE with its witness
    program, loaded once per process (cuzk.porep.pce_cache.load_compiled: built and cached on first
    use, saying so when `progress`)."""
    from cuzk.porep import pce_cache

    key = pce_cache.identity(proof)["shape"]
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = CompiledCircuit(*pce_cache.load_compiled(proof, progress=progress))
    return _LOADED[key]
