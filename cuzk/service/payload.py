"""The PoRep payload of a SubmitProof request: curio's C1 wrapper JSON
(`{"SectorNum": u64, "Phase1Out": "<base64 of the SealCommitPhase1Output JSON>", "SectorSize": u64}`)
or a plain C1 JSON, parsed into a C1Output. Every defect is a typed error (C1FormatError naming the
field, or InputError) that the daemon answers with INVALID_ARGUMENT."""
from __future__ import annotations

import base64
import binascii
import json

from cuzk.errors import C1FormatError, InputError
from cuzk.porep.c1 import C1Output

MAX_PAYLOAD = 128 << 20  # the daemon's message limit


def parse_porep(payload: bytes, sector_size: int = 0) -> C1Output:
    """The C1 output of a wrapper or plain C1 JSON payload. A wrapper's SectorSize (and the request's
    sector_size when non-zero) must match the C1's registered proof."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise InputError(f"vanilla_proof must be bytes, got {type(payload).__name__}")
    data = bytes(payload)
    if not data:
        raise InputError("vanilla_proof is empty: a PoRep request carries the C1 wrapper JSON")
    if len(data) > MAX_PAYLOAD:
        raise InputError(f"vanilla_proof is {len(data)} bytes, over the {MAX_PAYLOAD}-byte limit")
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise C1FormatError("", f"the payload is not JSON: {str(e)[:120]}") from None
    declared = 0
    if isinstance(obj, dict) and "Phase1Out" in obj:
        declared, obj = _unwrap(obj)
    c1 = C1Output.from_json(obj)
    size = c1.registered_proof.sector_size
    for what, value in (("SectorSize", declared), ("sector_size", sector_size)):
        if value and value != size:
            raise InputError(f"{what} {value} does not match the C1's {c1.registered_proof.name} ({size} bytes)")
    return c1


def _unwrap(obj: dict) -> tuple[int, object]:
    """(SectorSize, the C1 JSON object) of a wrapper."""
    unknown = sorted(set(obj) - {"SectorNum", "Phase1Out", "SectorSize"})
    if unknown:
        raise C1FormatError(unknown[0], "unknown field of the C1 wrapper (SectorNum, Phase1Out, SectorSize)")
    for key in ("SectorNum", "SectorSize"):
        value = obj.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 64:
            raise C1FormatError(key, f"expected an unsigned 64-bit integer, got {type(value).__name__}")
    text = obj["Phase1Out"]
    if not isinstance(text, str):
        raise C1FormatError("Phase1Out", f"expected a base64 string, got {type(text).__name__}")
    try:
        inner = json.loads(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise C1FormatError("Phase1Out", "not the base64 of a C1 JSON (truncated or corrupted)") from None
    return obj.get("SectorSize", 0), inner


def wrap(c1: C1Output, sector_number: int = 0) -> bytes:
    """curio's wrapper JSON of a C1 output (what curio sends as vanilla_proof)."""
    return json.dumps({"SectorNum": sector_number, "Phase1Out": base64.b64encode(c1.dumps().encode()).decode(),
                       "SectorSize": c1.registered_proof.sector_size}).encode()
