// Sparse matrix times witness over Fr (the R1CS evaluation a = A w): one thread per row,
//   out[r] = sum_e coeffs[coeff_ids[e]] * w[indices[e]]   for e in [indptr[r], indptr[r+1]),
// where coefficient ids 0 and 1 stand for +1 and -1 (an addition or a subtraction, no product).
// Elements are 8 x 32-bit Montgomery limbs (two uint4), as the host's 4 x uint64 limbs.
#include "ff/fr.cuh"

__device__ __forceinline__ fr_t spmv_load(const uint4* __restrict__ p, u64 i) {
  const uint4 lo = __ldg(p + 2 * i), hi = __ldg(p + 2 * i + 1);
  return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

template <class I>
__device__ __forceinline__ void spmv_rows(const u64* __restrict__ indptr, const I* __restrict__ indices,
                                          const u32* __restrict__ coeff_ids, const uint4* __restrict__ coeffs,
                                          const uint4* __restrict__ w, uint4* out, u64 rows) {
  const u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  fr_t acc = {{0, 0, 0, 0, 0, 0, 0, 0}};
  for (u64 e = indptr[r]; e < indptr[r + 1]; e++) {
    const fr_t x = spmv_load(w, (u64)indices[e]);
    const u32 id = coeff_ids[e];
    if (id == 0) acc = fr_add(acc, x);
    else if (id == 1) acc = fr_sub(acc, x);
    else acc = fr_add(acc, fr_mul(spmv_load(coeffs, id), x));
  }
  out[2 * r] = make_uint4(acc.v[0], acc.v[1], acc.v[2], acc.v[3]);
  out[2 * r + 1] = make_uint4(acc.v[4], acc.v[5], acc.v[6], acc.v[7]);
}

// indptr is rebased to the rows of this launch (indptr[0] = 0); 32- and 64-bit column indices.
extern "C" __global__ void __launch_bounds__(256) fr_spmv_i32(const u64* indptr, const int* indices,
                                                              const u32* coeff_ids, const uint4* coeffs,
                                                              const uint4* w, uint4* out, u64 rows) {
  spmv_rows<int>(indptr, indices, coeff_ids, coeffs, w, out, rows);
}

extern "C" __global__ void __launch_bounds__(256) fr_spmv_i64(const u64* indptr, const long long* indices,
                                                              const u32* coeff_ids, const uint4* coeffs,
                                                              const uint4* w, uint4* out, u64 rows) {
  spmv_rows<long long>(indptr, indices, coeff_ids, coeffs, w, out, rows);
}
