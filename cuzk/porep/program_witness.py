"""PoRep partition witnesses from the witness program (cuzk.r1cs.witness_program): the free values are
the partition's external data, packed here in the order the circuit allocates them; the program
computes everything else, on all CPU cores or on the GPU (cuzk.backend.cuda.witness).

Free values (cuzk.porep.circuit): at top level comm_r_last, comm_c; per challenge the data leaf, the
comm_d path's siblings, then for each of the 14 parents its column (one label per layer) and its
tree_c path's siblings, then the comm_r_last path's and the comm_c path's siblings (levels leaf first).
"""
from __future__ import annotations

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.porep.circuit import PartitionWitness, StackedShape
from cuzk.porep.registry import DEGREE
from cuzk.r1cs.pce import PCE
from cuzk.r1cs.witness_program import WitnessProgram, run_cpu, seed

_LOADED: dict[str, tuple[PCE, WitnessProgram]] = {}


def free_values(w: PartitionWitness) -> tuple[np.ndarray, np.ndarray]:
    """(top level (2, 4), per challenge (K, nfree, 4)) Montgomery free values of one partition."""
    parts = [w.data_leaves[:, None, :]] + [lv.siblings for lv in w.comm_d_paths]
    for j in range(DEGREE):
        parts.append(w.parent_columns[:, j])
        parts += [lv.siblings for lv in w.parent_paths[j]]
    parts += [lv.siblings for lv in w.comm_r_last_paths] + [lv.siblings for lv in w.comm_c_paths]
    return Fr.from_ints([w.comm_r_last, w.comm_c]), np.concatenate(parts, axis=1)


def seeded(pce: PCE, program: WitnessProgram, shape: StackedShape, witnesses: list[PartitionWitness],
           inputs: list[list[int]]) -> np.ndarray:
    """(P, ncols, 4): the partitions' public inputs (without ONE, as public_inputs gives them) and free
    values in place, the rest zero: what the program starts from."""
    if pce.blocks.shape[0] != 1 or len(witnesses) != len(inputs):
        raise InputError("a PoRep witness program has one block of challenges and one input vector per partition")
    for w in witnesses:
        w.check(shape)
    ins = np.stack([Fr.from_ints([1, *x]) for x in inputs])
    free = [free_values(w) for w in witnesses]
    return seed(pce, program, ins, np.stack([f[0] for f in free]), [np.stack([f[1] for f in free])])


def seeded_device(pce: PCE, program: WitnessProgram, shape: StackedShape, witnesses: list[PartitionWitness],
                  inputs: list[list[int]]):
    """`seeded` built on the current CUDA device: zeros there, then only the inputs and free values
    copied in (the witness itself is never in host memory). A cupy (P, ncols, 4) uint64 array."""
    import cupy as cp

    if pce.blocks.shape[0] != 1 or len(witnesses) != len(inputs):
        raise InputError("a PoRep witness program has one block of challenges and one input vector per partition")
    for w in witnesses:
        w.check(shape)
    free = [free_values(w) for w in witnesses]
    out = cp.zeros((len(witnesses), pce.num_inputs + pce.num_aux, 4), cp.uint64)
    out[:, :pce.num_inputs] = cp.asarray(np.stack([Fr.from_ints([1, *x]) for x in inputs]))
    out[:, cp.asarray(program.free_plain)] = cp.asarray(np.stack([f[0] for f in free]))
    t, k, aux_col, aux_per = (int(pce.blocks[0, j]) for j in (0, 1, 3, 4))
    tpl_free = program.free_tpl[program.free_tpl_ptr[t]:program.free_tpl_ptr[t + 1]]
    cols = aux_col + np.arange(k)[:, None] * aux_per + tpl_free[None, :]
    out[:, cp.asarray(cols.reshape(-1))] = cp.asarray(np.stack([f[1] for f in free]).reshape(len(free), -1, 4))
    return out


def partition_witnesses_gpu(pce: PCE, program: WitnessProgram, shape: StackedShape,
                            witnesses: list[PartitionWitness], inputs: list[list[int]], backend,
                            host: bool = True):
    """The partitions' full witnesses computed by the program on a GPU backend's device (its
    run_witness_program; the program kept there): (P, ncols, 4), copied to host memory when `host`,
    else the device array itself."""
    import cupy as cp

    with cp.cuda.Device(backend.device):
        w = seeded_device(pce, program, shape, witnesses, inputs)
        backend.run_witness_program(pce, program, w)
        return w.get() if host else w


def partition_witnesses_cpu(pce: PCE, program: WitnessProgram, shape: StackedShape,
                            witnesses: list[PartitionWitness], inputs: list[list[int]]) -> np.ndarray:
    """(P, ncols, 4): the full witnesses of the partitions, computed by the program on all cores."""
    w = seeded(pce, program, shape, witnesses, inputs)
    run_cpu(pce, program, w)
    return w


def compiled(proof, progress: bool = False) -> tuple[PCE, WitnessProgram]:
    """The PCE and witness program of a registered proof's partition circuit (or PoRepConfig), loaded
    once per process (cuzk.porep.pce_cache.load_compiled: built and cached on first use, saying so when
    `progress`)."""
    from cuzk.porep import pce_cache

    key = pce_cache.identity(proof)["shape"]
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = pce_cache.load_compiled(proof, progress=progress)
    return _LOADED[key]
