"""Finite fields of BLS12-381: Montgomery limb code (limbs), the Fr/Fq/Fq2 array API (fields) and
Fr's evaluation domains, roots of unity and cosets (domain)."""
from cuzk.ff.domain import Domain
from cuzk.ff.fields import Fq, Fq2, Fr

__all__ = ["Domain", "Fq", "Fq2", "Fr"]
