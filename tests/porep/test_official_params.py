"""Official (Filecoin ceremony) v28 PoRep parameters: the regression records' proofs verify against the
official verifying keys, and a freshly sealed 2KiB sector proved with the official .params verifies
with the official .vk. The official files are not shipped: those tests skip, naming the file and
directory looked in ($FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cuzk
from cuzk import groth16
from cuzk.api import prove_c1, split_proof
from cuzk.porep.params_cache import DEFAULT_OFFICIAL_DIR, OFFICIAL, official_files, porep_stem

from ._records import load_records, record_config, record_public_inputs

SIZES = {2 << 10: "2KiB", 8 << 20: "8MiB", 512 << 20: "512MiB", 32 << 30: "32GiB", 64 << 30: "64GiB"}


def official_or_skip(sector_size: int, ext: str) -> Path:
    """The official .params / .vk file of a sector size's PoRep circuit; pytest.skip naming the file and
    the directory when it is absent."""
    files = official_files(porep_stem(sector_size))
    path = files.path(ext)
    if not path.is_file():
        pytest.skip(f"official {SIZES[sector_size]} PoRep .{ext} not found: expected {path.name} in "
                    f"{files.directory} (set FIL_PROOFS_PARAMETER_CACHE or fetch the v28 parameters)")
    return path


def test_official_names_and_skip(tmp_path, monkeypatch):
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    assert official_files(porep_stem(2048)).directory == Path(DEFAULT_OFFICIAL_DIR)
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path))
    name = ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-"
            "032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f.vk")
    with pytest.raises(pytest.skip.Exception) as skipped:
        official_or_skip(2048, "vk")
    assert name in str(skipped.value) and str(tmp_path) in str(skipped.value)
    assert "poseidon_hasher-8-8-0-sha256_hasher-82a357d2" in porep_stem(32 << 30)
    assert "poseidon_hasher-8-8-2-sha256_hasher-96f1b4a0" in porep_stem(64 << 30)
    for size in OFFICIAL:  # found once present, by the official name only (not cuzk's own)
        (tmp_path / f"{porep_stem(size)}.vk").write_bytes(b"")
        (tmp_path / f"cuzk-{porep_stem(size)}.params").write_bytes(b"")
        assert official_or_skip(size, "vk") == tmp_path / f"{porep_stem(size)}.vk"
        with pytest.raises(pytest.skip.Exception):
            official_or_skip(size, "params")


@pytest.fixture(scope="module")
def records():
    return load_records()


@pytest.mark.parametrize("size", sorted(SIZES), ids=list(SIZES.values()))
def test_records_verify(records, size):
    vk = groth16.prepare_verifying_key(groth16.read_vk(official_or_skip(size, "vk")))
    mine = [r for r in records if r["porep_config"]["sector_size"] == size]
    assert mine
    for r in mine:
        cfg = record_config(r)
        proofs = split_proof(bytes(r["proof"]), cfg.partitions)
        for k, (x, proof) in enumerate(zip(record_public_inputs(r), proofs, strict=True)):
            assert groth16.verify(vk, x, proof), f"record sector_id={r['sector_id']} partition {k}"
        bad = list(record_public_inputs(r)[0])
        bad[0] = (bad[0] + 1) % (1 << 254)  # another replica_id
        assert not groth16.verify(vk, bad, proofs[0])


@pytest.mark.slow
def test_prove_2kib_with_official_params(tmp_path, rng):
    official_or_skip(2048, "params")
    vk_path = official_or_skip(2048, "vk")
    ids = dict(prover_id=bytes(rng.integers(0, 256, 32, dtype=np.uint8)), sector_id=int(rng.integers(1 << 62)),
               ticket=bytes(rng.integers(0, 256, 32, dtype=np.uint8)))
    seed = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    sector = cuzk.seal("StackedDrg2KiBV1_1", tmp_path / "sector", progress=False, **ids)
    result = prove_c1(sector, seed, backend="cpu", progress=False)
    assert result.params.official and not result.generated_params
    assert cuzk.verify(sector, result.proof, seed=seed, vk=vk_path)
    flipped = bytes([seed[0] ^ 1]) + seed[1:]
    assert not cuzk.verify(sector, result.proof, seed=flipped, vk=vk_path)
