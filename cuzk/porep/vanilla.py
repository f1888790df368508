"""PoRep vanilla proofs (rust-fil-proofs `stacked/vanilla/{params,column_proof,labeling_proof,
encoding_proof}.rs`): what C1 hands to C2, made from a sealed (or synthetic) sector, and their verifier.

Per challenge c: the tree_d inclusion of data node c; the column (labels of every layer) of c, of its
6 DRG and 8 expansion parents, each with its tree_c inclusion (leaf = Poseidon of the column); one
labeling proof per layer (the 37 hashed parent labels; label(c, L) must equal row L of c's column); the
encoding proof (the last layer's parents again; key + data node = replica node, in Fr); the
tree_r_last inclusion of replica node c. A partition also binds comm_r = Poseidon-2(comm_c, comm_r_last).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cuzk.errors import CuzkError, VanillaProofError
from cuzk.ff.fields import Fr
from cuzk.porep.challenges import PoRepConfig, partition_challenges
from cuzk.porep.graph import SdrGraph
from cuzk.porep.labels import expand_label_parents, label_node
from cuzk.porep.registry import BASE_DEGREE, DEGREE
from cuzk.porep.trees import (MerklePath, MerkleTree, binary_arities, check_path_shape, compute_roots,
                              fr_from_le, fr_to_le, level_arities, poseidon2_bytes, poseidon_nodes,
                              tree_r_shape)


@dataclass(frozen=True)
class ColumnProof:
    """Column of node `index` (one label per layer) and its tree_c inclusion (leaf = column hash)."""

    index: int
    rows: tuple[bytes, ...]
    path: MerklePath


@dataclass(frozen=True)
class LabelProof:
    """LabelingProof / EncodingProof: the 37 hashed parent labels, the layer (from 1) and the node."""

    parents: tuple[bytes, ...]
    layer_index: int
    node: int


@dataclass(frozen=True)
class ChallengeProof:
    comm_d_proof: MerklePath
    comm_r_last_proof: MerklePath
    c_x: ColumnProof
    drg_parents: tuple[ColumnProof, ...]
    exp_parents: tuple[ColumnProof, ...]
    labeling_proofs: tuple[LabelProof, ...]
    encoding_proof: LabelProof

    @property
    def challenge(self) -> int:
        return self.c_x.index

    @property
    def comm_c(self) -> bytes:
        return self.c_x.path.root

    @property
    def comm_r_last(self) -> bytes:
        return self.comm_r_last_proof.root


def column_hashes(columns: np.ndarray) -> np.ndarray:
    """(n, layers, 32) uint8 label columns -> (n, 4) Montgomery Fr tree_c leaves."""
    n, layers = columns.shape[:2]
    return poseidon_nodes(fr_from_le(columns.reshape(-1, 32), "label").reshape(n, layers, 4))


def build_proofs(challenges: Sequence[int], parents: Sequence[Sequence[int]],
                 columns: Callable[[np.ndarray], np.ndarray],
                 tree_d: MerkleTree, tree_c: MerkleTree, tree_r: MerkleTree) -> list[ChallengeProof]:
    """Vanilla proofs of `challenges` with their 14 parents each; columns(nodes) gives the (n, layers,
    32) uint8 labels of any node the proofs touch; the trees may be sparse."""
    k = len(challenges)
    ch = np.asarray(challenges, dtype=np.int64)
    par = np.asarray(parents, dtype=np.int64).reshape(k, DEGREE)
    nodes = np.concatenate([ch, par.reshape(-1)])
    cols = columns(nodes)
    layers = cols.shape[1]
    col_paths = tree_c.paths(nodes)
    d_paths = tree_d.paths(ch)
    r_paths = tree_r.paths(ch)
    rows = [tuple(cols[n, i].tobytes() for i in range(layers)) for n in range(len(nodes))]
    col_proofs = [ColumnProof(int(nodes[n]), rows[n], col_paths[n]) for n in range(len(nodes))]
    out = []
    for i in range(k):
        mine = col_proofs[k + DEGREE * i: k + DEGREE * (i + 1)]
        labeling = []
        for layer in range(1, layers + 1):
            base = [p.rows[layer - 1] for p in mine[:BASE_DEGREE]]
            exp = [p.rows[layer - 2] for p in mine[BASE_DEGREE:]] if layer > 1 else []
            labeling.append(LabelProof(tuple(expand_label_parents(layer, base + exp)), layer, int(ch[i])))
        out.append(ChallengeProof(d_paths[i], r_paths[i], col_proofs[i], tuple(mine[:BASE_DEGREE]),
                                  tuple(mine[BASE_DEGREE:]), tuple(labeling), labeling[-1]))
    return out


# ---------------------------------------------------------------- verification

def _fail(k: int | None, i: int | None, field: str, reason: str) -> None:
    raise VanillaProofError(k, i, field, reason)


def _column_fields(p: ChallengeProof) -> list[tuple[str, ColumnProof]]:
    return ([("replica_column_proofs.c_x", p.c_x)]
            + [(f"replica_column_proofs.drg_parents[{j}]", c) for j, c in enumerate(p.drg_parents)]
            + [(f"replica_column_proofs.exp_parents[{j}]", c) for j, c in enumerate(p.exp_parents)])


def verify_partition(config: PoRepConfig, replica_id: bytes, comm_d: bytes, comm_r: bytes,
                     seed: bytes | None, k: int, proofs: Sequence[ChallengeProof],
                     graph: SdrGraph | None = None) -> None:
    """Check partition k's vanilla proofs as rust's verify_all_partitions does, and more strictly
    (labeling / encoding parents must be the parent columns' labels). Raises VanillaProofError."""
    graph = graph or SdrGraph.for_config(config)
    layers = config.layers
    d_arities = binary_arities(config.nodes)
    r_arities = level_arities(config.nodes, tree_r_shape(config.nodes))
    challenges = partition_challenges(config, replica_id, seed, comm_r, k)
    if len(proofs) != len(challenges):
        _fail(k, None, "proofs", f"{len(proofs)} challenge proofs, expected {len(challenges)}")
    if not proofs:
        return
    comm_c, comm_r_last = proofs[0].comm_c, proofs[0].comm_r_last
    try:
        if poseidon2_bytes(comm_c, comm_r_last) != comm_r:
            _fail(k, None, "comm_r", "Poseidon-2(comm_c, comm_r_last) of the proofs is not comm_r")
    except VanillaProofError:
        raise
    except CuzkError as e:
        _fail(k, 0, "comm_c / comm_r_last", str(e))

    paths: list[tuple[int, str, MerklePath, tuple[int, ...], bytes, int]] = []
    columns: list[tuple[int, str, ColumnProof]] = []
    for i, (p, c) in enumerate(zip(proofs, challenges)):
        if p.challenge != c:
            _fail(k, i, "replica_column_proofs.c_x.index", f"{p.challenge}, expected challenge {c}")
        if len(p.drg_parents) != BASE_DEGREE or len(p.exp_parents) != DEGREE - BASE_DEGREE:
            _fail(k, i, "replica_column_proofs", "needs 6 DRG and 8 expansion parent columns")
        parents = graph.parents_of(c)
        paths.append((i, "comm_d_proofs", p.comm_d_proof, d_arities, comm_d, c))
        paths.append((i, "comm_r_last_proof", p.comm_r_last_proof, r_arities, comm_r_last, c))
        for (name, col), node in zip(_column_fields(p), [c, *parents]):
            if col.index != node:
                _fail(k, i, f"{name}.index", f"{col.index}, expected node {node}")
            if len(col.rows) != layers or any(len(r) != 32 for r in col.rows):
                _fail(k, i, f"{name}.rows", f"needs {layers} labels of 32 bytes")
            paths.append((i, f"{name}.inclusion_proof", col.path, r_arities, comm_c, node))
            columns.append((i, name, col))
        _check_labels(k, i, p, replica_id, layers)

    for i, name, path, arities, root, node in paths:
        try:
            check_path_shape(path)
        except CuzkError as e:
            _fail(k, i, name, str(e))
        if path.arities != arities:
            _fail(k, i, name, f"path arities {path.arities}, expected {arities}")
        if path.root != root:
            _fail(k, i, f"{name}.root", "is not the partition's commitment")
        if path.node_index != node:
            _fail(k, i, f"{name}.index", f"path leads to node {path.node_index}, expected {node}")
    try:
        roots = compute_roots([p[2] for p in paths])
    except CuzkError as e:
        _fail(k, None, "inclusion proofs", str(e))
    for (i, name, path, *_), got in zip(paths, roots):
        if got != path.root:
            _fail(k, i, name, "path does not reach its root")
    try:
        hashes = fr_to_le(column_hashes(np.frombuffer(
            b"".join(b"".join(c.rows) for _, _, c in columns), np.uint8).reshape(-1, layers, 32)))
    except CuzkError as e:
        _fail(k, None, "replica_column_proofs rows", str(e))
    for (i, name, col), h in zip(columns, hashes):
        if h.tobytes() != col.path.leaf:
            _fail(k, i, f"{name}.rows", "column hash is not the tree_c leaf")
    for i, p in enumerate(proofs):
        _check_encoding(k, i, p, replica_id, layers)


def _check_labels(k: int, i: int, p: ChallengeProof, replica_id: bytes, layers: int) -> None:
    if len(p.labeling_proofs) != layers:
        _fail(k, i, "labeling_proofs", f"{len(p.labeling_proofs)} proofs, expected {layers}")
    for layer, lp in enumerate(p.labeling_proofs, start=1):
        field = f"labeling_proofs[{layer - 1}]"
        if lp.layer_index != layer or lp.node != p.challenge:
            _fail(k, i, field, f"is for layer {lp.layer_index} node {lp.node}, expected {layer}, {p.challenge}")
        base = [c.rows[layer - 1] for c in p.drg_parents]
        exp = [c.rows[layer - 2] for c in p.exp_parents] if layer > 1 else []
        if list(lp.parents) != expand_label_parents(layer, base + exp):
            _fail(k, i, f"{field}.parents", "are not the parent columns' labels")
        if label_node(replica_id, layer, p.challenge, lp.parents) != p.c_x.rows[layer - 1]:
            _fail(k, i, field, f"label does not match row {layer - 1} of the challenged column")


def _check_encoding(k: int, i: int, p: ChallengeProof, replica_id: bytes, layers: int) -> None:
    e, last = p.encoding_proof, p.labeling_proofs[-1]
    if (e.layer_index, e.node, e.parents) != (last.layer_index, last.node, last.parents):
        _fail(k, i, "encoding_proof", "differs from the last layer's labeling proof")
    key = label_node(replica_id, e.layer_index, e.node, e.parents)
    try:
        vals = fr_from_le(np.frombuffer(key + p.comm_d_proof.leaf + p.comm_r_last_proof.leaf,
                                        np.uint8).reshape(3, 32), "encoding value")
    except CuzkError as ex:
        _fail(k, i, "encoding_proof", str(ex))
    if not np.array_equal(Fr.add(vals[0], vals[1]), vals[2]):
        _fail(k, i, "encoding_proof", "key + data node is not the replica node")


def verify_all(config: PoRepConfig, replica_id: bytes, comm_d: bytes, comm_r: bytes, seed: bytes | None,
               partitions: Sequence[Sequence[ChallengeProof]]) -> None:
    """Verify every partition (VanillaProofError on the first failure)."""
    if len(partitions) != config.partitions:
        _fail(None, None, "vanilla_proofs", f"{len(partitions)} partitions, expected {config.partitions}")
    graph = SdrGraph.for_config(config)
    for k, proofs in enumerate(partitions):
        verify_partition(config, replica_id, comm_d, comm_r, seed, k, proofs, graph)
