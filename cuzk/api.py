"""The public API: seal a small sector, prove its PoRep (C2), verify the proof.

    sector = cuzk.seal("StackedDrg2KiBV1_1", "sector-dir", prover_id=..., sector_id=1, ticket=...)
    proof = cuzk.prove(sector, seed=seed)          # or cuzk.prove(c1) / cuzk.prove("c1.json")
    assert cuzk.verify(sector, proof, seed=seed)

prove() does what filecoin-ffi's seal_commit_phase2 does, in this order:
  1. the C1 output's vanilla proofs are verified (VanillaProofError names the partition, challenge and
     field; with a Sector the replica_id is also checked against prover_id, sector_id, ticket, comm_d);
  2. the partition circuit as its PCE (cuzk.porep.pce_cache: read from disk, built and cached on first
     use; kept in the process) and its Groth16 parameters (cuzk.porep.params_cache: official if
     present, else cuzk's own, generated once; each query vector read when its MSM runs);
  3. per partition: the witness (the circuit's witness program, cuzk.porep.program_witness, from the
     partition's vanilla data and public inputs: on the GPU with the CUDA backend, else on all
     cores), a check that
     its public inputs are the ones derived from replica_id, comm_d, comm_r and the seed, the
     evaluations a = A w, b = B w, c = C w from the PCE, the check a_r b_r = c_r on those same
     vectors, the Groth16 proof, and its verification. A proof that does not verify raises
     ProofVerificationError.
The result is the partitions' 192-byte proofs concatenated in partition order, as filecoin-ffi returns.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cuzk import groth16
from cuzk.backend import Backend, get_backend
from cuzk.errors import InputError, ProofFormatError
from cuzk.groth16 import PROOF_BYTES, AnyCircuit, CompiledCircuit, Proof, VerifyingKey
from cuzk.groth16.partition import prove_partition, verify_partition
from cuzk.porep import program_witness
from cuzk.porep.params_cache import LoadedParams, ParamsFiles, find_vk, load_or_generate, porep_stem
from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.circuit import StackedShape, partition_witnesses
from cuzk.porep.c1 import C1Output
from cuzk.porep.proving import partition_inputs
from cuzk.porep.seal import Sector, seal
from cuzk.util.progress import StageTimer

__all__ = ["ProveResult", "Sector", "as_c1", "prove", "prove_c1", "prove_partitions", "public_inputs",
           "seal", "verify"]

log = logging.getLogger("cuzk.api")
Source = C1Output | Sector | str | os.PathLike


@dataclass
class ProveResult:
    """prove_c1's answer: the proof bytes, the partition proofs, the parameter files used (and whether
    this call generated them), and wall seconds per stage ("witness.0", "prove.0.msm_h", ..., "total")."""

    proof: bytes
    partitions: list[Proof]
    params: ParamsFiles
    generated_params: bool
    timings: dict[str, float] = field(default_factory=dict)


def as_c1(source: Source, seed: bytes | None = None) -> tuple[C1Output, tuple[bytes, int] | None]:
    """A C1 output from a C1Output, a C1 JSON file, a Sector or a sector directory (these two need the
    32-byte interactive `seed`), with (prover_id, sector_id) when known (a sector)."""
    if isinstance(source, (str, os.PathLike)):
        source = _open_path(source, check_paths=True)
    if isinstance(source, C1Output):
        if seed is not None and _seed(seed, "the seed must be") != source.seed:
            raise InputError("the seed given differs from the C1 output's seed")
        return source, None
    if isinstance(source, Sector):
        seed = _seed(seed, "proving a sector needs an interactive seed of")
        c1 = C1Output(source.proof, source.vanilla_proofs(seed), source.comm_r, source.comm_d,
                      source.replica_id, seed, source.ticket)
        return c1, (source.prover_id, source.sector_id)
    raise InputError(f"expected a C1Output, a Sector or a path, got {type(source).__name__}")


def _open_path(source: str | os.PathLike, check_paths: bool) -> C1Output | Sector:
    """The sector directory or C1 JSON file at `source` (InputError for an empty or bytes path)."""
    name = os.fspath(source)
    if not isinstance(name, str) or not name:
        raise InputError(f"expected a non-empty str path, got {name!r:.60}")
    path = Path(name)
    return Sector.open(path) if path.is_dir() else C1Output.read(path, check_paths)


def public_inputs(c1: C1Output) -> list[list[int]]:
    """The public inputs (without ONE) of every partition, from the C1's replica_id, comm_d, comm_r and
    seed (challenges -> parents -> inputs)."""
    return [list(x) for x in partition_inputs(c1)]


def partition_circuit(config: PoRepConfig, progress: bool = True) -> CompiledCircuit:
    """The partition circuit of this PoRep config as its PCE with its witness program
    (cuzk.porep.program_witness.compiled: read from its cache file, or built and cached on first use,
    saying so when `progress`); the last one loaded is kept for the process."""
    return program_witness.compiled(config, progress)


def prove(source: Source, seed: bytes | None = None, *, backend: str | Backend = "auto",
          progress: bool = True) -> bytes:
    """The PoRep proof of `source` (see as_c1): 192 bytes per partition, in partition order, made by
    the process-wide engine for `backend` (cuzk.engine.default.default_engine: partitions pipelined,
    every proof verified; a second proof reuses the circuit, parameters and GPU tables). Without the
    official parameters cuzk's own stand in (made by a setup once; a warning says so once: the chain
    does not accept their proofs). A Backend instance proves without the engine (prove_c1)."""
    if not isinstance(backend, str):
        return prove_c1(source, seed, backend=backend, progress=progress).proof
    from cuzk.engine.default import default_engine

    c1, ids = as_c1(source, seed)
    return default_engine(backend).submit_porep(c1, ids=ids, progress=progress, allow_setup=True).result()


def prove_c1(source: Source, seed: bytes | None = None, *, backend: str | Backend = "auto",
             progress: bool = True, rng: np.random.Generator | None = None) -> ProveResult:
    """prove() with the details (ProveResult). `rng` fixes a parameter setup, if one runs (tests only)."""
    start = time.perf_counter()
    timings: dict[str, float] = {}
    c1, ids = as_c1(source, seed)
    name = c1.registered_proof.name
    say = StageTimer(f"prove {name}", echo=progress)
    be = get_backend(backend) if isinstance(backend, str) else backend

    t = time.perf_counter()
    c1.verify(*(ids or (None, None)))
    timings["vanilla"] = time.perf_counter() - t
    say.mark("vanilla proofs verified")

    shape = StackedShape.from_config(c1.config)
    t = time.perf_counter()
    circuit = partition_circuit(c1.config, progress)
    timings["circuit"] = time.perf_counter() - t
    say.mark(f"circuit ({circuit.num_constraints:,} constraints, PCE)")

    t = time.perf_counter()
    loaded = load_or_generate(porep_stem(c1.registered_proof.sector_size), circuit, progress=progress, keep=False,
                              rng=rng)
    timings["params"] = time.perf_counter() - t
    say.mark(f"parameters ({loaded.files.describe()})")

    inputs = public_inputs(c1)
    on_gpu = be.device is not None

    def witnesses() -> Iterable[np.ndarray]:
        for k, w in enumerate(partition_witnesses(c1)):
            t = time.perf_counter()
            packed = program_witness.pack(shape, w, inputs[k])
            out = program_witness.expand(circuit, [packed], be, host=not on_gpu)[0]
            timings[f"witness.{k}"] = time.perf_counter() - t
            yield out

    proofs = prove_partitions(loaded, circuit, witnesses(), inputs, be, timings, say)
    timings["total"] = time.perf_counter() - start
    log.info("prove %s: %d partition(s) on the %s backend in %.1f s", name, len(proofs), be.name,
             timings["total"])
    return ProveResult(b"".join(p.to_bytes() for p in proofs), proofs, loaded.files, loaded.generated, timings)


def prove_partitions(params: LoadedParams, circuit: AnyCircuit, witnesses: Iterable[np.ndarray],
                     inputs: Sequence[Sequence[int]], backend: Backend, timings: dict[str, float] | None = None,
                     progress: StageTimer | None = None) -> list[Proof]:
    """One verified Groth16 proof per partition: each witness (ONE, inputs, aux as (n, 4) Montgomery Fr)
    must carry the expected public inputs (InputError) and satisfy the circuit, checked on the
    prover's own evaluations (UnsatisfiedConstraintError naming the partition and the row); a proof
    that fails verification raises ProofVerificationError."""
    timings = {} if timings is None else timings
    pvk = groth16.prepare_verifying_key(params.vk)
    proofs = []
    for k, (w, x) in enumerate(zip(witnesses, inputs, strict=True)):
        proof = prove_partition(params.params, circuit, w, x, backend, k)
        timings.update({f"prove.{k}.{s}": v for s, v in proof.timings.items()})
        t = time.perf_counter()
        verify_partition(pvk, x, proof, k, f"made with {params.files.describe()}")
        timings[f"verify.{k}"] = time.perf_counter() - t
        if progress is not None:
            progress.mark(f"partition {k + 1}/{len(inputs)} proved and verified")
        proofs.append(proof)
    return proofs


def split_proof(proof: bytes, partitions: int) -> list[Proof]:
    """The partition proofs of a concatenated proof (ProofFormatError on a wrong length or encoding)."""
    if not isinstance(proof, (bytes, bytearray)) or len(proof) != PROOF_BYTES * partitions:
        size = len(proof) if isinstance(proof, (bytes, bytearray)) else type(proof).__name__
        raise ProofFormatError(f"expected {partitions} x {PROOF_BYTES} = {PROOF_BYTES * partitions} proof bytes, "
                               f"got {size}")
    return [Proof.from_bytes(bytes(proof[i:i + PROOF_BYTES])) for i in range(0, len(proof), PROOF_BYTES)]


def verify(source: Source, proof: bytes, seed: bytes | None = None, *,
           vk: VerifyingKey | str | os.PathLike | None = None) -> bool:
    """Whether `proof` (as prove returns it) is valid for the public values of `source` (see as_c1;
    a C1 file is read without its Merkle paths being checked). `vk`: a VerifyingKey or .vk file;
    by default the official one if present, else cuzk's own (ParamsNotFoundError without either).
    A proof of the wrong length or with an invalid point raises ProofFormatError."""
    if isinstance(source, (str, os.PathLike)):
        source = _open_path(source, check_paths=False)
    if isinstance(source, Sector):
        c1 = C1Output(source.proof, [], source.comm_r, source.comm_d, source.replica_id,
                      _seed(seed, "verifying a sector's proof needs an interactive seed of"), source.ticket)
    else:
        c1, _ = as_c1(source, seed)
    proofs = split_proof(proof, c1.config.partitions)
    if vk is None:
        vk, files = find_vk(porep_stem(c1.registered_proof.sector_size))
        log.info("verifying with %s", files.vk)
    elif not isinstance(vk, VerifyingKey):
        vk = groth16.read_vk(vk)
    return groth16.verify_batch(vk, public_inputs(c1), proofs)


def _seed(seed: object, what: str) -> bytes:
    """`seed` as bytes: it must be 32 bytes (bytes, bytearray or a byte memoryview), else InputError."""
    if isinstance(seed, memoryview) and seed.format in ("B", "b", "c") and seed.ndim == 1:
        seed = bytes(seed)
    if not isinstance(seed, (bytes, bytearray)) or len(seed) != 32:
        got = f"{len(seed)} bytes" if isinstance(seed, (bytes, bytearray)) else f"a {type(seed).__name__}"
        raise InputError(f"{what} 32 bytes, got {got}")
    return bytes(seed)
