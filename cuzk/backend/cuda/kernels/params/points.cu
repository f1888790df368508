// Points of bellperson's .params files <-> the affine Montgomery layout of the kernels and the host
// (cuzk/backend/cuda/points.py).
//
// File (zcash uncompressed): x || y, each coordinate big-endian, an Fq2 coordinate c1 || c0 (G1 96
// bytes, G2 192); the top three bits of the first byte are flags (0x80 compressed, 0x40 infinity,
// 0x20 sign). Device: x then y, an Fq2 as c0 then c1, each Fq 12 little-endian 32-bit words in
// Montgomery form (cuzk.ec.curves' uint64 limbs, same bits); the identity all zeros. Word j of an
// encoded point is bytes 4j .. 4j+3 read as a little-endian u32, so the Fq limb k of a coordinate at
// word c is the byte-reversed word c + 11 - k, and the flags are bits 5-7 of word 0.
//
// Decoding checks what cuzk.ec.encoding.decode (uncompressed, no subgroup check) and the .params
// reader check: no flag bits (an infinity flag is refused too: the query vectors hold no identity),
// both coordinates below p, y^2 = x^3 + b (which also refuses the all-zero (0, 0)). A point that
// fails any check lowers *bad to its index (first + i, atomicMin) and is stored as zeros; the host
// decodes that point again to name the reason.
#include "ec/xyzz.cuh"

#define PT_THREADS 256
#define FLAGS 0xE0u

__device__ __forceinline__ Fq fq_from_be(const u32* w) {
  Fq r;
#pragma unroll
  for (int k = 0; k < 12; k++) r.v[k] = __byte_perm(w[11 - k], 0, 0x0123);
  return r;
}

__device__ __forceinline__ void fq_to_be(u32* w, const Fq& a) {
#pragma unroll
  for (int k = 0; k < 12; k++) w[11 - k] = __byte_perm(a.v[k], 0, 0x0123);
}

// One coordinate of F in the file's words (W of them), its checks and the curve's b (Montgomery).
template <class F> struct Coord;
template <> struct Coord<Fq> {
  static constexpr int W = 12;
  static __device__ __forceinline__ Fq get(const u32* w) { return fq_from_be(w); }
  static __device__ __forceinline__ void put(u32* w, const Fq& a) { fq_to_be(w, a); }
  static __device__ __forceinline__ bool canonical(const Fq& a) { return fq_is_canonical(a); }
  static __device__ __forceinline__ Fq to_mont(const Fq& a) { return fq_to_mont(a); }
  static __device__ __forceinline__ Fq from_mont(const Fq& a) { return fq_from_mont(a); }
  static __device__ __forceinline__ Fq b() {  // 4
    const Fq two = fq_one() + fq_one();
    return two + two;
  }
};
template <> struct Coord<Fq2> {
  static constexpr int W = 24;
  static __device__ __forceinline__ Fq2 get(const u32* w) { return {fq_from_be(w + 12), fq_from_be(w)}; }
  static __device__ __forceinline__ void put(u32* w, const Fq2& a) { fq_to_be(w, a.c1); fq_to_be(w + 12, a.c0); }
  static __device__ __forceinline__ bool canonical(const Fq2& a) {
    return fq_is_canonical(a.c0) && fq_is_canonical(a.c1);
  }
  static __device__ __forceinline__ Fq2 to_mont(const Fq2& a) { return {fq_to_mont(a.c0), fq_to_mont(a.c1)}; }
  static __device__ __forceinline__ Fq2 from_mont(const Fq2& a) { return {fq_from_mont(a.c0), fq_from_mont(a.c1)}; }
  static __device__ __forceinline__ Fq2 b() {  // 4 (1 + u)
    const Fq four = Coord<Fq>::b();
    return {four, four};
  }
};

// out[i] = the point encoded at raw[i] for i < n (raw: n encoded points, 16-byte aligned)
template <class F>
__device__ __forceinline__ void decode_points(const u32* __restrict__ raw, u64 n, u64 first, u32* __restrict__ out,
                                              u64* bad) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  constexpr int W = Coord<F>::W;
  u32 w[2 * W];
  const uint4* src = reinterpret_cast<const uint4*>(raw + i * 2 * W);
#pragma unroll
  for (int k = 0; k < W / 2; k++) {
    const uint4 t = __ldg(src + k);
    w[4 * k] = t.x; w[4 * k + 1] = t.y; w[4 * k + 2] = t.z; w[4 * k + 3] = t.w;
  }
  const bool flagged = (w[0] & FLAGS) != 0;
  Affine<F> p;
  p.x = Coord<F>::get(w);
  p.y = Coord<F>::get(w + W);
  const bool canonical = Coord<F>::canonical(p.x) && Coord<F>::canonical(p.y);
  p.x = Coord<F>::to_mont(p.x);
  p.y = Coord<F>::to_mont(p.y);
  const bool on_curve = is_zero(sqr(p.y) - (sqr(p.x) * p.x + Coord<F>::b()));
  if (flagged || !canonical || !on_curve) {
    atomicMin(bad, first + i);
    set_zero(p.x);
    set_zero(p.y);
  }
  store_affine(out + i * 2 * W, p);
}

// raw[i] = the encoding of pts[i] for i < n (the identity: the infinity flag, every other bit zero)
template <class F>
__device__ __forceinline__ void encode_points(const u32* __restrict__ pts, u64 n, u32* __restrict__ raw) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  constexpr int W = Coord<F>::W;
  const Affine<F> p = load_affine<F>(pts + i * 2 * W);
  u32 w[2 * W];
  if (is_inf(p)) {
#pragma unroll
    for (int k = 0; k < 2 * W; k++) w[k] = 0;
    w[0] = 0x40;
  } else {
    Coord<F>::put(w, Coord<F>::from_mont(p.x));
    Coord<F>::put(w + W, Coord<F>::from_mont(p.y));
  }
  uint4* dst = reinterpret_cast<uint4*>(raw + i * 2 * W);
#pragma unroll
  for (int k = 0; k < W / 2; k++) dst[k] = make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
}

extern "C" __global__ void __launch_bounds__(PT_THREADS)
    params_decode_g1(const u32* __restrict__ raw, u64 n, u64 first, u32* __restrict__ out, u64* bad) {
  decode_points<Fq>(raw, n, first, out, bad);
}
extern "C" __global__ void __launch_bounds__(PT_THREADS)
    params_decode_g2(const u32* __restrict__ raw, u64 n, u64 first, u32* __restrict__ out, u64* bad) {
  decode_points<Fq2>(raw, n, first, out, bad);
}
extern "C" __global__ void __launch_bounds__(PT_THREADS)
    params_encode_g1(const u32* __restrict__ pts, u64 n, u32* __restrict__ raw) {
  encode_points<Fq>(pts, n, raw);
}
extern "C" __global__ void __launch_bounds__(PT_THREADS)
    params_encode_g2(const u32* __restrict__ pts, u64 n, u32* __restrict__ raw) {
  encode_points<Fq2>(pts, n, raw);
}
