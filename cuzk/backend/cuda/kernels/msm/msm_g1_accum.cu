// G1 (F = Fq) bucket sums: accum_affine_g1 (mixed additions of the sorted points), accum_xyzz_g1
// (sums of partial sums). The MSM kernels are split over several modules that compile concurrently.
#include "msm/pippenger.cuh"

MSM_ACCUM_AFFINE(g1, Fq)
MSM_ACCUM_XYZZ(g1, Fq)
