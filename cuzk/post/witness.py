"""What one fallback PoSt partition circuit is made of: its shape, its witness, its public inputs.

Follows rust-fil-proofs `storage-proofs-post/src/fallback/circuit.rs` (`Sector`: comm_r, comm_c,
comm_r_last, per challenge a leaf and its TreeR path) and `compound.rs:42-110` (public inputs:
per sector comm_r, then per challenge the challenged leaf index, which is what the PoR gadget's
packed path bits equal). A partition with fewer sectors than the circuit holds is padded by
repeating its last sector, on the witness side (`filecoin-proofs/src/api/post_util.rs:274-276`)
and the public-input side alike (compound.rs:103-108); ../shared/POST_SNAP.md §A2, §A4.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.gadgets.merkle import Level
from cuzk.porep.circuit import levels_from_paths
from cuzk.porep.public_inputs import commitment_to_fr
from cuzk.porep.trees import MerklePath, fr_from_le, level_arities
from cuzk.post.errors import PoStInputError

T = TypeVar("T")


@dataclass(frozen=True)
class PostShape:
    """What fixes a fallback PoSt circuit: sector nodes (size / 32), TreeR shape (base, sub, top
    arities), sectors per partition and challenges per sector (Winning: 66 x 1)."""

    nodes: int
    tree: tuple[int, int, int]
    sectors: int
    challenges: int

    def __post_init__(self) -> None:
        if self.sectors < 1 or self.challenges < 1:
            raise InputError(f"a PoSt circuit needs sectors and challenges >= 1, got {self.sectors}, {self.challenges}")
        level_arities(self.nodes, self.tree)  # checks the shape fits

    @property
    def arities(self) -> tuple[int, ...]:
        """TreeR path arities, leaf level first: base levels, then sub, then top."""
        return level_arities(self.nodes, self.tree)

    @property
    def num_inputs(self) -> int:
        """Public inputs including ONE: per sector comm_r and one packed index per challenge."""
        return 1 + self.sectors * (1 + self.challenges)


@dataclass
class SectorWitness:
    """One sector of the circuit: commitments as canonical Fr ints; per challenge (C of them) the
    leaf, (C, 4) Montgomery Fr, and the TreeR path as merkle.Levels, leaf level first, with (C,)
    indices and (C, arity - 1, 4) Montgomery siblings."""

    comm_r: int
    comm_c: int
    comm_r_last: int
    leaves: np.ndarray
    path: list[Level]

    @classmethod
    def from_paths(cls, comm_r: bytes, comm_c: bytes, comm_r_last: bytes,
                   paths: Sequence[MerklePath]) -> SectorWitness:
        """From 32-byte commitments and one TreeR inclusion path per challenge (cuzk.porep.trees)."""
        return sector_witnesses([(comm_r, comm_c, comm_r_last, paths)])[0]

    @property
    def challenges(self) -> list[int]:
        """The challenged leaf indices: the path indices as a mixed-radix number, lowest level first."""
        out = np.zeros(len(self.leaves), dtype=object)
        for level in reversed(self.path):
            out = out * level.arity + np.asarray(level.index, dtype=np.int64).astype(object)
        return [int(v) for v in out]

    def check(self, shape: PostShape) -> None:
        c = shape.challenges
        if np.shape(self.leaves) != (c, 4):
            raise InputError(f"a sector needs {c} leaves as a ({c}, 4) Fr array, got {np.shape(self.leaves)}")
        if tuple(lv.arity for lv in self.path) != shape.arities:
            raise InputError(f"path arities {[lv.arity for lv in self.path]} != {list(shape.arities)}")
        for lv in self.path:
            if np.shape(lv.index) != (c,) or np.shape(lv.siblings) != (c, lv.arity - 1, 4):
                raise InputError(f"path levels need ({c},) indices and ({c}, arity - 1, 4) siblings")
        for name in ("comm_r", "comm_c", "comm_r_last"):
            if not 0 <= getattr(self, name) < Fr.modulus:
                raise InputError(f"{name} is not a canonical Fr element")


def sector_witnesses(sectors: Sequence[tuple[bytes, bytes, bytes, Sequence[MerklePath]]]) -> list[SectorWitness]:
    """SectorWitness.from_paths of each (comm_r, comm_c, comm_r_last, paths) sector, every path of one
    shape: the leaves of all sectors converted in one call and each level's siblings in one
    (levels_from_paths), then cut per sector (a WindowPoSt partition: 23,490 paths, not 2,349 x 12 calls)."""
    paths = [path for *_, ps in sectors for path in ps]
    leaves = fr_from_le(np.frombuffer(b"".join(p.leaf for p in paths), np.uint8), "leaf")
    levels = levels_from_paths(paths)
    out, lo = [], 0
    for comm_r, comm_c, comm_r_last, ps in sectors:
        hi = lo + len(ps)
        out.append(SectorWitness(commitment_to_fr(bytes(comm_r), "comm_r"), commitment_to_fr(bytes(comm_c), "comm_c"),
                                 commitment_to_fr(bytes(comm_r_last), "comm_r_last"), leaves[lo:hi],
                                 [Level(lv.arity, lv.index[lo:hi], lv.siblings[lo:hi]) for lv in levels]))
        lo = hi
    return out


@dataclass
class PartitionWitness:
    """The sectors of one partition, in the circuit's order (fewer than the shape's: padded)."""

    sectors: list[SectorWitness]

    def padded(self, shape: PostShape) -> list[SectorWitness]:
        """shape.sectors sectors, the last repeated (post_util.rs:274-276); each checked."""
        padded = pad_partition(self.sectors, shape.sectors)
        for s in self.sectors:
            s.check(shape)
        return padded

    def public_inputs(self, shape: PostShape) -> list[int]:
        """The Groth16 public inputs after ONE (compound.rs:42-110): per (padded) sector comm_r,
        then its challenged leaf indices."""
        return public_inputs(shape, [s.comm_r for s in self.sectors], [s.challenges for s in self.sectors])


def public_inputs(shape: PostShape, comm_rs: Sequence[int], challenges: Sequence[Sequence[int]]) -> list[int]:
    """Public inputs from per-sector comm_r (Fr ints) and challenged leaf indices, padded by
    repeating the last sector's inputs verbatim (compound.rs:103-108)."""
    if len(comm_rs) != len(challenges):
        raise InputError(f"public inputs need each sector's challenges: {len(comm_rs)} comm_r, {len(challenges)} lists")
    rows = []
    for comm_r, chal in zip(comm_rs, challenges):
        if len(chal) != shape.challenges or any(not 0 <= int(x) < shape.nodes for x in chal):
            raise InputError(f"each sector needs {shape.challenges} challenges in [0, {shape.nodes})")
        rows.append([int(comm_r), *(int(x) for x in chal)])
    return [x for row in pad_partition(rows, shape.sectors) for x in row]


def pad_partition(items: Sequence[T], sector_count: int) -> list[T]:
    """`items` padded to `sector_count` by repeating the last one, as filecoin-proofs pads a short
    partition's vanilla proofs and its public inputs (post_util.rs:274-276, compound.rs:103-108)."""
    if not 1 <= len(items) <= sector_count:
        raise PoStInputError("sectors", f"{len(items)} sectors, expected 1 to {sector_count}")
    return list(items) + [items[-1]] * (sector_count - len(items))


def free_values(shape: PostShape, witness: PartitionWitness) -> tuple[np.ndarray, np.ndarray]:
    """What a compiled witness program (cuzk.r1cs.witness_program) starts from besides the public
    inputs, Montgomery Fr: nothing at top level ((0, 4)); per padded sector ((sectors, nfree, 4)) in
    the circuit's allocation order comm_r_last, comm_c, then per challenge its leaf and its path's
    siblings, leaf level first (comm_r and the index bits follow from the inputs)."""
    rows = []
    for s in witness.padded(shape):
        per = np.concatenate([s.leaves[:, None, :]] + [lv.siblings for lv in s.path], axis=1)
        rows.append(np.concatenate([Fr.from_ints([s.comm_r_last, s.comm_c]), per.reshape(-1, 4)]))
    return np.zeros((0, 4), np.uint64), np.stack(rows)
