"""Checks of fallback PoSt vanilla proofs, partition padding and public inputs.

As rust-fil-proofs `storage-proofs-post/src/fallback/vanilla.rs` `verify_all_partitions` (run by
filecoin-proofs before proving, `api/post_util.rs:209-212, 334-337`): per sector comm_r =
Poseidon-2(comm_c, comm_r_last); per challenge the inclusion path hashes (Poseidon of each level's
arity) from the leaf to its root, root == comm_r_last, and the proven leaf index equals the derived
challenge. Padding (`post_util.rs:274-276, 316-318`, `compound.rs:103-108`) repeats the last sector.
Public inputs (`compound.rs:42-110`, ../shared/POST_SNAP.md §A4): per sector comm_r, then one leaf
index per challenge.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuzk.errors import NonCanonicalError
from cuzk.porep.trees import MerklePath, compute_roots, fr_from_le, fr_to_le, poseidon_nodes
from cuzk.post.challenges import challenge_index, check_bytes32, leaf_challenge, sector_challenges
from cuzk.post.errors import PoStInputError, PoStVanillaProofError
from cuzk.post.registry import PoStKind, RegisteredPoStProof, get_post_proof
from cuzk.post.vanilla import FallbackPoStSectorProof
from cuzk.post.witness import public_inputs


def verify_sector(proof: RegisteredPoStProof | int | str, randomness: bytes, sp: FallbackPoStSectorProof,
                  sector_index: int, sector: int | None = None) -> list[MerklePath]:
    """Check one sector's vanilla proof, `sector_index` being its position over all partitions (for
    the V1_0 challenge index) and `sector` the position named in errors (PoStVanillaProofError);
    its checked inclusion paths."""
    return _verify_sectors(get_post_proof(proof), randomness, [(sp, sector_index, sector)])[0]


def _verify_sectors(p: RegisteredPoStProof, randomness: bytes,
                    items: Sequence[tuple[FallbackPoStSectorProof, int, int | None]]) -> list[list[MerklePath]]:
    """Check (vanilla proof, position over all partitions, position named in errors) items: every
    sector's comm_r hashed in one batch, then every challenge's path (compute_roots batches the levels
    of all of them), so a 2,349-sector partition makes a few large hash calls, not thousands of small
    ones. Each item's checked inclusion paths."""
    for sp, _, sector in items:
        if len(sp.sectors) != 1:
            raise PoStVanillaProofError(sector, None, "sectors", f"{len(sp.sectors)} sector proofs, expected 1")
    _check_comm_rs(items)
    paths = [(sector, _sector_paths(p, randomness, sp, index, sector)) for sp, index, sector in items]
    _check_roots(paths)
    return [ps for _, ps in paths]


def _check_comm_rs(items: Sequence[tuple[FallbackPoStSectorProof, int, int | None]]) -> None:
    """comm_r == Poseidon-2(comm_c, comm_r_last) for every item; a non-canonical commitment is then
    looked for sector by sector, to name its sector."""
    pairs = [sp.sector_proof.comm_c + sp.sector_proof.comm_r_last for sp, _, _ in items]
    try:
        hashed = fr_to_le(poseidon_nodes(fr_from_le(np.frombuffer(b"".join(pairs), np.uint8)).reshape(-1, 2, 4)))
    except NonCanonicalError:
        for pair, (_, _, sector) in zip(pairs, items):
            try:
                fr_from_le(np.frombuffer(pair, np.uint8))
            except NonCanonicalError:
                raise PoStVanillaProofError(sector, None, "comm_c / comm_r_last", "not a canonical Fr") from None
        raise
    for h, (sp, _, sector) in zip(hashed, items):
        if h.tobytes() != sp.comm_r:
            raise PoStVanillaProofError(sector, None, "comm_r", "is not Poseidon-2(comm_c, comm_r_last)")


def _sector_paths(p: RegisteredPoStProof, randomness: bytes, sp: FallbackPoStSectorProof, sector_index: int,
                  sector: int | None) -> list[MerklePath]:
    """One sector's inclusion paths, once their count, roots and leaf indices are the challenged ones."""
    s = sp.sector_proof
    challenges = sector_challenges(p, randomness, sp.sector_id, sector_index)
    if len(s.inclusion_proofs) != len(challenges):
        raise PoStVanillaProofError(sector, None, "inclusion_proofs",
                                    f"{len(s.inclusion_proofs)} proofs, expected {len(challenges)}")
    paths = []
    for n, m in enumerate(s.inclusion_proofs):
        if m.root != s.comm_r_last:
            raise PoStVanillaProofError(sector, n, "root", "is not comm_r_last")
        if m.leaf_index() != challenges[n]:
            raise PoStVanillaProofError(sector, n, "leaf index",
                                        f"proves leaf {m.leaf_index()}, challenged {challenges[n]}")
        paths.append(m.merkle_path(p.leaves, p.tree_shape))
    return paths


def _check_roots(sectors: Sequence[tuple[int | None, list[MerklePath]]]) -> None:
    """Every path hashes to its root (comm_r_last), all sectors' paths hashed at once; a non-canonical
    leaf or hash is then looked for sector by sector, to name its sector."""
    try:
        roots = iter(compute_roots([path for _, paths in sectors for path in paths]))
    except NonCanonicalError:
        for sector, paths in sectors:
            try:
                compute_roots(paths)
            except NonCanonicalError:
                raise PoStVanillaProofError(sector, None, "inclusion path",
                                            "a leaf or hash is not a canonical Fr") from None
        raise
    for sector, paths in sectors:
        for n, (path, root) in enumerate(zip(paths, roots)):
            if root != path.root:
                raise PoStVanillaProofError(sector, n, "inclusion path", "does not hash to comm_r_last")


def verify_window_partition(proof: RegisteredPoStProof | int | str, randomness: bytes,
                            sectors: Sequence[FallbackPoStSectorProof], partition_index: int = 0) -> list[list[MerklePath]]:
    """Check a WindowPoSt partition's vanilla proofs (curio: that partition's sectors, sorted); each
    sector's checked inclusion paths."""
    p = get_post_proof(proof)
    if p.kind is not PoStKind.WINDOW:
        raise PoStInputError("registered_proof", f"{p.name} is not a WindowPoSt proof")
    if not 1 <= len(sectors) <= p.sector_count:
        raise PoStInputError("vanilla_proofs", f"{len(sectors)} sectors, expected 1 to {p.sector_count}")
    return _verify_sectors(p, randomness, [(sp, partition_index * p.sector_count + i, i) for i, sp in enumerate(sectors)])


def verify_winning(proof: RegisteredPoStProof | int | str, randomness: bytes,
                   sectors: Sequence[FallbackPoStSectorProof]) -> list[MerklePath]:
    """Check a WinningPoSt request's vanilla proof: exactly one sector, 66 challenges; their checked
    inclusion paths."""
    p = get_post_proof(proof)
    if p.kind is not PoStKind.WINNING:
        raise PoStInputError("registered_proof", f"{p.name} is not a WinningPoSt proof")
    if len(sectors) != 1:
        raise PoStInputError("vanilla_proofs", f"{len(sectors)} sectors, WinningPoSt proves exactly 1")
    return verify_sector(p, randomness, sectors[0], 0, 0)


def partition_public_inputs(proof: RegisteredPoStProof | int | str, randomness: bytes,
                            sectors: Sequence[tuple[int, bytes]], partition_index: int = 0) -> list[int]:
    """The Groth16 public inputs (after ONE) of one partition of (sector_id, comm_r) pairs: per circuit
    sector comm_r as an integer, then its challenge_count leaf indices; padded by repeating the last
    sector's inputs. WinningPoSt takes its one sector and repeats it as the circuit's 66 sectors, sector
    i getting challenge index i."""
    p = get_post_proof(proof)
    if p.kind is PoStKind.WINNING:
        if len(sectors) != 1:
            raise PoStInputError("sectors", f"{len(sectors)} sectors, WinningPoSt proves exactly 1")
        sectors = list(sectors) * p.sector_count
    comm_rs, challenges = [], []
    for i, (sector_id, comm_r) in enumerate(sectors):
        comm_rs.append(int.from_bytes(check_bytes32("comm_r", comm_r), "little"))
        sector_index = partition_index * p.sector_count + i
        challenges.append([leaf_challenge(randomness, sector_id,
                                          challenge_index(p.api_version, sector_index, p.challenge_count, n), p.leaves)
                           for n in range(p.challenge_count)])
    return public_inputs(p.circuit_shape, comm_rs, challenges)
