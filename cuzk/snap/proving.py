"""SnapDeals (EmptySectorUpdate) partitions proved and verified end to end: each vanilla PartitionProof
(cuzk.snap.vanilla, decoded or bincode bytes, or curio's snap-vproof.json) checked, adapted to the
partition circuit's witness (cuzk.snap.witness), proved with the circuit's Groth16 parameters and
verified before it is returned.

    proofs = cuzk.snap_prove("StackedDrg2KiBV1", comm_r_old, comm_r_new, comm_d_new, vanilla, allow_setup=True)
    assert cuzk.snap_verify("StackedDrg2KiBV1", comm_r_old, comm_r_new, comm_d_new, proofs)

The circuit is compiled (its PCE and witness program, cuzk.r1cs) once and cached on disk
(cuzk.snap.pce_cache), then loaded once per process; a partition's witness is packed (snap_witness:
public inputs and the free values of cuzk.snap.witness.free_values) and expanded by the program, on
the proving backend (on a GPU it stays there; the engine's GPU workers do the same,
cuzk.engine.expansion). Parameters: the official file named by the registry's params_stem, else,
with `allow_setup`, cuzk's own (cuzk.porep.params_cache: generated once, cached). A proof is one
partition: 192 bytes, bellperson's encoding.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np

from cuzk import groth16
from cuzk.backend import Backend, get_backend
from cuzk.errors import InputError, ProofFormatError
from cuzk.groth16 import PROOF_BYTES, CompiledCircuit, Proof, VerifyingKey
from cuzk.groth16.partition import prove_partition, verify_partition
from cuzk.porep.circuit import levels_from_paths
from cuzk.porep.params_cache import LoadedParams, circuit_and_params, find_vk
from cuzk.porep.program_witness import FreeValuesWitness
from cuzk.porep.trees import fr_from_le
from cuzk.snap import pce_cache
from cuzk.snap import vanilla as snap_vanilla
from cuzk.snap.bincode import read_partition_proof, read_vproof_json
from cuzk.snap.circuit import circuit as snap_constraints
from cuzk.snap.derive import commitment_fr
from cuzk.snap.registry import RegisteredUpdateProof, get_update_proof
from cuzk.snap.vanilla import PartitionProof, PublicInputs
from cuzk.snap.witness import PartitionWitness, SnapShape, free_values

__all__ = ["load_snap_circuit", "partition_witness", "prove_partition_snap", "public_inputs", "read_proof",
           "snap_circuit", "snap_prove", "snap_verify", "snap_witness", "synthesized_witness", "vanilla_of"]

ProofName = RegisteredUpdateProof | int | str
# one partition's vanilla proof: decoded, or its bincode bytes
VanillaSource = PartitionProof | bytes | bytearray | memoryview


def snap_circuit(shape: SnapShape, progress: bool = False) -> CompiledCircuit:
    """The partition circuit of `shape` as its PCE with its witness program: read from its cache file
    (cuzk.snap.pce_cache), built and written there when missing or stale (saying so on stderr when
    `progress`); kept for the process."""
    return pce_cache.cached(shape).kept(progress=progress)


def load_snap_circuit(proof: ProofName, *, allow_setup: bool, progress: bool = False,
                      keep: bool = True) -> tuple[CompiledCircuit, LoadedParams]:
    """The partition circuit of a registered update proof and its parameters (params_cache.circuit_and_params
    under the registry's params_stem: without `allow_setup` a missing official file fails before the
    circuit is built)."""
    p = get_update_proof(proof)
    return circuit_and_params(p.params_stem, functools.partial(snap_circuit, p.circuit_shape, progress),
                              allow_setup=allow_setup, progress=progress, keep=keep)


def public_inputs(comm_r_old: bytes, comm_r_new: bytes, comm_d_new: bytes, k: int) -> PublicInputs:
    """Partition k's public inputs; each commitment 32 bytes, a canonical Fr (InputError naming it)."""
    for name, value in (("comm_r_old", comm_r_old), ("comm_r_new", comm_r_new), ("comm_d_new", comm_d_new)):
        commitment_fr(value, name)
    return PublicInputs(k, bytes(comm_r_old), bytes(comm_d_new), bytes(comm_r_new))


def vanilla_of(proof: ProofName, vanilla_proofs: Sequence[VanillaSource] | str | bytes) -> list[PartitionProof]:
    """One decoded PartitionProof per partition: from curio's snap-vproof.json (str or bytes, the whole
    file) or a sequence of decoded proofs / bincode bytes (SnapVanillaFormatError naming the partition)."""
    p = get_update_proof(proof)
    if isinstance(vanilla_proofs, (str, bytes, bytearray, memoryview)):
        return read_vproof_json(vanilla_proofs, p)
    if not isinstance(vanilla_proofs, Sequence):
        raise InputError(f"vanilla_proofs must be a sequence of partition proofs or snap-vproof.json, "
                         f"got {type(vanilla_proofs).__name__}")
    if len(vanilla_proofs) != p.partitions:
        raise InputError(f"vanilla_proofs: {len(vanilla_proofs)} partition proofs, {p.name} has {p.partitions}")
    out = []
    for k, v in enumerate(vanilla_proofs):
        if isinstance(v, (bytes, bytearray, memoryview)):
            v = read_partition_proof(v, p, k)
        elif not isinstance(v, PartitionProof):
            raise InputError(f"vanilla_proofs[{k}]: expected a PartitionProof or its bincode bytes, "
                             f"got {type(v).__name__}")
        out.append(v)
    return out


def _ints(nodes: Sequence[bytes]) -> list[int]:
    return [int.from_bytes(n, "little") for n in nodes]


def partition_witness(proof: ProofName, public: PublicInputs, vanilla: PartitionProof) -> PartitionWitness:
    """The circuit's witness of partition `public.k` from its vanilla proof, once that passes
    cuzk.snap.vanilla.verify_partition (SnapVanillaProofError): TreeD's paths up to the apex leaf, the
    siblings above the apex root as the partition path; TreeR paths, leaves and roots as they are."""
    p = get_update_proof(proof)
    snap_vanilla.verify_partition(p, public, vanilla)
    cps = vanilla.challenge_proofs
    r_old, d_new, r_new = ([getattr(cp, f) for cp in cps] for f in ("proof_r_old", "proof_d_new", "proof_r_new"))
    height = p.circuit_shape.tree_d_levels
    above = d_new[0].siblings[height + p.circuit_shape.apex_bit_len:]
    leaves = lambda paths: fr_from_le(np.frombuffer(b"".join(q.leaf for q in paths), np.uint8))  # noqa: E731
    comm_r_old, comm_d_new, comm_r_new, comm_c = _ints((public.comm_r_old, public.comm_d_new, public.comm_r_new,
                                                        vanilla.comm_c))
    return PartitionWitness(
        public.k, comm_r_old, comm_d_new, comm_r_new, comm_c, *_ints((r_old[0].root, r_new[0].root)),
        fr_from_le(np.frombuffer(b"".join(vanilla.apex_leafs), np.uint8)).reshape(-1, 4),
        fr_from_le(np.frombuffer(b"".join(s[0] for s in above), np.uint8)).reshape(-1, 4),
        leaves(r_old), leaves(d_new), levels_from_paths(r_old), levels_from_paths(r_new),
        levels_from_paths(d_new)[:height])


def snap_witness(shape: SnapShape, w: PartitionWitness) -> FreeValuesWitness[SnapShape, PartitionWitness]:
    """Partition w.k's packed witness from its checked PartitionWitness: its public inputs
    ([k_and_h_select, comm_r_old, comm_d_new, comm_r_new]) and cuzk.snap.witness.free_values."""
    return FreeValuesWitness(free_values, shape, w, tuple(w.public_inputs(shape)))


def synthesized_witness(shape: SnapShape, w: PartitionWitness) -> np.ndarray:
    """The partition's full assignment by witness-mode synthesis of the circuit (the gadgets computing
    every value on the host): the reference the witness program is tested against."""
    return snap_constraints(shape, w, mode="witness").witness()


def prove_partition_snap(proof: ProofName, public: PublicInputs, vanilla: PartitionProof, *,
                         allow_setup: bool = False, backend: str | Backend = "auto",
                         progress: bool = False) -> bytes:
    """Partition `public.k`'s proof (192 bytes), verified before it is returned (ProofVerificationError)."""
    p = get_update_proof(proof)
    return _prove(p, public, partition_witness(p, public, vanilla), allow_setup, backend, progress)


def _prove(p: RegisteredUpdateProof, public: PublicInputs, w: PartitionWitness, allow_setup: bool,
           backend: str | Backend, progress: bool) -> bytes:
    inputs = public.to_ints(p)
    circuit, loaded = load_snap_circuit(p, allow_setup=allow_setup, progress=progress, keep=False)
    be = get_backend(backend) if isinstance(backend, str) else backend
    label = f"{p.name} (made with {loaded.files.describe()})"
    full = snap_witness(p.circuit_shape, w).full(circuit, be)
    out = prove_partition(loaded.params, circuit, full, inputs, be, public.k, p.name)
    verify_partition(groth16.prepare_verifying_key(loaded.vk), inputs, out, public.k, label)
    return out.to_bytes()


def snap_prove(proof: ProofName, comm_r_old: bytes, comm_r_new: bytes, comm_d_new: bytes,
               vanilla_proofs: Sequence[VanillaSource] | str | bytes, *, allow_setup: bool = False,
               backend: str | Backend = "auto", progress: bool = False) -> list[bytes]:
    """The SnapDeals proof of every partition (192 bytes each, in order) from their vanilla proofs (see
    vanilla_of). `proof`: a registered update proof name or id; the commitments: 32 bytes each;
    `allow_setup`: without the official parameters, use cuzk's own (their proofs are not the chain's).
    Every vanilla proof is checked before any is proved."""
    p = get_update_proof(proof)
    return [_prove(p, public, w, allow_setup, backend, progress)
            for public, w in checked_partitions(p, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs)]


def checked_partitions(proof: ProofName, comm_r_old: bytes, comm_r_new: bytes, comm_d_new: bytes,
                       vanilla_proofs: Sequence[VanillaSource] | str | bytes) -> list[tuple[PublicInputs, PartitionWitness]]:
    """Each partition's (public inputs, circuit witness), in order, every vanilla proof checked first
    (partition_witness): what snap_prove proves and the engine's tasks carry (as snap_witness)."""
    p = get_update_proof(proof)
    publics = [public_inputs(comm_r_old, comm_r_new, comm_d_new, k) for k in range(p.partitions)]
    vanilla = vanilla_of(p, vanilla_proofs)
    return [(public, partition_witness(p, public, v)) for public, v in zip(publics, vanilla)]


def read_proof(proof: ProofName, k: int, proof_bytes: bytes) -> Proof:
    """Partition k's proof decoded (ProofFormatError naming the partition: a wrong length or bad point)."""
    p = get_update_proof(proof)
    if not isinstance(proof_bytes, (bytes, bytearray)) or len(proof_bytes) != PROOF_BYTES:
        got = len(proof_bytes) if isinstance(proof_bytes, (bytes, bytearray)) else type(proof_bytes).__name__
        raise ProofFormatError(f"{p.name} partition {k}: a proof is {PROOF_BYTES} bytes, got {got}")
    try:
        return Proof.from_bytes(bytes(proof_bytes))
    except ProofFormatError as e:
        raise ProofFormatError(f"{p.name} partition {k}: {e}") from None


def snap_verify(proof: ProofName, comm_r_old: bytes, comm_r_new: bytes, comm_d_new: bytes,
                proofs: Sequence[bytes], *, vk: VerifyingKey | str | os.PathLike | None = None) -> bool:
    """Whether `proofs` (one per partition, in order) are a valid SnapDeals proof of the update
    comm_r_old -> comm_r_new with data comm_d_new. `vk`: a VerifyingKey or .vk file; by default the
    official one if present, else cuzk's own (ParamsNotFoundError without either). A proof of the
    wrong length or with an invalid point raises ProofFormatError."""
    p = get_update_proof(proof)
    if isinstance(proofs, (bytes, bytearray, str)) or not isinstance(proofs, Sequence):
        raise InputError(f"proofs must be a sequence of {PROOF_BYTES}-byte proofs, got {type(proofs).__name__}")
    if len(proofs) != p.partitions:
        raise InputError(f"proofs: {len(proofs)} partition proofs, {p.name} has {p.partitions}")
    publics = [public_inputs(comm_r_old, comm_r_new, comm_d_new, k) for k in range(p.partitions)]
    decoded = [read_proof(p, k, b) for k, b in enumerate(proofs)]
    if vk is None:
        vk, _ = find_vk(p.params_stem)
    elif not isinstance(vk, VerifyingKey):
        vk = groth16.read_vk(vk)
    return all(groth16.verify(vk, public.to_ints(p), d) for public, d in zip(publics, decoded))
