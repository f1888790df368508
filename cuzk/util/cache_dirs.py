"""Where cuzk keeps the files it makes, decided in one place so every layer agrees:

    cache_root()  $CUZK_CACHE_DIR, else $XDG_CACHE_HOME/cuzk, else ~/.cache/cuzk
    params_dir()  $FIL_PROOFS_PARAMETER_CACHE if set (cuzk's files beside the official parameters),
                  else cache_root()/params

An empty variable counts as unset.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """cuzk's own cache directory (see the module docstring)."""
    if os.environ.get("CUZK_CACHE_DIR"):
        return Path(os.environ["CUZK_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cuzk"


def params_dir() -> Path:
    """Where cuzk writes what belongs with the Groth16 parameters: its own parameters, compiled circuits."""
    if os.environ.get("FIL_PROOFS_PARAMETER_CACHE"):
        return Path(os.environ["FIL_PROOFS_PARAMETER_CACHE"])
    return cache_root() / "params"
