// NTT over Fr (BLS12-381 scalar field) on the GPU: natural order in and out.
//
// n = 2^L is split into digits N_0 * N_1 * ... * N_{P-1} (each <= 2^8, N_0 the most significant digit
// of the input index). Pass p (one launch) runs the N_p-point transforms along digit p, one tile of G
// neighbouring transforms per block, in shared memory (radix-2 DIT, bit reversal on the way in):
//   inner pass p < P-1: in place, then times the twiddle w_{M_p}^{k_p J_p} from a table tw[k_p][J_p]
//     (M_p = N_p * st_p, st_p the stride of digit p, J_p < st_p the lower input digits);
//   last pass: writes to the output index k_0 + N_0 k_1 + N_0 N_1 k_2 + ... (the digit reversal).
// The first pass gathers from the (optionally negated, for the inverse) input index and scales it;
// the last pass scales by the output index. Scalings: none, a constant, or hi[e >> split] * lo[e & m].
#include "ff/fr.cuh"

#define SCALE_NONE 0
#define SCALE_CONST 1
#define SCALE_TABLE 2

#define F_FIRST 1
#define F_LAST 2
#define F_NEGATE 4
#define F_TW_ROOTS 8  // twiddles w^((k J tw_mul) mod n) from the root tables tw (hi) and tw_lo, not a table

__device__ __forceinline__ fr_t ld_elem(const uint4* p, u64 i) {
  const uint4 lo = p[2 * i], hi = p[2 * i + 1];
  return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

__device__ __forceinline__ fr_t ldg_elem(const uint4* p, u64 i) {
  const uint4 lo = __ldg(p + 2 * i), hi = __ldg(p + 2 * i + 1);
  return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

__device__ __forceinline__ void st_elem(uint4* p, u64 i, const fr_t& x) {
  p[2 * i] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
  p[2 * i + 1] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

// shared memory holds elements split in two halves (lo[i], hi[i]): a quarter warp reading 8
// consecutive elements' halves touches 8 consecutive 16-byte words, conflict-free
__device__ __forceinline__ fr_t ld_sm(const uint4* lo, const uint4* hi, int i) {
  const uint4 a = lo[i], b = hi[i];
  return fr_t{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}

__device__ __forceinline__ void st_sm(uint4* lo, uint4* hi, int i, const fr_t& x) {
  lo[i] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
  hi[i] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

__device__ __forceinline__ fr_t scale(const fr_t& x, int mode, const uint4* hi, const uint4* lo, int split,
                                      u64 e) {
  if (mode == SCALE_CONST) return fr_mul(x, ldg_elem(hi, 0));
  if (mode == SCALE_TABLE)
    return fr_mul(x, fr_mul(ldg_elem(hi, e >> split), ldg_elem(lo, e & ((1ull << split) - 1))));
  return x;
}

// One pass. Block = G = 2^log_g transforms of size R = 2^log_r. Inner passes: the transform axis has
// stride 2^log_st and the lanes are G consecutive positions; the last pass (stride 1): the lanes are
// G consecutive output indices o_low < n/R, whose digits (log sizes dig[0..nd-1], least significant
// first, i.e. N_0 first) give the input row.
extern "C" __global__ void __launch_bounds__(256) ntt_pass(
    const uint4* src, uint4* dst, const uint4* __restrict__ tw, const uint4* __restrict__ wloc,
    const uint4* __restrict__ pre_hi, const uint4* __restrict__ pre_lo, const uint4* __restrict__ post_hi,
    const uint4* __restrict__ post_lo, u32* flag, int log_n, int log_r, int log_g, int log_st, int flags,
    int pre, int post, int split, int nd, int dig0, int dig1, int dig2, const uint4* __restrict__ tw_lo,
    u64 tw_mul) {
  extern __shared__ uint4 sm[];
  const int R = 1 << log_r, G = 1 << log_g, T = R << log_g;
  uint4* slo = sm;
  uint4* shi = sm + T;
  uint4* wlo = sm + 2 * T;
  uint4* whi = wlo + R / 2;
  const u64 n = 1ull << log_n;
  const bool first = flags & F_FIRST, last = flags & F_LAST, negate = flags & F_NEGATE;
  const int tid = threadIdx.x, nt = blockDim.x;

  for (int i = tid; i < R / 2; i += nt) {
    wlo[i] = __ldg(wloc + 2 * i);
    whi[i] = __ldg(wloc + 2 * i + 1);
  }

  __shared__ u64 rows[8];
  u64 base = 0, jbase = 0, o_base = 0;
  if (!last) {
    const int log_groups = log_st - log_g;
    const u64 b = blockIdx.x;
    jbase = (b & ((1ull << log_groups) - 1)) << log_g;
    base = ((b >> log_groups) << (log_r + log_st)) + jbase;
  } else {
    o_base = (u64)blockIdx.x << log_g;
    if (tid < G) {  // input row of output lane tid: sum_q k_q * st_q
      u64 o = o_base + tid, pos = 0;
      int shift_in = log_n;
      for (int q = 0; q < nd; q++) {
        const int d = q == 0 ? dig0 : q == 1 ? dig1 : dig2;
        shift_in -= d;
        pos += (o & ((1ull << d) - 1)) << shift_in;
        o >>= d;
      }
      rows[tid] = pos;
    }
    __syncthreads();
  }

  // gather: bit-reversed into shared memory, scaled and checked in the first pass
  u32 bad = 0;
  for (int q = tid; q < T; q += nt) {
    int g, j;
    u64 i;
    if (!last) {
      g = q & (G - 1);
      j = q >> log_g;
      i = base + ((u64)j << log_st) + g;
    } else {
      j = q & (R - 1);
      g = q >> log_r;
      i = rows[g] + j;
    }
    fr_t x = ld_elem(src, (first && negate) ? ((n - i) & (n - 1)) : i);
    if (first) {
      bad |= fr_not_canonical(x);
      x = scale(x, pre, pre_hi, pre_lo, split, i);
    }
    st_sm(slo, shi, ((__brev(j) >> (32 - log_r)) << log_g) + g, x);
  }
  if (bad) *flag = 1;

  // radix-2 DIT stages; butterflies ordered by twiddle index so that twiddle-free ones share warps
  for (int s = 0; s < log_r; s++) {
    __syncthreads();
    const int hb = log_r - 1 - s;
    for (int q = tid; q < T / 2; q += nt) {
      const int g = q & (G - 1), b = q >> log_g;
      const int j = b >> hb, blk = b & ((1 << hb) - 1);
      const int a = ((blk << (s + 1)) + j) << log_g | g;
      const int c = a + (1 << (s + log_g));
      const fr_t u = ld_sm(slo, shi, a);
      fr_t v = ld_sm(slo, shi, c);
      if (j) v = fr_mul(v, ld_sm(wlo, whi, j << hb));
      st_sm(slo, shi, a, fr_add(u, v));
      st_sm(slo, shi, c, fr_sub(u, v));
    }
  }
  __syncthreads();

  // scatter
  for (int q = tid; q < T; q += nt) {
    const int g = q & (G - 1), k = q >> log_g;
    fr_t x = ld_sm(slo, shi, q);
    if (!last) {
      const u64 J = jbase + g;
      if (k != 0 && J != 0) {
        if (flags & F_TW_ROOTS) {
          const u64 e = ((u64)k * J * tw_mul) & (n - 1);
          x = fr_mul(x, fr_mul(ldg_elem(tw, e >> split), ldg_elem(tw_lo, e & ((1ull << split) - 1))));
        } else {
          x = fr_mul(x, ldg_elem(tw, ((u64)k << log_st) + J));
        }
      }
      st_elem(dst, base + ((u64)k << log_st) + g, x);
    } else {
      const u64 o = o_base + g + ((u64)k << (log_n - log_r));
      x = scale(x, post, post_hi, post_lo, split, o);
      st_elem(dst, o, x);
    }
  }
}

// out[i] = c * base^i for i < count (square-and-multiply per element).
extern "C" __global__ void fr_powers(const uint4* __restrict__ base, const uint4* __restrict__ c, uint4* out,
                                     u64 count) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  fr_t acc = ldg_elem(c, 0), p = ldg_elem(base, 0);
  for (u64 e = i; e; e >>= 1) {
    if (e & 1) acc = fr_mul(acc, p);
    p = fr_mul(p, p);
  }
  st_elem(out, i, acc);
}

// out[i] = w^e with e = (k * J * mul) mod 2^log_n, where (k, J) = (i >> log_st, i mod 2^log_st), or
// e = i * mul when log_st < 0; w^e = hi[e >> split] * lo[e mod 2^split] (tables of powers of w).
extern "C" __global__ void fr_twiddles(const uint4* __restrict__ hi, const uint4* __restrict__ lo, int split,
                                       uint4* out, u64 count, int log_st, u64 mul, int log_n) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  u64 e = log_st < 0 ? i : (i >> log_st) * (i & ((1ull << log_st) - 1));
  e = (e * mul) & ((1ull << log_n) - 1);
  st_elem(out, i, fr_mul(ldg_elem(hi, e >> split), ldg_elem(lo, e & ((1ull << split) - 1))));
}

// a[i] *= b[i]: the product A B of Groth16's quotient on the coset, made in place.
extern "C" __global__ void fr_mul_assign(uint4* a, const uint4* __restrict__ b, u64 count) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  st_elem(a, i, fr_mul(ld_elem(a, i), ldg_elem(b, i)));
}

// c[i] = (ab[i] - c[i]) z: the pointwise step of H = (A B - C) / Z on the coset, where Z is the
// constant g^n - 1 and z its inverse; made in place in c.
extern "C" __global__ void fr_sub_scale(const uint4* __restrict__ ab, uint4* c, const uint4* __restrict__ z,
                                        u64 count) {
  const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  st_elem(c, i, fr_mul(fr_sub(ldg_elem(ab, i), ld_elem(c, i)), ldg_elem(z, 0)));
}
