"""The layouts the host code and the CUDA kernels share, each defined once: codegen writes
kernels/layout.cuh from them, and the host modules pack their tables, records and structs by them.

Tables are int64 rows whose columns are named by a *_FIELDS tuple; the kernels read column `name` of
such a table at PREFIX_NAME (P_ for parts, R_ for runs), a row being PREFIX_FIELDS long.
"""
from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------- curve points
FQ_WORDS = 12  # 32-bit words of an Fq element
WORDS = {"g1": 2 * FQ_WORDS, "g2": 4 * FQ_WORDS}  # 32-bit words of an affine point on the device
POINT_SHAPE = {"g1": (2, 6), "g2": (2, 2, 6)}  # uint64 limbs of an affine point on the host (cuzk.ff.fields)

# ---------------------------------------------------------------- R1CS in template form (pce/, witness/)
PCE_THREADS = 256  # threads per block of pce_evaluate and pce_transpose
# a matrix's arrays (cuzk.backend.base.TemplateMatrix), the fields of the kernels' struct PceMatrix
MATRIX_ARRAYS = ("tpl_indptr", "tpl_vars", "tpl_cids", "plain_indptr", "plain_cols", "plain_cids")
# The arrays the kernels read as stored, (name, narrow dtype, wide dtype): bit i of a matrix's
# `widths` (W_<NAME> in the kernels) is set when array i is wide. plain_indptr is always int64.
WIDTHS = (("tpl_indptr", np.int32, np.int64), ("tpl_vars", np.int32, np.int64), ("wire_cols", np.int32, np.int64),
          ("plain_cols", np.int32, np.int64), ("tpl_cids", np.uint16, np.uint32), ("plain_cids", np.uint16, np.uint32))
# columns of the part table of pce_evaluate / pce_transpose (cuzk.backend.cuda.pce.parts); k = 0: plain rows
PART_FIELDS = ("cta0", "items", "k", "row", "first", "per", "aux_col", "aux_per", "in_col", "in_per", "wire_off")

# ---------------------------------------------------------------- witness program (witness/witness.cu)
WP_THREADS = 256  # threads per block of witness_level and witness_program
# columns of the run table (cuzk.backend.cuda.witness.runs); k = 0 marks the plain program
RUN_FIELDS = ("template", "k", "aux_col", "aux_per", "in_col", "in_per", "wire_off")
# A step record (cuzk.backend.cuda.witness.step_records), int32 words: 0 op and side counts, 1 inv,
# 2 the unknown term's variable, REC_VARS + SHORT_TERMS q + j the variable of side q's j-th other
# term, REC_CIDS + SHORT_TERMS q + j its coefficient id; padded to whole int4 loads.
SHORT_TERMS = 4  # a side of at most this many terms is read whole at once
REC_VARS = 3
REC_CIDS = REC_VARS + 3 * SHORT_TERMS
REC_WORDS = -(-(REC_CIDS + 3 * SHORT_TERMS) // 4) * 4
# The struct wp_program, passed to the kernels by value: a PceMatrix per matrix, then the addresses
# of the program's arrays, (name, C type, what it holds).
PROGRAM_MATRICES = ("a", "b", "c", "hl", "hr")
PROGRAM_ARRAYS = (
    ("runs", "const long long*", "(nruns, R_FIELDS)"),
    ("prog_levels", "const long long*", "(ntpl + 2,)"),
    ("levels", "const long long*", "(nlevels + 1,)"),
    ("long_end", "const long long*", "(nlevels,): level L's long steps are levels[L] .. long_end[L]"),
    ("steps", "const long long*", "(nsteps, 4): op, row, term, inv"),
    ("heads", "const int*", "(nsteps, 6): the first term and term count of each of its three sides"),
    ("inv", "const uint4*", "(ninv,) Fr, Montgomery"),
    ("coeffs", "const uint4*", "(ncoeff,) Fr, Montgomery; id 0 = 1, id 1 = -1"),
    ("coeff_log2", "const short*", "(ncoeff,) e where coeffs[id] = 2^e, else -1"),
    ("wire_cols", "const void*", "the circuit's wire table, int32 or int64 (W_WIRE_COLS)"),
    ("records", "const int4*", "(nsteps, WP_REC_WORDS) step records, or null"),
)
# wp_program as the host fills it: one 64-bit word per address or `widths`, named <matrix>_<field>
# for the matrices' fields
PROGRAM_STRUCT = np.dtype([(f"{m}_{name}", np.uint64) for m in PROGRAM_MATRICES for name in (*MATRIX_ARRAYS, "widths")]
                          + [(name, np.uint64) for name, _, _ in PROGRAM_ARRAYS])

# ---------------------------------------------------------------- Groth16 setup (setup/fixed_base.cuh)
FB_THREADS = 128  # threads per block of fb_table_* and fb_mul_*
