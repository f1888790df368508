"""Seal a small sector on the CPU and keep what C1 needs in a sector directory.

seal(): tree_d over the data (comm_d), replica_id, the labels of every layer, tree_c over the Poseidon
hashes of the label columns (comm_c), the replica (last-layer label + data node, in Fr), tree_r_last
over it (comm_r_last) and comm_r = Poseidon-2(comm_c, comm_r_last). The directory is written beside
its final name and renamed into place, so it either exists complete or not at all:

    meta.json        proof name, prover_id, sector_id, ticket, replica_id and commitments (hex)
    data.bin         the unsealed sector (nodes x 32 bytes, every node a canonical Fr)
    sealed.bin       the replica
    labels.npy       (layers, nodes, 32) uint8
    tree_d.npy, tree_c.npy, tree_r_last.npy   every tree level, leaves first, as 32-byte nodes

Meant for the small sizes (2KiB, 8MiB; 512MiB works but takes long): labels of all layers are in memory.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cuzk.errors import InputError, SectorError
from cuzk.ff.fields import Fr
from cuzk.porep.challenges import PoRepConfig, partition_challenges
from cuzk.porep.graph import SdrGraph, parents_cache
from cuzk.porep.labels import layer_labels, replica_id as make_replica_id
from cuzk.porep.registry import RegisteredProof, get_proof
from cuzk.porep.trees import (POSEIDON, SHA256, MerkleTree, binary_arities, fr_from_le, fr_to_le,
                              level_arities, poseidon2_bytes, tree_r_shape)
from cuzk.porep.vanilla import ChallengeProof, build_proofs, column_hashes
from cuzk.util.atomic import atomic_dir
from cuzk.util.progress import Progress, StageTimer

FORMAT = 1
_FILES = ("meta.json", "data.bin", "sealed.bin", "labels.npy", "tree_d.npy", "tree_c.npy", "tree_r_last.npy")


def _b32(name: str, v: bytes) -> bytes:
    if not isinstance(v, (bytes, bytearray)) or len(v) != 32:
        raise InputError(f"{name} must be 32 bytes")
    return bytes(v)


def _read_data(data: bytes | os.PathLike | str | None, size: int) -> np.ndarray:
    if data is None:
        return np.zeros((size // 32, 32), np.uint8)
    raw = Path(data).read_bytes() if isinstance(data, (str, os.PathLike)) else bytes(data)
    if len(raw) != size:
        raise InputError(f"sector data must be exactly {size} bytes, got {len(raw)}")
    return np.frombuffer(raw, np.uint8).reshape(-1, 32)


def _levels_bytes(tree: MerkleTree) -> np.ndarray:
    return np.concatenate([v if tree.kind == SHA256 else fr_to_le(v) for v in tree.values])


def _tree_from_bytes(kind: str, flat: np.ndarray, arities: tuple[int, ...]) -> MerkleTree:
    sizes = [int(np.prod(arities[i:])) for i in range(len(arities) + 1)]
    if len(flat) != sum(sizes):
        raise SectorError(f"tree file holds {len(flat)} nodes, expected {sum(sizes)}")
    values, off = [], 0
    for s in sizes:
        part = np.asarray(flat[off:off + s])
        values.append(part if kind == SHA256 else fr_from_le(part, "tree node"))
        off += s
    return MerkleTree(kind, arities, values, [None] * len(values))


def seal(proof: RegisteredProof | int | str, out_dir: str | os.PathLike, *, prover_id: bytes,
         sector_id: int, ticket: bytes, data: bytes | os.PathLike | str | None = None,
         parents_dir: str | os.PathLike | None = None, progress: bool = True) -> Sector:
    """Seal `data` (bytes or a file of exactly the sector size; None = all zeros, a CC sector) and write
    the sector directory `out_dir` atomically (SectorError if it exists). `parents_dir` caches the
    parents file (official name and format) between seals."""
    p = get_proof(proof)
    prover_id, ticket = _b32("prover_id", prover_id), _b32("ticket", ticket)
    if not 0 <= sector_id < 1 << 64:
        raise InputError(f"sector_id must be a u64, got {sector_id}")
    out = Path(out_dir)
    if out.exists():
        raise SectorError(f"{out} already exists")
    prog = StageTimer(f"seal {p.name}", echo=progress)
    leaves = _read_data(data, p.sector_size)
    data_fr = fr_from_le(leaves, "data node")  # every node must be a canonical Fr
    tree_d = MerkleTree.build(SHA256, leaves, binary_arities(p.nodes))
    comm_d = tree_d.root
    prog.mark("tree_d")
    rid = make_replica_id(prover_id, sector_id, ticket, comm_d, p.porep_id)
    parents = parents_cache(p, parents_dir) if parents_dir is not None else parents_cache(p)
    prog.mark("parents")
    labels = np.empty((p.layers, p.nodes, 32), np.uint8)
    with Progress(f"seal {p.name}: labels", total=p.layers, unit="layer", enabled=progress) as bar:
        for layer in range(1, p.layers + 1):
            labels[layer - 1] = layer_labels(parents, rid, layer, labels[layer - 2] if layer > 1 else None)
            bar.update()
    prog.mark("labels")
    r_arities = level_arities(p.nodes, tree_r_shape(p.nodes))
    tree_c = MerkleTree.build(POSEIDON, column_hashes(labels.transpose(1, 0, 2)), r_arities)
    prog.mark("tree_c")
    replica = Fr.add(fr_from_le(labels[-1], "label"), data_fr)
    tree_r = MerkleTree.build(POSEIDON, replica, r_arities)
    prog.mark("tree_r_last")
    meta = {"format": FORMAT, "registered_proof": p.name, "prover_id": prover_id.hex(),
            "sector_id": sector_id, "ticket": ticket.hex(), "replica_id": rid.hex(), "comm_d": comm_d.hex(),
            "comm_c": tree_c.root.hex(), "comm_r_last": tree_r.root.hex(),
            "comm_r": poseidon2_bytes(tree_c.root, tree_r.root).hex()}
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out) as tmp:
        (tmp / "data.bin").write_bytes(leaves.tobytes())
        (tmp / "sealed.bin").write_bytes(fr_to_le(replica).tobytes())
        np.save(tmp / "labels.npy", labels)
        for name, tree in (("tree_d", tree_d), ("tree_c", tree_c), ("tree_r_last", tree_r)):
            np.save(tmp / f"{name}.npy", _levels_bytes(tree))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    prog.mark("write")
    return Sector.open(out)


@dataclass
class Sector:
    """A sealed sector directory (see the module docstring), opened read-only."""

    path: Path
    proof: RegisteredProof
    prover_id: bytes
    sector_id: int
    ticket: bytes
    replica_id: bytes
    comm_d: bytes
    comm_c: bytes
    comm_r_last: bytes
    comm_r: bytes
    _trees: dict[str, MerkleTree] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike) -> Sector:
        path = Path(path)
        missing = [f for f in _FILES if not (path / f).is_file()]
        if missing:
            raise SectorError(f"{path}: missing {', '.join(missing)}")
        try:
            meta = json.loads((path / "meta.json").read_text())
            if meta.get("format") != FORMAT:
                raise SectorError(f"{path}: unknown sector format {meta.get('format')!r}")
            h = {k: bytes.fromhex(meta[k]) for k in
                 ("prover_id", "ticket", "replica_id", "comm_d", "comm_c", "comm_r_last", "comm_r")}
            return cls(path, get_proof(meta["registered_proof"]), h["prover_id"], int(meta["sector_id"]),
                       h["ticket"], h["replica_id"], h["comm_d"], h["comm_c"], h["comm_r_last"], h["comm_r"])
        except (KeyError, ValueError, TypeError) as e:
            raise SectorError(f"{path}/meta.json: {e}") from None

    @property
    def config(self) -> PoRepConfig:
        return PoRepConfig.from_proof(self.proof)

    def labels(self) -> np.ndarray:
        """(layers, nodes, 32) uint8, memory-mapped."""
        arr = np.load(self.path / "labels.npy", mmap_mode="r")
        if arr.shape != (self.proof.layers, self.proof.nodes, 32):
            raise SectorError(f"{self.path}/labels.npy has shape {arr.shape}")
        return arr

    def tree(self, name: str) -> MerkleTree:
        """"tree_d", "tree_c" or "tree_r_last"."""
        if name not in self._trees:
            n = self.proof.nodes
            kind, arities = ((SHA256, binary_arities(n)) if name == "tree_d"
                             else (POSEIDON, level_arities(n, tree_r_shape(n))))
            self._trees[name] = _tree_from_bytes(kind, np.load(self.path / f"{name}.npy", mmap_mode="r"),
                                                 arities)
        return self._trees[name]

    def check(self) -> None:
        """The stored roots are the metadata's commitments (SectorError otherwise)."""
        for name, want in (("tree_d", self.comm_d), ("tree_c", self.comm_c), ("tree_r_last", self.comm_r_last)):
            if self.tree(name).root != want:
                raise SectorError(f"{self.path}: {name} root differs from meta.json")
        if poseidon2_bytes(self.comm_c, self.comm_r_last) != self.comm_r:
            raise SectorError(f"{self.path}: comm_r is not Poseidon-2(comm_c, comm_r_last)")

    def vanilla_proofs(self, seed: bytes) -> list[list[ChallengeProof]]:
        """The vanilla proofs of every partition for the interactive seed (C1's vanilla_proofs)."""
        config, graph = self.config, SdrGraph.for_config(self.config)
        labels = self.labels()
        columns = lambda nodes: np.ascontiguousarray(labels[:, nodes].transpose(1, 0, 2))  # noqa: E731
        out = []
        for k in range(config.partitions):
            ch = partition_challenges(config, self.replica_id, _b32("seed", seed), self.comm_r, k)
            out.append(build_proofs(ch, [graph.parents_of(c) for c in ch], columns,
                                    self.tree("tree_d"), self.tree("tree_c"), self.tree("tree_r_last")))
        return out
