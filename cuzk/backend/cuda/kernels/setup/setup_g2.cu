// G2 fixed-base kernels of the Groth16 setup: fb_table_g2, fb_mul_g2 (setup/fixed_base.cuh); Fq2
// products are calls, for a short compile.
#define FQ2_MUL __noinline__
#include "setup/fixed_base.cuh"

FIXED_BASE_KERNELS(g2, Fq2)
