"""A sealed CC sector and an encoding of random data into it, for the snap tests."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from cuzk.porep.seal import Sector, seal
from cuzk.snap.encode import UpdatedSector, encode

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def random_data(rng: np.random.Generator, nodes: int) -> np.ndarray:
    """Random canonical Fr nodes, node 1 the largest Fr and node 2 zero."""
    data = rng.integers(0, 256, (nodes, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    data[1] = np.frombuffer((R - 1).to_bytes(32, "little"), np.uint8)
    data[2] = 0
    return data


def sealed_and_encoded(proof: str, out: Path, rng: np.random.Generator) -> tuple[Sector, np.ndarray, UpdatedSector]:
    sector = seal(proof, out, prover_id=bytes(range(32)), sector_id=7, ticket=bytes(32), progress=False)
    data = random_data(rng, sector.proof.nodes)
    return sector, data, encode(sector, data.tobytes())
