"""Typed errors raised by cuzk. Every error is a CuzkError; input errors are also ValueErrors."""


class CuzkError(Exception):
    """Base class of every error cuzk raises on purpose."""


class InputError(CuzkError, ValueError):
    """Input with the wrong shape, dtype, length or range."""


class NonCanonicalError(InputError):
    """A field element encoding that is not reduced modulo the field's prime."""


class BackendUnavailableError(CuzkError, RuntimeError):
    """The requested compute backend (e.g. CUDA) cannot run on this machine."""
