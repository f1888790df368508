"""R1CS recorded into arrays: ConstraintSystem (bellperson's order), batch templates, CSR, SpMV.

    cs = ConstraintSystem()                      # or "constraints" / "witness"
    out = cs.alloc_input(35)                     # input 0 is ONE; inputs come first in the columns
    x = cs.alloc(3)
    x2 = cs.alloc(9); cs.enforce(x, x, x2)       # a, b, c: LinearCombination / Variable / int / None
    with cs.batch(k) as blk:                     # k instances laid out one after the other
        y = blk.alloc(fr_values_of_length_k)     # (k, 4) Fr array, or None in constraint mode
        blk.enforce(y, y + 1, blk.wire(codes))   # per-instance outside variables through wire()
    A, B, C = cs.to_csr(); w = cs.witness(); cs.assert_satisfied()

Matrices store a uint32 coefficient id per non-zero into one small table of distinct Montgomery Fr
coefficients (id 0 = 1, id 1 = -1), so the SpMV adds or subtracts in the common cases.
"""
from cuzk.r1cs.batch import Batch
from cuzk.r1cs.csr import CSR
from cuzk.r1cs.pce import PCE
from cuzk.r1cs.lc import ONE, LinearCombination, Variable, as_lc
from cuzk.r1cs.satisfy import evaluate, first_unsatisfied
from cuzk.r1cs.system import ConstraintSystem, fr_array

__all__ = ["CSR", "ONE", "PCE", "Batch", "ConstraintSystem", "LinearCombination", "Variable", "as_lc",
           "evaluate", "first_unsatisfied", "fr_array"]
