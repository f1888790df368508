// G2 (F = Fq2) reductions: accum_xyzz_g2 (sums of partial sums), bucket_reduce_g2, horner_affine_g2.
// Fq2 products are calls here: the fully inlined XYZZ addition took ~10x longer to compile (cicc and
// ptxas), and these kernels are a small part of a G2 MSM.
#define FQ2_MUL __noinline__
#include "msm/pippenger.cuh"

MSM_ACCUM_XYZZ(g2, Fq2)
MSM_BUCKET_REDUCE(g2, Fq2)
MSM_HORNER_AFFINE(g2, Fq2)
