// G1 test kernels: scalar_mul_g1, add_pairs_g1.
#include "test/ec.cuh"

TEST_EC_KERNELS(g1, Fq)
