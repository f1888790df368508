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

Sector.open checks a directory against itself cheaply (sizes, .npy headers, meta.json strictly, the
commitments' relations) and Sector.check its trees against meta.json before any proof is built; files
are read into memory, never mapped, so one changed underneath is a SectorFileError, not a SIGBUS.

Meant for the small sizes (2KiB, 8MiB; 512MiB works but takes long): labels of all layers are in memory.
"""
from __future__ import annotations

import io
import json
import os
import tokenize
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from cuzk.errors import (InputError, InputTooLargeError, JsonFormatError, NonCanonicalError, SectorError,
                         SectorFileError)
from cuzk.ff.fields import Fr
from cuzk.porep.challenges import PoRepConfig, partition_challenges
from cuzk.porep.graph import SdrGraph, parents_cache
from cuzk.porep.labels import layer_labels, replica_id as make_replica_id
from cuzk.porep.registry import RegisteredProof, get_proof, proof_of_name
from cuzk.porep.trees import (POSEIDON, SHA256, MerkleTree, binary_arities, fr_from_le, fr_to_le, hash_children,
                              level_arities, poseidon2_bytes, tree_r_shape)
from cuzk.porep.vanilla import ChallengeProof, build_proofs, column_hashes
from cuzk.util.atomic import atomic_dir
from cuzk.util.fileio import is_regular, open_regular, pread_into
from cuzk.util.jsonio import as_object, load_json, quote, require_hex, require_int
from cuzk.util.progress import Progress, StageTimer

FORMAT = 1
_FILES = ("meta.json", "data.bin", "sealed.bin", "labels.npy", "tree_d.npy", "tree_c.npy", "tree_r_last.npy")
META_MAX_BYTES = 1 << 16  # meta.json is about 700 bytes
_HEX32 = ("prover_id", "ticket", "replica_id", "comm_d", "comm_c", "comm_r_last", "comm_r")
_FR32 = ("replica_id", "comm_d", "comm_c", "comm_r_last", "comm_r")  # canonical Fr encodings
_NPY_HEAD_MAX = 1 << 16  # numpy itself refuses headers over 10,000 bytes
# what a damaged .npy header raises (numpy versions differ; tokenize: its old-header fix-up)
_NPY_ERRORS = (ValueError, TypeError, EOFError, SyntaxError, RecursionError, OverflowError, tokenize.TokenError)
CHECK_NODES = 4096  # Sector.check rebuilds the tree levels of at most this many nodes
_TREES = {"tree_d": "comm_d", "tree_c": "comm_c", "tree_r_last": "comm_r_last"}


def _b32(name: str, v: bytes) -> bytes:
    if not isinstance(v, (bytes, bytearray)) or len(v) != 32:
        raise InputError(f"{name} must be 32 bytes")
    return bytes(v)


def _read_data(data: bytes | os.PathLike | str | None, size: int) -> np.ndarray:
    if data is None:
        return np.zeros((size // 32, 32), np.uint8)
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(bytes(data), np.uint8)
        if len(raw) != size:
            raise InputError(f"sector data must be exactly {size} bytes, got {len(raw)}")
        return raw.reshape(-1, 32)
    if not isinstance(data, (str, os.PathLike)):
        raise InputError(f"sector data must be bytes, a path or None, got {type(data).__name__}")
    out = np.empty((size // 32, 32), np.uint8)
    try:
        with open_regular(data) as (fd, st):
            if not is_regular(st):
                raise InputError(f"sector data {os.fspath(data)}: not a regular file")
            if st.st_size != size:
                raise InputError(f"sector data {os.fspath(data)}: {st.st_size:,} bytes, must be exactly {size:,}")
            got = pread_into(fd, memoryview(out).cast("B"), 0)
    except OSError as e:
        raise InputError(f"sector data {os.fspath(data)}: {e.strerror or e}") from None
    if got != size:
        raise InputError(f"sector data {os.fspath(data)}: truncated while being read (at byte {got:,})")
    return out


def _check_out(out: Path) -> None:
    """Refuse, before any work, an output directory that exists or cannot be made below its nearest
    existing ancestor."""
    if os.path.lexists(out):
        raise SectorError(f"{out} already exists")
    where = next(d for d in out.parents if os.path.lexists(d))
    if not where.is_dir():
        raise SectorError(f"{out}: {where} is not a directory")
    if not os.access(where, os.W_OK | os.X_OK):
        raise SectorError(f"{out}: cannot create files in {where}")


def _levels_bytes(tree: MerkleTree) -> np.ndarray:
    return np.concatenate([v if tree.kind == SHA256 else fr_to_le(v) for v in tree.values])


def _level_sizes(arities: tuple[int, ...]) -> list[int]:
    return [int(np.prod(arities[i:])) for i in range(len(arities) + 1)]


def _tree_arities(name: str, nodes: int) -> tuple[str, tuple[int, ...]]:
    if name == "tree_d":
        return SHA256, binary_arities(nodes)
    return POSEIDON, level_arities(nodes, tree_r_shape(nodes))


def _shapes(p: RegisteredProof) -> dict[str, tuple[int, ...]]:
    """The uint8 shape of every data file of a sector of proof `p` (raw files: (nodes, 32))."""
    shapes = {"data.bin": (p.nodes, 32), "sealed.bin": (p.nodes, 32), "labels.npy": (p.layers, p.nodes, 32)}
    for name in _TREES:
        shapes[f"{name}.npy"] = (sum(_level_sizes(_tree_arities(name, p.nodes)[1])), 32)
    return shapes


def _tree_from_bytes(kind: str, flat: np.ndarray, arities: tuple[int, ...], file: str) -> MerkleTree:
    nodes = flat if kind == SHA256 else _fr(flat, file, "tree node")
    values, off = [], 0
    for s in _level_sizes(arities):
        values.append(nodes[off:off + s])
        off += s
    return MerkleTree(kind, arities, values, [None] * len(values))


def _first_bad_level(tree: MerkleTree, limit: int) -> int | None:
    """Rebuild every level above the lowest stored level of at most `limit` nodes from the stored level
    below it; the first level that differs from the stored one, None if all agree."""
    start = next(lv for lv, v in enumerate(tree.values) if len(v) <= limit)
    for lv in range(start, len(tree.arities)):
        a, cur = tree.arities[lv], tree.values[lv]
        if not np.array_equal(hash_children(tree.kind, cur.reshape(len(cur) // a, a, *cur.shape[1:])),
                              tree.values[lv + 1]):
            return lv + 1
    return None


def _fr(nodes: np.ndarray, file: str, what: str) -> np.ndarray:
    """fr_from_le of a sector file's nodes; a non-canonical one is a SectorFileError naming the file."""
    try:
        return fr_from_le(nodes, what)
    except NonCanonicalError as e:
        raise SectorFileError(file, str(e)) from None


def _clip(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + "..."


def _npy_offset(file: Path, shape: tuple[int, ...]) -> int:
    """Where the data of the .npy file `file` begins: its header must say uint8, C order and `shape`
    and its size be that offset plus the data (SectorFileError otherwise)."""
    name = str(file)
    try:
        with open_regular(file) as (fd, st):
            if not is_regular(st):
                raise SectorFileError(name, "not a regular file")
            head = io.BytesIO(os.pread(fd, _NPY_HEAD_MAX, 0))
    except OSError as e:
        raise SectorFileError(name, f"cannot be read: {e.strerror}") from None
    try:
        version = np.lib.format.read_magic(head)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        got, fortran, dtype = read(head)
    except _NPY_ERRORS as e:
        raise SectorFileError(name, f"not a valid .npy file: {_clip(str(e))}") from None
    if dtype != np.uint8 or fortran or tuple(got) != shape:
        order = " (Fortran order)" if fortran else ""
        raise SectorFileError(name, _clip(f"holds {dtype} {got}{order}, expected uint8 {shape}"))
    want = head.tell() + int(np.prod(shape))
    if st.st_size != want:
        raise SectorFileError(name, f"{st.st_size:,} bytes, expected {want:,} for {shape} uint8")
    return head.tell()


def _read_meta(file: Path) -> dict:
    """The fields of meta.json, read within limits and checked strictly (SectorFileError names the
    field; a file too large or not JSON is a SectorError with jsonio's message)."""
    name = str(file)
    try:
        obj = load_json(file, what="sector metadata", max_bytes=META_MAX_BYTES, max_depth=2)
    except (InputTooLargeError, JsonFormatError) as e:
        raise SectorError(str(e)) from None
    except OSError as e:
        raise SectorFileError(name, f"cannot be read: {e.strerror}") from None
    err = partial(_meta_error, name)
    obj = as_object(obj, "", error=err)
    fmt = require_int(obj, "format", 0, 1 << 32, error=err)
    if fmt != FORMAT:
        raise err("format", f"unknown sector format {fmt} (this cuzk reads format {FORMAT})")
    if "registered_proof" not in obj:
        raise err("registered_proof", "missing")
    proof = proof_of_name(obj["registered_proof"], err)
    out = {k: require_hex(obj, k, 32, error=err) for k in _HEX32}
    for k in _FR32:
        if int.from_bytes(out[k], "little") >= Fr.modulus:
            raise err(k, "not a canonical field element (not below the BLS12-381 scalar field modulus)")
    out["sector_id"] = require_int(obj, "sector_id", 0, (1 << 64) - 1, error=err)
    out["proof"] = proof
    if make_replica_id(out["prover_id"], out["sector_id"], out["ticket"], out["comm_d"],
                       proof.porep_id) != out["replica_id"]:
        raise err("replica_id", f"differs from the one derived from prover_id, sector_id, ticket, comm_d and "
                                f"{proof.name}'s porep_id")
    if poseidon2_bytes(out["comm_c"], out["comm_r_last"]) != out["comm_r"]:
        raise err("comm_r", "is not Poseidon-2(comm_c, comm_r_last)")
    return out


def _meta_error(path: str, field: str, reason: str) -> SectorFileError:
    return SectorFileError(path, reason, field)


def seal(proof: RegisteredProof | int | str, out_dir: str | os.PathLike, *, prover_id: bytes,
         sector_id: int, ticket: bytes, data: bytes | os.PathLike | str | None = None,
         parents_dir: str | os.PathLike | None = None, progress: bool = True) -> Sector:
    """Seal `data` (bytes or a file of exactly the sector size; None = all zeros, a CC sector) and write
    the sector directory `out_dir` atomically (SectorError, before any work, if it exists or cannot be
    made). `parents_dir`, an existing directory, caches the parents file (official name and format,
    checked against its digest: ParentsCacheError) between seals. Nothing is written on failure."""
    if not isinstance(proof, (RegisteredProof, int, str)):
        raise InputError(f"proof must be a RegisteredProof, an id or a name, got {type(proof).__name__}")
    p = get_proof(proof)
    prover_id, ticket = _b32("prover_id", prover_id), _b32("ticket", ticket)
    if isinstance(sector_id, bool) or not isinstance(sector_id, (int, np.integer)) or not 0 <= sector_id < 1 << 64:
        raise InputError(f"sector_id must be a u64, got {quote(sector_id)}")
    sector_id = int(sector_id)
    if not isinstance(out_dir, (str, os.PathLike)):
        raise InputError(f"out_dir must be str or os.PathLike, got {type(out_dir).__name__}")
    if parents_dir is not None and not (isinstance(parents_dir, (str, os.PathLike)) and Path(parents_dir).is_dir()):
        raise InputError(f"parents_dir must be an existing directory, got {quote(parents_dir)}")
    out = Path(out_dir)
    _check_out(out)
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
    """A sealed sector directory (see the module docstring), opened read-only. Its files are read
    (never mapped) into memory on first use, each checked to be the size it was when opened."""

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
    _offsets: dict[str, int] = field(default_factory=dict, repr=False)
    _trees: dict[str, MerkleTree] = field(default_factory=dict, repr=False)
    _labels: np.ndarray | None = field(default=None, repr=False)
    _checked: bool = field(default=False, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike) -> Sector:
        """Open the sector directory `path` and check it against itself, cheaply (no hashing of the
        data): every file present, regular and of its size (a .npy header saying uint8 and the
        expected shape); meta.json within limits, every field strictly typed (hex of 32 bytes,
        canonical Fr where it is one, sector_id a u64), replica_id the one derived from prover_id,
        sector_id, ticket and comm_d, and comm_r = Poseidon-2(comm_c, comm_r_last). SectorFileError
        names the file (and field) at fault. The trees are checked by `check` (vanilla_proofs runs it)."""
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"a sector path must be str or os.PathLike, got {type(path).__name__}")
        path = Path(path)
        if not path.is_dir():
            raise SectorError(f"{path}: not a sector directory (no such directory)")
        missing = [f for f in _FILES if not (path / f).is_file()]
        if missing:
            raise SectorError(f"{path}: missing (or not a regular file): {', '.join(missing)}")
        meta = _read_meta(path / "meta.json")
        offsets = {}
        for name, shape in _shapes(meta["proof"]).items():
            file = path / name
            if name.endswith(".npy"):
                offsets[name] = _npy_offset(file, shape)
                continue
            size, want = file.stat().st_size, int(np.prod(shape))
            if size != want:
                raise SectorFileError(str(file), f"{size:,} bytes, expected {want:,} (the {meta['proof'].name} "
                                                 "sector size)")
            offsets[name] = 0
        return cls(path, meta["proof"], meta["prover_id"], meta["sector_id"], meta["ticket"], meta["replica_id"],
                   meta["comm_d"], meta["comm_c"], meta["comm_r_last"], meta["comm_r"], offsets)

    @property
    def config(self) -> PoRepConfig:
        return PoRepConfig.from_proof(self.proof)

    def _read(self, name: str) -> np.ndarray:
        """The data of file `name` as a read-only uint8 array of its shape, read with pread into memory
        (SectorFileError if the file changed size since open, or shrinks while being read)."""
        shape, offset = _shapes(self.proof)[name], self._offsets[name]
        out = np.empty(shape, np.uint8)
        buf = memoryview(out).cast("B")
        file = str(self.path / name)
        try:
            with open_regular(file) as (fd, st):
                if not is_regular(st) or st.st_size != offset + len(buf):
                    raise SectorFileError(file, f"changed since the sector was opened: now {st.st_size:,} bytes, "
                                                f"expected {offset + len(buf):,}")
                got = pread_into(fd, buf, offset)
        except OSError as e:
            raise SectorFileError(file, f"cannot be read: {e.strerror}") from None
        if got != len(buf):
            raise SectorFileError(file, f"truncated while being read: it ends at byte {offset + got:,}")
        out.flags.writeable = False
        return out

    def labels(self) -> np.ndarray:
        """(layers, nodes, 32) uint8, read once (read-only)."""
        if self._labels is None:
            self._labels = self._read("labels.npy")
        return self._labels

    def tree(self, name: str) -> MerkleTree:
        """"tree_d", "tree_c" or "tree_r_last", read once (SectorFileError names a non-canonical node)."""
        if name not in _TREES:
            raise InputError(f"unknown sector tree {quote(name)}; expected one of {', '.join(_TREES)}")
        if name not in self._trees:
            kind, arities = _tree_arities(name, self.proof.nodes)
            self._trees[name] = _tree_from_bytes(kind, self._read(f"{name}.npy"), arities,
                                                 str(self.path / f"{name}.npy"))
        return self._trees[name]

    def check(self) -> None:
        """The stored data against itself and meta.json (SectorFileError names the file otherwise):
        data.bin is tree_d's leaves and sealed.bin tree_r_last's, byte for byte, and sealed.bin is the
        last layer's labels + data.bin in Fr; in each tree, every level of at most CHECK_NODES nodes is
        rebuilt from the stored level below it (the whole tree of a small sector, whose tree_c leaves
        are also rebuilt from the label columns), and the rebuilt roots are comm_d, comm_c and
        comm_r_last. The lower levels of a large sector are what a proof's Merkle paths touch: prove
        verifies those paths (the vanilla proofs) before it proves."""
        data, sealed, labels = self._read("data.bin"), self._read("sealed.bin"), self.labels()
        trees = {name: self.tree(name) for name in _TREES}
        file = lambda name: str(self.path / name)  # noqa: E731
        if not np.array_equal(trees["tree_d"].values[0], data):
            raise SectorFileError(file("tree_d.npy"), "its leaves are not data.bin")
        if not np.array_equal(fr_to_le(trees["tree_r_last"].values[0]), sealed):
            raise SectorFileError(file("tree_r_last.npy"), "its leaves are not sealed.bin")
        try:
            Fr.check_canonical(labels.reshape(-1, 32).view("<u8"), "label")
        except NonCanonicalError as e:
            raise SectorFileError(file("labels.npy"), str(e)) from None
        replica = fr_to_le(Fr.add(_fr(labels[-1], file("labels.npy"), "label"), _fr(data, file("data.bin"), "node")))
        if not np.array_equal(replica, sealed):
            raise SectorFileError(file("sealed.bin"), "is not the last layer's labels + data.bin")
        if self.proof.nodes <= CHECK_NODES and not np.array_equal(
                column_hashes(labels.transpose(1, 0, 2)), trees["tree_c"].values[0]):
            raise SectorFileError(file("tree_c.npy"), "its leaves are not the hashes of the label columns")
        for name, commitment in _TREES.items():
            tree = trees[name]
            bad = _first_bad_level(tree, CHECK_NODES)
            if bad is not None:
                raise SectorFileError(file(f"{name}.npy"), f"level {bad} is not the hash of level {bad - 1}")
            if tree.root != getattr(self, commitment):
                raise SectorFileError(file(f"{name}.npy"), f"its root differs from meta.json's {commitment}",
                                      commitment)
        self._checked = True

    def vanilla_proofs(self, seed: bytes) -> list[list[ChallengeProof]]:
        """The vanilla proofs of every partition for the interactive seed (C1's vanilla_proofs); the
        sector is checked (`check`) first."""
        seed = _b32("seed", seed)
        if not self._checked:
            self.check()
        config, graph = self.config, SdrGraph.for_config(self.config)
        labels = self.labels()
        columns = lambda nodes: np.ascontiguousarray(labels[:, nodes].transpose(1, 0, 2))  # noqa: E731
        out = []
        for k in range(config.partitions):
            ch = partition_challenges(config, self.replica_id, seed, self.comm_r, k)
            out.append(build_proofs(ch, [graph.parents_of(c) for c in ch], columns,
                                    self.tree("tree_d"), self.tree("tree_c"), self.tree("tree_r_last")))
        return out
