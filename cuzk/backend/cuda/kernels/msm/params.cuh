// Constants the MSM kernels share with each other and with the host (cuzk.backend.cuda.loader reads
// PRE_MAX as MAX_MULTIPLES).
#pragma once

#define NEG_BIT 0x80000000u  // sign flag in a sorted (point index | sign) value
#define PRE_MAX 16           // most multiples 2^(c*k) * P per base in a precomputed table
