"""cuzk.service.payload: the daemon reads a SubmitProof payload (curio's C1 wrapper JSON or a plain C1
JSON) with the C1 file reader's strict rules, and every defect is an InputError naming where it is."""
from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from cuzk.errors import C1FormatError, InputError, InputTooLargeError, JsonFormatError
from cuzk.porep.c1 import C1_MAX_DEPTH
from cuzk.porep.synthetic import synthetic_c1
from cuzk.service.payload import MAX_PAYLOAD, parse_porep, wrap


@pytest.fixture(scope="module")
def c1():
    return synthetic_c1("StackedDrg2KiBV1_1", prover_id=bytes(32), sector_id=5, ticket=b"\x01" * 32,
                        seed=b"\x02" * 32, rng=np.random.default_rng(3), progress=False)


def wrapper(phase1: bytes, head: str = '"SectorNum": 5') -> bytes:
    return ('{%s, "Phase1Out": "%s", "SectorSize": 2048}' % (head, base64.b64encode(phase1).decode())).encode()


def test_wrapper_and_plain_c1_are_read(c1) -> None:
    assert parse_porep(wrap(c1, 5)).dumps() == c1.dumps()
    assert parse_porep(c1.dumps().encode(), 2048).dumps() == c1.dumps()


def test_duplicate_key_in_the_wrapper_is_refused(c1) -> None:
    with pytest.raises(JsonFormatError, match=r"^payload: duplicate key 'SectorNum' in the object at <top>$"):
        parse_porep(wrapper(c1.dumps().encode(), '"SectorNum": 5, "SectorNum": 6'))


def test_duplicate_key_inside_phase1out_is_refused_with_its_path(c1) -> None:
    obj = json.loads(c1.dumps())
    text = json.dumps(obj, separators=(",", ":"))
    proof = json.dumps(obj["vanilla_proofs"]["StackedDrg2KiBV1"][0][1], separators=(",", ":"))
    doubled = proof.replace('{"comm_d_proofs":', '{"comm_d_proofs":null,"comm_d_proofs":', 1)
    assert doubled != proof
    with pytest.raises(JsonFormatError, match=r"^Phase1Out: duplicate key 'comm_d_proofs' in the object at "
                                              r"vanilla_proofs\.StackedDrg2KiBV1\[0\]\[1\]$"):
        parse_porep(wrapper(text.replace(proof, doubled, 1).encode()))


def test_duplicate_key_in_a_plain_c1_is_refused(c1) -> None:
    text = c1.dumps()
    with pytest.raises(JsonFormatError, match=r"^payload: duplicate key 'comm_r' in the object at <top>$"):
        parse_porep(text.replace('{', '{"comm_r": [0],', 1).encode())


@pytest.mark.parametrize("payload, error, match", [
    (b"[" * (C1_MAX_DEPTH + 1) + b"]" * (C1_MAX_DEPTH + 1), JsonFormatError,
     rf"^payload: nested more than {C1_MAX_DEPTH} levels deep at byte offset {C1_MAX_DEPTH}$"),
    (b'{"SectorNum": NaN, "Phase1Out": ""}', JsonFormatError, r"^payload: NaN is not JSON$"),
    (b'{"SectorNum": 1, "Phase1Out": "e30=" ', JsonFormatError,
     r"^payload: not JSON \(Expecting ',' delimiter\) at byte offset 37$"),
    (b"\xff{}", JsonFormatError, r"^payload: not UTF-8 at byte offset 0$"),
    (wrapper(b"[" * 40), JsonFormatError, r"^Phase1Out: nested more than 32 levels deep at byte offset 32$"),
    (wrapper(b'{"registered_proof": 1e999}'), C1FormatError,
     r"^C1 field Phase1Out\.registered_proof: expected a proof name, got the number inf$"),
    (wrapper(b"{}"), C1FormatError, r"^C1 field Phase1Out\.registered_proof: missing$"),
    (wrapper(b"[1, 2]"), C1FormatError, r"^C1 field Phase1Out: expected an object, got an array of 2$"),
    (b'{"SectorNum": 1, "Phase1Out": "not base64!"}', C1FormatError, r"^C1 field Phase1Out: not base64"),
    (b'{"SectorNum": "1", "Phase1Out": "e30="}', C1FormatError, r"^C1 field SectorNum: expected an integer"),
    (b'{"SectorNum": 1, "Phase1Out": "e30=", "Extra": 1}', C1FormatError, r"^C1 field Extra: unknown field"),
    (b"", InputError, r"^vanilla_proof is empty"),
])
def test_defects_are_typed_and_located(payload: bytes, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        parse_porep(payload)
    assert isinstance(info.value, InputError)


def test_a_payload_over_the_limit_is_refused_unparsed() -> None:
    with pytest.raises(InputTooLargeError, match=rf"^payload: {MAX_PAYLOAD + 1:,} bytes, more than the "):
        parse_porep(b" " * (MAX_PAYLOAD + 1))


def test_sizes_must_agree(c1) -> None:
    with pytest.raises(InputError, match="SectorSize 4096 does not match"):
        parse_porep(wrap(c1).replace(b'"SectorSize": 2048', b'"SectorSize": 4096'))
    with pytest.raises(InputError, match="sector_size 8388608 does not match"):
        parse_porep(wrap(c1), 8 << 20)
