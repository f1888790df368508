// The Fr side of the Groth16 setup on the GPU (cuzk/backend/cuda/setup.py): the Lagrange basis of the
// domain at tau, the QAP polynomials at tau by a transposed product over the template form, and the
// element-wise combinations of the query scalars. Elements are 8 x 32-bit Montgomery limbs (two
// uint4), as the host's 4 x uint64 limbs.
#include "pce/walk.cuh"

// element i of an array this kernel may also write (pce_load reads through the read-only cache)
__device__ __forceinline__ fr_t ld_fr(const uint4* p, u64 i) {
  const uint4 lo = p[2 * i], hi = p[2 * i + 1];
  return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

__device__ __forceinline__ void st_fr(uint4* p, u64 i, const fr_t& x) {
  p[2 * i] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
  p[2 * i + 1] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

// base^e (Montgomery in and out, `one` the Montgomery 1) for an exponent of `words` little-endian
// 32-bit words: square and multiply from the top bit.
__device__ __noinline__ fr_t fr_pow(const fr_t& base, const fr_t& one, const u32* e, int words) {
  fr_t acc = one;
  for (int bit = 32 * words - 1; bit >= 0; bit--) {
    acc = fr_mul(acc, acc);
    if ((e[bit >> 5] >> (bit & 31)) & 1) acc = fr_mul(acc, base);
  }
  return acc;
}

// consts of setup_lagrange, (7, 4) uint64 on the host: Montgomery 1, w, w^S, w^-S, tau, c, then the
// plain integer r - 2 (the exponent of the inverse)
#define LG_ONE 0
#define LG_W 1
#define LG_WS 2
#define LG_WS_INV 3
#define LG_TAU 4
#define LG_C 5
#define LG_INV_EXP 6

// out[e] = c x_e / (tau - x_e) with x_e = w^e, for e < count: with c = Z(tau) / n this is the Lagrange
// basis of the domain <w> at tau, L_e(tau) = Z(tau) w^e / (n (tau - w^e)) (tau outside the domain).
// Thread t of S takes e = t + j S (x_{j+1} = x_j w^S) and inverts its tau - x_e with one inversion
// (Montgomery's trick: prefix products kept in out, then a backward sweep with x_{j-1} = x_j w^-S).
extern "C" __global__ void __launch_bounds__(256) setup_lagrange(const uint4* __restrict__ consts, uint4* out,
                                                                 u64 count, u64 S) {
  const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= S || t >= count) return;
  const fr_t one = pce_load(consts, LG_ONE), ws = pce_load(consts, LG_WS), ws_inv = pce_load(consts, LG_WS_INV);
  const fr_t tau = pce_load(consts, LG_TAU), c = pce_load(consts, LG_C), inv_exp = pce_load(consts, LG_INV_EXP);
  const u32 tw[2] = {(u32)t, (u32)(t >> 32)};
  fr_t x = fr_pow(pce_load(consts, LG_W), one, tw, 2);
  fr_t acc = one;
  u64 e = t;
  for (; e < count; e += S) {  // out[e] = prod of (tau - x) over this thread's earlier elements
    st_fr(out, e, acc);
    acc = fr_mul(acc, fr_sub(tau, x));
    x = fr_mul(x, ws);
  }
  fr_t inv = fr_pow(acc, one, inv_exp.v, 8);
  do {
    e -= S;
    x = fr_mul(x, ws_inv);
    const fr_t d = fr_sub(tau, x), inv_d = fr_mul(inv, ld_fr(out, e));
    inv = fr_mul(inv, d);
    st_fr(out, e, fr_mul(fr_mul(c, x), inv_d));
  } while (e >= S);
}

// acc[8 col + q] += limb q of coeffs[id] * lag[row] for every term (row, col, id) of one matrix M:
// u_col = sum_r M[r, col] L_r(tau) kept as eight 64-bit sums of the products' 32-bit limbs (exact while
// a column has fewer than 2^32 terms; setup_fold reduces them), and mark[col] = 1. Threads of one
// template row (the same terms; a kind-0 term names one column in every instance) sum a kind-0
// term's limbs over the warp first (16-bit halves, __reduce_add_sync) and its lowest lane adds them:
// the column ONE, named by most instances of some rows, takes one atomic per warp, not per row.
extern "C" __global__ void __launch_bounds__(PCE_THREADS) pce_transpose(
    const long long* __restrict__ parts, u32 nparts, const void* tpl_indptr, const void* tpl_vars,
    const void* tpl_cids, const void* wire_cols, const long long* __restrict__ plain_indptr, const void* plain_cols,
    const void* plain_cids, const uint4* __restrict__ coeffs, const uint4* __restrict__ lag,
    unsigned long long* acc, unsigned char* mark, u32 widths) {
  PceItem it;
  const bool live = pce_locate(parts, nparts, it);
  const u32 lanes = __ballot_sync(0xffffffffu, live);
  if (!live) return;
  const u32 group = __match_any_sync(lanes, it.key), me = 1u << (threadIdx.x & 31);
  const bool leader = (group & (0u - group)) == me;
  const PceMatrix m{tpl_indptr, tpl_vars, tpl_cids, plain_indptr, plain_cols, plain_cids, widths};
  const fr_t l = pce_load(lag, it.row), zero = {{0, 0, 0, 0, 0, 0, 0, 0}};
  pce_walk(it, m, wire_cols, [&](long long col, u32 id, bool fixed) {
    const fr_t p = id == 0 ? l : id == 1 ? fr_sub(zero, l) : fr_mul(pce_load(coeffs, id), l);
    unsigned long long* dst = acc + 8 * (u64)col;
    if (fixed && group != me) {  // every lane of the group names col here
#pragma unroll
      for (int q = 0; q < 8; q++) {
        const u32 lo = __reduce_add_sync(group, p.v[q] & 0xffffu), hi = __reduce_add_sync(group, p.v[q] >> 16);
        if (leader) atomicAdd(dst + q, ((unsigned long long)hi << 16) + lo);
      }
      if (leader) mark[col] = 1;
    } else {
#pragma unroll
      for (int q = 0; q < 8; q++) atomicAdd(dst + q, (unsigned long long)p.v[q]);
      mark[col] = 1;
    }
  });
}

// out[i] = sum_q s_q 2^(32 q) mod r for the sums s_q = acc[8 i + q] < 2^64 of pce_transpose:
// fr_mul(s_q, pow32[q]) with pow32[q] the Montgomery form of 2^(32 q) is s_q 2^(32 q) mod r, and the sum
// of the products' Montgomery forms is the Montgomery form of their sum.
extern "C" __global__ void __launch_bounds__(256) setup_fold(const unsigned long long* __restrict__ acc,
                                                             const uint4* __restrict__ pow32, uint4* out, u64 n) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  fr_t sum = {{0, 0, 0, 0, 0, 0, 0, 0}};
#pragma unroll
  for (int q = 0; q < 8; q++) {
    const unsigned long long s = acc[8 * i + q];
    sum = fr_add(sum, fr_mul(fr_t{{(u32)s, (u32)(s >> 32), 0, 0, 0, 0, 0, 0}}, pce_load(pow32, q)));
  }
  st_fr(out, i, sum);
}

// out[i] = sum_{q < terms} c[q] x_q[i] for terms <= 3 (x0, x1, x2; unused ones may be null); out may
// be one of the inputs.
extern "C" __global__ void __launch_bounds__(256) fr_lincomb(const uint4* x0, const uint4* x1, const uint4* x2,
                                                             const uint4* __restrict__ c, int terms, uint4* out, u64 n) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint4* x[3] = {x0, x1, x2};
  fr_t sum = fr_mul(pce_load(c, 0), ld_fr(x0, i));
  for (int q = 1; q < terms; q++) sum = fr_add(sum, fr_mul(pce_load(c, q), ld_fr(x[q], i)));
  st_fr(out, i, sum);
}
