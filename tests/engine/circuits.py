"""Small circuits for the engine tests: one constraint system shape, y_i = x_i (x_i + 1) per public
input x_i, whose witness depends on the inputs (module-level functions: they run in the engine's
synthesis processes)."""
from __future__ import annotations

import time

import numpy as np

from cuzk.ff.fields import Fr
from cuzk.r1cs import ONE, ConstraintSystem


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
