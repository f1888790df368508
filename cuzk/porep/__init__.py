"""Filecoin SDR PoRep, vanilla side: registered proofs, the stacked DRG and its parents cache, labels."""
