"""The EmptySectorUpdate (SnapDeals) circuit of one partition (rust-fil-proofs
`storage-proofs-update/src/circuit.rs:341-745`, gadgets.rs; ../shared/POST_SNAP.md §B2, §B4, §B5).

Variable, input and row order are rust's:
- k_and_h_select (alloc, inputize), its partition_bit_len + 6 bits and their recomposition, the
  partition bits packed; comm_r_old, comm_d_new, comm_r_new (alloc, inputize);
  phi = Poseidon_GR(comm_d_new, comm_r_old); comm_c, root_r_old, root_r_new, the apex leaves and the
  partition path allocated; comm_r_{old,new} == Poseidon-2(comm_c, root_r_{old,new});
- apex_por (gadgets.rs:46-89): the SHA256 apex tree, its root's path up to comm_d_new;
- gen_challenge_bits (gadgets.rs:92-160): per digest its index, Poseidon_GR(comm_r_new, index), 255 bits;
- per challenge (one batch block of C instances; the random bits wired in from the digests):
  c_high (get_challenge_high_bits), rho = Poseidon_GR(phi, c_high), leaf_r_old, leaf_d_new,
  leaf_r_new = leaf_r_old + leaf_d_new * rho, the TreeROld and TreeRNew paths (siblings first, then
  `por_no_challenge_input`, storage-proofs-core por.rs:457-596), the apex leaf selected by the
  challenge's apex bits (insertion::select), the TreeD path up to it.
The apex tree's levels are batch blocks too, so constraint mode records one hash per level and one
challenge: counting an 81 M-row 32GiB partition records about 1.1 M rows.
"""
from __future__ import annotations

import numpy as np

from cuzk.errors import InputError, SynthesisError
from cuzk.ff.fields import Fr
from cuzk.gadgets import boolean, merkle, num
from cuzk.gadgets.boolean import Bits
from cuzk.gadgets.num import Num
from cuzk.gadgets.poseidon import poseidon_hash
from cuzk.gadgets.scope import ONE_CODE, ONE_SPEC, enforce, single_row
from cuzk.r1cs import ConstraintSystem, Variable
from cuzk.snap.derive import GR_TAG
from cuzk.snap.witness import PartitionWitness, SnapShape

_HASHERS = {"poseidon": poseidon_hash, "sha256": merkle.sha256_hash_leaves}


# ---------------------------------------------------------------- Poseidon_GR

def poseidon_gr(scope, a: Num, b: Num) -> Num:
    """neptune circuit::poseidon_hash(a, b) with POSEIDON_CONSTANTS_GEN_RANDOMNESS (the 2^40 tag)."""
    return poseidon_hash(scope, [a, b], 2, GR_TAG)


# ---------------------------------------------------------------- small gadgets

def _terms(*pairs) -> tuple:
    """A one-row LC from (code, coeff) pairs, zero coefficients left out."""
    return single_row({code: c for code, c in pairs if c})


def alloc_bits_of(scope, x: Num, n: int) -> Bits:
    """n allocated bits of x, LE, and (sum 2^i b_i) * ONE = x: circuit.rs:424-455 (n bits of
    k_and_h_select) and gadgets.rs:18-40 (allocated_num_to_allocated_bits, n = 255)."""
    vals = None
    if x.val is not None:
        raw = Fr.to_canonical_limbs(x.val).view(np.uint8)
        vals = np.unpackbits(raw, axis=1, bitorder="little")[:, :n].astype(bool)
    bits = boolean.alloc(scope, n, vals)
    enforce(scope, 1, lambda: (single_row({int(v): 1 << i for i, v in enumerate(bits.var)}), ONE_SPEC,
                               _terms((x.code, 1))))
    return bits


def _product(scope, a: Num, b: Num) -> Num:
    """AllocatedNum::mul: a * b = out."""
    out = num.alloc(scope, None if a.val is None else Fr.mul(a.val, b.val))
    enforce(scope, 1, lambda: (_terms((a.code, 1)), _terms((b.code, 1)), _terms((out.code, 1))))
    return out


def _sum(scope, parts: list[Num]) -> Num:
    """An allocated sum with (sum parts) * ONE = out (label_r_new, c_high_selected)."""
    val = None
    if parts[0].val is not None:
        val = parts[0].val
        for p in parts[1:]:
            val = Fr.add(val, p.val)
    out = num.alloc(scope, val)
    enforce(scope, 1, lambda: (single_row({p.code: 1 for p in parts}), ONE_SPEC, _terms((out.code, 1))))
    return out


def _rep(x, k: int):
    """An outer Num / Bits seen from a block of k instances: the same variable, its value repeated."""
    if x.val is None:
        return x
    if isinstance(x, Bits):
        return Bits(x.var, x.neg, np.repeat(x.val, k, axis=0))
    return Num(x.code, np.repeat(x.val, k, axis=0))


def por_no_challenge_input(scope, bits: Bits, leaf: Num, path: list[list[Num]], arities, hasher: str,
                           root: Num) -> None:
    """por.rs:457-596: per level insert at the position given by the next bits, hash; computed == root."""
    cur, used = leaf, 0
    for siblings, a in zip(path, arities):
        nb = a.bit_length() - 1
        cur = _HASHERS[hasher](scope, merkle.insert(scope, cur, bits[used:used + nb], siblings))
        used += nb
    if used != len(bits):
        raise SynthesisError(f"{len(bits)} challenge bits for a path of {used}")
    num.enforce_equal(scope, cur, root)


def select(scope, items: list[Num], bits: Bits) -> Num:
    """insertion::select (insertion.rs:287-317): halve the list by the bits, most significant first."""
    if 1 << len(bits) != len(items):
        raise InputError(f"select needs 2^{len(bits)} items, got {len(items)}")
    state = items
    for i in range(len(bits) - 1, -1, -1):
        half = len(state) // 2
        state = [num.pick(scope, bits[i], state[half + j], state[j]) for j in range(half)]
    return state[0]


def _alloc_path(scope, path, arities) -> list[list[Num]]:
    """The siblings of a path, level by level, allocated (witness: merkle.Levels, or None)."""
    return [[num.alloc(scope, None if path is None else path[lv].siblings[:, j]) for j in range(a - 1)]
            for lv, a in enumerate(arities)]


# ---------------------------------------------------------------- partition-wide pieces

def _wire(blk, codes, vals: np.ndarray | None) -> Num:
    v = blk.wire([int(c) for c in codes])
    return Num(v.code, vals)


def apex_root(cs: ConstraintSystem, leaves: list[Num]) -> Num:
    """The apex tree (gadgets.rs:56-79): each row's SHA256 hash2 pairs, one batch block per row."""
    codes = np.array([x.code for x in leaves], np.int64)
    vals = None if leaves[0].val is None else np.concatenate([x.val for x in leaves])
    while len(codes) > 1:
        k = len(codes) // 2
        with cs.batch(k) as blk:
            left = _wire(blk, codes[0::2], None if vals is None else vals[0::2])
            right = _wire(blk, codes[1::2], None if vals is None else vals[1::2])
            out = merkle.sha256_hash_leaves(blk, [left, right])
        codes, vals = blk.instances(Variable(out.code)), out.val
    return Num(int(codes[0]), vals)


def gen_challenge_bits(cs: ConstraintSystem, shape: SnapShape, comm_r_new: Num, partition: Num) -> list[Bits]:
    """gadgets.rs:92-160: per digest j, digest_index = k * digests + j, Poseidon_GR(comm_r_new, it),
    its 255 bits. Returns the digests' bits (the challenges slice them)."""
    out = []
    d = shape.digests
    for j in range(d):
        index = num.alloc(cs, None if partition.val is None else Fr.add(Fr.mul(partition.val, Fr.from_ints([d])),
                                                                         Fr.from_ints([j])))
        enforce(cs, 1, lambda: (_terms((partition.code, d), (ONE_CODE, j)), ONE_SPEC, _terms((index.code, 1))))
        out.append(alloc_bits_of(cs, poseidon_gr(cs, comm_r_new, index), 255))
    return out


def _challenge_bits(blk, shape: SnapShape, digests: list[Bits], partition_bits: Bits) -> Bits:
    """Each instance's challenge bits: its rb random digest bits (wired), then the partition bits."""
    rb, per, c = shape.random_bits, shape.challenges_per_digest, shape.challenges
    src = [(i // per, (i % per) * rb) for i in range(c)]
    codes = [blk.wire([int(digests[d].var[s + q]) for d, s in src]).code for q in range(rb)]
    vals = None
    if digests[0].val is not None:
        vals = np.stack([digests[d].val[0, s:s + rb] for d, s in src])
    rand = Bits(np.array(codes, np.int64), np.zeros(rb, bool), vals)
    return boolean.concat([rand, _rep(partition_bits, c)])


def challenge_high(blk, shape: SnapShape, c_bits: Bits, h_select_bits: Bits) -> Num:
    """get_challenge_high_bits (gadgets.rs:166-240): per h in hs, the h high bits packed and scaled by
    its h_select bit; their sum."""
    parts = []
    for h, i in zip(shape.hs, range(len(h_select_bits))):
        high = num.pack_bits(blk, c_bits[len(c_bits) - h:])
        sel = h_select_bits[i]
        val = None if high.val is None else np.where(sel.val[:, :1], high.val, Fr.from_ints([0]))
        part = num.alloc(blk, val)
        enforce(blk, 1, lambda: (_terms((high.code, 1)), sel.lc(), _terms((part.code, 1))))
        parts.append(part)
    return _sum(blk, parts)


def _challenges(blk, shape: SnapShape, w: PartitionWitness | None, digests: list[Bits], partition_bits: Bits,
                h_select_bits: Bits, phi: Num, roots: tuple[Num, Num], apex_leaves: list[Num]) -> None:
    """The per-challenge loop body (circuit.rs:603-741) for the C instances of blk."""
    c = shape.challenges
    c_bits = _challenge_bits(blk, shape, digests, partition_bits)
    rho = poseidon_gr(blk, _rep(phi, c), challenge_high(blk, shape, c_bits, _rep(h_select_bits, c)))
    leaf_r_old = num.alloc(blk, None if w is None else w.leaf_r_old)
    leaf_d_new = num.alloc(blk, None if w is None else w.leaf_d_new)
    leaf_r_new = _sum(blk, [leaf_r_old, _product(blk, leaf_d_new, rho)])
    arities = shape.tree_r_arities
    for leaf, root, path in ((leaf_r_old, roots[0], None if w is None else w.path_r_old),
                             (leaf_r_new, roots[1], None if w is None else w.path_r_new)):
        siblings = _alloc_path(blk, path, arities)
        por_no_challenge_input(blk, c_bits, leaf, siblings, arities, "poseidon", root)
    p = shape.tree_d_levels
    apex = select(blk, [_rep(x, c) for x in apex_leaves], c_bits[p:p + shape.apex_bit_len])
    siblings = _alloc_path(blk, None if w is None else w.path_d_new, (2,) * p)
    por_no_challenge_input(blk, c_bits[:p], leaf_d_new, siblings, (2,) * p, "sha256", apex)


def synthesize(cs: ConstraintSystem, shape: SnapShape, witness: PartitionWitness | None = None) -> None:
    """EmptySectorUpdateCircuit::synthesize into cs ("constraints" mode needs no witness)."""
    if not isinstance(cs, ConstraintSystem) or cs.num_constraints or cs.num_aux or cs.num_inputs != 1:
        raise SynthesisError("synthesize needs an empty cuzk.r1cs.ConstraintSystem")
    if cs.has_values and witness is None:
        raise SynthesisError(f"{cs.mode} mode needs a PartitionWitness")
    w = witness if cs.has_values else None
    if w is not None:
        w.check(shape)
    one = lambda name: None if w is None else [getattr(w, name)]  # noqa: E731
    pbl = shape.partition_bit_len
    k_h = num.alloc(cs, None if w is None else [shape.k_and_h_select(w.k)])
    num.inputize(cs, k_h)
    kh_bits = alloc_bits_of(cs, k_h, pbl + len(shape.hs))
    partition_bits, h_select_bits = kh_bits[:pbl], kh_bits[pbl:]
    partition = num.pack_bits(cs, partition_bits)
    comms = []
    for name in ("comm_r_old", "comm_d_new", "comm_r_new"):
        comms.append(num.alloc(cs, one(name)))
        num.inputize(cs, comms[-1])
    comm_r_old, comm_d_new, comm_r_new = comms
    phi = poseidon_gr(cs, comm_d_new, comm_r_old)
    comm_c, root_r_old, root_r_new = (num.alloc(cs, one(n)) for n in ("comm_c", "root_r_old", "root_r_new"))
    apex_leaves = num.alloc_many(cs, shape.apex_leaves, None if w is None else w.apex_leaves[None])
    partition_path = num.alloc_many(cs, pbl, None if w is None else w.partition_path[None])
    for root, comm in ((root_r_old, comm_r_old), (root_r_new, comm_r_new)):
        num.enforce_equal(cs, poseidon_hash(cs, [comm_c, root]), comm)
    por_no_challenge_input(cs, partition_bits, apex_root(cs, apex_leaves), [[s] for s in partition_path],
                           (2,) * pbl, "sha256", comm_d_new)
    digests = gen_challenge_bits(cs, shape, comm_r_new, partition)
    with cs.batch(shape.challenges) as blk:
        _challenges(blk, shape, w, digests, partition_bits, h_select_bits, phi, (root_r_old, root_r_new),
                    apex_leaves)


def circuit(shape: SnapShape, witness: PartitionWitness | None = None, mode: str = "constraints"
            ) -> ConstraintSystem:
    """A new ConstraintSystem holding the partition circuit (`replay` set: SHA256 compressions are
    stamped in constraint mode)."""
    cs = ConstraintSystem(mode, replay=True)
    synthesize(cs, shape, witness)
    return cs


def count(shape: SnapShape) -> dict[str, int]:
    """Constraints, inputs (with ONE), aux variables and non-zeros (constraint mode, templates)."""
    return circuit(shape).stats()
