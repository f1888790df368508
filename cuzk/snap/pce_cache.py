"""The compiled SnapDeals (EmptySectorUpdate) partition circuit (PCE and witness program), cached on
disk by cuzk.porep.circuit_cache: one file per SnapShape, cuzk-snap-<nodes>n-r<base>-<sub>-<top>-
<partitions>p-<challenges>c-<apex leaves>a-h<h>.pce."""
from __future__ import annotations

from functools import partial

from cuzk.porep.circuit_cache import CORE_MODULES, CachedCircuit, cuzk_version
from cuzk.snap.circuit import circuit
from cuzk.snap.witness import SnapShape

# the modules whose code decides the constraints: the circuit, its shape (the bit sizes it derives),
# the constants the circuit hashes and the tree layout of the TreeR paths
CIRCUIT_MODULES = ("cuzk/snap/circuit.py", "cuzk/snap/witness.py", "cuzk/snap/derive.py", "cuzk/porep/trees.py",
                   *CORE_MODULES)


def cached(shape: SnapShape) -> CachedCircuit:
    """The partition circuit of `shape` as cached."""
    return CachedCircuit("snap", f"{shape.nodes}n-r{'-'.join(map(str, shape.tree))}-{shape.partitions}p-"
                                 f"{shape.challenges}c-{shape.apex_leaves}a-h{shape.h}",
                         {"nodes": shape.nodes, "tree": list(shape.tree), "partitions": shape.partitions,
                          "challenges": shape.challenges, "apex_leaves": shape.apex_leaves, "hs": list(shape.hs),
                          "h": shape.h},
                         CIRCUIT_MODULES, cuzk_version(), partial(circuit, shape))
