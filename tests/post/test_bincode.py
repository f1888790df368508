"""The bincode reader and writer on every tree shape (POST_SNAP.md §A6 sizes), and the reader's refusals:
truncated, too long, wrong variant, wrong lengths or indices, each naming the sector and byte offset."""
import struct

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.porep.trees import level_arities
from cuzk.post.bincode import read_sector_proof, write_sector_proof
from cuzk.post.errors import PoStVanillaFormatError
from cuzk.post.registry import get_post_proof
from cuzk.post.vanilla import FallbackPoStSectorProof, MerkleProof, PathElement, ProofData, SectorProof

# registered proof -> (one inclusion proof, one sector's bytes) from §A6
SIZES = {10: (556, 5680), 11: (1516, None), 12: (1996, None), 13: (2484, 24960), 14: (2540, None),
         0: (556, 36816), 3: (2484, 164064)}


def random_proof(pid: int, rng) -> FallbackPoStSectorProof:
    p = get_post_proof(pid)
    b32 = lambda: rng.integers(0, 256, 32, dtype=np.uint8).tobytes()  # noqa: E731
    arities = level_arities(p.leaves, p.tree_shape)
    tail = (p.tree_shape[1] > 0) + (p.tree_shape[2] > 0)
    proofs = []
    for _ in range(p.vanilla_challenges):
        levels = tuple(PathElement(tuple(b32() for _ in range(a - 1)), int(rng.integers(a))) for a in arities)
        base, rest = levels[:len(levels) - tail], levels[len(levels) - tail:]
        proofs.append(MerkleProof(b32(), b32(), base, rest[:1] if p.tree_shape[1] else None,
                                  rest[1:] if p.tree_shape[2] else None))
    return FallbackPoStSectorProof(int(rng.integers(1 << 63)), b32(), (SectorProof(tuple(proofs), b32(), b32()),))


@pytest.mark.parametrize("pid", sorted(SIZES))
def test_roundtrip_every_shape(pid):
    vp = random_proof(pid, np.random.default_rng(pid))
    raw = write_sector_proof(vp)
    one, whole = SIZES[pid]
    assert len(raw) == 8 + 32 + 8 + 8 + get_post_proof(pid).vanilla_challenges * one + 64
    if whole:
        assert len(raw) == whole
    assert read_sector_proof(raw, pid, 4) == vp
    assert vp.sector_proof.inclusion_proofs[0].variant is ProofData.of_shape(get_post_proof(pid).tree_shape)


@pytest.fixture(scope="module")
def raw2k():
    return write_sector_proof(random_proof(10, np.random.default_rng(1)))


def refused(raw, pid=10, sector=3):
    with pytest.raises(PoStVanillaFormatError) as e:
        read_sector_proof(raw, pid, sector)
    assert e.value.sector == sector and isinstance(e.value, InputError) and len(str(e.value)) < 200
    return e.value


def test_truncated_anywhere(raw2k):
    for n in list(range(0, 80)) + list(range(80, len(raw2k), 37)) + [len(raw2k) - 1]:
        e = refused(raw2k[:n])
        assert e.reason.startswith("truncated: ") and " needs " in e.reason and e.offset <= n


def test_trailing_bytes(raw2k):
    e = refused(raw2k + b"\0")
    assert e.offset == len(raw2k) and "1 bytes after the end" in e.reason


def test_wrong_variant_and_shape(raw2k):
    bad = raw2k[:56] + struct.pack("<I", 1) + raw2k[60:]
    e = refused(bad)
    assert e.offset == 56 and "inclusion proof 0 variant is 1, expected 0 (Single)" in e.reason
    e = refused(raw2k, pid=11)  # an 8MiB proof has 6 levels, not 2
    assert e.offset == 124 and "inclusion proof 0 path length is 2, expected 6" in e.reason
    e = refused(raw2k, pid=13)
    assert e.offset == 56 and "inclusion proof 0 variant is 0, expected 1 (Sub)" in e.reason


@pytest.mark.parametrize("offset,value,what", [
    (40, 2, "vanilla_proof.sectors length is 2, expected 1"),
    (48, 9, "inclusion_proofs length is 9, expected 10"),
    (48, 1 << 62, "inclusion_proofs length is 4611686018427387904"),
    (132, 6, "inclusion proof 0 path level 0 hashes length is 6, expected 7"),
    (132 + 8 + 7 * 32, 8, "inclusion proof 0 path level 0 index is 8, not below 8"),
])
def test_bad_lengths_and_indices(raw2k, offset, value, what):
    e = refused(raw2k[:offset] + struct.pack("<Q", value) + raw2k[offset + 8:])
    assert e.offset == offset and what in e.reason


def test_not_bytes():
    assert "expected bytes" in refused("00" * 100).reason
