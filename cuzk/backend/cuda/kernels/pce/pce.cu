// R1CS evaluation straight from the template form (cuzk.backend.base.TemplateCircuit), out = M w for
// one of A, B, C, and the satisfaction check a[r] * b[r] == c[r].
//
// pce_evaluate: one launch covers every block and plain segment of the circuit, one thread per row
// (pce/walk.cuh: the part table, items and their terms):
//   out[row] = sum_e coeffs[cid_e] * w[col_e]   over the row's terms e.
#include "pce/walk.cuh"

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
  PceItem it;
  if (!pce_locate(parts, nparts, it)) return;
  const PceMatrix m{tpl_indptr, tpl_vars, tpl_cids, plain_indptr, plain_cols, plain_cids, widths};
  fr_t acc = {{0, 0, 0, 0, 0, 0, 0, 0}};
  pce_walk(it, m, wire_cols, [&](long long col, u32 id, bool) { acc = pce_term(acc, pce_load(w, col), id, coeffs); });
  out[2 * it.row] = make_uint4(acc.v[0], acc.v[1], acc.v[2], acc.v[3]);
  out[2 * it.row + 1] = make_uint4(acc.v[4], acc.v[5], acc.v[6], acc.v[7]);
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
