// Generic Montgomery arithmetic on N x 32-bit little-endian limbs (modulus passed as a word array),
// written as PTX carry chains; ff/fq.cuh instantiates it for Fq (N = 12).
#pragma once
#include "ff/common.cuh"

// ---- carry-chain primitives (one PTX instruction each; CC.CF flows between consecutive ones) ----
#define PTX_MAD_PAIR(OP, lo, hi, x, y) \
  asm volatile(OP ".lo.cc.u32 %0, %2, %3, %0;\n\tmadc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo), "+r"(hi) : "r"(x), "r"(y))
#define PTX_ADDC0(d) asm volatile("addc.u32 %0, %0, 0;" : "+r"(d))

// Montgomery product r = a*b/2^(32N) mod M for M < 2^(32N-2), inputs < M, output < M.
// CIOS with two accumulators: E holds words at positions 0..N, O at positions 1..N+1 (O[k] at
// k+1), so every product's lo/hi pair lands in two adjacent registers of one carry chain and
// ptxas fuses it into one IMAD.WIDE.U32.X. The one-word shift of each round swaps their roles;
// the single word left over at position 0 is merged by an add.cc whose carry enters the odd chain.
template <int N>
__device__ __forceinline__ void mont_mul(u32* r, const u32* a, const u32* b, const u32* M, u32 m0) {
  u32 E[N + 1], O[N + 1];
#pragma unroll
  for (int k = 0; k <= N; k++) { E[k] = 0; O[k] = 0; }
#pragma unroll
  for (int i = 0; i < N; i++) {
    const u32 bi = b[i];
    if (i == 0) {
      PTX_MAD_PAIR("mad", O[0], O[1], a[1], bi);
    } else {
      u32 nE[N + 1], nO[N + 1];
#pragma unroll
      for (int k = 0; k <= N; k++) nE[k] = O[k];
#pragma unroll
      for (int k = 0; k <= N - 2; k++) nO[k] = E[k + 2];
      nO[N - 1] = 0; nO[N] = 0;
      asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(nE[0]) : "r"(E[1]));
      PTX_MAD_PAIR("madc", nO[0], nO[1], a[1], bi);
#pragma unroll
      for (int k = 0; k <= N; k++) { E[k] = nE[k]; O[k] = nO[k]; }
    }
#pragma unroll
    for (int j = 3; j < N; j += 2) PTX_MAD_PAIR("madc", O[j - 1], O[j], a[j], bi);
    PTX_ADDC0(O[N]);
    PTX_MAD_PAIR("mad", E[0], E[1], a[0], bi);
#pragma unroll
    for (int j = 2; j < N; j += 2) PTX_MAD_PAIR("madc", E[j], E[j + 1], a[j], bi);
    PTX_ADDC0(E[N]);
    const u32 m = E[0] * m0;
    PTX_MAD_PAIR("mad", E[0], E[1], M[0], m);
#pragma unroll
    for (int j = 2; j < N; j += 2) PTX_MAD_PAIR("madc", E[j], E[j + 1], M[j], m);
    PTX_ADDC0(E[N]);
    PTX_MAD_PAIR("mad", O[0], O[1], M[1], m);
#pragma unroll
    for (int j = 3; j < N; j += 2) PTX_MAD_PAIR("madc", O[j - 1], O[j], M[j], m);
    PTX_ADDC0(O[N]);
  }
  // result = E >> 32 + O, then one conditional subtraction of M
  u32 s[N], t[N];
  asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(O[0]), "r"(E[1]));
#pragma unroll
  for (int k = 1; k < N; k++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(s[k]) : "r"(O[k]), "r"(E[k + 1]));
  asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(s[0]), "r"(M[0]));
#pragma unroll
  for (int k = 1; k < N; k++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t[k]) : "r"(s[k]), "r"(M[k]));
  u32 borrow;
  asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
#pragma unroll
  for (int k = 0; k < N; k++) r[k] = borrow ? s[k] : t[k];
}

// r = a + b mod M (inputs < M < 2^(32N-1))
template <int N>
__device__ __forceinline__ void mod_add(u32* r, const u32* a, const u32* b, const u32* M) {
  u32 s[N], t[N], borrow;
  asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(a[0]), "r"(b[0]));
#pragma unroll
  for (int k = 1; k < N; k++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(s[k]) : "r"(a[k]), "r"(b[k]));
  asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(s[0]), "r"(M[0]));
#pragma unroll
  for (int k = 1; k < N; k++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t[k]) : "r"(s[k]), "r"(M[k]));
  asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
#pragma unroll
  for (int k = 0; k < N; k++) r[k] = borrow ? s[k] : t[k];
}

// r = a - b mod M
template <int N>
__device__ __forceinline__ void mod_sub(u32* r, const u32* a, const u32* b, const u32* M) {
  u32 s[N], t[N], borrow;
  asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(a[0]), "r"(b[0]));
#pragma unroll
  for (int k = 1; k < N; k++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(s[k]) : "r"(a[k]), "r"(b[k]));
  asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
  asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(s[0]), "r"(M[0]));
#pragma unroll
  for (int k = 1; k < N; k++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t[k]) : "r"(s[k]), "r"(M[k]));
#pragma unroll
  for (int k = 0; k < N; k++) r[k] = borrow ? t[k] : s[k];
}
