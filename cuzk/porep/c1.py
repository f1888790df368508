"""C1 output as filecoin-ffi writes it: serde JSON of rust-filecoin-proofs-api `SealCommitPhase1Output`.

    {"registered_proof": "StackedDrg32GiBV1_1",
     "vanilla_proofs": {"StackedDrg32GiBV1": [[Proof per challenge] per partition]},
     "comm_r": [32 ints], "comm_d": [..], "replica_id": [..], "seed": [..], "ticket": [..]}

The vanilla_proofs key names the sector shape (always ...V1). A Proof (rust-fil-proofs
`stacked/vanilla/params.rs`) is {comm_d_proofs, comm_r_last_proof, replica_column_proofs: {c_x,
drg_parents, exp_parents}, labeling_proofs: [{parents, layer_index, node}], encoding_proof}; a column
proof is {column: {index, rows, _h: null}, inclusion_proof}; a MerkleProof is {"data": {"Single":
{root, leaf, path}}} (base trees), {"Sub": {base_proof, sub_proof, root, leaf}} (8-8-0) or {"Top":
{base_proof, sub_proof, top_proof, root, leaf}} (8-8-2), each InclusionPath {"path": [{"hashes", "index"}]}.
Reading refuses, with a C1FormatError naming the field's path, JSON over C1_MAX_BYTES or nested over
C1_MAX_DEPTH (before parsing), any field of the wrong type or range (integers are JSON integers: 7.5,
7.0, "7" and true are refused), byte arrays that are not 32 integers in [0, 255], comm_r, comm_d and
replica_id that are not canonical Fr encodings, and paths that do not reach their roots. Messages
quote at most a few dozen characters of a bad value. `C1Output.verify` runs the full vanilla verifier.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from cuzk.errors import C1FormatError, C1ReadError, CuzkError, InputError, InputTooLargeError, VanillaProofError
from cuzk.ff.fields import Fr
from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.labels import replica_id as make_replica_id
from cuzk.porep.registry import RegisteredProof, proof_of_name, sector_size
from cuzk.porep.trees import (POSEIDON, SHA256, MerklePath, binary_arities, compute_roots, level_arities,
                              tree_r_shape)
from cuzk.porep.vanilla import ChallengeProof, ColumnProof, LabelProof, verify_all
from cuzk.util.atomic import atomic_write
from cuzk.util.fileio import irregular_reason, is_regular, open_regular, pread_into
from cuzk.util.jsonio import as_int, as_object, describe, load_json, quote

# about twice the largest C1 (64GiB non-interactive PoRep: 2,268 challenges, some 0.5 GB of JSON)
C1_MAX_BYTES = 1 << 30
C1_MAX_DEPTH = 32  # a C1 nests 16 levels deep
FIELD_ELEMENTS = ("comm_r", "comm_d", "replica_id")  # Fr encodings; seed and ticket are any 32 bytes


def vanilla_key(proof: RegisteredProof) -> str:
    """The VanillaSealProof variant of a registered proof: StackedDrg<size>V1 for every version."""
    return f"StackedDrg{sector_size(proof.sector_size).label}V1"


@dataclass
class C1Output:
    registered_proof: RegisteredProof
    vanilla_proofs: list[list[ChallengeProof]]
    comm_r: bytes
    comm_d: bytes
    replica_id: bytes
    seed: bytes
    ticket: bytes

    @property
    def config(self) -> PoRepConfig:
        return PoRepConfig.from_proof(self.registered_proof)

    def verify(self, prover_id: bytes | None = None, sector_id: int | None = None) -> None:
        """Full vanilla verification (VanillaProofError on failure). With the prover and sector ids the
        replica_id is also checked against the ticket and comm_d (C2 derives it from them)."""
        if prover_id is not None and sector_id is not None:
            want = make_replica_id(prover_id, sector_id, self.ticket, self.comm_d,
                                   self.registered_proof.porep_id)
            if want != self.replica_id:
                raise VanillaProofError(None, None, "replica_id",
                                        "does not derive from prover_id, sector_id, ticket and comm_d")
        verify_all(self.config, self.replica_id, self.comm_d, self.comm_r, self.seed, self.vanilla_proofs)

    # -------------------------------------------------------------- writing
    def to_json(self) -> dict:
        shape = tree_r_shape(self.registered_proof.nodes)
        return {
            "registered_proof": self.registered_proof.name,
            "vanilla_proofs": {vanilla_key(self.registered_proof):
                               [[_proof_json(p, shape) for p in part] for part in self.vanilla_proofs]},
            "comm_r": list(self.comm_r), "comm_d": list(self.comm_d), "replica_id": list(self.replica_id),
            "seed": list(self.seed), "ticket": list(self.ticket),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    def write(self, path: str | os.PathLike) -> None:
        """Write the JSON atomically (temporary file beside it, then rename)."""
        atomic_write(path, self.dumps().encode())

    # -------------------------------------------------------------- reading
    @classmethod
    def from_json(cls, obj: Any, check_paths: bool = True) -> C1Output:
        r = _Reader()
        obj = r.obj(obj, "")
        proof = proof_of_name(r.get(obj, "registered_proof", ""), C1FormatError)
        config = PoRepConfig.from_proof(proof)
        values = {f: r.b32(r.get(obj, f, ""), f) for f in ("comm_r", "comm_d", "replica_id", "seed", "ticket")}
        for f in FIELD_ELEMENTS:
            if int.from_bytes(values[f], "little") >= Fr.modulus:
                raise C1FormatError(f, "not a canonical field element (little-endian value >= the Fr modulus)")
        out = cls(proof, [], **values)
        vp = r.obj(r.get(obj, "vanilla_proofs", ""), "vanilla_proofs")
        key = vanilla_key(proof)
        if list(vp) != [key]:
            raise C1FormatError("vanilla_proofs", f"expected the single variant {key!r}, got {quote(list(vp))}")
        parts = r.list(vp[key], f"vanilla_proofs.{key}", config.partitions)
        shape = tree_r_shape(proof.nodes)
        geometry = (binary_arities(proof.nodes), level_arities(proof.nodes, shape), shape, config.layers)
        for k, part in enumerate(parts):
            at = f"vanilla_proofs.{key}[{k}]"
            items = r.list(part, at, config.challenges_per_partition)
            out.vanilla_proofs.append([r.proof(p, f"{at}[{i}]", geometry) for i, p in enumerate(items)])
        if check_paths:
            r.check_roots()
        return out

    @classmethod
    def loads(cls, text: str | bytes | bytearray | memoryview, check_paths: bool = True) -> C1Output:
        """A C1 output from its JSON text (C1FormatError for anything malformed; InputError for a value
        that is not text or bytes)."""
        if isinstance(text, str):
            data = text.encode("utf-8", "surrogatepass")
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:
            raise InputError(f"C1 JSON text must be str or bytes, got {type(text).__name__}")
        return cls.from_json(_load(data, "C1 output"), check_paths)

    @classmethod
    def read(cls, path: str | os.PathLike, check_paths: bool = True) -> C1Output:
        """A C1 output from a JSON file: C1FormatError for its content, C1ReadError (an OSError) naming
        the path for a file that cannot be read (missing, a directory, a FIFO, no permission)."""
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"a C1 file path must be str or os.PathLike, got {type(path).__name__}")
        name = os.fspath(path)
        if not isinstance(name, str) or not name:
            raise InputError(f"a C1 file path must be a non-empty str, got {quote(name)}")
        return cls.from_json(_load(_read_file(name), f"C1 output {name}"), check_paths)


def _read_file(name: str) -> bytes:
    """The bytes of the regular file `name`, opened without blocking (a FIFO is refused, not waited on)."""
    try:
        with open_regular(name) as (fd, st):
            size = st.st_size
            if is_regular(st) and size <= C1_MAX_BYTES:
                data = bytearray(size)
                got = pread_into(fd, memoryview(data), 0)
    except OSError as e:
        raise C1ReadError(name, e.strerror or str(e), e.errno) from None
    if not is_regular(st):
        code, reason = irregular_reason(st)
        raise C1ReadError(name, reason, code)
    if size > C1_MAX_BYTES:
        raise C1FormatError("<top>", str(InputTooLargeError(f"C1 output {name}", size, C1_MAX_BYTES)))
    if got != size:
        raise C1ReadError(name, f"truncated while being read (at byte {got:,} of {size:,})")
    return bytes(data)


def _load(data: bytes, what: str) -> Any:
    try:
        return load_json(data, what=what, max_bytes=C1_MAX_BYTES, max_depth=C1_MAX_DEPTH)
    except InputError as e:  # too large, too deep, not UTF-8, not JSON
        raise C1FormatError("<top>", str(e)) from None


# ---------------------------------------------------------------- JSON of the parts

def _path_json(p: MerklePath, shape: tuple[int, int, int] | None) -> dict:
    elems = [{"hashes": [list(h) for h in s], "index": i} for s, i in zip(p.siblings, p.indices)]
    root, leaf = list(p.root), list(p.leaf)
    sub, top = (shape[1], shape[2]) if shape else (0, 0)
    if not sub:
        return {"data": {"Single": {"root": root, "leaf": leaf, "path": {"path": elems}}}}
    if not top:
        return {"data": {"Sub": {"base_proof": {"path": elems[:-1]}, "sub_proof": {"path": elems[-1:]},
                                 "root": root, "leaf": leaf}}}
    return {"data": {"Top": {"base_proof": {"path": elems[:-2]}, "sub_proof": {"path": elems[-2:-1]},
                             "top_proof": {"path": elems[-1:]}, "root": root, "leaf": leaf}}}


def _column_json(c: ColumnProof, shape) -> dict:
    return {"column": {"index": c.index, "rows": [list(r) for r in c.rows], "_h": None},
            "inclusion_proof": _path_json(c.path, shape)}


def _label_json(lp: LabelProof) -> dict:
    return {"parents": [list(p) for p in lp.parents], "layer_index": lp.layer_index, "node": lp.node}


def _proof_json(p: ChallengeProof, shape) -> dict:
    return {
        "comm_d_proofs": _path_json(p.comm_d_proof, None),
        "comm_r_last_proof": _path_json(p.comm_r_last_proof, shape),
        "replica_column_proofs": {"c_x": _column_json(p.c_x, shape),
                                  "drg_parents": [_column_json(c, shape) for c in p.drg_parents],
                                  "exp_parents": [_column_json(c, shape) for c in p.exp_parents]},
        "labeling_proofs": [_label_json(lp) for lp in p.labeling_proofs],
        "encoding_proof": _label_json(p.encoding_proof),
    }


class _Reader:
    """Typed, field-naming accessors; collects every Merkle path for one batched root check."""

    def __init__(self) -> None:
        self.paths: list[tuple[str, MerklePath]] = []

    @staticmethod
    def obj(v: Any, at: str) -> dict:
        return as_object(v, at, error=C1FormatError)

    @staticmethod
    def get(obj: dict, key: str, at: str) -> Any:
        if key not in obj:
            raise C1FormatError(f"{at}.{key}" if at else key, "missing")
        return obj[key]

    @staticmethod
    def list(v: Any, at: str, length: int | None = None) -> list:
        if not isinstance(v, list):
            raise C1FormatError(at, f"expected a list, got {describe(v)}")
        if length is not None and len(v) != length:
            raise C1FormatError(at, f"expected {length} entries, got {len(v)}")
        return v

    @staticmethod
    def b32(v: Any, at: str) -> bytes:
        if not isinstance(v, list) or len(v) != 32:
            got = f"{len(v)} entries" if isinstance(v, list) else describe(v)
            raise C1FormatError(at, f"expected 32 bytes (integers in [0, 255]), got {got}")
        for i, x in enumerate(v):
            if type(x) is not int or not 0 <= x < 256:
                raise C1FormatError(at, f"byte {i} is {describe(x)}, not an integer in [0, 255]")
        return bytes(v)

    @staticmethod
    def uint(v: Any, at: str, bits: int) -> int:
        return as_int(v, at, 0, (1 << bits) - 1, error=C1FormatError)

    def inclusion(self, v: Any, at: str, arities: tuple[int, ...]) -> tuple[list[tuple[bytes, ...]], list[int]]:
        elems = self.list(self.get(self.obj(v, at), "path", at), f"{at}.path", len(arities))
        sibs, idx = [], []
        for j, (e, a) in enumerate(zip(elems, arities)):
            eat = f"{at}.path[{j}]"
            e = self.obj(e, eat)
            hashes = self.list(self.get(e, "hashes", eat), f"{eat}.hashes", a - 1)
            sibs.append(tuple(self.b32(h, f"{eat}.hashes[{n}]") for n, h in enumerate(hashes)))
            index = self.uint(self.get(e, "index", eat), f"{eat}.index", 64)
            if index >= a:
                raise C1FormatError(f"{eat}.index", f"{index} is not below the arity {a}")
            idx.append(index)
        return sibs, idx

    def merkle(self, v: Any, at: str, kind: str, arities: tuple[int, ...], shape) -> MerklePath:
        data = self.obj(self.get(self.obj(v, at), "data", at), f"{at}.data")
        sub, top = (shape[1], shape[2]) if shape else (0, 0)
        variant = "Top" if top else "Sub" if sub else "Single"
        if list(data) != [variant]:
            raise C1FormatError(f"{at}.data", f"expected a {variant} proof, got {quote(list(data))}")
        at = f"{at}.data.{variant}"
        d = self.obj(data[variant], at)
        parts = {"Single": [("path", arities)],
                 "Sub": [("base_proof", arities[:-1]), ("sub_proof", arities[-1:])],
                 "Top": [("base_proof", arities[:-2]), ("sub_proof", arities[-2:-1]),
                         ("top_proof", arities[-1:])]}[variant]
        sibs, idx = [], []
        for name, ar in parts:
            s, i = self.inclusion(self.get(d, name, at), f"{at}.{name}", ar)
            sibs += s
            idx += i
        path = MerklePath(kind, arities, self.b32(self.get(d, "leaf", at), f"{at}.leaf"),
                          self.b32(self.get(d, "root", at), f"{at}.root"), tuple(sibs), tuple(idx))
        self.paths.append((at, path))
        return path

    def column(self, v: Any, at: str, geometry) -> ColumnProof:
        _, r_arities, shape, layers = geometry
        v = self.obj(v, at)
        col = self.obj(self.get(v, "column", at), f"{at}.column")
        index = self.uint(self.get(col, "index", f"{at}.column"), f"{at}.column.index", 32)
        rows = self.list(self.get(col, "rows", f"{at}.column"), f"{at}.column.rows", layers)
        rows = tuple(self.b32(x, f"{at}.column.rows[{n}]") for n, x in enumerate(rows))
        path = self.merkle(self.get(v, "inclusion_proof", at), f"{at}.inclusion_proof", POSEIDON, r_arities, shape)
        return ColumnProof(index, rows, path)

    def label(self, v: Any, at: str) -> LabelProof:
        v = self.obj(v, at)
        parents = self.list(self.get(v, "parents", at), f"{at}.parents", 37)
        return LabelProof(tuple(self.b32(p, f"{at}.parents[{n}]") for n, p in enumerate(parents)),
                          self.uint(self.get(v, "layer_index", at), f"{at}.layer_index", 32),
                          self.uint(self.get(v, "node", at), f"{at}.node", 64))

    def proof(self, v: Any, at: str, geometry) -> ChallengeProof:
        d_arities, r_arities, shape, layers = geometry
        v = self.obj(v, at)
        d = self.merkle(self.get(v, "comm_d_proofs", at), f"{at}.comm_d_proofs", SHA256, d_arities, None)
        r = self.merkle(self.get(v, "comm_r_last_proof", at), f"{at}.comm_r_last_proof", POSEIDON, r_arities, shape)
        rat = f"{at}.replica_column_proofs"
        rc = self.obj(self.get(v, "replica_column_proofs", at), rat)
        c_x = self.column(self.get(rc, "c_x", rat), f"{rat}.c_x", geometry)
        drg = [self.column(c, f"{rat}.drg_parents[{j}]", geometry)
               for j, c in enumerate(self.list(self.get(rc, "drg_parents", rat), f"{rat}.drg_parents", 6))]
        exp = [self.column(c, f"{rat}.exp_parents[{j}]", geometry)
               for j, c in enumerate(self.list(self.get(rc, "exp_parents", rat), f"{rat}.exp_parents", 8))]
        labeling = [self.label(x, f"{at}.labeling_proofs[{j}]") for j, x in
                    enumerate(self.list(self.get(v, "labeling_proofs", at), f"{at}.labeling_proofs", layers))]
        enc = self.label(self.get(v, "encoding_proof", at), f"{at}.encoding_proof")
        return ChallengeProof(d, r, c_x, tuple(drg), tuple(exp), tuple(labeling), enc)

    def check_roots(self) -> None:
        try:
            roots = compute_roots([p for _, p in self.paths])
        except CuzkError:  # name the first path whose values do not decode
            for at, p in self.paths:
                try:
                    compute_roots([p])
                except CuzkError as e:
                    raise C1FormatError(at, str(e)) from None
            raise
        for (at, p), root in zip(self.paths, roots):
            if root != p.root:
                raise C1FormatError(f"{at}.root", "the path does not reach its root")
