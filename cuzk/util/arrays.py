"""numpy or CuPy alike: the array module of an array, and a host copy. CuPy is never imported here:
a device array is recognised by its module, so this runs on machines without it."""
from __future__ import annotations

import sys
from types import ModuleType

import numpy as np


def on_device(x) -> bool:
    """Whether x is a CuPy array (device memory)."""
    return type(x).__module__.split(".")[0] == "cupy"


def array_module(x) -> ModuleType:
    """cupy for a CuPy array, else numpy."""
    return sys.modules["cupy"] if on_device(x) else np


def to_host(x) -> np.ndarray:
    """x as a numpy array (copied from the device when it is a CuPy array)."""
    return x.get() if on_device(x) else np.asarray(x)
