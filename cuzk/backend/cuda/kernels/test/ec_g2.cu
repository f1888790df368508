// G2 test kernels: scalar_mul_g2, add_pairs_g2 (Fq2 products are calls, for a short compile).
#define FQ2_MUL __noinline__
#include "test/ec.cuh"

TEST_EC_KERNELS(g2, Fq2)
