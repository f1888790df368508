// Walking an R1CS in template form (cuzk.backend.base.TemplateCircuit) one row per thread, for
// pce/pce.cu (out = M w) and setup/setup_fr.cu (the transposed product M^T L of the Groth16 setup).
//
// One launch covers every block and plain segment of the circuit through a part table
// (cuzk/backend/cuda/pce.py `parts`): part s owns CUDA blocks [cta0[s], cta0[s+1]) and items
// j < items[s], one thread each. A block's item j is template row r = j / k of instance i = j % k:
// consecutive threads are consecutive instances of one row (they read its terms together, served as
// a broadcast), and a warp spans 32 / k rows when k < 32. The item is matrix row
// row_base + i * per + r; its terms e name the columns col_e(i) by the variable's kind
// (index << 2 | kind): 0 index, 1 aux_col + i aux_per + index, 2 in_col + i in_per + index,
// 3 wire_cols[wire_off + index k + i]. A plain segment's item j is plain row first + j, matrix row
// row + j. Coefficient ids 0 and 1 stand for +1 and -1. Index arrays are read as stored, 32- or
// 64-bit (ids 16- or 32-bit), by the bits of `widths`. Elements are 8 x 32-bit Montgomery limbs (two
// uint4), as the host's 4 x uint64 limbs.
#pragma once
#include "ff/fr.cuh"
// layout.cuh: PCE_THREADS, the part columns P_*, the W_* bits of `widths`, PceMatrix
#include "layout.cuh"

__device__ __forceinline__ fr_t pce_load(const uint4* __restrict__ p, u64 i) {
  const uint4 lo = __ldg(p + 2 * i), hi = __ldg(p + 2 * i + 1);
  return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

// element e of an int32 or int64 array
__device__ __forceinline__ long long pce_index(const void* p, u64 e, bool wide) {
  return wide ? __ldg(static_cast<const long long*>(p) + e) : (long long)__ldg(static_cast<const int*>(p) + e);
}

// element e of a uint16 or uint32 array
__device__ __forceinline__ u32 pce_id(const void* p, u64 e, bool wide) {
  return wide ? __ldg(static_cast<const u32*>(p) + e) : (u32)__ldg(static_cast<const unsigned short*>(p) + e);
}

// The item of one thread: its part, item index j, k (0: plain), template row r and instance i (a
// block's item), the matrix row, and a key equal exactly for the threads of one template row of one
// part (they visit the same terms in the same order; a plain row's key is its thread's own).
struct PceItem {
  const long long* part;
  u64 j, k, r, i, row, key;
};

// This thread's item (blockIdx.x, threadIdx.x); false when it has none. The part is the last one with
// cta0 <= blockIdx.x (cta0[0] = 0).
__device__ __forceinline__ bool pce_locate(const long long* __restrict__ parts, u32 nparts, PceItem& it) {
  u32 lo = 0, hi = nparts;
  while (hi - lo > 1) {
    const u32 mid = (lo + hi) / 2;
    if (__ldg(parts + (u64)mid * P_FIELDS + P_CTA0) <= (long long)blockIdx.x) lo = mid;
    else hi = mid;
  }
  const long long* part = parts + (u64)lo * P_FIELDS;
  it.part = part;
  it.j = (u64)(blockIdx.x - part[P_CTA0]) * PCE_THREADS + threadIdx.x;
  if (it.j >= (u64)part[P_ITEMS]) return false;
  it.k = part[P_K];
  if (it.k == 0) {
    it.r = it.i = 0;
    it.row = part[P_ROW] + it.j;
    it.key = (1ull << 63) | ((u64)blockIdx.x * PCE_THREADS + threadIdx.x);
  } else {
    it.r = it.j / it.k;
    it.i = it.j - it.r * it.k;
    it.row = part[P_ROW] + it.i * part[P_PER] + it.r;
    it.key = ((u64)lo << 32) | it.r;
  }
  return true;
}

// term(col, id, fixed) for each term of the item's row in order (wire_cols: the circuit's wire
// table); fixed: a template term of kind 0, which names the same column in every instance.
template <class Term>
__device__ __forceinline__ void pce_walk(const PceItem& it, const PceMatrix& m, const void* wire_cols, Term&& term) {
  const long long* part = it.part;
  if (it.k == 0) {
    const u64 q = part[P_FIRST] + it.j;
    const bool wide_col = m.widths & W_PLAIN_COLS, wide_id = m.widths & W_PLAIN_CIDS;
    for (u64 e = m.plain_indptr[q]; e < (u64)m.plain_indptr[q + 1]; e++)
      term(pce_index(m.plain_cols, e, wide_col), pce_id(m.plain_cids, e, wide_id), false);
  } else {
    const u64 k = it.k, t = part[P_FIRST] + it.r;
    const long long aux0 = part[P_AUX_COL] + (long long)it.i * part[P_AUX_PER];
    const long long in0 = part[P_IN_COL] + (long long)it.i * part[P_IN_PER];
    const long long wire0 = part[P_WIRE_OFF] + (long long)it.i;
    const bool wide_ptr = m.widths & W_TPL_INDPTR, wide_var = m.widths & W_TPL_VARS;
    const bool wide_wire = m.widths & W_WIRE_COLS, wide_id = m.widths & W_TPL_CIDS;
    const u64 e1 = pce_index(m.tpl_indptr, t + 1, wide_ptr);
    for (u64 e = pce_index(m.tpl_indptr, t, wide_ptr); e < e1; e++) {
      const long long v = pce_index(m.tpl_vars, e, wide_var), index = v >> 2;
      const int kind = (int)(v & 3);
      const long long col = kind == 0   ? index
                            : kind == 1 ? aux0 + index
                            : kind == 2 ? in0 + index
                                        : pce_index(wire_cols, wire0 + index * (long long)k, wide_wire);
      term(col, pce_id(m.tpl_cids, e, wide_id), kind == 0);
    }
  }
}
