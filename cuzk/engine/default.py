"""The process-wide engine that cuzk.prove uses: one per backend name, made on first use from the
effective configuration (the file named by CUZK_CONFIG, if set, under the CUZK_<TABLE>_<KEY>
variables) and closed at exit, so a second proof in the process reuses its circuit, parameters and
GPU tables."""
from __future__ import annotations

import atexit
import os
import threading

from cuzk.engine.config import CONFIG_ENV, resolve
from cuzk.engine.engine import Engine

_DEFAULT: dict[str, Engine] = {}
_DEFAULT_LOCK = threading.Lock()


def default_engine(backend: str = "auto") -> Engine:
    """The process-wide engine for a backend name, made on first use from the effective configuration
    (the file named by CUZK_CONFIG, if set, under the CUZK_<TABLE>_<KEY> variables) and closed at
    exit: what cuzk.prove uses, so a second proof in the process reuses its circuit, parameters and
    GPU tables."""
    with _DEFAULT_LOCK:
        engine = _DEFAULT.get(backend)
        if engine is None or engine.closed:
            engine = _DEFAULT[backend] = Engine(resolve(os.environ.get(CONFIG_ENV))[0], backend=backend)
            atexit.register(engine.close)
        return engine
