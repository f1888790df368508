"""Filecoin fallback PoSt (WinningPoSt, WindowPoSt): registered proofs, challenges, vanilla proofs."""
