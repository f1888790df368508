"""R1CS recorded into arrays: ConstraintSystem (bellperson's order), batch templates, CSR, SpMV."""
from cuzk.r1cs.csr import CSR
from cuzk.r1cs.lc import ONE, LinearCombination, Variable, as_lc
from cuzk.r1cs.spmv import evaluate, first_unsatisfied
from cuzk.r1cs.system import Batch, ConstraintSystem, fr_array

__all__ = ["CSR", "ONE", "Batch", "ConstraintSystem", "LinearCombination", "Variable", "as_lc",
           "evaluate", "first_unsatisfied", "fr_array"]
