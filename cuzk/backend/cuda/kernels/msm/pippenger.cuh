// Pippenger MSM kernel templates for G1 (F = Fq) and G2 (F = Fq2); msm_g1_*.cu and msm_g2_*.cu
// instantiate them with the MSM_* macros below. Driven from cuzk/backend/cuda/msm.py:
//   scalar_pass (msm/scalars.cu: count, then scatter: a counting sort of (bucket, point) pairs),
//   accum_affine (long buckets split into items of <= L points), accum_xyzz (sums of partial
//   sums, repeated until one per bucket), bucket_reduce (running sums over chunks of buckets),
//   horner_affine (combines bucket sets), precompute (table of 2^(c*k) multiples of each base).
#pragma once
#include "ec/xyzz.cuh"
#include "msm/params.cuh"

// Item t covers entries [starts[key] + j*L, ...) of key = item_key[t], j = item_j[t], and writes
// its partial sum to row item_off[key] + j (a key's partial sums stay contiguous whatever order
// the items run in; the host runs them longest first, so a warp's threads do equal work).
// Without item_key (nullptr) item t is key t with its whole range, written to row t.
__device__ __forceinline__ u32 item_range(int t, const u32* starts, const u32* counts, const u32* item_key,
                                          const u32* item_j, const u32* item_off, int L, u32& beg, u32& end) {
  if (item_key) {
    const u32 key = item_key[t], j = item_j[t];
    beg = starts[key] + j * L;
    end = min(beg + L, starts[key] + counts[key]);
    return item_off[key] + j;
  }
  beg = starts[t];
  end = beg + counts[t];
  return t;
}

template <class F>
__device__ __forceinline__ Affine<F> fetch_signed(const u32* table, u32 v) {
  Affine<F> p = load_affine<F>(table + (size_t)(v & ~NEG_BIT) * (2 * Words<F>::n));
  if (v & NEG_BIT) p.y = neg(p.y);
  return p;
}

template <class F>
__device__ __forceinline__ void accum_affine(const u32* table, const u32* sorted, const u32* starts, const u32* counts,
                                             const u32* item_key, const u32* item_j, const u32* item_off, int L,
                                             int nitems, u32* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nitems) return;
  u32 beg, end;
  const u32 row = item_range(t, starts, counts, item_key, item_j, item_off, L, beg, end);
  Xyzz<F> acc; set_inf(acc);
  if constexpr (sizeof(F) > 48) {  // G2: no prefetch, to save 48 registers
    for (u32 e = beg; e < end; e++) xyzz_add_affine_inline(acc, fetch_signed<F>(table, sorted[e]));
  } else if (beg < end) {  // G1: load the next point while adding this one
    Affine<F> next = fetch_signed<F>(table, sorted[beg]);
    for (u32 e = beg; e < end; e++) {
      Affine<F> cur = next;
      if (e + 1 < end) next = fetch_signed<F>(table, sorted[e + 1]);
      xyzz_add_affine_inline(acc, cur);
    }
  }
  store_xyzz(out + (size_t)row * (4 * Words<F>::n), acc);
}

template <class F>
__device__ __forceinline__ void accum_xyzz(const u32* src, const u32* starts, const u32* counts, const u32* item_key,
                                           const u32* item_j, const u32* item_off, int L, int nitems, u32* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nitems) return;
  u32 beg, end;
  const u32 row = item_range(t, starts, counts, item_key, item_j, item_off, L, beg, end);
  Xyzz<F> acc; set_inf(acc);
  for (u32 e = beg; e < end; e++) xyzz_add(acc, load_xyzz<F>(src + (size_t)e * (4 * Words<F>::n)));
  store_xyzz(out + (size_t)row * (4 * Words<F>::n), acc);
}

// Thread t sums chunk ch = t % nch of bucket set t / nch: sum over its buckets j (multiplier j+1)
// of (j+1) * B_j = (running-sum total) + lo * (plain sum), lo = first bucket of the chunk.
template <class F>
__device__ __forceinline__ void bucket_reduce(const u32* buckets, int S, int B, int chunk, u32* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int nch = (B + chunk - 1) / chunk;
  if (t >= S * nch) return;
  const int set = t / nch, lo = (t % nch) * chunk, hi = min(lo + chunk, B);
  Xyzz<F> run, acc; set_inf(run); set_inf(acc);
  for (int j = hi - 1; j >= lo; j--) {
    xyzz_add(run, load_xyzz<F>(buckets + ((size_t)set * B + j) * (4 * Words<F>::n)));
    xyzz_add(acc, run);
  }
  if (lo) xyzz_add(acc, xyzz_mul_small(run, (u32)lo));
  store_xyzz(out + (size_t)t * (4 * Words<F>::n), acc);
}

// One thread: result = sum_s 2^(shift*s) * sums[s], written as an affine point.
template <class F>
__device__ __forceinline__ void horner_affine(const u32* sums, int S, int shift, u32* out) {
  if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
  Xyzz<F> acc = load_xyzz<F>(sums + (size_t)(S - 1) * (4 * Words<F>::n));
  for (int s = S - 2; s >= 0; s--) {
    for (int k = 0; k < shift; k++) xyzz_dbl(acc);
    xyzz_add(acc, load_xyzz<F>(sums + (size_t)s * (4 * Words<F>::n)));
  }
  store_affine(out, to_affine(acc));
}

// table[k*n + i] = 2^(c*k) * bases[i] (affine) for k < M; one batched inversion per thread.
template <class F>
__device__ __forceinline__ void precompute(const u32* bases, int n, int M, int c, u32* table) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  constexpr int AW = 2 * Words<F>::n;
  const Affine<F> a = load_affine<F>(bases + (size_t)i * AW);
  store_affine(table + (size_t)i * AW, a);
  if (M == 1) return;
  Xyzz<F> pts[PRE_MAX];
  F pref[PRE_MAX];
  Xyzz<F> q = from_affine(a);
  const bool inf = is_inf(a);
  for (int k = 1; k < M; k++) {
    for (int d = 0; d < c; d++) xyzz_dbl(q);
    pts[k] = q;
    pref[k] = k == 1 ? q.zzz : pref[k - 1] * q.zzz;
  }
  F inv = inf ? pref[M - 1] : inverse(pref[M - 1]);
  for (int k = M - 1; k >= 1; k--) {
    Affine<F> r;
    if (inf) {
      set_zero(r.x); set_zero(r.y);
    } else {
      const F t = k > 1 ? inv * pref[k - 1] : inv;  // 1 / ZZZ_k
      inv = inv * pts[k].zzz;
      const F iz = t * pts[k].zz;                    // 1 / Z_k
      r.x = pts[k].x * sqr(iz);
      r.y = pts[k].y * t;
    }
    store_affine(table + ((size_t)k * n + i) * AW, r);
  }
}

#define MSM_ACCUM_AFFINE(G, F)                                                                               \
  extern "C" __global__ void __launch_bounds__(256) accum_affine_##G(                                        \
      const u32* table, const u32* sorted, const u32* starts, const u32* counts, const u32* item_key,          \
      const u32* item_j, const u32* item_off, int L, int nitems, u32* out) {                                 \
    accum_affine<F>(table, sorted, starts, counts, item_key, item_j, item_off, L, nitems, out);              \
  }
#define MSM_ACCUM_XYZZ(G, F)                                                                                 \
  extern "C" __global__ void __launch_bounds__(256) accum_xyzz_##G(                                          \
      const u32* src, const u32* starts, const u32* counts, const u32* item_key, const u32* item_j,           \
      const u32* item_off, int L, int nitems, u32* out) {                                                    \
    accum_xyzz<F>(src, starts, counts, item_key, item_j, item_off, L, nitems, out);                          \
  }
#define MSM_BUCKET_REDUCE(G, F)                                                                              \
  extern "C" __global__ void __launch_bounds__(256) bucket_reduce_##G(const u32* buckets, int S, int B,      \
                                                                      int chunk, u32* out) {                 \
    bucket_reduce<F>(buckets, S, B, chunk, out);                                                             \
  }
#define MSM_HORNER_AFFINE(G, F)                                                                              \
  extern "C" __global__ void horner_affine_##G(const u32* sums, int S, int shift, u32* out) {                \
    horner_affine<F>(sums, S, shift, out);                                                                   \
  }
#define MSM_PRECOMPUTE(G, F)                                                                                 \
  extern "C" __global__ void __launch_bounds__(128) precompute_##G(const u32* bases, int n, int M, int c,    \
                                                                   u32* table) {                             \
    precompute<F>(bases, n, M, c, table);                                                                    \
  }
