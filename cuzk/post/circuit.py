"""The fallback PoSt circuit of one partition (rust-fil-proofs `storage-proofs-post/src/fallback/circuit.rs`).

Variable, input and row order are rust's (`synthesize_default`: sectors in order; the extendable
path lays its chunks out in the same order, ../shared/POST_SNAP.md §A2). Per sector
(`Sector::synthesize`, circuit.rs:115-175):
- comm_r_last, comm_c, comm_r allocated in that order; comm_r inputized (1 row);
- comm_r == Poseidon-2(comm_c, comm_r_last) (hash2_circuit, 311 rows, then 1 row);
- per challenge `PoRCircuit::synthesize` (storage-proofs-core `gadgets/por.rs:351-420`): the leaf,
  the TreeR path (base, sub, top levels: index bits, siblings, insert, Poseidon), the index bits
  packed into one public input, and computed root == comm_r_last (allocated once, private root).

The sectors are one batch block of N instances and each sector's challenges a nested block of C,
so constraint mode records one sector's rows (a template) whatever N is: counting a 125 M-row
WindowPoSt partition records 53,333 rows. cuzk.r1cs.pce.build and witness_program.compile_program
take that recording as it is (one block of sector instances); the program starts from the public
inputs and cuzk.post.witness.free_values.
"""
from __future__ import annotations

import numpy as np

from cuzk.errors import InputError, SynthesisError
from cuzk.gadgets import merkle, num
from cuzk.gadgets.merkle import Level
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.post.witness import PartitionWitness, PostShape, SectorWitness
from cuzk.r1cs import ConstraintSystem


def _stacked_path(sectors: list[SectorWitness]) -> list[Level]:
    """The sectors' paths as one path of N * C instances, sector by sector."""
    return [Level(levels[0].arity, np.concatenate([lv.index for lv in levels]),
                  np.concatenate([lv.siblings for lv in levels]))
            for levels in zip(*(s.path for s in sectors))]


def synthesize(cs: ConstraintSystem, shape: PostShape, witness: PartitionWitness | None = None) -> None:
    """FallbackPoStCircuit::synthesize into cs ("constraints" mode needs no witness; "witness" / "both" do)."""
    if not isinstance(cs, ConstraintSystem):
        raise InputError("synthesize needs a cuzk.r1cs.ConstraintSystem")
    if cs.num_constraints or cs.num_aux or cs.num_inputs != 1:
        raise SynthesisError("synthesize needs an empty constraint system")
    sectors = None
    if cs.has_values:
        if witness is None:
            raise SynthesisError(f"{cs.mode} mode needs a PartitionWitness")
        sectors = witness.padded(shape)
    values = lambda name: None if sectors is None else [getattr(s, name) for s in sectors]  # noqa: E731
    with cs.batch(shape.sectors) as sec:
        comm_r_last = num.alloc(sec, values("comm_r_last"))
        comm_c = num.alloc(sec, values("comm_c"))
        comm_r = num.alloc(sec, values("comm_r"))
        num.inputize(sec, comm_r)
        num.enforce_equal(sec, comm_r, poseidon_hash(sec, [comm_c, comm_r_last]))
        with sec.batch(shape.challenges) as chal:
            if sectors is None:
                leaf, path = num.alloc(chal), [Level(a) for a in shape.arities]
            else:
                leaf = num.alloc(chal, np.concatenate([s.leaves for s in sectors]))
                path = _stacked_path(sectors)
            merkle.por(chal, leaf, path, "poseidon", root=comm_r_last)


def circuit(shape: PostShape, witness: PartitionWitness | None = None, mode: str = "constraints"
            ) -> ConstraintSystem:
    """A new ConstraintSystem holding the partition circuit."""
    cs = ConstraintSystem(mode)
    synthesize(cs, shape, witness)
    return cs


def count(shape: PostShape) -> dict[str, int]:
    """Constraints, inputs (with ONE), aux variables and non-zeros (constraint mode; one sector's
    template is recorded, the N sectors are its instances)."""
    return circuit(shape).stats()
