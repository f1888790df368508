"""A w, B w, C w straight from a circuit's template form (the CPU backend's evaluate_pce).

The circuit is duck-typed (cuzk.backend.base.TemplateCircuit; cuzk.r1cs.pce.PCE is one). The work is
cut into tiles: a tile of a block is a chunk of TILE_ROWS template rows times up to TILE_INSTANCES
instances, so the chunk is read from memory once and then served from cache for each of its
instances; a tile of plain rows is TILE_ROWS consecutive plain rows. Tiles run in parallel (numba,
all cores), each writing its own output rows.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from cuzk.backend.base import TemplateCircuit, check_witness
from cuzk.ff import limbs

TILE_ROWS = 1024
TILE_INSTANCES = 8


@njit(inline="always")
def add_term(acc, x, cid, coeffs):
    """acc + coeffs[cid] * x; ids 0 / 1 are +1 / -1."""
    if cid == 0:
        return limbs.fr_add(acc, x)
    if cid == 1:
        return limbs.fr_sub(acc, x)
    return limbs.fr_add(acc, limbs.fr_mul(limbs.fr_load(coeffs[cid]), x))


@njit(parallel=True, cache=True)
def _evaluate(tiles, blocks, tpl_rows, indptr, tvars, tcids, wire_cols, pindptr, pcols, pcids, coeffs, w, out):
    """out = M w over the tiles: (block, row0, row1, inst0, inst1) for template rows row0..row1 of
    instances inst0..inst1, or (-1, p0, p1, first output row, 0) for plain rows p0..p1."""
    for t in prange(tiles.shape[0]):
        b, r0, r1, i0, i1 = tiles[t, 0], tiles[t, 1], tiles[t, 2], tiles[t, 3], tiles[t, 4]
        if b < 0:
            for p in range(r0, r1):
                acc = limbs.FR_ZERO
                for e in range(pindptr[p], pindptr[p + 1]):
                    acc = add_term(acc, limbs.fr_load(w[pcols[e]]), pcids[e], coeffs)
                limbs.fr_store(out[i0 + p - r0], acc)
            continue
        tpl, k, row_base, wire_off = blocks[b, 0], blocks[b, 1], blocks[b, 2], blocks[b, 7]
        first = tpl_rows[tpl]
        per = tpl_rows[tpl + 1] - first
        for i in range(i0, i1):
            aux0, in0 = blocks[b, 3] + i * blocks[b, 4], blocks[b, 5] + i * blocks[b, 6]
            for r in range(r0, r1):
                acc = limbs.FR_ZERO
                for e in range(indptr[first + r], indptr[first + r + 1]):
                    v = np.int64(tvars[e])
                    kind, index = v & 3, v >> 2
                    if kind == 0:
                        col = index
                    elif kind == 1:
                        col = aux0 + index
                    elif kind == 2:
                        col = in0 + index
                    else:
                        col = np.int64(wire_cols[wire_off + index * k + i])
                    acc = add_term(acc, limbs.fr_load(w[col]), tcids[e], coeffs)
                limbs.fr_store(out[row_base + i * per + r], acc)


def tiles(pce: TemplateCircuit) -> np.ndarray:
    """(ntiles, 5) int64 work items of _evaluate, each block's tiles row-chunk major."""
    parts = []
    for b in range(pce.blocks.shape[0]):
        tpl, k = int(pce.blocks[b, 0]), int(pce.blocks[b, 1])
        per = int(pce.tpl_rows[tpl + 1] - pce.tpl_rows[tpl])
        r0, i0 = (x.reshape(-1) for x in np.meshgrid(np.arange(0, per, TILE_ROWS), np.arange(0, k, TILE_INSTANCES),
                                                     indexing="ij"))
        parts.append(np.stack([np.full_like(r0, b), r0, np.minimum(r0 + TILE_ROWS, per), i0,
                               np.minimum(i0 + TILE_INSTANCES, k)], axis=1))
    plain0 = 0
    for row, n in pce.plain_segs.tolist():
        p0 = np.arange(0, n, TILE_ROWS)
        parts.append(np.stack([np.full_like(p0, -1), plain0 + p0, plain0 + np.minimum(p0 + TILE_ROWS, n), row + p0,
                               np.zeros_like(p0)], axis=1))
        plain0 += n
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros((0, 5), np.int64)


def evaluate_pce(pce: TemplateCircuit, witness: np.ndarray,
                 matrices: Sequence[int] = (0, 1, 2)) -> tuple[np.ndarray, ...]:
    """(A w, B w, C w), each (num_constraints, 4) Montgomery, for a (num_inputs + num_aux, 4) witness;
    only those of `matrices` (0 = A, 1 = B, 2 = C), in that order."""
    check_witness(pce, witness)
    w = np.ascontiguousarray(witness)
    work = tiles(pce)
    outs = []
    for mat in ((pce.a, pce.b, pce.c)[j] for j in matrices):
        out = np.empty((pce.num_constraints, 4), dtype=np.uint64)
        _evaluate(work, pce.blocks, pce.tpl_rows, mat.tpl_indptr, mat.tpl_vars, mat.tpl_cids, pce.wire_cols,
                  mat.plain_indptr, mat.plain_cols, mat.plain_cids, pce.coeffs, w, out)
        outs.append(out)
    return tuple(outs)
