// Test and benchmark kernels on curve points (not used by the prover): batched fixed-base
// multiplication (makes test and benchmark bases) and pairwise affine addition.
#pragma once
#include "ec/xyzz.cuh"

// out[i] = s_i * P for canonical scalars s_i (8 words each, low `nbits` bits used), P = point[0].
template <class F>
__device__ __forceinline__ void scalar_mul(const u32* point, const u32* scalars, int nbits, int n, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Affine<F> p = load_affine<F>(point);
  Xyzz<F> acc; set_inf(acc);
  for (int bit = nbits - 1; bit >= 0; bit--) {
    xyzz_dbl(acc);
    if ((scalars[(size_t)i * 8 + (bit >> 5)] >> (bit & 31)) & 1) xyzz_add_affine(acc, p);
  }
  store_affine(out + (size_t)i * (2 * Words<F>::n), to_affine(acc));
}

// Affine sum of each pair: out[i] = a[i] + b[i] (tests the addition special cases).
template <class F>
__device__ __forceinline__ void add_pairs(const u32* a, const u32* b, int n, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  constexpr int AW = 2 * Words<F>::n;
  Xyzz<F> acc = from_affine(load_affine<F>(a + (size_t)i * AW));
  xyzz_add_affine(acc, load_affine<F>(b + (size_t)i * AW));
  store_affine(out + (size_t)i * AW, to_affine(acc));
}


#define TEST_EC_KERNELS(G, F)                                                                                   \
  extern "C" __global__ void __launch_bounds__(256) scalar_mul_##G(const u32* point, const u32* scalars,       \
                                                                   int nbits, int n, u32* out) {               \
    scalar_mul<F>(point, scalars, nbits, n, out);                                                              \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(256) add_pairs_##G(const u32* a, const u32* b, int n, u32* out) { \
    add_pairs<F>(a, b, n, out);                                                                                \
  }
