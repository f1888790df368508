// G2 (F = Fq2) table of precomputed multiples: precompute_g2 (once per set of bases; Fq2 products are
// calls, for a short compile).
#define FQ2_MUL __noinline__
#include "msm/pippenger.cuh"

MSM_PRECOMPUTE(g2, Fq2)
