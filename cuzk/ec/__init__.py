"""BLS12-381 groups G1 and G2: point formulas (formulas), subgroup tests (subgroup), the point-array
API (curves), the zcash encoding (encoding) and a plain-int reference (reference)."""
from cuzk.ec.curves import G1, G2, Curve

__all__ = ["G1", "G2", "Curve"]
