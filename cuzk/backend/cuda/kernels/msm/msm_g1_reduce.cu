// G1 (F = Fq) reduction of the bucket sums: bucket_reduce_g1, horner_affine_g1.
#include "msm/pippenger.cuh"

MSM_BUCKET_REDUCE(g1, Fq)
MSM_HORNER_AFFINE(g1, Fq)
