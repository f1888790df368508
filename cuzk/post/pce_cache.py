"""The compiled PoSt partition circuit (PCE and witness program), cached on disk by
cuzk.porep.circuit_cache: one file per PostShape, cuzk-post-<nodes>n-r<base>-<sub>-<top>-<sectors>s-
<challenges>c.pce (WindowPoSt V1 and V1_2 of one size share it)."""
from __future__ import annotations

from functools import partial

from cuzk.porep.circuit_cache import CORE_MODULES, CachedCircuit, cuzk_version
from cuzk.post.circuit import circuit
from cuzk.post.witness import PostShape

# the modules whose code decides the constraints: the circuit, its shape (the path arities) and the
# tree layout the arities come from
CIRCUIT_MODULES = ("cuzk/post/circuit.py", "cuzk/post/witness.py", "cuzk/porep/trees.py", *CORE_MODULES)


def cached(shape: PostShape) -> CachedCircuit:
    """The partition circuit of `shape` as cached."""
    return CachedCircuit("post", f"{shape.nodes}n-r{'-'.join(map(str, shape.tree))}-{shape.sectors}s-"
                                 f"{shape.challenges}c",
                         {"nodes": shape.nodes, "tree": list(shape.tree), "sectors": shape.sectors,
                          "challenges": shape.challenges},
                         CIRCUIT_MODULES, cuzk_version(), partial(circuit, shape))
