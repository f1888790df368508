// G1 (F = Fq) table of precomputed multiples: precompute_g1.
#include "msm/pippenger.cuh"

MSM_PRECOMPUTE(g1, Fq)
