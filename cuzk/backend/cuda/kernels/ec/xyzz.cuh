// Short Weierstrass y^2 = x^3 + b (a = 0) over F = Fq (G1) or Fq2 (G2), in extended Jacobian
// XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2); the identity has ZZ = ZZZ = 0.
// Affine points store the identity as x = y = 0. Formulas: hyperelliptic.org EFD, xyzz family.
#pragma once
#include "ff/fq.cuh"

template <class F> struct Affine { F x, y; };
template <class F> struct Xyzz { F x, y, zz, zzz; };

template <class F> __device__ __forceinline__ bool is_inf(const Affine<F>& p) { return is_zero(p.x) && is_zero(p.y); }
template <class F> __device__ __forceinline__ bool is_inf(const Xyzz<F>& p) { return is_zero(p.zz); }
template <class F> __device__ __forceinline__ void set_inf(Xyzz<F>& p) { set_zero(p.x); set_zero(p.y); set_zero(p.zz); set_zero(p.zzz); }
template <class F> __device__ __forceinline__ Xyzz<F> from_affine(const Affine<F>& a) {
  Xyzz<F> r; r.x = a.x; r.y = a.y; set_one(r.zz); set_one(r.zzz);
  if (is_inf(a)) set_inf(r);
  return r;
}

// 2*P (dbl-2008-s-1: 6M + 3S)
template <class F> __device__ __noinline__ void xyzz_dbl(Xyzz<F>& p) {
  F u = p.y + p.y, v = sqr(u), w = u * v, s = p.x * v;
  F x2 = sqr(p.x), m = x2 + x2 + x2;
  F x3 = sqr(m) - s - s;
  p.y = m * (s - x3) - w * p.y;
  p.x = x3;
  p.zz = p.zz * v;
  p.zzz = p.zzz * w;
}

// 2*A for affine A != identity (mdbl-2008-s-1)
template <class F> __device__ __noinline__ Xyzz<F> xyzz_dbl_affine(const Affine<F>& a) {
  F u = a.y + a.y, v = sqr(u), w = u * v, s = a.x * v;
  F x2 = sqr(a.x), m = x2 + x2 + x2;
  Xyzz<F> r;
  r.x = sqr(m) - s - s;
  r.y = m * (s - r.x) - w * a.y;
  r.zz = v; r.zzz = w;
  return r;
}

// P += A, A affine (madd-2008-s: 8M + 2S); all special cases handled. Inlined in the bucket loop,
// called (xyzz_add_affine) elsewhere to keep compile time down.
template <class F> __device__ __forceinline__ void xyzz_add_affine_inline(Xyzz<F>& p, const Affine<F>& a) {
  if (is_inf(a)) return;
  if (is_inf(p)) { p = from_affine(a); return; }
  F u2 = a.x * p.zz, s2 = a.y * p.zzz;
  F pp_ = u2 - p.x, r = s2 - p.y;
  if (is_zero(pp_)) {
    if (is_zero(r)) p = xyzz_dbl_affine(a); else set_inf(p);
    return;
  }
  F pp = sqr(pp_), ppp = pp_ * pp, q = p.x * pp;
  F x3 = sqr(r) - ppp - q - q;
  p.y = r * (q - x3) - p.y * ppp;
  p.x = x3;
  p.zz = p.zz * pp;
  p.zzz = p.zzz * ppp;
}

template <class F> __device__ __noinline__ void xyzz_add_affine(Xyzz<F>& p, const Affine<F>& a) {
  xyzz_add_affine_inline(p, a);
}

// P += Q (add-2008-s: 12M + 2S); all special cases handled
template <class F> __device__ __noinline__ void xyzz_add(Xyzz<F>& p, const Xyzz<F>& q) {
  if (is_inf(q)) return;
  if (is_inf(p)) { p = q; return; }
  F u1 = p.x * q.zz, u2 = q.x * p.zz, s1 = p.y * q.zzz, s2 = q.y * p.zzz;
  F pp_ = u2 - u1, r = s2 - s1;
  if (is_zero(pp_)) {
    if (is_zero(r)) xyzz_dbl(p); else set_inf(p);
    return;
  }
  F pp = sqr(pp_), ppp = pp_ * pp, qq = u1 * pp;
  F x3 = sqr(r) - ppp - qq - qq;
  p.y = r * (qq - x3) - s1 * ppp;
  p.x = x3;
  p.zz = p.zz * q.zz * pp;
  p.zzz = p.zzz * q.zzz * ppp;
}

// k*P for a small non-negative integer k (double-and-add, MSB first)
template <class F> __device__ __forceinline__ Xyzz<F> xyzz_mul_small(const Xyzz<F>& p, u32 k) {
  Xyzz<F> r; set_inf(r);
  for (int bit = 31 - __clz(k | 1); bit >= 0 && k; bit--) {
    xyzz_dbl(r);
    if ((k >> bit) & 1) xyzz_add(r, p);
  }
  return r;
}

template <class F> __device__ __forceinline__ Affine<F> to_affine(const Xyzz<F>& p) {
  Affine<F> a;
  if (is_inf(p)) { set_zero(a.x); set_zero(a.y); return a; }
  F t = inverse(p.zzz);          // 1/Z^3
  F iz = t * p.zz;               // 1/Z
  a.x = p.x * sqr(iz);
  a.y = p.y * t;
  return a;
}

// ---- global-memory layout of points: coordinates one after the other (ff/common.cuh's load/store)
template <class F> __device__ __forceinline__ Affine<F> load_affine(const u32* src) {
  Affine<F> a; load(a.x, src); load(a.y, src + sizeof(F) / 4); return a;
}
template <class F> __device__ __forceinline__ void store_affine(u32* dst, const Affine<F>& a) {
  store(dst, a.x); store(dst + sizeof(F) / 4, a.y);
}
template <class F> __device__ __forceinline__ Xyzz<F> load_xyzz(const u32* src) {
  constexpr int w = sizeof(F) / 4;
  Xyzz<F> p; load(p.x, src); load(p.y, src + w); load(p.zz, src + 2 * w); load(p.zzz, src + 3 * w); return p;
}
template <class F> __device__ __forceinline__ void store_xyzz(u32* dst, const Xyzz<F>& p) {
  constexpr int w = sizeof(F) / 4;
  store(dst, p.x); store(dst + w, p.y); store(dst + 2 * w, p.zz); store(dst + 3 * w, p.zzz);
}
