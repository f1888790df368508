// BLS12-381 base field Fq (12 x 32-bit limbs), its quadratic extension Fq2 = Fq[u]/(u^2+1),
// and the scalar field Fr (8 x 32-bit limbs). Montgomery form with R = 2^384 (Fq) / 2^256 (Fr),
// little-endian limbs: the same bits as the CPU side's 6 / 4 uint64 limbs.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

__constant__ u32 FQ_P[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                             0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
__constant__ u32 FQ_ONE[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b, 0x53c758ba, 0x5f489857,
                               0x70525745, 0x77ce5853, 0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
__constant__ u32 FQ_PM2[12] = {0xffffaaa9, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                               0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
__constant__ u32 FR_R[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                            0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
#define FQ_M0 0xfffcfffdu  // -p^-1 mod 2^32
#define FR_M0 0xffffffffu  // -r^-1 mod 2^32

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

// a^(p-2) by left-to-right square-and-multiply (exponent is a constant: no divergence)
__device__ __noinline__ Fq inverse(const Fq& a) {
  Fq r = fq_one();
  for (int bit = 380; bit >= 0; bit--) {
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
__device__ __forceinline__ Fq2 operator*(const Fq2& a, const Fq2& b) {
  Fq t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
  Fq t2 = add_lazy(a.c0, a.c1) * add_lazy(b.c0, b.c1);
  return {t0 - t1, t2 - t0 - t1};
}
__device__ __forceinline__ Fq2 sqr(const Fq2& a) {
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

// ---------------------------------------------------------------- Fr
// Montgomery -> canonical: multiply by 1.
__device__ __forceinline__ void fr_from_mont(u32* r, const u32* a) {
  u32 one[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  mont_mul<8>(r, a, one, FR_R, FR_M0);
}
