"""Byte sizes written by people: "17179869184", "16GiB", "16G", "16gb", "1.5 GiB", "512M".

Units are binary (K = 2^10 ... T = 2^40), with or without "i" and "B", in any case; a fraction is
allowed with a unit and rounded down to whole bytes. Formatting sizes for messages is
cuzk.errors.format_size (the errors need it and sit below this package).
"""
from __future__ import annotations

import numbers
import re
from decimal import Decimal

from cuzk.errors import InputError

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?\s*", re.I)


def parse_bytes(text: str | int, *, what: str = "size", allow_zero: bool = False) -> int:
    """A byte count from an int (numpy ints too, not bool) or a string as in the module docstring.
    Raises InputError naming `what` for anything else, and for zero unless `allow_zero`."""
    if isinstance(text, numbers.Integral) and not isinstance(text, bool):
        value = int(text)
    else:
        m = _SIZE.fullmatch(str(text))
        if m is None:
            raise InputError(f"{what} {text!r} is not a size: give bytes or a number with K, M, G or T "
                             "(binary units), e.g. 16GiB")
        value = int(Decimal(m.group(1)) * _UNITS[m.group(2).lower()])
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"{what} {text!r} must be " + ("zero or more" if allow_zero else "positive"))
    return value
