// Batched fixed-base scalar multiplication out[i] = [s_i] P in G1 (F = Fq) and G2 (F = Fq2), for the
// Groth16 setup's query vectors (cuzk/backend/cuda/setup.py); setup_g1.cu and setup_g2.cu
// instantiate the kernels with FIXED_BASE_KERNELS.
//
// Table (fb_table, once per base and window width c): with W = ceil(256 / c) windows and
// H = 2^(c-1), table[w H + j - 1] = [j 2^(c w)] P for j = 1 .. H (affine), from the window bases
// B_w = [2^(c w)] P. A canonical scalar s < r < 2^255 has signed c-bit digits d_w in (-H, H] with
// s = sum_w d_w 2^(c w) (digit d > H becomes d - 2^c with a carry into the next window; W c >= 256 >
// 255 + 1 leaves the top digit no carry), so [s] P = sum_{d_w != 0} sign(d_w) table[w H + |d_w| - 1]:
// at most W mixed additions, no doublings.
//
// Affine output (fb_mul): thread t of S takes the points i = t + j S. For each it keeps, in the
// output slot, X' = X ZZZ and Y' = Y ZZ of the XYZZ sum and, in scratch, z = ZZ ZZZ and the product
// of its earlier z (the identity: X' = Y' = 0, z = 1); one inversion of the thread's product of z,
// then a backward sweep gives 1/z and x = X' / z = X / ZZ, y = Y' / z = Y / ZZZ (Montgomery's trick:
// one inversion per thread, about 570 Fq products, shared by its n / S points).
#pragma once
#include "ec/xyzz.cuh"
#include "ff/fr.cuh"
// layout.cuh: FB_THREADS
#include "layout.cuh"

// bits [at, at + c) of a canonical scalar (c < 32; bits past 256 read as zero)
__device__ __forceinline__ u32 fb_bits(const fr_t& s, int at, int c) {
  const int q = at >> 5;
  u64 v = s.v[q];
  if (q + 1 < 8) v |= (u64)s.v[q + 1] << 32;
  return (u32)(v >> (at & 31)) & ((1u << c) - 1);
}

// table[e] = [j] B_w for e = w H + j - 1 < count, bases = the W window bases (affine)
template <class F>
__device__ __forceinline__ void fb_table(const u32* __restrict__ bases, u32 H, u64 count, u32* table) {
  const u64 e = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= count) return;
  constexpr int AW = 2 * Words<F>::n;
  const u64 w = e / H;
  const u32 j = (u32)(e - w * H) + 1;
  store_affine(table + e * AW, to_affine(xyzz_mul_small(from_affine(load_affine<F>(bases + w * AW)), j)));
}

// out[i] = [s_i] P for i < n from fb_table's table (window width c, W windows), scalars (n, 8) u32
// Montgomery Fr; S threads (S <= n); zs, pre: scratch of n elements of F each.
template <class F>
__device__ __forceinline__ void fb_mul(const u32* __restrict__ table, int c, int W, const u32* __restrict__ scalars,
                                       u64 n, u64 S, u32* out, u32* zs, u32* pre) {
  const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= S || t >= n) return;
  constexpr int FW = Words<F>::n, AW = 2 * FW;
  const u32 H = 1u << (c - 1);
  F one, prod;
  set_one(one);
  prod = one;
  u64 i = t;
  for (; i < n; i += S) {
    const uint4* sp = reinterpret_cast<const uint4*>(scalars + 8 * i);
    const uint4 lo = __ldg(sp), hi = __ldg(sp + 1);
    const fr_t s = fr_from_mont(fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}});
    Xyzz<F> acc;
    set_inf(acc);
    u32 carry = 0;
    for (int w = 0; w < W; w++) {
      const u32 d = fb_bits(s, w * c, c) + carry;
      carry = d > H;
      const u32 mag = carry ? (1u << c) - d : d;
      if (mag) {
        Affine<F> a = load_affine<F>(table + ((u64)w * H + mag - 1) * AW);
        if (carry) a.y = neg(a.y);
        xyzz_add_affine(acc, a);
      }
    }
    Affine<F> xy;
    F z;
    if (is_inf(acc)) {
      set_zero(xy.x);
      set_zero(xy.y);
      z = one;
    } else {
      xy.x = acc.x * acc.zzz;
      xy.y = acc.y * acc.zz;
      z = acc.zz * acc.zzz;
    }
    store_affine(out + i * AW, xy);
    store(pre + i * FW, prod);
    store(zs + i * FW, z);
    prod = prod * z;
  }
  F inv = inverse(prod);
  do {
    i -= S;
    F z, before;
    load(z, zs + i * FW);
    load(before, pre + i * FW);
    const F iz = inv * before;  // 1 / z_i
    inv = inv * z;
    Affine<F> xy = load_affine<F>(out + i * AW);
    xy.x = xy.x * iz;
    xy.y = xy.y * iz;
    store_affine(out + i * AW, xy);
  } while (i >= S);
}

#define FIXED_BASE_KERNELS(G, F)                                                                                \
  extern "C" __global__ void __launch_bounds__(FB_THREADS) fb_table_##G(const u32* bases, u32 H, u64 count,    \
                                                                        u32* table) {                           \
    fb_table<F>(bases, H, count, table);                                                                        \
  }                                                                                                             \
  extern "C" __global__ void __launch_bounds__(FB_THREADS) fb_mul_##G(const u32* table, int c, int W,          \
                                                                      const u32* scalars, u64 n, u64 S,         \
                                                                      u32* out, u32* zs, u32* pre) {            \
    fb_mul<F>(table, c, W, scalars, n, S, out, zs, pre);                                                        \
  }
