// R1CS evaluation straight from the template form (cuzk.backend.base.TemplateCircuit), out = M w for
// one of A, B, C, and the satisfaction check a[r] * b[r] == c[r].
//
// pce_evaluate: one launch covers every block and plain segment of the circuit through a part table
// (cuzk/backend/cuda/pce.py `parts`): part s owns CUDA blocks [cta0[s], cta0[s+1]) and items
// j < items[s], one thread each. A block's item j is template row r = j / k of instance i = j % k:
// consecutive threads are consecutive instances of one row (they read its terms together, served as
// a broadcast), and a warp spans 32 / k rows when k < 32. The row is
//   out[row_base + i * per + r] = sum_e coeffs[cid_e] * w[col_e(i)]   over the row's terms e,
// col_e(i) by the variable's kind (index << 2 | kind): 0 index, 1 aux_col + i aux_per + index,
// 2 in_col + i in_per + index, 3 wire_cols[wire_off + index k + i]. A plain segment's item j is
// plain row first + j, written to out[row + j]. Coefficient ids 0 and 1 stand for +1 and -1.
// Index arrays are read as stored, 32- or 64-bit (ids 16- or 32-bit), by the bits of `widths`.
// Elements are 8 x 32-bit Montgomery limbs (two uint4), as the host's 4 x uint64 limbs.
#include "ff/fr.cuh"

#define PCE_THREADS 256

// columns of a part (PART_FIELDS in pce.py); k = 0 marks a plain segment
#define P_CTA0 0
#define P_ITEMS 1
#define P_K 2
#define P_ROW 3
#define P_FIRST 4
#define P_PER 5
#define P_AUX_COL 6
#define P_AUX_PER 7
#define P_IN_COL 8
#define P_IN_PER 9
#define P_WIRE_OFF 10
#define P_FIELDS 11

// bits of `widths`: the arrays stored 64-bit (ids: 32-bit)
#define W_TPL_INDPTR 1
#define W_TPL_VARS 2
#define W_WIRE_COLS 4
#define W_PLAIN_COLS 8
#define W_TPL_CIDS 16
#define W_PLAIN_CIDS 32

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

// acc + coeffs[id] * x
__device__ __forceinline__ fr_t pce_term(const fr_t& acc, const fr_t& x, u32 id, const uint4* __restrict__ coeffs) {
  if (id == 0) return fr_add(acc, x);
  if (id == 1) return fr_sub(acc, x);
  return fr_add(acc, fr_mul(pce_load(coeffs, id), x));
}

extern "C" __global__ void __launch_bounds__(PCE_THREADS) pce_evaluate(
    const long long* __restrict__ parts, u32 nparts, const void* tpl_indptr, const void* tpl_vars,
    const void* tpl_cids, const void* wire_cols, const long long* __restrict__ plain_indptr, const void* plain_cols,
    const void* plain_cids, const uint4* __restrict__ coeffs, const uint4* __restrict__ w, uint4* out, u32 widths) {
  u32 lo = 0, hi = nparts;  // the last part with cta0 <= blockIdx.x (cta0[0] = 0)
  while (hi - lo > 1) {
    const u32 mid = (lo + hi) / 2;
    if (__ldg(parts + (u64)mid * P_FIELDS + P_CTA0) <= (long long)blockIdx.x) lo = mid;
    else hi = mid;
  }
  const long long* part = parts + (u64)lo * P_FIELDS;
  const u64 j = (u64)(blockIdx.x - part[P_CTA0]) * PCE_THREADS + threadIdx.x;
  if (j >= (u64)part[P_ITEMS]) return;
  const u64 k = part[P_K];
  fr_t acc = {{0, 0, 0, 0, 0, 0, 0, 0}};
  u64 row;
  if (k == 0) {
    const u64 q = part[P_FIRST] + j;
    const bool wide_col = widths & W_PLAIN_COLS, wide_id = widths & W_PLAIN_CIDS;
    for (u64 e = plain_indptr[q]; e < (u64)plain_indptr[q + 1]; e++)
      acc = pce_term(acc, pce_load(w, pce_index(plain_cols, e, wide_col)), pce_id(plain_cids, e, wide_id), coeffs);
    row = part[P_ROW] + j;
  } else {
    const u64 r = j / k, i = j - r * k, t = part[P_FIRST] + r;
    const long long aux0 = part[P_AUX_COL] + (long long)i * part[P_AUX_PER];
    const long long in0 = part[P_IN_COL] + (long long)i * part[P_IN_PER];
    const long long wire0 = part[P_WIRE_OFF] + (long long)i;
    const bool wide_ptr = widths & W_TPL_INDPTR, wide_var = widths & W_TPL_VARS;
    const bool wide_wire = widths & W_WIRE_COLS, wide_id = widths & W_TPL_CIDS;
    const u64 e1 = pce_index(tpl_indptr, t + 1, wide_ptr);
    for (u64 e = pce_index(tpl_indptr, t, wide_ptr); e < e1; e++) {
      const long long v = pce_index(tpl_vars, e, wide_var), index = v >> 2;
      const int kind = (int)(v & 3);
      const long long col = kind == 0   ? index
                            : kind == 1 ? aux0 + index
                            : kind == 2 ? in0 + index
                                        : pce_index(wire_cols, wire0 + index * (long long)k, wide_wire);
      acc = pce_term(acc, pce_load(w, col), pce_id(tpl_cids, e, wide_id), coeffs);
    }
    row = part[P_ROW] + i * part[P_PER] + r;
  }
  out[2 * row] = make_uint4(acc.v[0], acc.v[1], acc.v[2], acc.v[3]);
  out[2 * row + 1] = make_uint4(acc.v[4], acc.v[5], acc.v[6], acc.v[7]);
}

// *first = min(*first, r) for every row r < n with a[r] * b[r] != c[r] (all eight limbs compared:
// canonical Montgomery elements are equal exactly when their limbs are). *first starts at 2^64 - 1.
// Only the lowest failing lane of a warp takes the atomic, so a witness failing everywhere costs
// one atomic per warp, not per row.
extern "C" __global__ void __launch_bounds__(PCE_THREADS) fr_first_unsatisfied(
    const uint4* __restrict__ a, const uint4* __restrict__ b, const uint4* __restrict__ c, u64 n,
    unsigned long long* first) {
  const u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u32 diff = 0;
  if (r < n) {
    const fr_t p = fr_mul(pce_load(a, r), pce_load(b, r)), z = pce_load(c, r);
#pragma unroll
    for (int q = 0; q < 8; q++) diff |= p.v[q] ^ z.v[q];
  }
  const u32 failing = __ballot_sync(0xffffffffu, diff != 0);
  if (failing && (threadIdx.x & 31) == (u32)(__ffs(failing) - 1)) atomicMin(first, (unsigned long long)r);
}
