"""Finite fields of BLS12-381: Montgomery limb code (limbs), the Fr/Fq/Fq2 array API (fields)."""
from cuzk.ff.fields import Fq, Fq2, Fr

__all__ = ["Fq", "Fq2", "Fr"]
