"""Registered PoSt proofs: ids, names, shapes, challenge versions and parameter file names against
../shared/POST_SNAP.md §A1, §A5, §A7 (the hashes are rust-fil-proofs parameters.json's)."""
import pytest

from cuzk.errors import InputError
from cuzk.porep.registry import ApiVersion
from cuzk.post.errors import UnknownPoStProofError
from cuzk.post.registry import POST_PROOFS, PoStKind, get_post_proof

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
# (kind, size) -> the official file name suffix (POST_SNAP.md §A7)
STEMS = {
    ("Winning", 2 * KiB): "8-0-0-3ea05428c9d11689f23529cde32fd30aabd50f7d2c93657c1d3650bca3e8ea9e",
    ("Window", 2 * KiB): "8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0",
    ("Winning", 8 * MiB): "8-0-0-50c7368dea9593ed0989e70974d28024efa9d156d585b7eea1be22b2e753f331",
    ("Window", 8 * MiB): "8-0-0-5294475db5237a2e83c3e52fd6c2b03859a1831d45ed08c4f35dbf9a803165a9",
    ("Winning", 512 * MiB): "8-0-0-7d739b8cf60f1b0709eeebee7730e297683552e4b69cab6984ec0285663c5781",
    ("Window", 512 * MiB): "8-0-0-0cfb4f178bbb71cf2ecfcd42accce558b27199ab4fb59cb78f2483fe21ef36d9",
    ("Winning", 32 * GiB): "8-8-0-559e581f022bb4e4ec6e719e563bf0e026ad6de42e56c18714a2c692b1b88d7e",
    ("Window", 32 * GiB): "8-8-0-0377ded656c6f524f1618760bffe4e0a1c51d5a70c4509eedae8a27555733edc",
    ("Winning", 64 * GiB): "8-8-2-b62098629d07946e9028127e70295ed996fe3ed25b0f9f88eb610a0ab4385a3c",
    ("Window", 64 * GiB): "8-8-2-2627e4006b67f99cef990c0a47d5426cb7ab0a0ad58fc1061547bf2d28b09def",
}


def test_fifteen_proofs_in_go_order():
    assert sorted(POST_PROOFS) == list(range(15))
    assert [p.kind for p in POST_PROOFS.values()] == [PoStKind.WINNING] * 5 + [PoStKind.WINDOW] * 10
    assert [p.sector_size for p in POST_PROOFS.values()] == [2 * KiB, 8 * MiB, 512 * MiB, 32 * GiB, 64 * GiB] * 3
    assert get_post_proof(3).name == "StackedDrgWinning32GiBV1"
    assert get_post_proof(13).name == "StackedDrgWindow32GiBV1_2"
    assert get_post_proof(13).go_name == "StackedDrgWindow32GiBV1_1"
    assert get_post_proof(14) is get_post_proof("StackedDrgWindow64GiBV1_1") is get_post_proof("StackedDrgWindow64GiBV1_2")
    assert get_post_proof(get_post_proof(0)) is get_post_proof(0)


@pytest.mark.parametrize("pid", range(15))
def test_shape_and_version(pid):
    p = get_post_proof(pid)
    assert p.tree_shape == {2 * KiB: (8, 0, 0), 8 * MiB: (8, 0, 0), 512 * MiB: (8, 0, 0), 32 * GiB: (8, 8, 0),
                            64 * GiB: (8, 8, 2)}[p.sector_size]
    assert p.leaves == p.sector_size // 32
    assert p.api_version is (ApiVersion.V1_2_0 if pid >= 10 else ApiVersion.V1_0_0)
    if p.kind is PoStKind.WINNING:
        assert (p.sector_count, p.challenge_count, p.vanilla_challenges) == (66, 1, 66)
    else:
        assert p.challenge_count == p.vanilla_challenges == 10
        assert p.sector_count == {32 * GiB: 2349, 64 * GiB: 2300}.get(p.sector_size, 2)
    assert p.params_stem == ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-"
                             + STEMS[(p.kind.value, p.sector_size)])


@pytest.mark.parametrize("key", [15, -1, 2 ** 64, "StackedDrgWindow32GiBV1_3", "", "StackedDrg32GiBV1_1", True, None,
                                 3.0, b"x"])
def test_unknown_refused(key):
    with pytest.raises(UnknownPoStProofError) as e:
        get_post_proof(key)
    assert isinstance(e.value, InputError) and len(str(e.value)) < 120
