// G1 fixed-base kernels of the Groth16 setup: fb_table_g1, fb_mul_g1 (setup/fixed_base.cuh).
#include "setup/fixed_base.cuh"

FIXED_BASE_KERNELS(g1, Fq)
