// BLS12-381 scalar field Fr: 8 x 32-bit little-endian limbs, Montgomery form with R = 2^256 (the
// same bits as the host's 4 x uint64 limbs). The one Fr of the kernels (MSM scalar digits, NTT):
// hand-scheduled PTX with the modulus limbs as immediates.
#pragma once
#include "ff/common.cuh"
#include "ff/constants.cuh"

static_assert(FR_M0 == 0xffffffffu, "fr_mul takes m = -e[0]: it relies on -r^-1 = -1 mod 2^32");

struct fr_t {
  u32 v[8];
};

// acc[0..8] += (x0 + x1 2^64 + x2 2^128 + x3 2^192) * y: four lo/hi pairs in one carry chain, so each
// pair becomes one IMAD.WIDE.U32(.X).
#define FR_ROW(acc, x0, x1, x2, x3, y)                                                              \
  asm("mad.lo.cc.u32 %0, %9, %13, %0;\n\t"                                                          \
      "madc.hi.cc.u32 %1, %9, %13, %1;\n\t"                                                         \
      "madc.lo.cc.u32 %2, %10, %13, %2;\n\t"                                                        \
      "madc.hi.cc.u32 %3, %10, %13, %3;\n\t"                                                        \
      "madc.lo.cc.u32 %4, %11, %13, %4;\n\t"                                                        \
      "madc.hi.cc.u32 %5, %11, %13, %5;\n\t"                                                        \
      "madc.lo.cc.u32 %6, %12, %13, %6;\n\t"                                                        \
      "madc.hi.cc.u32 %7, %12, %13, %7;\n\t"                                                        \
      "addc.u32 %8, %8, 0;"                                                                         \
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]),       \
        "+r"(acc[6]), "+r"(acc[7]), "+r"(acc[8])                                                     \
      : "r"(x0), "r"(x1), "r"(x2), "r"(x3), "r"(y))

// Same with the modulus limbs as immediates (mad d, m, imm, c).
#define FR_RED(acc, P0, P1, P2, P3, m)                                                               \
  asm("mad.lo.cc.u32 %0, %9, " P0 ", %0;\n\t"                                                        \
      "madc.hi.cc.u32 %1, %9, " P0 ", %1;\n\t"                                                       \
      "madc.lo.cc.u32 %2, %9, " P1 ", %2;\n\t"                                                       \
      "madc.hi.cc.u32 %3, %9, " P1 ", %3;\n\t"                                                       \
      "madc.lo.cc.u32 %4, %9, " P2 ", %4;\n\t"                                                       \
      "madc.hi.cc.u32 %5, %9, " P2 ", %5;\n\t"                                                       \
      "madc.lo.cc.u32 %6, %9, " P3 ", %6;\n\t"                                                       \
      "madc.hi.cc.u32 %7, %9, " P3 ", %7;\n\t"                                                       \
      "addc.u32 %8, %8, 0;"                                                                          \
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]),        \
        "+r"(acc[6]), "+r"(acc[7]), "+r"(acc[8])                                                      \
      : "r"(m))

// r = x - p if x >= p else x (x < 2^256).
__device__ __forceinline__ void fr_reduce_once(u32* r, const u32* x) {
  u32 t[8], borrow;
  asm("sub.cc.u32 %0, %9, " FR_P0 ";\n\t"
      "subc.cc.u32 %1, %10, " FR_P1 ";\n\t"
      "subc.cc.u32 %2, %11, " FR_P2 ";\n\t"
      "subc.cc.u32 %3, %12, " FR_P3 ";\n\t"
      "subc.cc.u32 %4, %13, " FR_P4 ";\n\t"
      "subc.cc.u32 %5, %14, " FR_P5 ";\n\t"
      "subc.cc.u32 %6, %15, " FR_P6 ";\n\t"
      "subc.cc.u32 %7, %16, " FR_P7 ";\n\t"
      "subc.u32 %8, 0, 0;"
      : "=r"(t[0]), "=r"(t[1]), "=r"(t[2]), "=r"(t[3]), "=r"(t[4]), "=r"(t[5]), "=r"(t[6]), "=r"(t[7]),
        "=r"(borrow)
      : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]));
#pragma unroll
  for (int k = 0; k < 8; k++) r[k] = borrow ? x[k] : t[k];
}

// Montgomery product a * b / 2^256 mod r (CIOS). Two accumulators: e holds the words at positions
// 0..8 and collects the even limbs' products, o the words at positions 1..9 and the odd limbs'. After
// each round's division by 2^32, o becomes the new e and e's upper words the new o; e's word 1 lands
// at position 0 and is added there, its carry feeding the next round's odd chain.
__device__ __forceinline__ fr_t fr_mul(const fr_t& A, const fr_t& B) {
  const u32* a = A.v;
  u32 e[9], o[9];
#pragma unroll
  for (int k = 0; k < 9; k++) { e[k] = 0; o[k] = 0; }
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const u32 b = B.v[i];
    if (i == 0) {
      FR_ROW(o, a[1], a[3], a[5], a[7], b);
    } else {
      u32 ne[9], no[9];
      u32 lo = e[1];
#pragma unroll
      for (int k = 0; k < 9; k++) ne[k] = o[k];
#pragma unroll
      for (int k = 0; k < 7; k++) no[k] = e[k + 2];
      no[7] = 0;
      no[8] = 0;
      // ne[0] += lo; its carry (weight 2^32: position 1, no[0]'s) enters the odd chain
      asm("add.cc.u32 %0, %0, %1;\n\t"
          "madc.lo.cc.u32 %2, %11, %15, %2;\n\t"
          "madc.hi.cc.u32 %3, %11, %15, %3;\n\t"
          "madc.lo.cc.u32 %4, %12, %15, %4;\n\t"
          "madc.hi.cc.u32 %5, %12, %15, %5;\n\t"
          "madc.lo.cc.u32 %6, %13, %15, %6;\n\t"
          "madc.hi.cc.u32 %7, %13, %15, %7;\n\t"
          "madc.lo.cc.u32 %8, %14, %15, %8;\n\t"
          "madc.hi.cc.u32 %9, %14, %15, %9;\n\t"
          "addc.u32 %10, %10, 0;"
          : "+r"(ne[0]), "+r"(lo), "+r"(no[0]), "+r"(no[1]), "+r"(no[2]), "+r"(no[3]), "+r"(no[4]),
            "+r"(no[5]), "+r"(no[6]), "+r"(no[7]), "+r"(no[8])
          : "r"(a[1]), "r"(a[3]), "r"(a[5]), "r"(a[7]), "r"(b));
#pragma unroll
      for (int k = 0; k < 9; k++) { e[k] = ne[k]; o[k] = no[k]; }
    }
    FR_ROW(e, a[0], a[2], a[4], a[6], b);
    const u32 m = 0u - e[0];  // e[0] * FR_M0 mod 2^32 (FR_M0 = -1)
    FR_RED(e, FR_P0, FR_P2, FR_P4, FR_P6, m);
    FR_RED(o, FR_P1, FR_P3, FR_P5, FR_P7, m);
  }
  // value = e / 2^32 + o (e[0] is 0), below 2r: add, then one conditional subtraction
  u32 s[8];
  asm("add.cc.u32 %0, %8, %16;\n\t"
      "addc.cc.u32 %1, %9, %17;\n\t"
      "addc.cc.u32 %2, %10, %18;\n\t"
      "addc.cc.u32 %3, %11, %19;\n\t"
      "addc.cc.u32 %4, %12, %20;\n\t"
      "addc.cc.u32 %5, %13, %21;\n\t"
      "addc.cc.u32 %6, %14, %22;\n\t"
      "addc.u32 %7, %15, %23;"
      : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3]), "=r"(s[4]), "=r"(s[5]), "=r"(s[6]), "=r"(s[7])
      : "r"(o[0]), "r"(o[1]), "r"(o[2]), "r"(o[3]), "r"(o[4]), "r"(o[5]), "r"(o[6]), "r"(o[7]),
        "r"(e[1]), "r"(e[2]), "r"(e[3]), "r"(e[4]), "r"(e[5]), "r"(e[6]), "r"(e[7]), "r"(e[8]));
  fr_t r;
  fr_reduce_once(r.v, s);
  return r;
}

__device__ __forceinline__ fr_t fr_add(const fr_t& a, const fr_t& b) {
  u32 s[8];
  asm("add.cc.u32 %0, %8, %16;\n\t"
      "addc.cc.u32 %1, %9, %17;\n\t"
      "addc.cc.u32 %2, %10, %18;\n\t"
      "addc.cc.u32 %3, %11, %19;\n\t"
      "addc.cc.u32 %4, %12, %20;\n\t"
      "addc.cc.u32 %5, %13, %21;\n\t"
      "addc.cc.u32 %6, %14, %22;\n\t"
      "addc.u32 %7, %15, %23;"
      : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3]), "=r"(s[4]), "=r"(s[5]), "=r"(s[6]), "=r"(s[7])
      : "r"(a.v[0]), "r"(a.v[1]), "r"(a.v[2]), "r"(a.v[3]), "r"(a.v[4]), "r"(a.v[5]), "r"(a.v[6]),
        "r"(a.v[7]), "r"(b.v[0]), "r"(b.v[1]), "r"(b.v[2]), "r"(b.v[3]), "r"(b.v[4]), "r"(b.v[5]),
        "r"(b.v[6]), "r"(b.v[7]));
  fr_t r;
  fr_reduce_once(r.v, s);
  return r;
}

__device__ __forceinline__ fr_t fr_sub(const fr_t& a, const fr_t& b) {
  u32 s[8], t[8], borrow;
  asm("sub.cc.u32 %0, %9, %17;\n\t"
      "subc.cc.u32 %1, %10, %18;\n\t"
      "subc.cc.u32 %2, %11, %19;\n\t"
      "subc.cc.u32 %3, %12, %20;\n\t"
      "subc.cc.u32 %4, %13, %21;\n\t"
      "subc.cc.u32 %5, %14, %22;\n\t"
      "subc.cc.u32 %6, %15, %23;\n\t"
      "subc.cc.u32 %7, %16, %24;\n\t"
      "subc.u32 %8, 0, 0;"
      : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3]), "=r"(s[4]), "=r"(s[5]), "=r"(s[6]), "=r"(s[7]),
        "=r"(borrow)
      : "r"(a.v[0]), "r"(a.v[1]), "r"(a.v[2]), "r"(a.v[3]), "r"(a.v[4]), "r"(a.v[5]), "r"(a.v[6]),
        "r"(a.v[7]), "r"(b.v[0]), "r"(b.v[1]), "r"(b.v[2]), "r"(b.v[3]), "r"(b.v[4]), "r"(b.v[5]),
        "r"(b.v[6]), "r"(b.v[7]));
  asm("add.cc.u32 %0, %8, " FR_P0 ";\n\t"
      "addc.cc.u32 %1, %9, " FR_P1 ";\n\t"
      "addc.cc.u32 %2, %10, " FR_P2 ";\n\t"
      "addc.cc.u32 %3, %11, " FR_P3 ";\n\t"
      "addc.cc.u32 %4, %12, " FR_P4 ";\n\t"
      "addc.cc.u32 %5, %13, " FR_P5 ";\n\t"
      "addc.cc.u32 %6, %14, " FR_P6 ";\n\t"
      "addc.u32 %7, %15, " FR_P7 ";"
      : "=r"(t[0]), "=r"(t[1]), "=r"(t[2]), "=r"(t[3]), "=r"(t[4]), "=r"(t[5]), "=r"(t[6]), "=r"(t[7])
      : "r"(s[0]), "r"(s[1]), "r"(s[2]), "r"(s[3]), "r"(s[4]), "r"(s[5]), "r"(s[6]), "r"(s[7]));
  fr_t r;
#pragma unroll
  for (int k = 0; k < 8; k++) r.v[k] = borrow ? t[k] : s[k];
  return r;
}

// 1 when a >= r (not a canonical element), else 0.
__device__ __forceinline__ u32 fr_not_canonical(const fr_t& a) {
  u32 borrow;
  asm("{\n\t.reg .u32 t;\n\t"
      "sub.cc.u32 t, %1, " FR_P0 ";\n\t"
      "subc.cc.u32 t, %2, " FR_P1 ";\n\t"
      "subc.cc.u32 t, %3, " FR_P2 ";\n\t"
      "subc.cc.u32 t, %4, " FR_P3 ";\n\t"
      "subc.cc.u32 t, %5, " FR_P4 ";\n\t"
      "subc.cc.u32 t, %6, " FR_P5 ";\n\t"
      "subc.cc.u32 t, %7, " FR_P6 ";\n\t"
      "subc.cc.u32 t, %8, " FR_P7 ";\n\t"
      "subc.u32 %0, 0, 0;\n\t}"
      : "=r"(borrow)
      : "r"(a.v[0]), "r"(a.v[1]), "r"(a.v[2]), "r"(a.v[3]), "r"(a.v[4]), "r"(a.v[5]), "r"(a.v[6]),
        "r"(a.v[7]));
  return borrow ? 0u : 1u;
}

// Montgomery form -> canonical integer: a * 1 / 2^256 mod r.
__device__ __forceinline__ fr_t fr_from_mont(const fr_t& a) { return fr_mul(a, fr_t{{1, 0, 0, 0, 0, 0, 0, 0}}); }
