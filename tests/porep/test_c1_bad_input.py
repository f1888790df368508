"""Bad C1 input is a C1FormatError naming the field (or, for the text as a whole, the byte offset), never
a raw exception: deep nesting, huge numbers, non-integers where integers belong, commitments of the
wrong length or not canonical, and huge values quoted short."""
import errno
import json
import os
import time

import numpy as np
import pytest

from cuzk import api
from cuzk.errors import C1FormatError, C1ReadError, InputError
from cuzk.ff.fields import Fr
from cuzk.porep import c1 as c1_mod
from cuzk.porep.c1 import C1Output
from cuzk.porep.synthetic import synthetic_c1

KEY = "StackedDrg2KiBV1"
PROOF = ["vanilla_proofs", KEY, 0, 1]
AT = f"vanilla_proofs.{KEY}[0][1]"


@pytest.fixture(scope="module")
def good():
    c1 = synthetic_c1(KEY, prover_id=bytes(32), sector_id=3, ticket=bytes([9] * 32), seed=bytes([5] * 32),
                      rng=np.random.default_rng(11), progress=False)
    return c1.to_json()


def edited(js, path, value):
    obj = json.loads(json.dumps(js))
    target = obj
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    return obj


def refused(obj_or_text, check_paths=True) -> C1FormatError:
    with pytest.raises(C1FormatError) as e:
        if isinstance(obj_or_text, (str, bytes)):
            C1Output.loads(obj_or_text, check_paths)
        else:
            C1Output.from_json(obj_or_text, check_paths)
    assert len(str(e.value)) < 300
    return e.value


def test_deep_json(good, tmp_path):
    """100,000 nested arrays, alone or in place of a field, refused before parsing (no RecursionError)."""
    deep = "[" * 100_000 + "]" * 100_000
    text = json.dumps(good).replace('"vanilla_proofs": {', f'"vanilla_proofs": {deep}, "x": {{', 1)
    for data in (deep, text):
        t = time.perf_counter()
        e = refused(data)
        assert e.field == "<top>" and "nested more than 32 levels deep at byte offset" in str(e)
        assert time.perf_counter() - t < 1
    (tmp_path / "c1.json").write_text(deep)
    with pytest.raises(C1FormatError, match=f"C1 output {tmp_path / 'c1.json'}: nested"):
        C1Output.read(tmp_path / "c1.json")


def test_huge_numbers(good):
    e = refused(json.dumps(good).replace('"node": ', '"node": ' + "9" * 5000 + "0", 1))
    assert e.field == "<top>" and "a number of more than 64 digits" in str(e)
    e = refused(edited(good, PROOF + ["encoding_proof", "node"], 10 ** 30))
    assert e.field == f"{AT}.encoding_proof.node" and "out of range [0, 18446744073709551615]" in str(e)
    e = refused(json.dumps(good).replace('"layer_index": 1', '"layer_index": 1e999', 1))
    assert e.field.endswith("layer_index") and "got the number inf" in str(e)


@pytest.mark.parametrize("value", [7.5, 1.0, "1", True, None, [1]], ids=repr)
@pytest.mark.parametrize("field", [["encoding_proof", "node"], ["labeling_proofs", 0, "layer_index"],
                                   ["replica_column_proofs", "c_x", "column", "index"],
                                   ["comm_d_proofs", "data", "Single", "path", "path", 0, "index"]],
                         ids=lambda f: f[-1])
def test_integers_are_integers(good, field, value):
    e = refused(edited(good, PROOF + field, value))
    assert e.field == AT + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in field)
    assert "expected an integer" in str(e)


@pytest.mark.parametrize("value,reason", [
    ([1] * 31, "got 31 entries"), ([1] * 33, "got 33 entries"), ("00" * 32, "got the string"),
    ([1] * 31 + [1.0], "byte 31 is the number 1.0"), ([1] * 31 + [256], "byte 31 is the integer 256"),
    ([True] * 32, "byte 0 is the boolean true"),
])
def test_commitments_are_32_bytes(good, value, reason):
    for field in ("comm_r", "comm_d", "replica_id", "seed", "ticket"):
        e = refused(edited(good, [field], value))
        assert e.field == field and reason in str(e)
    e = refused(edited(good, PROOF + ["comm_r_last_proof", "data", "Single", "root"], value))
    assert e.field == f"{AT}.comm_r_last_proof.data.Single.root"


@pytest.mark.parametrize("field", c1_mod.FIELD_ELEMENTS)
def test_field_element_commitments_are_canonical(good, field):
    """comm_r, comm_d and replica_id are Fr encodings: the modulus itself and 2^256 - 1 are refused;
    seed and ticket are any 32 bytes."""
    for value in (Fr.modulus, (1 << 256) - 1):
        e = refused(edited(good, [field], list(value.to_bytes(32, "little"))), check_paths=False)
        assert e.field == field and "not a canonical field element" in str(e)
    C1Output.from_json(edited(edited(good, ["seed"], [255] * 32), ["ticket"], [255] * 32), check_paths=False)


def test_registered_proof_is_quoted_short(good):
    e = refused(edited(good, ["registered_proof"], "StackedDrg" + "X" * 100_000_000))
    assert e.field == "registered_proof" and "unknown registered seal proof 'StackedDrgXXX" in str(e)
    assert "(100,000,010 characters)" in str(e)
    for value, got in ((3, "the integer 3"), (None, "null"), (["StackedDrg2KiBV1"], "an array of 1")):
        e = refused(edited(good, ["registered_proof"], value))
        assert e.field == "registered_proof" and got in str(e)


def test_huge_keys_are_quoted_short(good):
    vp = edited(good, ["vanilla_proofs"], {"K" * 10_000_000: []})
    e = refused(vp)
    assert e.field == "vanilla_proofs" and "got ['KKKK" in str(e)  # and short: see refused()
    data = good["vanilla_proofs"][KEY][0][1]["comm_d_proofs"]["data"]
    e = refused(edited(good, PROOF + ["comm_d_proofs", "data"], {"S" * 1_000_000: data["Single"]}))
    assert e.field == f"{AT}.comm_d_proofs.data" and "got ['SSSS" in str(e)


@pytest.mark.parametrize("text,reason", [
    ("[]", "expected an object, got an array of 0"), ("3", "expected an object, got the integer 3"),
    ('{"registered_proof": "StackedDrg2KiBV1", "registered_proof": "StackedDrg2KiBV1"}', "duplicate key"),
    ('{"comm_r": NaN}', "NaN is not JSON"), (b'{"a": "\xff"}', "not UTF-8 at byte offset 7"),
    ("{\"\ud800\": 1", "not UTF-8 at byte offset 2"),
])
def test_not_a_c1_object(text, reason):
    e = refused(text)
    assert e.field == "<top>" and reason in str(e)


def test_too_large_before_reading(tmp_path):
    big = tmp_path / "c1.json"
    with open(big, "wb") as f:
        f.truncate(c1_mod.C1_MAX_BYTES + 1)
    t = time.perf_counter()
    with pytest.raises(C1FormatError, match="more than the 1,073,741,824 allowed"):
        C1Output.read(big)
    assert time.perf_counter() - t < 1


def test_file_errors_are_typed_oserrors(tmp_path):
    """A file that cannot be read is a C1ReadError naming the path, still an OSError with the errno
    (missing, a directory, a path below a regular file, a symlink loop); a FIFO is refused, not waited on."""
    (tmp_path / "f").write_text("{}")
    (tmp_path / "loop").symlink_to("loop")
    os.mkfifo(tmp_path / "fifo")
    for path, code in ((tmp_path / "missing.json", errno.ENOENT), (tmp_path, errno.EISDIR),
                       (tmp_path / "f" / "c1.json", errno.ENOTDIR), (tmp_path / "loop", errno.ELOOP),
                       (tmp_path / "fifo", None)):
        t = time.perf_counter()
        with pytest.raises(C1ReadError) as e:
            C1Output.read(path)
        assert time.perf_counter() - t < 1
        assert isinstance(e.value, OSError) and e.value.errno == code and str(path) in str(e.value)
        assert not str(e.value).startswith("[Errno")


@pytest.mark.parametrize("value", [None, 0, -1, True, np.int64(5), 7.5, float("nan"), [1], {}, 10 ** 5000],
                         ids=lambda v: type(v).__name__)
def test_wrong_python_types_are_input_errors(value):
    """loads takes str / bytes only (an int is never taken for a file descriptor: loads(0) would read
    stdin); read takes str / os.PathLike only."""
    with pytest.raises(InputError, match="must be str"):
        C1Output.loads(value)
    with pytest.raises(InputError, match="must be str"):
        C1Output.read(value)


@pytest.mark.parametrize("value", ["", b"", b"c1.json"])
def test_empty_or_bytes_path_is_an_input_error(value):
    with pytest.raises(InputError, match="path must be"):
        C1Output.read(value)


@pytest.mark.parametrize("seed", [7.5, 2 ** 64, -1, 32, "00" * 32, [0] * 32, bytes(31), np.zeros(32, np.uint8)],
                         ids=repr)
def test_as_c1_seed_must_be_32_bytes(good, seed):
    """as_c1 refuses a seed that is not 32 bytes (bytes(32) is 32 zeros: an int is never a seed)."""
    c1 = C1Output.from_json(good)
    with pytest.raises(InputError, match="32 bytes"):
        api.as_c1(c1, seed)
    assert api.as_c1(c1, memoryview(c1.seed))[0] is c1


def test_as_c1_of_a_missing_path(tmp_path):
    with pytest.raises(C1ReadError, match="No such file"):
        api.as_c1(str(tmp_path / "x"), bytes(32))
    with pytest.raises(InputError, match="non-empty"):
        api.as_c1("", bytes(32))


def test_the_good_c1_still_reads(good):
    assert C1Output.from_json(good).to_json() == good
