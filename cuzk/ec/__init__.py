"""BLS12-381 groups G1 and G2 (curves), their zcash encoding (encoding), a plain-int reference."""
from cuzk.ec.curves import G1, G2, Curve

__all__ = ["G1", "G2", "Curve"]
