// Word types of the field code (elements are arrays of 32-bit little-endian limbs) and the layout of
// field elements in global memory.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// Global-memory layout of a field element F (Fq, Fq2): a plain array of sizeof(F) / 4 words, 16-byte
// aligned, moved as uint4.
template <class F> struct Words { static constexpr int n = sizeof(F) / 4; };
template <class F> __device__ __forceinline__ void load(F& f, const u32* src) {
  const uint4* s = reinterpret_cast<const uint4*>(src);
  u32* w = reinterpret_cast<u32*>(&f);
#pragma unroll
  for (int k = 0; k < (int)(sizeof(F) / 16); k++) {
    uint4 t = s[k];
    w[4 * k] = t.x; w[4 * k + 1] = t.y; w[4 * k + 2] = t.z; w[4 * k + 3] = t.w;
  }
}
template <class F> __device__ __forceinline__ void store(u32* dst, const F& f) {
  uint4* d = reinterpret_cast<uint4*>(dst);
  const u32* w = reinterpret_cast<const u32*>(&f);
#pragma unroll
  for (int k = 0; k < (int)(sizeof(F) / 16); k++) d[k] = make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
}
