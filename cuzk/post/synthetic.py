"""Synthetic fallback PoSt vanilla proofs: the inputs of any registered PoSt proof (above all a full
32GiB WindowPoSt partition, 2,349 sectors x 10 challenges, and a 32GiB WinningPoSt) without sealing a
sector, for benchmarks and tests, as cuzk.porep.synthetic does for C1.

Per sector, all random values drawn from one seeded numpy Generator:
- sector ids distinct and sorted (as curio sends a partition); comm_c a uniform Fr;
- the challenged leaves exactly as cuzk.post.challenges derives them for the randomness, the sector id
  and the sector's position over all partitions: leaf = u64 LE(SHA256(randomness || sector_id ||
  challenge_index)[0..8]) mod leaves;
- tree_r_last a sparse Poseidon tree of the proof's TreeR shape (cuzk.porep.trees.MerkleTree.sparse):
  random leaves at the challenged indices, every untouched sibling subtree a random node, so that each
  challenge's path reaches one root, comm_r_last;
- comm_r = Poseidon-2(comm_c, comm_r_last).

The vanilla proofs pass cuzk.post.checks and their witness satisfies the partition circuit, but they
prove nothing about stored data: no replica stands behind any comm_r.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import islice

import numpy as np

from cuzk.porep.trees import POSEIDON, MerkleTree, fr_to_le, level_arities, poseidon_nodes, random_nodes
from cuzk.post.challenges import check_randomness, sector_challenges
from cuzk.post.errors import PoStInputError
from cuzk.post.registry import PoStKind, RegisteredPoStProof, get_post_proof
from cuzk.post.vanilla import FallbackPoStSectorProof, MerkleProof, SectorProof
from cuzk.util.progress import StageTimer

SECTOR_ID_BOUND = 1 << 48  # synthetic sector ids are drawn below this (sector numbers are u64)


@dataclass(frozen=True)
class SyntheticPoSt:
    """One WinningPoSt request or one WindowPoSt partition: the randomness, the partition and one vanilla
    proof per sector, in order (cuzk.window_post / winning_post and cuzk.post.proving take `vanilla`)."""

    proof: RegisteredPoStProof
    randomness: bytes
    partition_index: int
    vanilla: tuple[FallbackPoStSectorProof, ...]

    @property
    def sector_ids(self) -> list[int]:
        return [v.sector_id for v in self.vanilla]

    @property
    def comm_rs(self) -> list[bytes]:
        return [v.comm_r for v in self.vanilla]

    @property
    def sectors(self) -> list[tuple[int, bytes]]:
        """(sector_id, comm_r) pairs: the public data cuzk.verify_window_post takes."""
        return list(zip(self.sector_ids, self.comm_rs))


def _random_fr_bytes(rng: np.random.Generator) -> bytes:
    """A uniform Fr as its 32-byte little-endian encoding."""
    return fr_to_le(random_nodes(POSEIDON, 1, rng))[0].tobytes()


def _vanilla(p: RegisteredPoStProof, randomness: bytes, ids: Sequence[int], first_index: int,
             rng: np.random.Generator, timer: StageTimer) -> list[FallbackPoStSectorProof]:
    """The vanilla proofs of sectors `ids` at positions first_index, first_index + 1, ... over all
    partitions. Every sector's tree_r_last is built at once, as one sparse tree (MerkleTree.sparse)
    whose leaf i * leaves + c is sector i's leaf c, with k levels of arity 8 above the sectors' roots
    (8^k >= sectors) that only batch the hashing: its level d (the TreeR depth) holds each sector's
    comm_r_last, and the first d levels of each path are that sector's inclusion path."""
    arities = level_arities(p.leaves, p.tree_shape)
    depth, n = len(arities), len(ids)
    above = 0
    while 8 ** above < n:
        above += 1
    challenges = [sector_challenges(p, randomness, sid, first_index + i) for i, sid in enumerate(ids)]
    flat = np.array([i * p.leaves + c for i, cs in enumerate(challenges) for c in cs], dtype=np.int64)
    timer.mark("challenges")
    touched = np.unique(flat)  # WinningPoSt's 66 challenges may repeat a leaf in a small tree
    forest = MerkleTree.sparse(POSEIDON, touched, random_nodes(POSEIDON, len(touched), rng), arities + (8,) * above, rng)
    roots = forest.values[depth][np.searchsorted(forest.index[depth], np.arange(n))]
    comm_c = random_nodes(POSEIDON, n, rng)
    comm_r = fr_to_le(poseidon_nodes(np.stack([comm_c, roots], axis=1)))  # Poseidon-2(comm_c, comm_r_last)
    comm_c, roots = fr_to_le(comm_c), fr_to_le(roots)
    timer.mark("trees")
    paths = iter(forest.paths(flat))
    out = []
    for i, (sector_id, cs) in enumerate(zip(ids, challenges)):
        root = roots[i].tobytes()
        proofs = tuple(MerkleProof.from_merkle_path(
            replace(path, arities=arities, root=root, siblings=path.siblings[:depth], indices=path.indices[:depth]),
            p.tree_shape) for path in islice(paths, len(cs)))
        out.append(FallbackPoStSectorProof(sector_id, comm_r[i].tobytes(),
                                           (SectorProof(proofs, comm_c[i].tobytes(), root),)))
    timer.mark("paths")
    return out


def synthetic_post(proof: RegisteredPoStProof | int | str, *, rng: np.random.Generator,
                   randomness: bytes | None = None, sectors: int | None = None, partition_index: int = 0,
                   progress: bool = True) -> SyntheticPoSt:
    """Synthetic vanilla proofs of `sectors` sectors (default: a full WindowPoSt partition, the proof's
    sectors per partition; WinningPoSt: its one sector) for `randomness` (default: a random canonical
    Fr from `rng`) at partition `partition_index` (WindowPoSt only). PoStInputError names a bad argument;
    with `progress` each stage's end is written to stderr (a full 32GiB partition takes seconds)."""
    p = get_post_proof(proof)
    winning = p.kind is PoStKind.WINNING
    limit = 1 if winning else p.sector_count
    n = limit if sectors is None else sectors
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= limit:
        raise PoStInputError("sectors", f"{p.name} takes 1 to {limit} sectors, got {str(n)[:24]}")
    if isinstance(partition_index, bool) or not isinstance(partition_index, int) or partition_index < 0 \
            or (winning and partition_index):
        raise PoStInputError("partition_index", f"must be an int >= 0 (0 for WinningPoSt), got {str(partition_index)[:24]}")
    randomness = _random_fr_bytes(rng) if randomness is None else check_randomness(randomness)
    ids = [int(i) for i in np.sort(rng.choice(SECTOR_ID_BOUND, size=n, replace=False))]
    timer = StageTimer(f"synthetic {p.name} ({n} sectors)", echo=progress)
    vanilla = _vanilla(p, randomness, ids, partition_index * p.sector_count, rng, timer)
    return SyntheticPoSt(p, randomness, partition_index, tuple(vanilla))
