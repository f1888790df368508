// G1 instances of the MSM kernels, the scalar digit pass, and small test / benchmark kernels.
#include "msm.cuh"

// c bits of the 256-bit little-endian scalar s starting at bit off (c <= 31)
__device__ __forceinline__ u32 bits_at(const u32* s, int off, int c) {
  int w = off >> 5, b = off & 31;
  u64 lo = w < 8 ? s[w] : 0, hi = w + 1 < 8 ? s[w + 1] : 0;
  return (u32)(((hi << 32 | lo) >> b) & ((1u << c) - 1));
}

// Signed c-bit digits of each scalar (Montgomery form in, converted here). Window w goes to bucket
// set w / M using table multiple k = w % M; its key is set * 2^(c-1) + |digit| - 1 and its value
// (k * nbase + base index) | sign. mode 0 counts keys, mode 1 scatters values (cursor = starts).
extern "C" __global__ void scalar_pass(int mode, const u32* __restrict__ scalars, const u32* __restrict__ idx,
                                       int n, int c, int W, int M, int nbase, u32* __restrict__ counter,
                                       u32* __restrict__ sorted) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u32 base = idx ? idx[i] : (u32)i;  // idx: the scalars (and bases) this pass uses
  u32 m[8], s[8];
  const uint4* src = reinterpret_cast<const uint4*>(scalars) + 2 * (size_t)base;
  uint4 a = src[0], b = src[1];
  m[0] = a.x; m[1] = a.y; m[2] = a.z; m[3] = a.w; m[4] = b.x; m[5] = b.y; m[6] = b.z; m[7] = b.w;
  fr_from_mont(s, m);
  const u32 half = 1u << (c - 1);
  u32 carry = 0;
  for (int w = 0; w < W; w++) {
    u32 d = bits_at(s, w * c, c) + carry;
    u32 mag, sign;
    if (d > half) { mag = (1u << c) - d; sign = NEG_BIT; carry = 1; }
    else { mag = d; sign = 0; carry = 0; }
    if (mag == 0) continue;
    const u32 key = (u32)(w / M) * half + mag - 1;
    if (mode == 0) {
      atomicAdd(&counter[key], 1u);
    } else {
      const u32 pos = atomicAdd(&counter[key], 1u);
      sorted[pos] = ((u32)(w % M) * (u32)nbase + base) | sign;
    }
  }
}

INSTANTIATE(g1, Fq)

// Throughput probe: each thread does `iters` dependent Fq (or Fr) multiplications.
extern "C" __global__ void bench_fq_mul(const u32* in, int iters, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  Fq a, b;
  for (int k = 0; k < 12; k++) { a.v[k] = in[k] ^ (u32)i; b.v[k] = in[12 + k]; }
  a.v[11] &= 0x0fffffff;
  for (int k = 0; k < iters; k++) { a = a * b; b = b * a; }
  for (int k = 0; k < 12; k++) out[(size_t)i * 12 + k] = a.v[k];
}
extern "C" __global__ void bench_fr_mul(const u32* in, int iters, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  u32 a[8], b[8];
  for (int k = 0; k < 8; k++) { a[k] = in[k] ^ (u32)i; b[k] = in[8 + k]; }
  a[7] &= 0x0fffffff;
  for (int k = 0; k < iters; k++) { mont_mul<8>(a, a, b, FR_R, FR_M0); mont_mul<8>(b, b, a, FR_R, FR_M0); }
  for (int k = 0; k < 8; k++) out[(size_t)i * 8 + k] = a[k];
}
// Elementwise Fq / Fr Montgomery product for tests: out[i] = x[i] * y[i].
extern "C" __global__ void fq_mul_vec(const u32* x, const u32* y, int n, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Fq a, b;
  load(a, x + (size_t)i * 12); load(b, y + (size_t)i * 12);
  store(out + (size_t)i * 12, a * b);
}
extern "C" __global__ void fr_from_mont_vec(const u32* x, int n, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  u32 m[8], s[8];
  for (int k = 0; k < 8; k++) m[k] = x[(size_t)i * 8 + k];
  fr_from_mont(s, m);
  for (int k = 0; k < 8; k++) out[(size_t)i * 8 + k] = s[k];
}
