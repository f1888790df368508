"""WinningPoSt and WindowPoSt proved and verified end to end: vanilla proofs (from sealed sectors or
curio's bincode bytes) checked (cuzk.post.checks), adapted to the partition circuit's witness, proved
with the partition circuit's Groth16 parameters and verified before they are returned.

    proof = cuzk.winning_post("StackedDrgWinning2KiBV1", randomness, "sector-dir", allow_setup=True)
    assert cuzk.verify_winning_post("StackedDrgWinning2KiBV1", randomness, sector_id, comm_r, proof)

The circuit is compiled (its PCE and witness program, cuzk.r1cs) from one sector's recorded template
once and cached on disk (cuzk.post.pce_cache), then loaded once per process; its parameters are the
official file named by the registry's params_stem, else, with `allow_setup`, cuzk's own
(cuzk.porep.params_cache: generated once and cached). A proof is one partition: 192 bytes,
bellperson's encoding. WinningPoSt's one sector of 66 challenges is the circuit's 66 sectors
of one challenge (partition_witness); a short WindowPoSt partition repeats its last sector.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

from cuzk import groth16
from cuzk.backend import Backend, get_backend
from cuzk.errors import ProofFormatError
from cuzk.groth16 import PROOF_BYTES, CompiledCircuit, Proof, VerifyingKey
from cuzk.groth16.partition import prove_partition, verify_partition
from cuzk.porep.params_cache import LoadedParams, circuit_and_params, find_vk
from cuzk.porep.program_witness import FreeValuesWitness
from cuzk.porep.seal import Sector
from cuzk.post.bincode import read_sector_proof
from cuzk.post.challenges import check_randomness
from cuzk.post.checks import partition_public_inputs, verify_window_partition, verify_winning
from cuzk.post import pce_cache
from cuzk.post.errors import PoStInputError
from cuzk.post.prove_vanilla import sector_vanilla_proof
from cuzk.post.registry import PoStKind, RegisteredPoStProof, get_post_proof
from cuzk.post.vanilla import FallbackPoStSectorProof
from cuzk.post.witness import PartitionWitness, PostShape, free_values, sector_witnesses

__all__ = ["expect_kind", "load_post_circuit", "partition_witness", "post_circuit", "post_witness",
           "prove_partition_post", "vanilla_of", "verify_window_post", "verify_winning_post", "window_post",
           "winning_post"]

ProofName = RegisteredPoStProof | int | str
# a sealed sector (cuzk.porep.seal.Sector or its directory), or its vanilla proof (decoded or bincode bytes)
SectorSource = Sector | str | os.PathLike | bytes | bytearray | memoryview | FallbackPoStSectorProof


def post_circuit(shape: PostShape, progress: bool = False) -> CompiledCircuit:
    """The partition circuit of `shape` as its PCE with its witness program: read from its cache file
    (cuzk.post.pce_cache), built and written there when missing or stale (saying so on stderr when
    `progress`); kept for the process."""
    return pce_cache.cached(shape).kept(progress=progress)


def load_post_circuit(proof: ProofName, *, allow_setup: bool, progress: bool = False,
                      keep: bool = True) -> tuple[CompiledCircuit, LoadedParams]:
    """The partition circuit of a registered PoSt proof and its parameters (params_cache.circuit_and_params
    under the registry's params_stem: without `allow_setup` a missing official file fails before the
    circuit is built)."""
    p = get_post_proof(proof)
    return circuit_and_params(p.params_stem, functools.partial(post_circuit, p.circuit_shape, progress),
                              allow_setup=allow_setup, progress=progress, keep=keep)


def vanilla_of(proof: ProofName, randomness: bytes, sectors: Sequence[SectorSource],
               partition_index: int = 0) -> list[FallbackPoStSectorProof]:
    """One vanilla proof per sector source: a decoded one as is, bincode bytes read (PoStVanillaFormatError),
    a sealed sector (or its directory) proved for `randomness` at its position over all partitions."""
    p = get_post_proof(proof)
    if isinstance(sectors, (str, bytes, bytearray, memoryview, os.PathLike)) or not isinstance(sectors, Sequence):
        raise PoStInputError("sectors", f"must be a sequence of sectors, got {type(sectors).__name__}")
    out = []
    for i, s in enumerate(sectors):
        if isinstance(s, (bytes, bytearray, memoryview)):
            out.append(read_sector_proof(s, p, i))
        elif isinstance(s, FallbackPoStSectorProof):
            out.append(s)
        elif isinstance(s, (Sector, str, os.PathLike)):
            sector = s if isinstance(s, Sector) else Sector.open(Path(s))
            out.append(sector_vanilla_proof(p, randomness, sector, partition_index * p.sector_count + i))
        else:
            raise PoStInputError("sectors", f"sector {i}: expected a Sector, a sector directory or vanilla proof "
                                            f"bytes, got {type(s).__name__}")
    return out


def partition_witness(proof: ProofName, randomness: bytes, vanilla: Sequence[FallbackPoStSectorProof],
                      partition_index: int = 0) -> PartitionWitness:
    """The circuit's witness of one partition from its vanilla proofs, once they pass the checks
    (verify_winning / verify_window_partition: PoStVanillaProofError, PoStInputError), from the paths
    the checks read: WinningPoSt's sector unrolled to 66 circuit sectors of one challenge each
    (rust-fil-proofs `post_util.rs:296-330`), a WindowPoSt partition's sectors as they are (padded by
    the circuit)."""
    p = get_post_proof(proof)
    if p.kind is PoStKind.WINNING:
        s = vanilla[0].sector_proof
        sectors = [(vanilla[0].comm_r, s.comm_c, s.comm_r_last, [path])
                   for path in verify_winning(p, randomness, vanilla)]
    else:
        paths = verify_window_partition(p, randomness, vanilla, partition_index)
        sectors = [(v.comm_r, v.sector_proof.comm_c, v.sector_proof.comm_r_last, ps) for v, ps in zip(vanilla, paths)]
    return PartitionWitness(sector_witnesses(sectors))


def post_witness(proof: ProofName, randomness: bytes, sectors: Sequence[SectorSource],
                 partition_index: int = 0) -> FreeValuesWitness[PostShape, PartitionWitness]:
    """One partition's packed witness (its public inputs and cuzk.post.witness.free_values), its vanilla
    proofs (vanilla_of) checked first (PoStInputError, PoStVanillaFormatError, PoStVanillaProofError)."""
    p = get_post_proof(proof)
    randomness, partition_index = check_randomness(randomness), _partition(partition_index)
    vanilla = vanilla_of(p, randomness, sectors, partition_index)
    w = partition_witness(p, randomness, vanilla, partition_index)
    inputs = partition_public_inputs(p, randomness, [(v.sector_id, v.comm_r) for v in vanilla], partition_index)
    return FreeValuesWitness(free_values, p.circuit_shape, w, tuple(inputs))


def prove_partition_post(proof: ProofName, randomness: bytes, sectors: Sequence[SectorSource],
                         partition_index: int = 0, *, allow_setup: bool = False, backend: str | Backend = "auto",
                         progress: bool = False) -> bytes:
    """One partition's PoSt proof (192 bytes), verified before it is returned (ProofVerificationError)."""
    p = get_post_proof(proof)
    pw = post_witness(p, randomness, sectors, partition_index)
    inputs = list(pw.inputs)
    circuit, loaded = load_post_circuit(p, allow_setup=allow_setup, progress=progress, keep=False)
    be = get_backend(backend) if isinstance(backend, str) else backend
    full = pw.full(circuit, be)
    label = f"{p.name} (made with {loaded.files.describe()})"
    out = prove_partition(loaded.params, circuit, full, inputs, be, partition_index, p.name)
    verify_partition(groth16.prepare_verifying_key(loaded.vk), inputs, out, partition_index, label)
    return out.to_bytes()


def winning_post(proof: ProofName, randomness: bytes, sector: SectorSource, *, allow_setup: bool = False,
                 backend: str | Backend = "auto", progress: bool = False) -> bytes:
    """The WinningPoSt proof (192 bytes) of the challenged sector: a sealed sector (Sector or its
    directory) or its vanilla proof (FallbackPoStSectorProof or curio's bincode bytes). `proof`: a
    registered WinningPoSt proof name or id; `randomness`: 32 bytes, a canonical Fr; `allow_setup`:
    without the official parameters, use cuzk's own (their proofs are not the chain's)."""
    expect_kind(proof, PoStKind.WINNING)
    return prove_partition_post(proof, randomness, [sector], 0, allow_setup=allow_setup, backend=backend,
                                progress=progress)


def window_post(proof: ProofName, randomness: bytes, sectors: Sequence[SectorSource], partition_index: int = 0, *,
                allow_setup: bool = False, backend: str | Backend = "auto", progress: bool = False) -> bytes:
    """The WindowPoSt proof (192 bytes) of partition `partition_index`, over its sectors in order (1 to
    the proof's sectors per partition; each as winning_post takes it)."""
    expect_kind(proof, PoStKind.WINDOW)
    return prove_partition_post(proof, randomness, sectors, partition_index, allow_setup=allow_setup,
                                backend=backend, progress=progress)


def verify_winning_post(proof: ProofName, randomness: bytes, sector_id: int, comm_r: bytes, proof_bytes: bytes, *,
                        vk: VerifyingKey | str | os.PathLike | None = None) -> bool:
    """Whether `proof_bytes` is a valid WinningPoSt proof for the sector (sector_id, comm_r) and
    `randomness`; see verify_window_post for `vk`."""
    expect_kind(proof, PoStKind.WINNING)
    return _verify(proof, randomness, [(sector_id, comm_r)], proof_bytes, 0, vk)


def verify_window_post(proof: ProofName, randomness: bytes, sectors: Sequence[tuple[int, bytes]], proof_bytes: bytes,
                       partition_index: int = 0, *, vk: VerifyingKey | str | os.PathLike | None = None) -> bool:
    """Whether `proof_bytes` is a valid WindowPoSt proof of partition `partition_index` over `sectors`
    ((sector_id, comm_r) pairs, in the order proved). `vk`: a VerifyingKey or .vk file; by default the
    official one if present, else cuzk's own (ParamsNotFoundError without either). A proof of the wrong
    length or with an invalid point raises ProofFormatError."""
    expect_kind(proof, PoStKind.WINDOW)
    return _verify(proof, randomness, sectors, proof_bytes, partition_index, vk)


def expect_kind(proof: ProofName, kind: PoStKind) -> RegisteredPoStProof:
    """The registered PoSt proof `proof`, which must be of `kind` (PoStInputError naming registered_proof)."""
    p = get_post_proof(proof)
    if p.kind is not kind:
        raise PoStInputError("registered_proof", f"{p.name} is not a {kind.value}PoSt proof")
    return p


def _partition(index: object) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise PoStInputError("partition_index", f"must be an int >= 0, got {str(index)[:24]}")
    return index


def _verify(proof: ProofName, randomness: bytes, sectors: Sequence[tuple[int, bytes]], proof_bytes: bytes,
            partition_index: int, vk: VerifyingKey | str | os.PathLike | None) -> bool:
    p = get_post_proof(proof)
    inputs = partition_public_inputs(p, check_randomness(randomness), sectors, _partition(partition_index))
    if not isinstance(proof_bytes, (bytes, bytearray)) or len(proof_bytes) != PROOF_BYTES:
        got = len(proof_bytes) if isinstance(proof_bytes, (bytes, bytearray)) else type(proof_bytes).__name__
        raise ProofFormatError(f"a {p.name} proof is {PROOF_BYTES} bytes, got {got}")
    if vk is None:
        vk, _ = find_vk(p.params_stem)
    elif not isinstance(vk, VerifyingKey):
        vk = groth16.read_vk(vk)
    return groth16.verify(vk, inputs, Proof.from_bytes(bytes(proof_bytes)))
