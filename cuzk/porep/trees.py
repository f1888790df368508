"""Merkle trees of SDR PoRep: tree_d (binary SHA256) and tree_c / tree_r_last (Poseidon, 8-0-0 / 8-8-0 / 8-8-2).

A tree is a list of levels, leaves first; level l holds `arities[l]`-sized groups of children. A
compound Poseidon tree (rust's base / sub / top trees) is the same thing with per-level arities
[8] * k + [8] (sub) + [2] (top): its leaf order is exactly a mixed-radix index, lowest digit first.
- SHA256 node: SHA256(left || right) with byte 31 &= 0x3F (filecoin-hashers `sha256.rs`;
  cuzk.hashes.sha256).
- Poseidon node: neptune Poseidon with the Merkle-tree tag of arity a (filecoin-hashers `poseidon.rs`;
  cuzk.hashes.poseidon).
Node values are kept as (n, 32) uint8 (SHA256) or (n, 4) uint64 Montgomery Fr (Poseidon); on the wire
every node is 32 bytes, Fr little-endian (the `Domain` repr).

`MerkleTree` holds every node (sealing) or, built with `sparse`, only the nodes on the paths of the
given leaves, with random values for untouched sibling subtrees (synthetic C1): every path still
reaches the one root.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.hashes.poseidon import hash_many
from cuzk.hashes.sha256 import sha256_many
from cuzk.porep.registry import NODE_SIZE, SECTOR_SIZES

SHA256 = "sha256"
POSEIDON = "poseidon"
_KINDS = (SHA256, POSEIDON)


# ---------------------------------------------------------------- Fr <-> 32-byte nodes

def fr_from_le(nodes: np.ndarray, what: str = "node") -> np.ndarray:
    """(n, 32) uint8 little-endian Fr encodings -> (n, 4) Montgomery limbs (NonCanonicalError if >= r)."""
    nodes = np.ascontiguousarray(nodes, dtype=np.uint8).reshape(-1, 32)
    return Fr.from_canonical_limbs(nodes.view("<u8").astype(np.uint64), what)


def fr_to_le(a: np.ndarray) -> np.ndarray:
    """(n, 4) Montgomery limbs -> (n, 32) uint8 little-endian canonical encodings."""
    plain = Fr.to_canonical_limbs(np.ascontiguousarray(a, dtype=np.uint64).reshape(-1, 4))
    return plain.astype("<u8").view(np.uint8).reshape(-1, 32)


# ---------------------------------------------------------------- node hashing

def sha256_nodes(children: np.ndarray) -> np.ndarray:
    """(m, 2, 32) uint8 children -> (m, 32) parents: SHA256(l || r) with byte 31 &= 0x3F."""
    out = sha256_many(np.ascontiguousarray(children, dtype=np.uint8).reshape(-1, 64))
    out[:, 31] &= 0x3F
    return out


def poseidon_nodes(children: np.ndarray) -> np.ndarray:
    """(m, arity, 4) Montgomery children -> (m, 4): Poseidon with the Merkle-tree tag of that arity."""
    return hash_many(np.ascontiguousarray(children), children.shape[1])


def hash_children(kind: str, children: np.ndarray) -> np.ndarray:
    return sha256_nodes(children) if kind == SHA256 else poseidon_nodes(children)


def poseidon2_bytes(a: bytes, b: bytes) -> bytes:
    """Poseidon-2 (Merkle tag) of two 32-byte Fr nodes, e.g. comm_r = H(comm_c, comm_r_last)."""
    pair = fr_from_le(np.frombuffer(a + b, np.uint8).reshape(2, 32), "Poseidon input")
    return fr_to_le(poseidon_nodes(pair.reshape(1, 2, 4)))[0].tobytes()


def _to_bytes(kind: str, values: np.ndarray) -> np.ndarray:
    return values if kind == SHA256 else fr_to_le(values)


def _from_bytes(kind: str, nodes: np.ndarray, what: str) -> np.ndarray:
    if kind == SHA256:
        return np.ascontiguousarray(nodes, dtype=np.uint8).reshape(-1, 32)
    return fr_from_le(nodes, what)


def random_nodes(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n random node values: 32 bytes with the top two bits clear (SHA256) or uniform Fr (Poseidon)."""
    if kind == SHA256:
        out = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
        out[:, 31] &= 0x3F
        return out
    return Fr.random(n, rng)


# ---------------------------------------------------------------- shapes

def tree_r_shape(nodes: int) -> tuple[int, int, int]:
    """(base, sub, top) arities of tree_c and tree_r_last for a sector of `nodes` nodes (the
    sector-size table, cuzk.porep.registry.SECTOR_SIZES)."""
    size = SECTOR_SIZES.get(nodes * NODE_SIZE)
    if size is not None:
        return size.tree_shape
    raise InputError(f"no tree_r_last shape is registered for a sector of {nodes} nodes")


def level_arities(nodes: int, shape: tuple[int, int, int]) -> tuple[int, ...]:
    """Per-level arities (leaves first) of a base/sub/top tree over `nodes` leaves."""
    base, sub, top = shape
    base_leaves = nodes // max(sub, 1) // max(top, 1)
    depth, n = 0, 1
    while n < base_leaves:
        n *= base
        depth += 1
    if n != base_leaves or base_leaves * max(sub, 1) * max(top, 1) != nodes:
        raise InputError(f"{nodes} leaves do not fit a {base}-{sub}-{top} tree")
    return (base,) * depth + ((sub,) if sub else ()) + ((top,) if top else ())


def binary_arities(nodes: int) -> tuple[int, ...]:
    """Arities of tree_d: binary, depth log2(nodes)."""
    if nodes < 2 or nodes & (nodes - 1):
        raise InputError(f"tree_d needs a power-of-two number of leaves, got {nodes}")
    return (2,) * (nodes.bit_length() - 1)


# ---------------------------------------------------------------- paths

@dataclass(frozen=True)
class MerklePath:
    """An inclusion proof: the leaf, the root, and per level the arity - 1 sibling hashes and the
    position of the running node among its siblings (rust's PathElement `hashes`, `index`)."""

    kind: str
    arities: tuple[int, ...]
    leaf: bytes
    root: bytes
    siblings: tuple[tuple[bytes, ...], ...]
    indices: tuple[int, ...]

    @property
    def node_index(self) -> int:
        """The leaf index the path proves (mixed radix, lowest level first)."""
        out = 0
        for a, i in zip(reversed(self.arities), reversed(self.indices)):
            out = out * a + i
        return out


def compute_roots(paths: Sequence[MerklePath]) -> list[bytes]:
    """The root each path leads to from its leaf, hashing level by level in batches. Paths must be
    well-formed (InputError otherwise; see `check_path_shape`)."""
    out: list[bytes | None] = [None] * len(paths)
    groups: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for n, p in enumerate(paths):
        check_path_shape(p)
        groups.setdefault((p.kind, p.arities), []).append(n)
    for (kind, arities), members in groups.items():
        cur = _from_bytes(kind, np.frombuffer(b"".join(paths[n].leaf for n in members), np.uint8),
                          "leaf")
        for level, a in enumerate(arities):
            sib = _from_bytes(kind, np.frombuffer(
                b"".join(b"".join(paths[n].siblings[level]) for n in members), np.uint8), "path hash")
            sib = sib.reshape(len(members), a - 1, -1)
            pos = np.array([paths[n].indices[level] for n in members])
            children = np.empty((len(members), a, sib.shape[2]), sib.dtype)
            slot = np.arange(a)[None, :]
            before = slot < pos[:, None]
            children[before] = sib[before[:, :a - 1]]
            after = slot > pos[:, None]
            children[after] = sib[after[:, 1:]]
            children[np.arange(len(members)), pos] = cur
            cur = hash_children(kind, children)
        for n, root in zip(members, _to_bytes(kind, cur)):
            out[n] = root.tobytes()
    return out  # type: ignore[return-value]


def check_path_shape(p: MerklePath) -> None:
    """Structural checks: known hasher, one index and arity - 1 hashes of 32 bytes per level."""
    if p.kind not in _KINDS:
        raise InputError(f"unknown Merkle hasher {p.kind!r}")
    if len(p.leaf) != 32 or len(p.root) != 32:
        raise InputError("Merkle leaf and root must be 32 bytes")
    if len(p.siblings) != len(p.arities) or len(p.indices) != len(p.arities):
        raise InputError(f"Merkle path has {len(p.siblings)} levels, expected {len(p.arities)}")
    for level, (a, sib, i) in enumerate(zip(p.arities, p.siblings, p.indices)):
        if len(sib) != a - 1 or any(len(h) != 32 for h in sib):
            raise InputError(f"Merkle path level {level} needs {a - 1} hashes of 32 bytes")
        if not 0 <= i < a:
            raise InputError(f"Merkle path level {level} index {i} is outside [0, {a})")


def verify_paths(paths: Sequence[MerklePath]) -> np.ndarray:
    """Boolean mask: each path's leaf hashes up to its stated root."""
    return np.array([r == p.root for r, p in zip(compute_roots(paths), paths)], dtype=bool)


# ---------------------------------------------------------------- trees

@dataclass
class MerkleTree:
    """A (possibly sparse) Merkle tree. `values[l]` are the stored nodes of level l (level 0 = leaves,
    the last level is the root); `index[l]` their sorted node indices, or None when the level is full."""

    kind: str
    arities: tuple[int, ...]
    values: list[np.ndarray]
    index: list[np.ndarray | None]

    @classmethod
    def build(cls, kind: str, leaves: np.ndarray, arities: Sequence[int],
              progress: Callable[[int, int], None] | None = None) -> MerkleTree:
        """Every node of the tree over `leaves` ((n, 32) uint8 for SHA256, (n, 4) Montgomery Fr for
        Poseidon); progress(level, levels) is called after each level."""
        arities = tuple(arities)
        n = int(np.prod(arities))
        if kind not in _KINDS:
            raise InputError(f"unknown Merkle hasher {kind!r}")
        if len(leaves) != n:
            raise InputError(f"a tree of arities {arities} needs {n} leaves, got {len(leaves)}")
        values = [np.ascontiguousarray(leaves)]
        for level, a in enumerate(arities):
            cur = values[-1]
            values.append(hash_children(kind, cur.reshape(len(cur) // a, a, *cur.shape[1:])))
            if progress:
                progress(level + 1, len(arities))
        return cls(kind, arities, values, [None] * len(values))

    @classmethod
    def sparse(cls, kind: str, leaf_index: np.ndarray, leaves: np.ndarray, arities: Sequence[int],
               rng: np.random.Generator) -> MerkleTree:
        """Only the nodes needed by the paths of `leaf_index` (unique) with values `leaves`; each
        sibling subtree that holds none of them gets a random node value."""
        arities = tuple(arities)
        order = np.argsort(leaf_index, kind="stable")
        idx = np.asarray(leaf_index, dtype=np.int64)[order]
        if len(idx) == 0 or np.any(np.diff(idx) == 0) or idx[0] < 0 or idx[-1] >= int(np.prod(arities)):
            raise InputError("sparse tree leaves must be distinct indices inside the tree")
        vals = np.ascontiguousarray(leaves)[order]
        values, index = [], []
        for a in arities:
            parents = np.unique(idx // a)
            full = (parents[:, None] * a + np.arange(a)).reshape(-1)
            pos = np.searchsorted(idx, full)
            known = (pos < len(idx)) & (idx[np.minimum(pos, len(idx) - 1)] == full)
            level_vals = np.empty((len(full), *vals.shape[1:]), vals.dtype)
            level_vals[known] = vals[pos[known]]
            level_vals[~known] = random_nodes(kind, int((~known).sum()), rng)
            values.append(level_vals)
            index.append(full)
            idx = parents
            vals = hash_children(kind, level_vals.reshape(len(parents), a, *vals.shape[1:]))
        values.append(vals)
        index.append(idx)
        return cls(kind, arities, values, index)

    @property
    def root(self) -> bytes:
        return _to_bytes(self.kind, self.values[-1][:1])[0].tobytes()

    @property
    def leaves(self) -> int:
        return int(np.prod(self.arities))

    def _rows(self, level: int, nodes: np.ndarray) -> np.ndarray:
        ix = self.index[level]
        if ix is None:
            return self.values[level][nodes]
        pos = np.searchsorted(ix, nodes)
        if np.any(pos >= len(ix)) or np.any(ix[np.minimum(pos, len(ix) - 1)] != nodes):
            raise InputError(f"sparse tree has no node {nodes} at level {level}")
        return self.values[level][pos]

    def leaf_values(self, nodes: Sequence[int]) -> np.ndarray:
        return self._rows(0, np.asarray(nodes, dtype=np.int64))

    def paths(self, nodes: Sequence[int]) -> list[MerklePath]:
        """Inclusion paths of the given leaf indices (batched)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if np.any(nodes < 0) or np.any(nodes >= self.leaves):
            raise InputError(f"leaf index outside [0, {self.leaves})")
        leaf = _to_bytes(self.kind, self._rows(0, nodes))
        cur = nodes.copy()
        sibs, poss = [], []
        for level, a in enumerate(self.arities):
            pos = cur % a
            group = (cur - pos)[:, None] + np.arange(a)
            rows = _to_bytes(self.kind, self._rows(level, group.reshape(-1))).reshape(len(cur), a, 32)
            keep = np.arange(a)[None, :] != pos[:, None]
            sibs.append(rows[keep].reshape(len(cur), a - 1, 32))
            poss.append(pos)
            cur = cur // a
        root = self.root
        return [MerklePath(
            self.kind, self.arities, leaf[n].tobytes(), root,
            tuple(tuple(s[n, j].tobytes() for j in range(a - 1)) for s, a in zip(sibs, self.arities)),
            tuple(int(p[n]) for p in poss)) for n in range(len(nodes))]

    def path(self, node: int) -> MerklePath:
        return self.paths([node])[0]
