"""SnapDeals registry: §B1 constants, derived challenge geometry, parameter stems (§B7) and lookups."""
import pytest

from cuzk.snap.errors import UnknownUpdateProofError
from cuzk.snap.registry import UPDATE_PROOFS, get_update_proof, update_proof_for_size

STEMS = {  # ../shared/POST_SNAP.md §B7 (match rust-fil-proofs parameters.json)
    0: "8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194",
    1: "8-0-0-92180959e1918d26350b8e6cfe217bbdd0a2d8de51ebec269078b364b715ad63",
    2: "8-0-0-61fa69f38b9cc771ba27b670124714b4ea77fbeae05e377fb859c4a43b73a30c",
    3: "8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18",
    4: "8-8-2-102e1444a7e9a97ebf1e3d6855dcc77e66c011ea66f936d9b2c508f87f2f83a7",
}


def test_constants_per_size():
    got = {p.name: (p.partitions, p.challenges, p.apex_leaves, p.h, p.circuit_shape.h_select, p.tree_shape)
           for p in UPDATE_PROOFS.values()}
    assert got == {"StackedDrg2KiBV1": (1, 10, 8, 1, 1, (8, 0, 0)),
                   "StackedDrg8MiBV1": (4, 10, 128, 10, 8, (8, 0, 0)),
                   "StackedDrg512MiBV1": (16, 86, 128, 10, 8, (8, 0, 0)),
                   "StackedDrg32GiBV1": (16, 86, 128, 10, 8, (8, 8, 0)),
                   "StackedDrg64GiBV1": (16, 86, 128, 10, 8, (8, 8, 2))}


def test_derived_geometry():
    s32 = get_update_proof("StackedDrg32GiBV1").circuit_shape
    assert (s32.random_bits, s32.challenges_per_digest, s32.digests, s32.tree_d_levels) == (26, 9, 10, 19)
    assert [get_update_proof(i).circuit_shape.k_and_h_select(0) for i in range(5)] == [1, 32, 128, 128, 128]
    assert [get_update_proof(i).circuit_shape.digests for i in range(5)] == [1, 1, 8, 10, 10]  # §B5: 568 each


def test_params_stems():
    for i, tail in STEMS.items():
        assert get_update_proof(i).params_stem == "v28-empty-sector-update-merkletree-poseidon_hasher-" + tail


@pytest.mark.parametrize("key", [5, -1, "StackedDrg2KiBV1_1", True, None, 2.0])
def test_unknown_proof(key):
    with pytest.raises(UnknownUpdateProofError):
        get_update_proof(key)


def test_by_size():
    assert update_proof_for_size(32 << 30).id == 3
    with pytest.raises(UnknownUpdateProofError, match="4096"):
        update_proof_for_size(4096)
