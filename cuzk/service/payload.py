"""The PoRep payload of a SubmitProof request: curio's C1 wrapper JSON
(`{"SectorNum": u64, "Phase1Out": "<base64 of the SealCommitPhase1Output JSON>", "SectorSize": u64}`)
or a plain C1 JSON, parsed into a C1Output.

Both JSON documents (the payload, and the wrapper's Phase1Out once decoded) are read as the C1 file
reader reads its file (cuzk.util.jsonio.load_json): at most MAX_PAYLOAD bytes and C1_MAX_DEPTH levels
(checked before parsing), strict JSON (UTF-8; no NaN, Infinity or duplicate key). Every defect is an
InputError subclass that says where it is, and that the daemon answers with INVALID_ARGUMENT:
JsonFormatError / InputTooLargeError for the text ("payload: ..." or "Phase1Out: ...", with the byte
offset, or the JSON path of a duplicate key), C1FormatError naming the field (a C1 field inside the
wrapper as Phase1Out.<its path>), InputError for the request's own values.
"""
from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from cuzk.errors import C1FormatError, InputError
from cuzk.porep.c1 import C1_MAX_DEPTH, C1Output
from cuzk.util.jsonio import as_int, load_json

MAX_PAYLOAD = 128 << 20  # the daemon's message limit
WRAPPER = "Phase1Out"


def parse_porep(payload: bytes, sector_size: int = 0) -> C1Output:
    """The C1 output of a wrapper or plain C1 JSON payload. A wrapper's SectorSize (and the request's
    sector_size when non-zero) must match the C1's registered proof."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise InputError(f"vanilla_proof must be bytes, got {type(payload).__name__}")
    data = bytes(payload)
    if not data:
        raise InputError("vanilla_proof is empty: a PoRep request carries the C1 wrapper JSON")
    obj = _load(data, "payload")
    declared, at = 0, ""
    if isinstance(obj, dict) and WRAPPER in obj:
        declared, obj = _unwrap(obj)
        at = WRAPPER
    c1 = _c1(obj, at)
    size = c1.registered_proof.sector_size
    for what, value in (("SectorSize", declared), ("sector_size", sector_size)):
        if value and value != size:
            raise InputError(f"{what} {value} does not match the C1's {c1.registered_proof.name} ({size} bytes)")
    return c1


def _load(data: bytes, what: str) -> Any:
    """One JSON document of the payload, read under the C1 reader's limits."""
    return load_json(data, what=what, max_bytes=MAX_PAYLOAD, max_depth=C1_MAX_DEPTH)


def _unwrap(obj: dict) -> tuple[int, Any]:
    """(SectorSize, the C1 JSON value) of a wrapper."""
    unknown = sorted(set(obj) - {"SectorNum", WRAPPER, "SectorSize"})
    if unknown:
        raise C1FormatError(unknown[0], f"unknown field of the C1 wrapper (SectorNum, {WRAPPER}, SectorSize)")
    for key in ("SectorNum", "SectorSize"):
        as_int(obj.get(key, 0), key, 0, (1 << 64) - 1, error=C1FormatError)
    text = obj[WRAPPER]
    if not isinstance(text, str):
        raise C1FormatError(WRAPPER, f"expected a base64 string, got {type(text).__name__}")
    try:
        inner = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise C1FormatError(WRAPPER, "not base64 (truncated or corrupted)") from None
    return obj.get("SectorSize", 0), _load(inner, WRAPPER)


def _c1(obj: Any, at: str) -> C1Output:
    """C1Output.from_json, its C1FormatError's field prefixed with `at` (the wrapper's field) if any."""
    try:
        return C1Output.from_json(obj)
    except C1FormatError as e:
        if not at:
            raise
        raise C1FormatError(at if e.field in ("", "<top>") else f"{at}.{e.field}", e.reason) from None


def wrap(c1: C1Output, sector_number: int = 0) -> bytes:
    """curio's wrapper JSON of a C1 output (what curio sends as vanilla_proof)."""
    return json.dumps({"SectorNum": sector_number, WRAPPER: base64.b64encode(c1.dumps().encode()).decode(),
                       "SectorSize": c1.registered_proof.sector_size}).encode()
