// G2 instances of the MSM kernels.
#include "msm.cuh"

INSTANTIATE(g2, Fq2)
