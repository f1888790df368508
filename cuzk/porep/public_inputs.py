"""Public inputs of one PoRep partition circuit (rust-fil-proofs `stacked/circuit/proof.rs`
`generate_public_inputs`; each PoR inclusion contributes its packed path bits = the node index).

[replica_id, comm_d, comm_r], then per challenge c: c (tree_d path), the 6 DRG parents, the 8 expansion
parents (tree_c paths), c as u64, c (tree_r_last path), c (tree_c path of the challenged column):
3 + 18 * challenges values. The Groth16 IC has one more point (the constant 1) in front.
"""
from __future__ import annotations

import hashlib
import struct

import numpy as np

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.porep.challenges import PoRepConfig, chacha20_block, partition_challenges
from cuzk.porep.graph import FEISTEL_ROUNDS, SdrGraph, feistel_precompute
from cuzk.porep.registry import BASE_DEGREE, DEGREE, EXP_DEGREE, ApiVersion

PER_CHALLENGE = 1 + DEGREE + 3


def commitment_to_fr(value: bytes, name: str) -> int:
    """A 32-byte commitment / replica_id as the Fr it stands for (little-endian, must be < r)."""
    if not isinstance(value, (bytes, bytearray)) or len(value) != 32:
        raise InputError(f"{name} must be 32 bytes")
    v = int.from_bytes(value, "little")
    if v >= Fr.modulus:
        raise InputError(f"{name} is not a canonical Fr element")
    return v


def graph_of(config: PoRepConfig) -> SdrGraph:
    return SdrGraph(config.nodes, config.porep_id, config.api_version)


def node_parents(graph: SdrGraph, node: int) -> list[int]:
    """The 14 parents of one node (6 DRG, 8 expansion), as `graph.parents` gives them, computed
    without building the graph's Feistel tables or launching its kernels (cheap for a few nodes)."""
    if not 0 <= node < graph.nodes:
        raise InputError(f"node {node} outside [0, {graph.nodes})")
    pred_first = graph.api_version is not ApiVersion.V1_0_0
    base = [0] * BASE_DEGREE
    if node >= 2:
        key = graph.drg_seed + struct.pack("<I", node)
        words = struct.unpack("<32I", chacha20_block(key, bytes(12), 0, 8) + chacha20_block(key, bytes(12), 1, 8))
        meta = node * (BASE_DEGREE - 1)
        n_buckets = meta.bit_length()  # ceil(log2(meta)): 5v is never a power of two
        for i in range(BASE_DEGREE - 1):
            r1 = words[4 * i] | words[4 * i + 1] << 32
            r2 = words[4 * i + 2] | words[4 * i + 3] << 32
            largest = min(meta, 1 << (r1 % n_buckets + 1))
            smallest = max(2, largest >> 1)
            parent = (meta - smallest - r2 % (largest - smallest + 1)) // (BASE_DEGREE - 1)
            base[i + pred_first] = node - 1 if parent == node else parent
        base[0 if pred_first else BASE_DEGREE - 1] = node - 1
    left_mask, right_mask, half = feistel_precompute(EXP_DEGREE * graph.nodes)
    keys = [k.to_bytes(8, "big") for k in graph.feistel_keys[:FEISTEL_ROUNDS]]

    def permute(x: int) -> int:
        left, right = (x & left_mask) >> half, x & right_mask
        for key in keys:
            f = int.from_bytes(hashlib.blake2b(right.to_bytes(8, "big") + key).digest()[:8], "big")
            left, right = right, left ^ (f & right_mask)
        return left << half | right

    exp = []
    for i in range(EXP_DEGREE):
        u = permute(EXP_DEGREE * node + i)
        while u >= EXP_DEGREE * graph.nodes:
            u = permute(u)
        if not pred_first:  # API 1.0 truncates to u32
            u &= 0xFFFFFFFF
        exp.append(u // EXP_DEGREE)
    return base + exp


def challenge_inputs(graph: SdrGraph, challenges: list[int]) -> list[int]:
    """The 18 values of each challenge, concatenated."""
    out: list[int] = []
    for c in challenges:
        out += [c, *node_parents(graph, c), c, c, c]
    return out


def partition_public_inputs(config: PoRepConfig, replica_id: bytes, comm_d: bytes, comm_r: bytes,
                            seed: bytes | None, k: int, graph: SdrGraph | None = None) -> list[int]:
    """The public-input vector (Fr values as ints) of partition k."""
    head = [commitment_to_fr(replica_id, "replica_id"), commitment_to_fr(comm_d, "comm_d"),
            commitment_to_fr(comm_r, "comm_r")]
    challenges = partition_challenges(config, replica_id, seed, comm_r, k)
    return head + challenge_inputs(graph or graph_of(config), challenges)


def public_inputs_fr(values: list[int]) -> np.ndarray:
    """The same vector as (n, 4) Montgomery Fr limbs, as the prover consumes it."""
    return Fr.from_ints(values)
