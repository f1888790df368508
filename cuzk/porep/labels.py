"""SDR labelling: replica_id and the labels of every layer (rust-fil-proofs `stacked/vanilla/create_label`).

label(L, v) = SHA256(replica_id || u32 BE(L) || u64 BE(v) || 20 zero bytes || 37 parent labels) with
byte 31 &= 0x3F. Node 0 hashes only the 64-byte prefix. Layer 1 hashes its 6 base parents (labels of
this layer) 6 times, then base parent 0; layer L > 1 hashes its 14 parents (6 base from layer L, 8
expansion from layer L - 1) twice, then the first 9. Base parents all precede v, so a layer is computed
node by node in order; the kernel below runs cuzk.hashes.sha256.compress over labels kept as big-endian
u32 words.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from numba import njit

from cuzk.errors import InputError
from cuzk.hashes.sha256 import IV_WORDS, compress
from cuzk.porep.registry import BASE_DEGREE, DEGREE, NODE_SIZE

HASHED_PARENTS = 37
_LAST_WORD_MASK = np.uint32(0xFFFFFF3F)  # byte 31 &= 0x3F on a big-endian word


def replica_id(prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes, porep_id: bytes) -> bytes:
    """SHA256(prover_id || u64 BE(sector_id) || ticket || comm_d || porep_id) with byte 31 &= 0x3F."""
    named = {"prover_id": prover_id, "ticket": ticket, "comm_d": comm_d, "porep_id": porep_id}
    for name, value in named.items():
        if not isinstance(value, (bytes, bytearray)) or len(value) != 32:
            raise InputError(f"{name} must be 32 bytes")
    if not 0 <= sector_id < 1 << 64:
        raise InputError(f"sector_id must be a u64, got {sector_id}")
    h = bytearray(hashlib.sha256(
        bytes(prover_id) + sector_id.to_bytes(8, "big") + bytes(ticket) + bytes(comm_d) + bytes(porep_id)
    ).digest())
    h[31] &= 0x3F
    return bytes(h)


def expand_label_parents(layer: int, parent_labels: Sequence[bytes]) -> list[bytes]:
    """The 37 labels hashed for a node > 0, from its 6 base (layer 1) or 14 parents' labels."""
    if layer == 1 and len(parent_labels) == BASE_DEGREE:
        return list(parent_labels) * BASE_DEGREE + [parent_labels[0]]
    if layer > 1 and len(parent_labels) == DEGREE:
        return list(parent_labels) * 2 + list(parent_labels[:HASHED_PARENTS - 2 * DEGREE])
    raise InputError(f"layer {layer} needs {BASE_DEGREE if layer == 1 else DEGREE} parent labels")


def label_node(replica: bytes, layer: int, node: int, hashed_parents: Sequence[bytes]) -> bytes:
    """One label from the exact parent labels hashed (37, or none for node 0), as LabelingProof does."""
    if len(replica) != 32 or not 0 <= layer < 1 << 32 or not 0 <= node < 1 << 64:
        raise InputError("label_node needs a 32-byte replica_id, a u32 layer and a u64 node")
    h = hashlib.sha256(replica + layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20))
    for p in hashed_parents:
        h.update(p)
    out = bytearray(h.digest())
    out[31] &= 0x3F
    return bytes(out)


@njit(cache=True)
def _layer_kernel(parents, replica_words, layer, prev, cur):
    """Labels of one layer into cur (nodes, 8) BE-word uint32; prev is layer - 1 (unused for layer 1)."""
    nodes = cur.shape[0]
    w = np.zeros(64, np.uint32)
    state = np.empty(8, np.uint32)
    buf = np.empty((DEGREE, 8), np.uint32)
    period = BASE_DEGREE if layer == 1 else DEGREE
    for v in range(nodes):
        if v > 0:  # gather the distinct parents first, so that their cache misses overlap
            for i in range(period):
                src = cur if i < BASE_DEGREE else prev
                p = parents[v, i]
                for j in range(8):
                    buf[i, j] = src[p, j]
        state[:] = IV_WORDS
        for j in range(8):
            w[j] = replica_words[j]
        w[8] = np.uint32(layer)
        w[9] = np.uint32(np.uint64(v) >> np.uint64(32))
        w[10] = np.uint32(np.uint64(v) & np.uint64(0xFFFFFFFF))
        for j in range(11, 16):
            w[j] = 0
        compress(state, w)
        if v == 0:  # 64-byte message: one padding block
            w[0] = np.uint32(0x80000000)
            for j in range(1, 15):
                w[j] = 0
            w[15] = np.uint32(64 * 8)
            compress(state, w)
        else:  # 37 parent labels: 18 full blocks, then label 36 with the padding
            for k in range(HASHED_PARENTS):
                i = k % period
                off = 8 * (k & 1)
                for j in range(8):
                    w[off + j] = buf[i, j]
                if k & 1:
                    compress(state, w)
            w[8] = np.uint32(0x80000000)
            for j in range(9, 15):
                w[j] = 0
            w[15] = np.uint32((64 + HASHED_PARENTS * NODE_SIZE) * 8)
            compress(state, w)
        for j in range(8):
            cur[v, j] = state[j]
        cur[v, 7] &= _LAST_WORD_MASK


def _to_words(labels: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(labels).view(">u4").astype(np.uint32)


def _to_bytes(words: np.ndarray) -> np.ndarray:
    return words.astype(">u4").view(np.uint8).reshape(words.shape[0], NODE_SIZE)


def _check_parents(parents: np.ndarray) -> np.ndarray:
    if parents.ndim != 2 or parents.shape[1] != DEGREE or parents.shape[0] < 1:
        raise InputError(f"parents must have shape (nodes, {DEGREE}), got {parents.shape}")
    parents = np.ascontiguousarray(parents, dtype=np.uint32)
    if int(parents.max()) >= parents.shape[0]:
        raise InputError("parents cache refers to nodes beyond the sector")
    return parents


def _replica_words(replica: bytes) -> np.ndarray:
    if not isinstance(replica, (bytes, bytearray)) or len(replica) != 32:
        raise InputError("replica_id must be 32 bytes")
    return np.frombuffer(bytes(replica), ">u4").astype(np.uint32)


def layer_labels(
    parents: np.ndarray, replica: bytes, layer: int, prev: np.ndarray | None = None
) -> np.ndarray:
    """Labels of `layer` (from 1) as (nodes, 32) uint8, given the parents cache (nodes, 14) and, for
    layer > 1, the previous layer's labels (nodes, 32) uint8."""
    parents = _check_parents(parents)
    nodes = parents.shape[0]
    if layer < 1 or layer >= 1 << 32:
        raise InputError(f"layer must be in [1, 2**32), got {layer}")
    if layer > 1:
        if prev is None or prev.shape != (nodes, NODE_SIZE) or prev.dtype != np.uint8:
            raise InputError(f"layer {layer} needs the previous layer's labels as ({nodes}, 32) uint8")
        prev_words = _to_words(prev)
    else:
        prev_words = np.empty((1, 8), np.uint32)
    cur = np.empty((nodes, 8), np.uint32)
    _layer_kernel(parents, _replica_words(replica), layer, prev_words, cur)
    return _to_bytes(cur)


def all_labels(parents: np.ndarray, replica: bytes, layers: int) -> np.ndarray:
    """Labels of layers 1..layers as (layers, nodes, 32) uint8 (memory: layers * sector size)."""
    if layers < 1:
        raise InputError(f"layers must be >= 1, got {layers}")
    parents = _check_parents(parents)
    out = np.empty((layers, parents.shape[0], NODE_SIZE), np.uint8)
    for layer in range(1, layers + 1):
        out[layer - 1] = layer_labels(parents, replica, layer, out[layer - 2] if layer > 1 else None)
    return out
