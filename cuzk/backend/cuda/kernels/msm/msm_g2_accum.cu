// G2 (F = Fq2) bucket loop: accum_affine_g2, with every Fq2 product inlined (most of a G2 MSM's time).
#include "msm/pippenger.cuh"

MSM_ACCUM_AFFINE(g2, Fq2)
