"""The stacked-DRG PoRep circuit of one partition (rust-fil-proofs `stacked/circuit/{proof,params}.rs`).

Variable, input and row order are rust's, so the R1CS equals the one bellperson synthesizes:
- replica_id (alloc, inputize, 255 bits reversed per byte), comm_d and comm_r (alloc, inputize),
  comm_r_last, comm_c, and comm_r = Poseidon-2(comm_c, comm_r_last);
- per challenge (one batch block of K = challenges instances): the data leaf and its tree_d path; for
  each of the 6 DRG then 8 expansion parents: its column (one number per layer), the column's Poseidon
  hash and its tree_c path; the challenge as 64 bits packed into an input; per layer the label
  (`create_label`: SHA256 of replica_id || layer || node || 37 parent labels, 254 bits packed);
  encoding (last label + data leaf) and its tree_r_last path; the challenged column's hash and path.
Public inputs: [ONE, replica_id, comm_d, comm_r] then per challenge 18 packed path indices / the
challenge, as `generate_public_inputs`.

`circuit` builds its system with `replay` set, so in constraint mode the SHA256 gadget stamps each
compression recorded once (cuzk.gadgets.replay) and counting a 1.2 M-row circuit takes seconds;
witness mode runs the gadgets on K-wide arrays and computes the labels of layers 2..L of all
challenges in one nested block (K * (L - 1) instances).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuzk.errors import InputError, SynthesisError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, merkle, num, sha256, uint32
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.merkle import Level
from cuzk.gadgets.num import Num
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.gadgets.scope import ONE_SPEC, enforce, lc_sum
from cuzk.porep.public_inputs import PER_CHALLENGE_INPUTS, commitment_to_fr
from cuzk.porep.registry import BASE_DEGREE, DEGREE
from cuzk.porep.trees import MerklePath, binary_arities, check_path_shape, fr_from_le, level_arities, tree_r_shape
from cuzk.r1cs import ConstraintSystem, Variable

TOTAL_PARENTS = 37


@dataclass(frozen=True)
class StackedShape:
    """What fixes the circuit: sector nodes, layers, challenges per partition, tree_c / tree_r_last shape
    (base, sub, top arities)."""

    nodes: int
    layers: int
    challenges: int
    tree_r: tuple[int, int, int] = (8, 0, 0)

    def __post_init__(self) -> None:
        if self.layers not in (2, 11):
            raise InputError(f"column hashes exist for 2 or 11 layers, got {self.layers}")
        if self.challenges < 1:
            raise InputError(f"a partition needs at least one challenge, got {self.challenges}")
        level_arities(self.nodes, self.tree_r)  # checks the shape fits
        binary_arities(self.nodes)

    @classmethod
    def from_config(cls, config) -> StackedShape:
        """The shape of a PoRepConfig's partition circuit (cuzk.porep.challenges.PoRepConfig)."""
        return cls(config.nodes, config.layers, config.challenges_per_partition, tree_r_shape(config.nodes))

    @property
    def tree_d_arities(self) -> tuple[int, ...]:
        return binary_arities(self.nodes)

    @property
    def tree_r_arities(self) -> tuple[int, ...]:
        return level_arities(self.nodes, self.tree_r)

    @property
    def num_inputs(self) -> int:
        """Public inputs including ONE."""
        return 4 + PER_CHALLENGE_INPUTS * self.challenges


@dataclass
class PartitionWitness:
    """The private and public values of one partition (K challenges; Fr as (.., 4) Montgomery limbs).

    Paths are lists of merkle.Level, leaf level first, with (K,) indices and (K, arity - 1, 4) siblings;
    parent_paths holds 14 of them (6 DRG parents, then 8 expansion parents), in tree_c.
    """

    replica_id: int
    comm_d: int
    comm_r: int
    comm_r_last: int
    comm_c: int
    challenges: np.ndarray          # (K,) node indices
    data_leaves: np.ndarray         # (K, 4) tree_d leaves (unsealed data)
    comm_d_paths: list[Level]
    parent_columns: np.ndarray      # (K, 14, layers, 4) labels of each parent's column
    parent_paths: list[list[Level]]
    comm_r_last_paths: list[Level]
    comm_c_paths: list[Level]

    @classmethod
    def from_paths(cls, replica_id: bytes, comm_d: bytes, comm_r: bytes, comm_r_last: bytes, comm_c: bytes,
                   challenges: Sequence[int], comm_d_paths: Sequence[MerklePath], parent_columns: np.ndarray,
                   parent_paths: Sequence[Sequence[MerklePath]], comm_r_last_paths: Sequence[MerklePath],
                   comm_c_paths: Sequence[MerklePath]) -> PartitionWitness:
        """From per-challenge Merkle paths (cuzk.porep.trees.MerklePath; parent_paths: K lists of 14)
        and 32-byte commitments; parent_columns (K, 14, layers, 4) Montgomery Fr."""
        fr = lambda b, name: commitment_to_fr(bytes(b), name)  # noqa: E731
        return cls(fr(replica_id, "replica_id"), fr(comm_d, "comm_d"), fr(comm_r, "comm_r"),
                   fr(comm_r_last, "comm_r_last"), fr(comm_c, "comm_c"), np.asarray(challenges, np.int64),
                   fr_from_le(np.frombuffer(b"".join(p.leaf for p in comm_d_paths), np.uint8), "data leaf"),
                   levels_from_paths(comm_d_paths), np.asarray(parent_columns),
                   [levels_from_paths([ps[j] for ps in parent_paths]) for j in range(DEGREE)],
                   levels_from_paths(comm_r_last_paths), levels_from_paths(comm_c_paths))

    @classmethod
    def from_vanilla(cls, replica_id: bytes, comm_d: bytes, comm_r: bytes, proofs: Sequence) -> PartitionWitness:
        """From one partition's vanilla proofs (cuzk.porep.vanilla.ChallengeProof), as rust's
        StackedCompound::circuit (comm_c and comm_r_last are taken from the proofs, which must agree)."""
        if not proofs:
            raise InputError("a partition circuit needs at least one vanilla proof")
        comm_c, comm_r_last = proofs[0].comm_c, proofs[0].comm_r_last
        if any(p.comm_c != comm_c for p in proofs) or any(p.comm_r_last != comm_r_last for p in proofs):
            raise InputError("the vanilla proofs disagree on comm_c or comm_r_last")
        parents = [tuple(p.drg_parents) + tuple(p.exp_parents) for p in proofs]
        if any(len(ps) != DEGREE for ps in parents):
            raise InputError(f"every challenge needs {BASE_DEGREE} DRG and {DEGREE - BASE_DEGREE} expansion parents")
        rows = np.frombuffer(b"".join(r for ps in parents for col in ps for r in col.rows), np.uint8)
        columns = fr_from_le(rows, "column label").reshape(len(proofs), DEGREE, -1, 4)
        return cls.from_paths(replica_id, comm_d, comm_r, comm_r_last, comm_c, [p.challenge for p in proofs],
                              [p.comm_d_proof for p in proofs], columns,
                              [[col.path for col in ps] for ps in parents],
                              [p.comm_r_last_proof for p in proofs], [p.c_x.path for p in proofs])

    def check(self, shape: StackedShape) -> None:
        k, layers = shape.challenges, shape.layers
        if np.shape(self.challenges) != (k,) or self.data_leaves.shape != (k, 4):
            raise InputError(f"the witness must hold {k} challenges and data leaves")
        if self.parent_columns.shape != (k, DEGREE, layers, 4) or len(self.parent_paths) != DEGREE:
            raise InputError(f"parent columns must be ({k}, {DEGREE}, {layers}, 4) with {DEGREE} paths")
        for name, paths, arities in [("comm_d", [self.comm_d_paths], shape.tree_d_arities),
                                     ("parent", self.parent_paths, shape.tree_r_arities),
                                     ("comm_r_last", [self.comm_r_last_paths], shape.tree_r_arities),
                                     ("comm_c", [self.comm_c_paths], shape.tree_r_arities)]:
            for path in paths:
                if tuple(lv.arity for lv in path) != arities:
                    raise InputError(f"{name} path arities {[lv.arity for lv in path]} != {list(arities)}")
                for lv in path:
                    if np.shape(lv.index) != (k,) or np.shape(lv.siblings) != (k, lv.arity - 1, 4):
                        raise InputError(f"{name} path levels need ({k},) indices and ({k}, a-1, 4) siblings")


def levels_from_paths(paths: Sequence[MerklePath]) -> list[Level]:
    """K paths of one shape (one per challenge) as merkle.Levels with (K,) indices and (K, a-1, 4) siblings."""
    if not paths or any(p.arities != paths[0].arities for p in paths):
        raise InputError("levels_from_paths needs paths of one shape")
    for p in paths:
        check_path_shape(p)
    out = []
    for level, a in enumerate(paths[0].arities):
        raw = np.frombuffer(b"".join(h for p in paths for h in p.siblings[level]), np.uint8)
        out.append(Level(a, np.array([p.indices[level] for p in paths], np.int64),
                           fr_from_le(raw, "path hash").reshape(len(paths), a - 1, 4)))
    return out


# ---------------------------------------------------------------- pieces of the circuit

def _layer_bits(layer, k: int | None) -> Bits:
    """UInt32::constant(layer).into_bits_be(); an array of per-instance layers (witness mode) gives
    constant bits whose values differ per instance."""
    if isinstance(layer, (int, np.integer)):
        return uint32.into_bits_be(uint32.constant(int(layer), k))
    layer = np.asarray(layer, dtype=np.uint64)
    if k is None or layer.shape != (k,):
        raise InputError(f"per-instance layers need witness values for {k} instances")
    bits = uint32.into_bits_be(uint32.constant(int(layer[0]), k))
    bits.val = ((layer[:, None] >> np.arange(31, -1, -1, dtype=np.uint64)) & np.uint64(1)).astype(bool)
    return bits


def create_label(scope, replica_id: Bits, parents: list[Bits], layer, node_be: Bits) -> Num:
    """create_label_circuit: SHA256(replica_id (padded to 256 bits) || u32 BE layer || u64 BE node ||
    zero padding to 64 bytes || 37 parents of 256 bits each), reversed per byte, 254 bits packed.
    layer: an int, or in witness mode one layer per instance."""
    if len(parents) != TOTAL_PARENTS or not 32 <= len(replica_id) <= 256 or len(node_be) != 64:
        raise InputError("create_label takes 37 parents, a replica id of 32..256 bits and 64 node bits")
    k = None if replica_id.val is None else replica_id.val.shape[0]
    zeros = lambda n: boolean.constant([False] * n, k)  # noqa: E731
    parts = [replica_id, zeros(256 - len(replica_id)), _layer_bits(layer, k), node_be, zeros(160)]
    for p in parents:
        parts += [p, zeros(-len(p) % 256)]
    return num.pack_bits(scope, boolean.reverse_bit_numbering(sha256.sha256(scope, boolean.concat(parts))))


def expand_parents(layer: int, parents: list):
    """The 37 hashed parents: layer 1 repeats its 6 DRG parents 6 times, then the first; later layers
    repeat their 14 parents twice, then the first 9."""
    if layer == 1:
        return parents * 6 + parents[:1]
    return parents * 2 + parents[:9]


def _encode(scope, key: Num, value: Num) -> Num:
    """encode: key + value, as one new number and (key + value) * 1 = out."""
    out = num.alloc(scope, None if key.val is None else Fr.add(key.val, value.val))
    enforce(scope, 1, lambda: (lc_sum((np.array([key.code]), 1), (np.array([value.code]), 1)), ONE_SPEC,
                               (np.array([[out.code]]), np.array([[1]]))))
    return out


def _parent_bits(scope, label: Num) -> Bits:
    return boolean.reverse_bit_numbering(num.to_bits_le(scope, label))


def _repeat(bits: Bits, r: int) -> Bits:
    """Outside bits seen from a nested block of r instances per instance (witness mode, where rows are
    only counted: the values are what matters)."""
    return Bits(bits.var, bits.neg, np.repeat(bits.val, r, axis=0))


def _labels(scope, shape: StackedShape, replica_id: Bits, node_be: Bits, columns: list[list[Num]]
            ) -> list[Num]:
    """The labels of the challenged node in every layer (in rust's order, layer by layer)."""
    layers = shape.layers
    drg = [_parent_bits(scope, columns[j][0]) for j in range(BASE_DEGREE)]
    labels = [create_label(scope, replica_id, expand_parents(1, drg), 1, node_be)]
    if scope.record:  # layer constants differ in coefficients: one layer after the other
        for layer in range(2, layers + 1):
            parents = [_parent_bits(scope, columns[j][layer - 1 if j < BASE_DEGREE else layer - 2])
                       for j in range(DEGREE)]
            labels.append(create_label(scope, replica_id, expand_parents(layer, parents), layer, node_be))
        return labels
    # witness mode: layers 2..L of all instances in one nested block. Every layer gives the same
    # variables and rows (its constant only changes coefficients), so one template serves them all.
    k, r = scope.total, layers - 1
    with scope.batch(r) as blk:
        parents = []
        for j in range(DEGREE):
            col = [columns[j][layer - 1 if j < BASE_DEGREE else layer - 2] for layer in range(2, layers + 1)]
            wired = blk.wire([Variable(c.code, c.val) for c in col])
            parents.append(_parent_bits(blk, Num(wired.code, wired.value)))
        layer_no = np.tile(np.arange(2, layers + 1), k)
        label = create_label(blk, _repeat(replica_id, r), expand_parents(2, parents), layer_no, _repeat(node_be, r))
    codes = blk.instances(Variable(label.code))
    vals = label.val.reshape(k, r, 4)
    return labels + [Num(int(codes[i]), vals[:, i]) for i in range(r)]


def _blank(arities) -> list[Level]:
    return [Level(a) for a in arities]


def _challenge(blk, shape: StackedShape, w: PartitionWitness | None, replica_id: Bits,
               comm_d: Num, comm_c: Num, comm_r_last: Num) -> None:
    """One challenge's proof (params.rs Proof::synthesize) for the K instances of blk; every
    enforce_inclusion is a PoRCircuit with an allocated leaf and a private, allocated root."""
    layers = shape.layers
    data_leaf = num.alloc(blk, None if w is None else w.data_leaves)
    merkle.por(blk, data_leaf, _blank(shape.tree_d_arities) if w is None else w.comm_d_paths, "sha256", root=comm_d)
    columns = []
    for j in range(DEGREE):  # 6 DRG parents, then 8 expansion parents
        column = num.alloc_many(blk, layers, None if w is None else np.ascontiguousarray(w.parent_columns[:, j]))
        path = _blank(shape.tree_r_arities) if w is None else w.parent_paths[j]
        merkle.por(blk, poseidon_hash(blk, column), path, "poseidon", root=comm_c)
        columns.append(column)
    bits = None
    if w is not None:
        bits = (np.asarray(w.challenges, np.uint64)[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    challenge = boolean.alloc(blk, 64, None if bits is None else bits.astype(bool))  # UInt64::alloc
    num.pack_into_inputs(blk, challenge)
    labels = _labels(blk, shape, replica_id, challenge.reversed(), columns)
    encoded = _encode(blk, labels[-1], data_leaf)
    merkle.por(blk, encoded, _blank(shape.tree_r_arities) if w is None else w.comm_r_last_paths,
               "poseidon", root=comm_r_last)
    merkle.por(blk, poseidon_hash(blk, labels), _blank(shape.tree_r_arities) if w is None else w.comm_c_paths,
               "poseidon", root=comm_c)


def synthesize(cs: ConstraintSystem, shape: StackedShape, witness: PartitionWitness | None = None) -> None:
    """StackedCircuit::synthesize into cs ("constraints" mode needs no witness; "witness" / "both" do)."""
    if not isinstance(cs, ConstraintSystem):
        raise InputError("synthesize needs a cuzk.r1cs.ConstraintSystem")
    if cs.num_constraints or cs.num_aux or cs.num_inputs != 1:
        raise SynthesisError("synthesize needs an empty constraint system")
    w = witness if cs.has_values else None
    if cs.has_values:
        if witness is None:
            raise SynthesisError(f"{cs.mode} mode needs a PartitionWitness")
        witness.check(shape)
    value = lambda x: None if w is None else [x]  # noqa: E731
    replica = num.alloc(cs, value(None if w is None else w.replica_id))
    num.inputize(cs, replica)
    replica_bits = boolean.reverse_bit_numbering(num.to_bits_le(cs, replica))
    comm_d = num.alloc(cs, value(None if w is None else w.comm_d))
    num.inputize(cs, comm_d)
    comm_r = num.alloc(cs, value(None if w is None else w.comm_r))
    num.inputize(cs, comm_r)
    comm_r_last = num.alloc(cs, value(None if w is None else w.comm_r_last))
    comm_c = num.alloc(cs, value(None if w is None else w.comm_c))
    num.enforce_equal(cs, comm_r, poseidon_hash(cs, [comm_c, comm_r_last]))
    k = shape.challenges
    if replica_bits.val is not None:
        replica_bits = _repeat(replica_bits, k)
    with cs.batch(k) as blk:
        _challenge(blk, shape, w, replica_bits, comm_d, comm_c, comm_r_last)


def circuit(shape: StackedShape, witness: PartitionWitness | None = None, mode: str = "constraints"
            ) -> ConstraintSystem:
    """A new ConstraintSystem holding the partition circuit (with `replay` set: see the module doc)."""
    cs = ConstraintSystem(mode, replay=True)
    synthesize(cs, shape, witness)
    return cs


def count(shape: StackedShape) -> dict[str, int]:
    """Constraints, inputs (with ONE), aux variables and non-zeros of the circuit (constraint mode; the
    challenges are one template, so memory is one challenge's rows)."""
    return circuit(shape).stats()


def partition_witnesses(c1) -> list[PartitionWitness]:
    """The witness of every partition of a C1 output (cuzk.porep.c1.C1Output)."""
    return [PartitionWitness.from_vanilla(c1.replica_id, c1.comm_d, c1.comm_r, proofs) for proofs in c1.vanilla_proofs]
