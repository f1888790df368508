// The witness program on the GPU (cuzk/backend/cuda/witness.py): every aux value of P partitions'
// witnesses computed in place by the steps of a cuzk.r1cs.witness_program.WitnessProgram.
//
// A *run* is the plain program (k = 0: its rows are plain rows, their terms name columns) or one
// block's template program for the block's k instances (terms are template variables, mapped per
// instance i as pce.cu maps them: kind 0 index, 1 aux_col + i aux_per + index, 2 in_col + i in_per +
// index, 3 wire_cols[wire_off + index k + i]). Template t's program is levels prog_levels[t] ..
// prog_levels[t+1]; level L is steps[levels[L]:levels[L+1]], steps that only read earlier levels.
// A level's items j < nsteps max(k, 1) P are (step s, partition p, instance i) with
//   i = j % k, p = (j / k) % P, s = j / (k P):
// a warp takes 32 consecutive items, consecutive instances of one step (they read its terms
// together), and the next 32 go to a warp of another block (wp_items). Partition p's column c is
// element p ncols + c of w. The level's first steps, up to long_end (the host puts the steps with
// long rows there), take a warp per item instead, the lanes splitting every row's terms and summing
// over the warp with shuffles.
//
// A step (op, row, term, inv) reads row `row` of A, B, C (of the hint sides HL, HR for DEC_H), the
// terms of each side given by its heads (first term, count: the host reads them off the indptr
// arrays, so that a step's loads do not wait on them). With X.w = sum_e coeffs[cid_e] w[col_e] over the row's terms, X'.w the same without term `term` (an
// absolute term index), a decomposition's *targets* the terms of its side (A, C, HR) off column 0
// whose coefficient is 2^e (coeff_log2[cid] = e >= 0) and X0 the sum over X's other terms:
//   SOLVE_C  w[col(term of C)] = (A.w B.w - C'.w) inv[inv]
//   SOLVE_A  w[col(term of A)] = (C.w - B.w A'.w) inv[inv]
//   SOLVE_B  w[col(term of B)] = (C.w - A.w B'.w) inv[inv]
//   DEC_A    v = C.w inv[inv] - A0     then every target gets bit e of v as an integer in [0, r)
//   DEC_C    v = A.w B.w - C0          (Fr one or zero), each bit of v taken once, and one left
//   DEC_H    v = HL.w - HR0            untaken sets *error to 1 (the inputs are inconsistent).
//
// witness_level runs one level of one run (the grid striding over its items); witness_program runs
// runs run0 .. run1 whole, every level of each, as one persistent cooperative launch: its grid (all
// blocks resident) strides over a level's items, then meets at a grid barrier before the next.
// w is read and written through L2 (ld/st.global.cg): other blocks write it between levels.
// Index arrays are read as stored, 32- or 64-bit (ids 16- or 32-bit), by pce.cu's `widths` bits.
#include "ff/fr.cuh"
// layout.cuh: WP_*, the ops OP_*, the run columns R_*, the W_* bits, PceMatrix, wp_program
#include "layout.cuh"

// Instance i of a run: where its template variables live (k = 0: the plain program).
struct wp_inst {
  long long k, aux0, in0, wire0;
};

__device__ __forceinline__ fr_t wp_const(const uint4* __restrict__ p, u64 i) {
  const uint4 lo = __ldg(p + 2 * i), hi = __ldg(p + 2 * i + 1);
  return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

__device__ __forceinline__ fr_t wp_get(const uint4* w, long long col) {
  const uint4 lo = __ldcg(w + 2 * col), hi = __ldcg(w + 2 * col + 1);
  return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

__device__ __forceinline__ void wp_put(uint4* w, long long col, const fr_t& x) {
  __stcg(w + 2 * col, make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]));
  __stcg(w + 2 * col + 1, make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]));
}

// element e of an int32 or int64 array
__device__ __forceinline__ long long wp_index(const void* p, u64 e, bool wide) {
  return wide ? __ldg(static_cast<const long long*>(p) + e) : (long long)__ldg(static_cast<const int*>(p) + e);
}

// element e of a uint16 or uint32 array
__device__ __forceinline__ u32 wp_id(const void* p, u64 e, bool wide) {
  return wide ? __ldg(static_cast<const u32*>(p) + e) : (u32)__ldg(static_cast<const unsigned short*>(p) + e);
}

// term e as stored: its column (plain program) or its template variable
__device__ __forceinline__ long long wp_raw(const PceMatrix& m, const wp_inst& x, u64 e) {
  return x.k == 0 ? wp_index(m.plain_cols, e, m.widths & W_PLAIN_COLS) : wp_index(m.tpl_vars, e, m.widths & W_TPL_VARS);
}

// the column of a stored term `raw` (wp_raw) in instance x
__device__ __forceinline__ long long wp_resolve(const wp_program& p, const PceMatrix& m, const wp_inst& x,
                                                long long raw) {
  if (x.k == 0) return raw;
  const long long index = raw >> 2;
  switch ((int)(raw & 3)) {
    case 0: return index;
    case 1: return x.aux0 + index;
    case 2: return x.in0 + index;
    default: return wp_index(p.wire_cols, x.wire0 + index * x.k, m.widths & W_WIRE_COLS);
  }
}

// the column of term e in instance x
__device__ __forceinline__ long long wp_col(const wp_program& p, const PceMatrix& m, const wp_inst& x, u64 e) {
  return wp_resolve(p, m, x, wp_raw(m, x, e));
}

__device__ __forceinline__ u32 wp_cid(const PceMatrix& m, const wp_inst& x, u64 e) {
  return x.k == 0 ? wp_id(m.plain_cids, e, m.widths & W_PLAIN_CIDS) : wp_id(m.tpl_cids, e, m.widths & W_TPL_CIDS);
}

// The sum of x over the LANES lanes of an item (all of them get it): 1 lane, or a whole warp.
template <int LANES>
__device__ __forceinline__ fr_t wp_sum(fr_t x) {
#pragma unroll
  for (int o = LANES / 2; o > 0; o /= 2) {
    fr_t y;
#pragma unroll
    for (int q = 0; q < 8; q++) y.v[q] = __shfl_xor_sync(0xffffffffu, x.v[q], o);
    x = fr_add(x, y);
  }
  return x;
}

// 0 for the value 0, 1 for Fr one (coeffs[0], Montgomery), 2 for anything else.
__device__ __forceinline__ int wp_kind(const fr_t& y, const uint4* __restrict__ coeffs) {
  const fr_t one = wp_const(coeffs, 0);
  u32 zero = 0, diff = 0;
#pragma unroll
  for (int q = 0; q < 8; q++) {
    zero |= y.v[q];
    diff |= y.v[q] ^ one.v[q];
  }
  return zero == 0 ? 0 : diff == 0 ? 1 : 2;
}

// acc + coeffs[id] y; most values are bits: 0 adds nothing, 1 adds the coefficient
__device__ __forceinline__ fr_t wp_add_term(const fr_t& acc, const fr_t& y, u32 id, const uint4* __restrict__ coeffs) {
  const int kind = wp_kind(y, coeffs);
  if (kind == 0) return acc;
  if (id == 1) return fr_sub(acc, y);
  if (id == 0) return fr_add(acc, y);
  return fr_add(acc, kind == 1 ? wp_const(coeffs, id) : fr_mul(wp_const(coeffs, id), y));
}

// sum_e coeffs[cid_e] w[col_e] over the terms [e0, e1) of a row but term `skip`; with known_only, over those a
// decomposition does not target only (on column 0, or with a coefficient other than 2^e). Lane
// `lane` of LANES takes terms e0 + lane, e0 + lane + LANES, ...; every lane gets the sum. (Loops over
// terms are unrolled so that several terms' chains of loads are in flight at once.)
template <int LANES>
__device__ __forceinline__ fr_t wp_dot(const wp_program& p, const PceMatrix& m, const wp_inst& x, u64 e0, u64 e1,
                                       u64 skip, bool known_only, const uint4* w, u32 lane) {
  fr_t acc = {{0, 0, 0, 0, 0, 0, 0, 0}};
#pragma unroll 4
  for (u64 e = e0 + lane; e < e1; e += LANES) {
    if (e == skip) continue;
    const long long col = wp_col(p, m, x, e);
    const u32 id = wp_cid(m, x, e);
    if (known_only && col != 0 && __ldg(p.coeff_log2 + id) >= 0) continue;
    acc = wp_add_term(acc, wp_get(w, col), id, p.coeffs);
  }
  return wp_sum<LANES>(acc);
}


// Each target of the side's terms [e0, e1) (off column 0, coefficient 2^s) gets bit s of v's canonical
// integer (Fr one or zero), the bit then cleared so that it is taken once (the lanes split the
// targets, whose exponents are distinct); false when v has a bit that no lane took.
template <int LANES>
__device__ __forceinline__ bool wp_bits(const wp_program& p, const PceMatrix& m, const wp_inst& x, u64 e0, u64 e1,
                                        const fr_t& v, uint4* w, u32 lane) {
  fr_t rest = fr_from_mont(v);
  const fr_t one = wp_const(p.coeffs, 0);
#pragma unroll 4
  for (u64 e = e0 + lane; e < e1; e += LANES) {
    const long long col = wp_col(p, m, x, e);
    const int s = __ldg(p.coeff_log2 + wp_cid(m, x, e));
    if (col == 0 || s < 0) continue;
    u32 bit = 0;
#pragma unroll
    for (int q = 0; q < 8; q++) {  // every limb masked, not rest.v[s / 32]: rest stays in registers
      const u32 mask = q == s >> 5 ? 1u << (s & 31) : 0u;
      bit |= rest.v[q] & mask;
      rest.v[q] &= ~mask;
    }
    fr_t y;
#pragma unroll
    for (int q = 0; q < 8; q++) y.v[q] = bit ? one.v[q] : 0;
    wp_put(w, col, y);
  }
  u32 left = 0;
#pragma unroll
  for (int q = 0; q < 8; q++) {
    u32 r = rest.v[q];
#pragma unroll
    for (int o = LANES / 2; o > 0; o /= 2) r &= __shfl_xor_sync(0xffffffffu, r, o);
    left |= r;
  }
  return left == 0;
}

// The sums of a step's three sides m0, m1, m2 (terms e0[q] .. e0[q] + n[q]) by one thread, all of
// whose rows have at most WP_SHORT terms: every side's term loads first, then their columns, then
// every value, so that a step waits on three rounds of loads rather than a chain per term. Side
// `unknown` leaves out term `term`, side `dec` its targets, as wp_dot does. (The same gathering for
// a warp's long rows, 8 terms a lane, is slower than wp_dot's loop: bench/RESULTS.md, witness.)
__device__ __forceinline__ void wp_sides_short(const wp_program& p, const PceMatrix& m0, const PceMatrix& m1,
                                               const PceMatrix& m2, const wp_inst& x, const u64 e0[3],
                                               const u64 n[3], u64 term, int unknown, int dec, const uint4* w,
                                               fr_t sum[3]) {
  long long col[3][WP_SHORT];
  u32 id[3][WP_SHORT];
#pragma unroll
  for (int q = 0; q < 3; q++) {
    const PceMatrix& m = q == 0 ? m0 : q == 1 ? m1 : m2;
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++) {  // a valid term for every j (the row's last again), loaded unconditionally
      const u64 e = e0[q] + min((u64)j, n[q] - 1);
      col[q][j] = n[q] ? wp_raw(m, x, e) : 0;
      id[q][j] = n[q] ? wp_cid(m, x, e) : 0;
    }
  }
  bool use[3][WP_SHORT];
#pragma unroll
  for (int q = 0; q < 3; q++) {
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++) {
      col[q][j] = wp_resolve(p, q == 0 ? m0 : q == 1 ? m1 : m2, x, col[q][j]);
      use[q][j] = j < n[q] && !(q == unknown && e0[q] + j == term);
    }
  }
#pragma unroll
  for (int q = 0; q < 3; q++) {
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++)
      if (q == dec && use[q][j] && col[q][j] != 0 && __ldg(p.coeff_log2 + id[q][j]) >= 0) use[q][j] = false;
  }
  fr_t y[3][WP_SHORT];
#pragma unroll
  for (int q = 0; q < 3; q++) {
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++) y[q][j] = use[q][j] ? wp_get(w, col[q][j]) : fr_t{{0, 0, 0, 0, 0, 0, 0, 0}};
  }
#pragma unroll
  for (int q = 0; q < 3; q++) {
    sum[q] = fr_t{{0, 0, 0, 0, 0, 0, 0, 0}};
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++)
      if (use[q][j]) sum[q] = wp_add_term(sum[q], y[q][j], id[q][j], p.coeffs);
  }
}

// A short SOLVE step from its record r (witness.py step_records: op and side counts, inv, the unknown
// term's and every other term's stored variable and coefficient id): the variables resolved, then
// every value loaded at once, the sides summed and the unknown written. Its wait is the record, the
// columns of wire variables, the values, and the coefficients other than 1 and -1.
__device__ __forceinline__ void wp_solve_record(const wp_program& p, const int* r, const wp_inst& x, uint4* w) {
  const int op = r[0] & 0xff;
  const int n[3] = {(r[0] >> 8) & 15, (r[0] >> 12) & 15, (r[0] >> 16) & 15};
  long long col[3][WP_SHORT];
#pragma unroll
  for (int q = 0; q < 3; q++) {
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++)
      col[q][j] = j < n[q] ? wp_resolve(p, p.a, x, (long long)r[WP_REC_VARS + WP_SHORT * q + j]) : 0;
  }
  const long long target = wp_resolve(p, p.a, x, (long long)r[2]);
  const fr_t inv = wp_const(p.inv, (u64)r[1]);
  fr_t y[3][WP_SHORT];
#pragma unroll
  for (int q = 0; q < 3; q++) {
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++) y[q][j] = j < n[q] ? wp_get(w, col[q][j]) : fr_t{{0, 0, 0, 0, 0, 0, 0, 0}};
  }
  fr_t sum[3];
#pragma unroll
  for (int q = 0; q < 3; q++) {
    sum[q] = fr_t{{0, 0, 0, 0, 0, 0, 0, 0}};
#pragma unroll
    for (int j = 0; j < WP_SHORT; j++)
      if (j < n[q]) sum[q] = wp_add_term(sum[q], y[q][j], (u32)r[WP_REC_CIDS + WP_SHORT * q + j], p.coeffs);
  }
  // SOLVE_C: (A.w B.w - C'.w) inv; SOLVE_A: (C.w - B.w A'.w) inv; SOLVE_B: (C.w - A.w B'.w) inv
  const fr_t value = op == OP_SOLVE_C ? fr_mul(fr_sub(fr_mul(sum[0], sum[1]), sum[2]), inv)
                                      : fr_mul(fr_sub(sum[2], fr_mul(sum[0], sum[1])), inv);
  wp_put(w, target, value);
}

// Step s for instance x of partition witness w, by lane `lane` of LANES; false when its decomposition
// does not fit. Its sides are A, B, C (HL, HR and an empty one for DEC_H), each side's terms
// heads[s] gives; sum[q] is side q's X.w, without the unknown term or the decomposition's targets.
template <int LANES>
__device__ __forceinline__ bool wp_step(const wp_program& p, u64 s, const wp_inst& x, uint4* w, u32 lane) {
  if (LANES == 1 && p.records != nullptr) {
    int r[WP_REC_WORDS];
    const int4* rp = p.records + (WP_REC_WORDS / 4) * s;
#pragma unroll
    for (int q = 0; q < WP_REC_WORDS / 4; q++) {
      const int4 v = __ldg(rp + q);
      r[4 * q] = v.x;
      r[4 * q + 1] = v.y;
      r[4 * q + 2] = v.z;
      r[4 * q + 3] = v.w;
    }
    if (r[0] >> 24) {
      wp_solve_record(p, r, x, w);
      return true;
    }
  }
  const long long* st = p.steps + 4 * s;
  const int* hd = p.heads + 6 * s;
  const int op = (int)__ldg(st);
  const u64 term = __ldg(st + 2);
  u64 e0[3], n[3];
#pragma unroll
  for (int q = 0; q < 3; q++) {
    e0[q] = (u32)__ldg(hd + q);
    n[q] = (u32)__ldg(hd + 3 + q);
  }
  const bool hint = op == OP_DEC_H;
  const PceMatrix m0 = hint ? p.hl : p.a, m1 = hint ? p.hr : p.b;
  const int unknown = op == OP_SOLVE_A ? 0 : op == OP_SOLVE_B ? 1 : op == OP_SOLVE_C ? 2 : -1;
  const int dec = op == OP_DEC_A ? 0 : op == OP_DEC_H ? 1 : op == OP_DEC_C ? 2 : -1;
  fr_t sum[3];
  if (LANES == 1 && n[0] <= WP_SHORT && n[1] <= WP_SHORT && n[2] <= WP_SHORT) {
    wp_sides_short(p, m0, m1, p.c, x, e0, n, term, unknown, dec, w, sum);
  } else {
#pragma unroll
    for (int q = 0; q < 3; q++)
      sum[q] = wp_dot<LANES>(p, q == 0 ? m0 : q == 1 ? m1 : p.c, x, e0[q], e0[q] + n[q], q == unknown ? term : ~0ull,
                             q == dec, w, lane);
  }
  if (op == OP_DEC_H) return wp_bits<LANES>(p, m1, x, e0[1], e0[1] + n[1], fr_sub(sum[0], sum[1]), w, lane);
  if (op == OP_DEC_C)
    return wp_bits<LANES>(p, p.c, x, e0[2], e0[2] + n[2], fr_sub(fr_mul(sum[0], sum[1]), sum[2]), w, lane);
  const fr_t inv = wp_const(p.inv, __ldg(st + 3));
  if (op == OP_DEC_A)
    return wp_bits<LANES>(p, m0, x, e0[0], e0[0] + n[0], fr_sub(fr_mul(sum[2], inv), sum[0]), w, lane);
  // SOLVE_C: (A.w B.w - C'.w) inv; SOLVE_A: (C.w - B.w A'.w) inv; SOLVE_B: (C.w - A.w B'.w) inv
  const fr_t value = op == OP_SOLVE_C ? fr_mul(fr_sub(fr_mul(sum[0], sum[1]), sum[2]), inv)
                                      : fr_mul(fr_sub(sum[2], fr_mul(sum[0], sum[1])), inv);
  if (lane == 0) {  // (an if chain, not a ?: over the matrices: that would keep m0 and m1 in local memory)
    long long col;
    if (unknown == 0) col = wp_col(p, m0, x, term);
    else if (unknown == 1) col = wp_col(p, m1, x, term);
    else col = wp_col(p, p.c, x, term);
    wp_put(w, col, value);
  }
  return true;
}

// Run r's fields (RUN_FIELDS), loaded once.
struct wp_run {
  long long t, k, aux_col, aux_per, in_col, in_per, wire_off;
};

__device__ __forceinline__ wp_run wp_load_run(const wp_program& p, u32 r) {
  const long long* f = p.runs + (u64)r * R_FIELDS;
  return {__ldg(f + R_TEMPLATE), __ldg(f + R_K), __ldg(f + R_AUX_COL), __ldg(f + R_AUX_PER), __ldg(f + R_IN_COL),
          __ldg(f + R_IN_PER), __ldg(f + R_WIRE_OFF)};
}

// The items j < (s1 - s0) k P of steps s0 .. s1 of a level, LANES lanes each. The grid's warps are
// dealt out block by block (warp slot = warp in block * gridDim.x + block), so that a level of few
// items spreads over every SM rather than filling the first blocks; a slot takes 32 consecutive
// items a thread each (LANES = 1) or one item (LANES = 32), then strides on by the grid's warps. The
// first group of items goes to slot `slot0` (mod the grid's warps), the next to slot0 + 1, ...: the
// short steps start where the long ones end, so that the two run side by side. Returns the number of
// slots the items took (before wrapping).
template <int LANES>
__device__ __forceinline__ u64 wp_items(const wp_program& p, const wp_run& run, u64 s0, u64 s1, uint4* w,
                                        u64 ncols, u32 partitions, int* error, u64 slot0) {
  const long long k = run.k, kk = k ? k : 1;
  const u64 per = (u64)kk * partitions, n = (s1 - s0) * per, warps = (u64)gridDim.x * (blockDim.x / 32);
  const u32 lane = threadIdx.x % 32;
  const u64 slot = (u64)(threadIdx.x / 32) * gridDim.x + blockIdx.x;
  for (u64 g = (slot + warps - slot0 % warps) % warps; g * (32 / LANES) < n; g += warps) {
    const u64 j = LANES == 32 ? g : 32 * g + lane;
    if (j >= n) continue;
    const u64 s = j / per, q = j - s * per, part = q / kk, i = q - part * kk;
    const wp_inst x = {k, run.aux_col + (long long)i * run.aux_per, run.in_col + (long long)i * run.in_per,
                       run.wire_off + (long long)i};
    if (!wp_step<LANES>(p, s0 + s, x, w + 2 * part * ncols, LANES == 32 ? lane : 0) && (LANES == 1 || lane == 0))
      atomicExch(error, 1);
  }
  return (n + 32 / LANES - 1) / (32 / LANES);
}

// A level of run `run`, steps s0 .. s2: its long steps (s0 .. s1) a warp per item, then the others a
// thread per item, on the warp slots after theirs.
__device__ __forceinline__ void wp_level(const wp_program& p, const wp_run& run, u64 s0, u64 s1, u64 s2, uint4* w,
                                         u64 ncols, u32 partitions, int* error) {
  const u64 taken = wp_items<32>(p, run, s0, s1, w, ncols, partitions, error, 0);
  wp_items<1>(p, run, s1, s2, w, ncols, partitions, error, taken);
}

// Every block of the grid waits here for all the others (all resident: a cooperative launch). The
// counter starts at 0 and each crossing adds 2^31 to it in all (block 0 adds 2^31 - (gridDim.x - 1),
// every other block 1): its top bit flips exactly when the last block arrives, and its low bits are
// 0 again. The scheme of cooperative_groups' grid sync, written out: NVRTC, as the loader runs it
// (no include paths), has no <cooperative_groups.h>.
__device__ __forceinline__ void wp_grid_sync(u32* barrier) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const u32 add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
    __threadfence();
    const u32 old = atomicAdd(barrier, add);
    while (((old ^ *(volatile u32*)barrier) & 0x80000000u) == 0) {
    }
    __threadfence();
  }
  __syncthreads();
}

// One level of run `run`; *error = 1 when a decomposition does not fit.
extern "C" __global__ void __launch_bounds__(WP_THREADS) witness_level(const wp_program p, u32 run, u64 level,
                                                                       uint4* w, u64 ncols, u32 partitions,
                                                                       int* error) {
  wp_level(p, wp_load_run(p, run), __ldg(p.levels + level), __ldg(p.long_end + level), __ldg(p.levels + level + 1), w,
           ncols, partitions, error);
}

// Runs run0 .. run1, in order, every level of each (cooperative launch; *barrier starts at 0).
extern "C" __global__ void __launch_bounds__(WP_THREADS) witness_program(const wp_program p, u32 run0, u32 run1,
                                                                         uint4* w, u64 ncols, u32 partitions,
                                                                         int* error, u32* barrier) {
  for (u32 r = run0; r < run1; r++) {
    const wp_run run = wp_load_run(p, r);
    const u64 end = __ldg(p.prog_levels + run.t + 1);
    u64 level = __ldg(p.prog_levels + run.t);
    if (level == end) continue;
    u64 s0 = __ldg(p.levels + level), s1 = __ldg(p.long_end + level), s2 = __ldg(p.levels + level + 1);
    for (; level < end; level++) {
      wp_level(p, run, s0, s1, s2, w, ncols, partitions, error);
      s0 = s2;  // the next level's bounds, loaded before the barrier rather than after it
      if (level + 1 < end) {
        s1 = __ldg(p.long_end + level + 1);
        s2 = __ldg(p.levels + level + 2);
      }
      wp_grid_sync(barrier);
    }
  }
}
