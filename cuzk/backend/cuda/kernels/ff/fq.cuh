// BLS12-381 base field Fq (12 x 32-bit limbs, Montgomery form with R = 2^384) and its quadratic
// extension Fq2 = Fq[u]/(u^2+1). Little-endian limbs: the same bits as the CPU side's 6 uint64 limbs.
#pragma once
#include "ff/constants.cuh"
#include "ff/mont.cuh"

// ---------------------------------------------------------------- Fq
struct Fq {
  u32 v[12];
};

__device__ __forceinline__ Fq fq_zero() { Fq r; for (int k = 0; k < 12; k++) r.v[k] = 0; return r; }
__device__ __forceinline__ Fq fq_one() { Fq r; for (int k = 0; k < 12; k++) r.v[k] = FQ_ONE[k]; return r; }
__device__ __forceinline__ Fq operator*(const Fq& a, const Fq& b) { Fq r; mont_mul<12>(r.v, a.v, b.v, FQ_P, FQ_M0); return r; }
__device__ __forceinline__ Fq operator+(const Fq& a, const Fq& b) { Fq r; mod_add<12>(r.v, a.v, b.v, FQ_P); return r; }
__device__ __forceinline__ Fq operator-(const Fq& a, const Fq& b) { Fq r; mod_sub<12>(r.v, a.v, b.v, FQ_P); return r; }
__device__ __forceinline__ Fq sqr(const Fq& a) { return a * a; }
__device__ __forceinline__ Fq neg(const Fq& a) { return fq_zero() - a; }
__device__ __forceinline__ bool is_zero(const Fq& a) {
  u32 acc = 0;
#pragma unroll
  for (int k = 0; k < 12; k++) acc |= a.v[k];
  return acc == 0;
}
__device__ __forceinline__ void set_zero(Fq& a) { a = fq_zero(); }
__device__ __forceinline__ void set_one(Fq& a) { a = fq_one(); }

// Canonical integer a < p <-> Montgomery form a R mod p (mont_mul by R^2, by 1).
__device__ __forceinline__ Fq fq_to_mont(const Fq& a) { Fq r; mont_mul<12>(r.v, a.v, FQ_R2, FQ_P, FQ_M0); return r; }
__device__ __forceinline__ Fq fq_from_mont(const Fq& a) {
  Fq one = fq_zero();
  one.v[0] = 1;
  return a * one;
}
// Whether the integer a (12 little-endian words, any value below 2^384) is below p.
__device__ __forceinline__ bool fq_is_canonical(const Fq& a) {
  u32 borrow = 0;
#pragma unroll
  for (int k = 0; k < 12; k++) {
    const u64 d = (u64)a.v[k] - FQ_P[k] - borrow;
    borrow = (u32)(d >> 63);
  }
  return borrow != 0;
}

// a^(p-2) by left-to-right square-and-multiply (exponent is a constant: no divergence)
__device__ __noinline__ Fq inverse(const Fq& a) {
  Fq r = fq_one();
  for (int bit = FQ_BITS - 1; bit >= 0; bit--) {
    r = r * r;
    if ((FQ_PM2[bit >> 5] >> (bit & 31)) & 1) r = r * a;
  }
  return r;
}

// ---------------------------------------------------------------- Fq2
struct Fq2 {
  Fq c0, c1;
};

__device__ __forceinline__ Fq2 operator+(const Fq2& a, const Fq2& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
__device__ __forceinline__ Fq2 operator-(const Fq2& a, const Fq2& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
// a + b without the final reduction (< 2p): mont_mul takes inputs below 2p and still returns < p,
// since (2p)^2 / 2^384 + p < 2p.
__device__ __forceinline__ Fq add_lazy(const Fq& a, const Fq& b) {
  Fq r;
  asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
  for (int k = 1; k < 12; k++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[k]) : "r"(a.v[k]), "r"(b.v[k]));
  return r;
}
// FQ2_MUL: __forceinline__, or __noinline__ in modules that trade a call per Fq2 product for a much
// shorter compile (the G2 kernels outside the bucket loop).
#ifndef FQ2_MUL
#define FQ2_MUL __forceinline__
#endif
__device__ FQ2_MUL Fq2 operator*(const Fq2& a, const Fq2& b) {
  Fq t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
  Fq t2 = add_lazy(a.c0, a.c1) * add_lazy(b.c0, b.c1);
  return {t0 - t1, t2 - t0 - t1};
}
__device__ FQ2_MUL Fq2 sqr(const Fq2& a) {
  Fq t = a.c0 * a.c1;
  return {add_lazy(a.c0, a.c1) * (a.c0 - a.c1), t + t};
}
__device__ __forceinline__ Fq2 neg(const Fq2& a) { return {neg(a.c0), neg(a.c1)}; }
__device__ __forceinline__ bool is_zero(const Fq2& a) { return is_zero(a.c0) && is_zero(a.c1); }
__device__ __forceinline__ void set_zero(Fq2& a) { a.c0 = fq_zero(); a.c1 = fq_zero(); }
__device__ __forceinline__ void set_one(Fq2& a) { a.c0 = fq_one(); a.c1 = fq_zero(); }
__device__ __noinline__ Fq2 inverse(const Fq2& a) {
  Fq t = inverse(a.c0 * a.c0 + a.c1 * a.c1);
  return {a.c0 * t, neg(a.c1 * t)};
}
