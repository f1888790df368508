"""SDR labels: rust-fil-proofs' last-label vectors, a hashlib per-node reference, replica_id."""
import hashlib

import numpy as np
import pytest

from cuzk.errors import InputError
from cuzk.porep.graph import SdrGraph, parents_cache
from cuzk.porep.labels import all_labels, expand_label_parents, label_node, layer_labels, replica_id
from cuzk.porep.registry import ApiVersion


def _fr_le(*words: int) -> bytes:
    return b"".join(w.to_bytes(8, "little") for w in words)


# storage-proofs-porep/tests/stacked_vanilla.rs, test_stacked_porep_generate_labels: 11 layers,
# replica_id [9; 32], porep_id [0; 32] for API 1.0 and [123; 32] for 1.1/1.2, sector 2 KiB / 4 KiB.
_V1_0 = (bytes(32), ApiVersion.V1_0_0)
_V1_1 = (bytes([123] * 32), ApiVersion.V1_1_0)
_V1_2 = (bytes([123] * 32), ApiVersion.V1_2_0)
_LAST_2K_V1_1 = _fr_le(0xABB3F38BB70DEFCF, 0x777A2E4D7769119F, 0x3448959D495490BC, 0x06021188C7A71CB5)
_LAST_4K_V1_1 = _fr_le(0x22AB81CF68C4676D, 0x7A77A82FC7C9C189, 0xC6C03D32C1E42D23, 0x0F777C18CC2C55BD)
VECTORS = [
    (64, *_V1_0, _fr_le(0xD3FAA96B9A0FBA04, 0xEA81A283D106485E, 0xE3D51B9AFA5AC2B3, 0x0462F4F4F1A68D37)),
    (128, *_V1_0, _fr_le(0x7E191E52C4A8DA86, 0x5AE8A1C9E6FAC148, 0xCE239F3B88A894B8, 0x234C00D1DC1D53BE)),
    (64, *_V1_1, _LAST_2K_V1_1),
    (128, *_V1_1, _LAST_4K_V1_1),
    (64, *_V1_2, _LAST_2K_V1_1),
    (128, *_V1_2, _LAST_4K_V1_1),
]


@pytest.mark.parametrize("nodes, porep_id, version, expected", VECTORS,
                         ids=[f"{32 * v[0] // 1024}KiB-{v[2].name}" for v in VECTORS])
def test_last_label_vectors(nodes, porep_id, version, expected):
    labels = all_labels(parents_cache(SdrGraph(nodes, porep_id, version)), bytes([9] * 32), 11)
    assert labels.shape == (11, nodes, 32)
    assert labels[-1, -1].tobytes() == expected


def _reference_label(labels, parents, replica, layer, v) -> bytes:
    """label(layer, v) recomputed with hashlib from the labels of layers layer and layer - 1."""
    if v == 0:
        return label_node(replica, layer, 0, [])
    base = [labels[layer - 1, p].tobytes() for p in parents[v, :6]]
    exp = [labels[layer - 2, p].tobytes() for p in parents[v, 6:]] if layer > 1 else []
    return label_node(replica, layer, v, expand_label_parents(layer, base + exp))


@pytest.mark.parametrize("version", list(ApiVersion), ids=lambda v: v.name)
def test_labels_match_reference(rng, version):
    nodes, layers = int(rng.integers(2, 300)), 3
    parents = parents_cache(SdrGraph(nodes, rng.bytes(32), version))
    replica = bytearray(rng.bytes(32))
    replica[31] &= 0x3F
    labels = all_labels(parents, bytes(replica), layers)
    for layer in range(1, layers + 1):
        for v in range(nodes):
            expected = _reference_label(labels, parents, bytes(replica), layer, v)
            assert labels[layer - 1, v].tobytes() == expected
    assert (labels[..., 31] <= 0x3F).all()


def test_8mib_labels(rng):
    """A full 8 MiB sector (2**18 nodes, 2 layers), spot-checked on random nodes."""
    parents = parents_cache(6)
    replica = bytes(rng.bytes(31)) + b"\x01"
    labels = all_labels(parents, replica, 2)
    for layer in (1, 2):
        for v in [0, 1, 2, (1 << 18) - 1, *rng.integers(0, 1 << 18, 30).tolist()]:
            assert labels[layer - 1, v].tobytes() == _reference_label(labels, parents, replica, layer, v)


def test_replica_id(rng):
    prover, ticket, comm_d = rng.bytes(32), rng.bytes(32), rng.bytes(32)
    porep_id = (5).to_bytes(8, "little") + bytes(24)
    sector = int(rng.integers(0, 1 << 63))
    message = prover + sector.to_bytes(8, "big") + ticket + comm_d + porep_id
    digest = bytearray(hashlib.sha256(message).digest())
    digest[31] &= 0x3F
    assert replica_id(prover, sector, ticket, comm_d, porep_id) == bytes(digest)
    for s in (0, 1, (1 << 64) - 1):
        r = replica_id(b"\xff" * 32, s, b"\xff" * 32, b"\xff" * 32, porep_id)
        assert len(r) == 32 and r[31] <= 0x3F
    with pytest.raises(InputError):
        replica_id(prover[:31], sector, ticket, comm_d, porep_id)
    with pytest.raises(InputError):
        replica_id(prover, 1 << 64, ticket, comm_d, porep_id)


def test_expand_label_parents():
    six = [bytes([i]) * 32 for i in range(6)]
    fourteen = [bytes([i]) * 32 for i in range(14)]
    assert expand_label_parents(1, six) == six * 6 + six[:1]
    assert expand_label_parents(2, fourteen) == fourteen * 2 + fourteen[:9]
    assert len(expand_label_parents(11, fourteen)) == 37
    with pytest.raises(InputError):
        expand_label_parents(1, fourteen)
    with pytest.raises(InputError):
        expand_label_parents(2, six)


def test_bad_label_inputs():
    parents = parents_cache(5)
    with pytest.raises(InputError):
        layer_labels(parents, bytes(32), 2)  # layer 2 needs layer 1
    with pytest.raises(InputError):
        layer_labels(parents, bytes(32), 2, np.zeros((63, 32), np.uint8))
    with pytest.raises(InputError):
        layer_labels(parents, bytes(32), 0)
    with pytest.raises(InputError):
        layer_labels(parents, bytes(31), 1)
    with pytest.raises(InputError):
        layer_labels(parents[:, :6], bytes(32), 1)
    with pytest.raises(InputError):
        layer_labels(parents[:32], bytes(32), 1)  # refers to nodes beyond the sector
    with pytest.raises(InputError):
        all_labels(parents, bytes(32), 0)
