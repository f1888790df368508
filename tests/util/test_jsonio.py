"""JSON read with limits (size, depth, number length) checked before parsing, strict field accessors, and
short quotes of bad values."""
import json
import random
import subprocess
import sys
import time

import pytest

from cuzk.errors import C1FormatError, FieldError, InputTooLargeError, JsonFormatError
from cuzk.util import jsonio
from cuzk.util.jsonio import as_int, as_object, load_json, quote, read_limited, require_hex, require_int

DEEP = b"[" * 100_000 + b"]" * 100_000


def load(data: bytes, max_depth: int = 16):
    return load_json(data, what="test input", max_bytes=1 << 30, max_depth=max_depth)


def _reference_scan(data: bytes, max_depth: int, max_digits: int):
    """Byte by byte: the first bracket outside strings past max_depth, or the first run of more than
    max_digits digits outside strings; stop where the nesting goes below zero."""
    depth, in_string, slashes, digits = 0, False, 0, 0
    for i, b in enumerate(data):
        digits = digits + 1 if 0x30 <= b <= 0x39 and not in_string else 0
        if digits > max_digits:
            return i - digits + 1, "number"
        if b == 0x5C:
            slashes += 1
            continue
        if b == 0x22 and slashes % 2 == 0:
            in_string = not in_string
        elif not in_string and b in b"[{":
            depth += 1
            if depth > max_depth:
                return i, "deep"
        elif not in_string and b in b"]}":
            depth -= 1
            if depth < 0:
                return None
        slashes = 0
    return None


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64, 1 << 22])
def test_scan_matches_a_byte_by_byte_reference(monkeypatch, chunk):
    """The vectorised scan (strings, escapes and digit runs across chunk boundaries) agrees with the
    reference on random inputs of brackets, quotes, backslashes and digits (seeded)."""
    monkeypatch.setattr(jsonio, "_CHUNK", chunk)
    monkeypatch.setattr(jsonio, "MAX_INT_DIGITS", 3)
    rnd = random.Random(chunk)
    for _ in range(3000):
        data = bytes(rnd.choice(b'[]{}"\\a1111') for _ in range(rnd.randint(0, 40)))
        limit = rnd.randint(0, 4)
        got = jsonio._scan(data, limit)
        want = _reference_scan(data, limit, 3)
        assert (None if got is None else (got[0], "deep" if "nested" in got[1] else "number")) == want, data


@pytest.mark.parametrize("data,offset", [(DEEP, 16), (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, 80),
                                         (b'{"x": [1, ' + DEEP + b"]}", 24)], ids=["arrays", "objects", "inside"])
def test_deep_json_is_refused_before_parsing(data, offset):
    """100,000 levels: refused at the bracket opening level 17, in well under a second."""
    t = time.perf_counter()
    with pytest.raises(JsonFormatError, match=f"nested more than 16 levels deep at byte offset {offset}$"):
        load(data)
    assert time.perf_counter() - t < 1


def test_deep_json_with_a_raised_recursion_limit():
    """Where json.loads would segfault (recursion limit raised, C stack exhausted), the scan refuses
    first: run in a child process so a crash fails the test instead of killing pytest."""
    code = ("import sys; sys.setrecursionlimit(10**7)\n"
            "from cuzk.util.jsonio import load_json\n"
            "from cuzk.errors import JsonFormatError\n"
            "try:\n"
            f"    load_json(b'[' * 3_000_000 + b']' * 3_000_000, what='x', max_bytes=1 << 30, max_depth=64)\n"
            "except JsonFormatError as e:\n"
            "    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "refused: x: nested more than 64 levels deep" in done.stdout


def test_brackets_in_strings_do_not_count():
    text = '["' + "[" * 1000 + '", "\\"' + "{" * 1000 + '", "\\\\", [[1]]]'
    assert load(text.encode(), max_depth=3)[3] == [[1]]
    with pytest.raises(JsonFormatError, match="nested more than 2"):
        load(text.encode(), max_depth=2)


def test_long_numbers_are_refused_but_long_digit_strings_are_not():
    with pytest.raises(JsonFormatError, match="a number of more than 64 digits at byte offset 6"):
        load(b'{"a": ' + b"7" * 100_000 + b"}")
    assert load(b'{"a": "' + b"7" * 100_000 + b'"}')["a"] == "7" * 100_000
    assert load(b"[" + b"9" * 64 + b", 1e999]") == [int("9" * 64), float("inf")]  # inf: the accessors refuse it


@pytest.mark.parametrize("data,offset,reason", [
    (b'{"a": 1,}', 8, "not JSON"),
    ('{"\u00e9\u00e9": x}'.encode(), 9, "not JSON"),  # a byte offset (the character index is 7)
    (b'[1, 2] 3', 7, "not JSON"),
    (b'{"a": "\xff"}', 7, "not UTF-8"),
    (b"\xef\xbb\xbf{}", 0, "not JSON"),
    (b'{"a": NaN}', None, "NaN is not JSON"),
    (b"[-Infinity]", None, "-Infinity is not JSON"),
    (b'{"a": 1, "a": 2}', None, "duplicate key 'a'"),
], ids=["syntax", "multibyte", "extra", "utf8", "bom", "nan", "infinity", "duplicate"])
def test_malformed_json_names_the_offset(data, offset, reason):
    with pytest.raises(JsonFormatError, match=reason) as e:
        load(data)
    assert e.value.offset == offset and str(e.value).startswith("test input: ")


def test_size_limit_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(8 << 30)  # sparse: reading it would take long, stat does not
    t = time.perf_counter()
    with pytest.raises(InputTooLargeError, match="8,589,934,592 bytes, more than the 1,048,576 allowed"):
        load_json(big, what="meta", max_bytes=1 << 20, max_depth=4)
    assert time.perf_counter() - t < 1
    with pytest.raises(InputTooLargeError, match="^x: 101 bytes, more than the 100 allowed$"):
        load_json(b"[]" + b" " * 99, what="x", max_bytes=100, max_depth=4)
    (tmp_path / "ok.json").write_text('{"a": [1]}')
    assert load_json(tmp_path / "ok.json", what="meta", max_bytes=10, max_depth=2) == {"a": [1]}
    assert read_limited(tmp_path / "ok.json", what="x", max_bytes=10) == b'{"a": [1]}'


def test_a_growing_stream_stops_at_the_limit():
    with pytest.raises(InputTooLargeError, match="more bytes, more than the 1,000 allowed"):
        read_limited("/dev/zero", what="stream", max_bytes=1000)


def test_file_errors_pass_through(tmp_path):
    (tmp_path / "f").write_text("{}")
    for path, error in ((tmp_path / "missing", FileNotFoundError), (tmp_path, IsADirectoryError),
                        (tmp_path / "f" / "x", NotADirectoryError)):
        with pytest.raises(error):
            load_json(path, what="x", max_bytes=100, max_depth=4)


@pytest.mark.parametrize("value,reason", [
    (7.5, "got the number 7.5"), (7.0, "got the number 7.0"), ("7", "got the string '7'"),
    (True, "got the boolean true"), (None, "got null"), ([7], "got an array of 1"),
    (-1, "-1 is out of range"), (1 << 64, "18446744073709551616 is out of range"),
    (10 ** 1000, "an integer of 3,322 bits is out of range"), (float("inf"), "the number inf"),
])
def test_require_int_is_strict(value, reason):
    with pytest.raises(FieldError, match=reason) as e:
        require_int({"sector_id": value}, "sector_id", 0, (1 << 64) - 1, at="meta")
    assert e.value.field == "meta.sector_id" and len(str(e.value)) < 120


def test_require_int_accepts_ints_and_names_missing_fields():
    assert require_int({"n": 7}, "n", 0, 7) == 7 and as_int(0, "n", 0, 0) == 0
    with pytest.raises(FieldError, match="^n: missing$"):
        require_int({}, "n", 0, 1)
    with pytest.raises(FieldError, match="<top>: expected an object, got an array of 2"):
        require_int([1, 2], "n", 0, 1)
    with pytest.raises(C1FormatError) as e:  # any error class of the (field, reason) signature
        as_object("x", "a.b", error=C1FormatError)
    assert e.value.field == "a.b"


@pytest.mark.parametrize("value,reason", [
    ("ab" * 31, "expected 64 hex digits"), ("ab" * 33, "got 66 characters"), ("0x" + "ab" * 31, "not hex"),
    ("ab cd" + "ab" * 29 + "a", "not hex"), ("zz" * 32, "not hex"), (list(range(32)), "got an array of 32"),
    ("a" * 100_000_000, "got 100,000,000 characters"),
])
def test_require_hex_is_strict(value, reason):
    with pytest.raises(FieldError, match=reason) as e:
        require_hex({"comm_r": value}, "comm_r", 32)
    assert e.value.field == "comm_r" and len(str(e.value)) < 160


def test_require_hex_reads_bytes():
    assert require_hex({"h": "00ff" * 16}, "h", 32) == bytes([0, 255] * 16)
    assert require_hex({"h": "ABCD"}, "h", 2) == b"\xab\xcd"


def test_quote_truncates():
    assert len(quote("x" * 100_000_000)) < 100 and "100,000,000 characters" in quote("x" * 100_000_000)
    assert quote(b"y" * 1000).endswith("(1,000 bytes)")
    assert quote("short") == "'short'" and quote(12) == "12"
    assert len(quote([["a" * 1000] * 100] * 100)) <= 2 * jsonio.QUOTE_CHARS + 3
    assert quote(10 ** 5000) == "an integer of 16,610 bits"
    assert json.loads(quote(list(range(3)))) == [0, 1, 2]
