"""cuzk: a Python-native GPU Groth16 proving engine for Filecoin Proof-of-Replication.

    import cuzk
    sector = cuzk.seal("StackedDrg2KiBV1_1", "sector-dir", prover_id=..., sector_id=1, ticket=...)
    proof = cuzk.prove(sector, seed=seed)     # or cuzk.prove("c1.json"): 192 bytes per partition
    assert cuzk.verify(sector, proof, seed=seed)

`prove`, `verify`, `seal` and `Sector` load on first use (they pull in numba kernels); the typed
errors are importable from here directly.
"""
from importlib.metadata import PackageNotFoundError, version

from cuzk.errors import (C1FormatError, CuzkError, InputError, ParameterMismatchError, ParamsNotFoundError,
                         ProofFormatError, ProofVerificationError, SectorError, UnsatisfiedConstraintError,
                         VanillaProofError)

try:
    __version__ = version("cuzk")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

_API = ("prove", "verify", "seal", "Sector")
_POST = ("winning_post", "window_post", "verify_winning_post", "verify_window_post")
_SNAP = ("snap_prove", "snap_verify")
__all__ = ["C1FormatError", "CuzkError", "InputError", "ParameterMismatchError", "ParamsNotFoundError",
           "ProofFormatError", "ProofVerificationError", "SectorError", "UnsatisfiedConstraintError",
           "VanillaProofError", "__version__", *_API, *_POST, *_SNAP]


def __getattr__(name: str):
    if name in _API:
        from cuzk import api

        return getattr(api, name)
    if name in _POST:
        from cuzk.post import proving

        return getattr(proving, name)
    if name in _SNAP:
        from cuzk.snap import proving as snap_proving

        return getattr(snap_proving, name)
    raise AttributeError(f"module 'cuzk' has no attribute {name!r}")
