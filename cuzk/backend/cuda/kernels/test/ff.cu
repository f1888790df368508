// Field test and benchmark kernels (not used by the prover): multiplication throughput probes and an
// elementwise Fq product.
#include "ff/fq.cuh"
#include "ff/fr.cuh"

// Throughput probe: each thread does 2 * `iters` dependent Fq multiplications.
extern "C" __global__ void bench_fq_mul(const u32* in, int iters, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  Fq a, b;
  for (int k = 0; k < 12; k++) { a.v[k] = in[k] ^ (u32)i; b.v[k] = in[12 + k]; }
  a.v[11] &= 0x0fffffff;
  for (int k = 0; k < iters; k++) { a = a * b; b = b * a; }
  for (int k = 0; k < 12; k++) out[(size_t)i * 12 + k] = a.v[k];
}

// The same for Fr.
extern "C" __global__ void bench_fr_mul(const u32* in, int iters, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  fr_t a, b;
  for (int k = 0; k < 8; k++) { a.v[k] = in[k] ^ (u32)i; b.v[k] = in[8 + k]; }
  a.v[7] &= 0x0fffffff;
  for (int k = 0; k < iters; k++) { a = fr_mul(a, b); b = fr_mul(b, a); }
  for (int k = 0; k < 8; k++) out[(size_t)i * 8 + k] = a.v[k];
}

// Elementwise Fq Montgomery product: out[i] = x[i] * y[i].
extern "C" __global__ void fq_mul_vec(const u32* x, const u32* y, int n, u32* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Fq a, b;
  load(a, x + (size_t)i * 12); load(b, y + (size_t)i * 12);
  store(out + (size_t)i * 12, a * b);
}
