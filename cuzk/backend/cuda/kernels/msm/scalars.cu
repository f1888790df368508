// The MSM's scalar pass over Fr: signed window digits and their counting sort by bucket, and the
// Montgomery -> canonical conversion the sparse MSM uses to find scalars 0 and 1.
#include "ff/fr.cuh"
#include "msm/params.cuh"

__device__ __forceinline__ fr_t ld_fr(const u32* p) {
  const uint4* s = reinterpret_cast<const uint4*>(p);
  const uint4 a = s[0], b = s[1];
  return fr_t{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}

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
  const fr_t s = fr_from_mont(ld_fr(scalars + 8 * (size_t)base));
  const u32 half = 1u << (c - 1);
  u32 carry = 0;
  for (int w = 0; w < W; w++) {
    u32 d = bits_at(s.v, w * c, c) + carry;
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

// out[i] = canonical value of the Montgomery-form x[i].
extern "C" __global__ void fr_from_mont_vec(const u32* x, int n, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const fr_t s = fr_from_mont(ld_fr(x + 8 * (size_t)i));
  for (int k = 0; k < 8; k++) out[(size_t)i * 8 + k] = s.v[k];
}
