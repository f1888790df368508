"""Small circuits for the engine tests (module-level functions: they run in the engine's synthesis
processes): one constraint system shape, y_i = x_i (x_i + 1) per public input x_i, whose witness
depends on the inputs; and a circuit with a witness program, whose synthesis packs its inputs and free
values as a PoRep partition's does."""
from __future__ import annotations

import time

import numpy as np

from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, num
from cuzk.groth16 import CompiledCircuit
from cuzk.porep.program_witness import PackedWitness
from cuzk.r1cs import ONE, ConstraintSystem
from cuzk.r1cs import witness_program
from cuzk.r1cs.pce import build

PROGRAM_WIDTH, PROGRAM_BITS = 4, 8  # instances of the program circuit's block, bits of each input


def inputs_circuit(values: list[int], wrong: bool = False) -> ConstraintSystem:
    cs = ConstraintSystem()
    x = Fr.from_ints(values)
    xc = cs.alloc_input_many(x)
    y = Fr.mul(x, Fr.add(x, Fr.ones(len(values))))
    yc = cs.alloc_many(Fr.add(y, Fr.ones(len(values))) if wrong else y)
    ones = np.full(len(values), ONE.code, np.int64)
    cs.enforce_many((xc[:, None], [1]), (np.stack([xc, ones], axis=1), [1, 1]), (yc[:, None], [1]), len(values))
    return cs


def witness(values: list[int], delay: float = 0.0, wrong: bool = False) -> np.ndarray:
    """The witness of inputs_circuit(values), after `delay` seconds (to hold a synthesis slot)."""
    time.sleep(delay)
    return inputs_circuit(values, wrong).witness()


def failing(values: list[int]) -> np.ndarray:
    raise RuntimeError(f"synthesis failed for {values}")


def heavy_witness(values: list[int], alloc_mb: int, hold: float = 0.0) -> np.ndarray:
    """The witness of inputs_circuit(values), made while `alloc_mb` MiB of scratch memory are
    allocated and touched (every page written, so it is resident) and held `hold` seconds: a
    synthesis whose peak RSS growth is known, for the watchdog test."""
    scratch = np.ones(alloc_mb << 17, np.float64)  # alloc_mb MiB, every page written
    scratch[::512] += 1.0  # read and write it again (one element per 4 KiB page)
    time.sleep(hold)
    out = inputs_circuit(values).witness()
    assert scratch.size == 0 or scratch[0] == 2.0
    del scratch
    return out


def _bits(values: list[int]) -> np.ndarray:
    return (np.array(values)[:, None] >> np.arange(PROGRAM_BITS)) & 1


def program_free(values: list[int]) -> np.ndarray:
    """The program circuit's free bits for inputs `values`, (PROGRAM_WIDTH, PROGRAM_BITS), a function of them."""
    return _bits([(7 * x + 3) % (1 << PROGRAM_BITS) for x in values]).astype(bool)


def program_circuit(values: list[int] | None = None) -> ConstraintSystem:
    """One block of PROGRAM_WIDTH instances: the public input x_i (< 2^PROGRAM_BITS) unpacked into
    bits, free bits f_i, and x_i AND f_i bit by bit. Its witness program computes the bits of x_i
    from the input (SynthesisError for an input too large for them) and the ANDs. Without values:
    the constraints only."""
    cs = ConstraintSystem("constraints" if values is None else "both")
    with cs.batch(PROGRAM_WIDTH) as blk:
        x = boolean.alloc(blk, PROGRAM_BITS, None if values is None else _bits(values))
        num.pack_into_inputs(blk, x)
        f = boolean.alloc(blk, PROGRAM_BITS, None if values is None else program_free(values))
        boolean.and_(blk, x, f)
    return cs


def program_compiled() -> CompiledCircuit:
    """program_circuit's PCE with its witness program."""
    cs = program_circuit()
    pce = build(cs)
    return CompiledCircuit(pce, witness_program.compile_program(pce, witness_program.hint_matrices(cs, pce)))


def packed(values: list[int]) -> PackedWitness:
    """The packed witness of program_circuit(values): its inputs and free bits (an input of
    2^PROGRAM_BITS or more packs all the same; its expansion fails)."""
    free = Fr.from_ints([int(b) for b in program_free(values).reshape(-1)]).reshape(PROGRAM_WIDTH, PROGRAM_BITS, 4)
    return PackedWitness(Fr.from_ints([1, *values]), np.zeros((0, 4), np.uint64), free)
