"""Public inputs of one PoRep partition circuit (rust-fil-proofs `stacked/circuit/proof.rs`
`generate_public_inputs`; each PoR inclusion contributes its packed path bits = the node index).

[replica_id, comm_d, comm_r], then per challenge c: c (tree_d path), the 6 DRG parents, the 8 expansion
parents (tree_c paths), c as u64, c (tree_r_last path), c (tree_c path of the challenged column):
3 + PER_CHALLENGE_INPUTS * challenges values (18 per challenge). The Groth16 IC has one more point
(the constant 1) in front.
"""
from __future__ import annotations

from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.porep.challenges import PoRepConfig, partition_challenges
from cuzk.porep.graph import SdrGraph
from cuzk.porep.registry import DEGREE

PER_CHALLENGE_INPUTS = 1 + DEGREE + 3  # c (tree_d), its 14 parents, c (u64), c (tree_r_last), c (tree_c)


def commitment_to_fr(value: bytes, name: str) -> int:
    """A 32-byte commitment / replica_id as the Fr it stands for (little-endian, must be < r)."""
    if not isinstance(value, (bytes, bytearray)) or len(value) != 32:
        raise InputError(f"{name} must be 32 bytes")
    v = int.from_bytes(value, "little")
    if v >= Fr.modulus:
        raise InputError(f"{name} is not a canonical Fr element")
    return v


def challenge_inputs(graph: SdrGraph, challenges: list[int]) -> list[int]:
    """The PER_CHALLENGE_INPUTS values of each challenge, concatenated."""
    out: list[int] = []
    for c in challenges:
        out += [c, *graph.parents_of(c), c, c, c]
    return out


def partition_public_inputs(config: PoRepConfig, replica_id: bytes, comm_d: bytes, comm_r: bytes,
                            seed: bytes | None, k: int, graph: SdrGraph | None = None) -> list[int]:
    """The public-input vector (Fr values as ints) of partition k."""
    head = [commitment_to_fr(replica_id, "replica_id"), commitment_to_fr(comm_d, "comm_d"),
            commitment_to_fr(comm_r, "comm_r")]
    challenges = partition_challenges(config, replica_id, seed, comm_r, k)
    return head + challenge_inputs(graph or SdrGraph.for_config(config), challenges)
