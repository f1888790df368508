"""Seeded mutations: bytes, JSON values and text, .npy headers and file kinds (a directory, a FIFO, a
dangling link...). Every function draws only from the numpy Generator it is given, so a case is
replayed from its seed alone, and returns a Mutation: the mutated value and a short description."""
from __future__ import annotations

import datetime
import json
import math
import os
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root reads files whatever their mode


@dataclass(frozen=True)
class Mutation:
    """A mutated value and what was done. `lenient` marks a change a reader may accept and ignore
    (an unknown extra key, whitespace between tokens): accepting it as the original is no finding."""

    value: Any
    desc: str
    lenient: bool = False


def pick(rng: np.random.Generator, seq: Sequence) -> Any:
    return seq[int(rng.integers(len(seq)))]


def weighted(rng: np.random.Generator, table: dict[str, float]) -> str:
    names = list(table)
    p = np.array([table[n] for n in names], float)
    return names[int(rng.choice(len(names), p=p / p.sum()))]


def rbytes(rng: np.random.Generator, n: int) -> bytes:
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def short(value: Any, limit: int = 40) -> str:
    """repr of a value cut to `limit` characters (descriptions stay one short line)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} chars)"


# ---------------------------------------------------------------- bytes

BYTE_OPS = {"flip": 4, "flip_many": 2, "set": 2, "insert": 1.5, "delete": 1.5, "truncate": 2, "extend": 1.5,
            "zero_range": 1, "ff_range": 1, "duplicate": 0.5, "swap": 0.5, "empty": 0.3}


def mutate_bytes(rng: np.random.Generator, data: bytes, ops: dict[str, float] | None = None,
                 region: tuple[int, int] | None = None) -> Mutation:
    """One generic byte mutation of `data` (positions within `region` [lo, hi) when given)."""
    op = weighted(rng, ops or BYTE_OPS)
    n = len(data)
    lo, hi = region or (0, n)
    if hi <= lo and op not in ("extend", "empty", "insert"):
        op = "extend"
    pos = int(rng.integers(lo, hi)) if hi > lo else lo
    buf = bytearray(data)
    if op == "flip":
        bit = int(rng.integers(8))
        buf[pos] ^= 1 << bit
        return Mutation(bytes(buf), f"flip bit {bit} of byte {pos}")
    if op == "flip_many":
        k = int(rng.integers(2, 9))
        where = sorted(int(x) for x in rng.integers(lo, hi, k))
        for p in where:
            buf[p] ^= 1 << int(rng.integers(8))
        return Mutation(bytes(buf), f"flip {k} bits at bytes {where}")
    if op == "set":
        v = int(rng.integers(256))
        buf[pos] = v
        return Mutation(bytes(buf), f"set byte {pos} to {v:#04x}")
    if op == "insert":
        extra = rbytes(rng, int(pick(rng, [1, 1, 4, 17, 96])))
        return Mutation(bytes(buf[:pos] + extra + buf[pos:]), f"insert {len(extra)} bytes at {pos}")
    if op == "delete":
        k = min(int(pick(rng, [1, 1, 3, 32, 96])), hi - pos)
        return Mutation(bytes(buf[:pos] + buf[pos + k:]), f"delete {k} bytes at {pos}")
    if op == "truncate":
        return Mutation(bytes(buf[:pos]), f"truncate to {pos} of {n} bytes")
    if op == "extend":
        k = int(pick(rng, [1, 4, 96, 192, 1000]))
        extra = bytes(k) if rng.random() < 0.5 else rbytes(rng, k)
        return Mutation(data + extra, f"append {k} {'zero' if not any(extra) else 'random'} bytes")
    if op in ("zero_range", "ff_range"):
        k = min(int(pick(rng, [4, 32, 48, 96])), hi - pos)
        buf[pos:pos + k] = (b"\0" if op == "zero_range" else b"\xff") * k
        return Mutation(bytes(buf), f"set bytes {pos}..{pos + k} to {'00' if op == 'zero_range' else 'ff'}")
    if op == "duplicate":
        k = min(int(pick(rng, [8, 48, 96])), hi - pos)
        return Mutation(bytes(buf[:pos + k] + buf[pos:]), f"duplicate bytes {pos}..{pos + k}")
    if op == "swap":
        k = int(pick(rng, [16, 48, 96]))
        q = int(rng.integers(lo, hi))
        a, b = sorted((pos, q))
        if b - a < k or b + k > n:
            return Mutation(bytes(buf[:pos]), f"truncate to {pos} of {n} bytes")
        buf[a:a + k], buf[b:b + k] = data[b:b + k], data[a:a + k]
        return Mutation(bytes(buf), f"swap bytes {a}..{a + k} with {b}..{b + k}")
    return Mutation(b"", "empty")


def set_u32(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack(">I", value) + data[offset + 4:]


# ---------------------------------------------------------------- JSON values

Path_ = tuple  # a path into a JSON tree: keys and indices


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality that tells types apart (1, 1.0 and True differ); object key order is ignored."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b


def project(value: Any, like: Any, ignored: Sequence[str] = ("_h",)) -> Any:
    """`value` without the object keys that `like` lacks at the same place (unknown fields, which a
    serde reader ignores) and without `ignored` keys: what a reader that ignores them sees."""
    if isinstance(value, dict) and isinstance(like, dict):
        return {k: project(v, like[k], ignored) for k, v in value.items() if k in like and k not in ignored}
    if isinstance(value, list) and isinstance(like, list) and len(value) == len(like):
        return [project(v, w, ignored) for v, w in zip(value, like)]
    return value


def same_meaning(value: Any, like: Any, ignored: Sequence[str] = ("_h",)) -> bool:
    """strict_equal after `project`: equal but for unknown and ignored keys."""
    return strict_equal(project(value, like, ignored), project(like, like, ignored))


class NotStrictJson(ValueError):
    """Text that a strict JSON reader must refuse."""


def strict_loads(data: bytes) -> Any:
    """Parse as strict JSON (UTF-8, no NaN / Infinity, no duplicate keys, no lone surrogates, not too
    deep for Python's parser); NotStrictJson otherwise. The oracle's view of what a text means."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotStrictJson("not UTF-8") from e

    def constant(name: str) -> None:
        raise NotStrictJson(f"{name} is not JSON")

    def pairs(items: list) -> dict:
        obj = dict(items)
        if len(obj) != len(items):
            raise NotStrictJson("duplicate key")
        return obj

    try:
        value = json.loads(text, parse_constant=constant, object_pairs_hook=pairs)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, or an int literal over Python's digit limit
        raise NotStrictJson(type(e).__name__) from e
    if _has_inf(value):
        raise NotStrictJson("a number overflows to infinity")
    return value


def _has_inf(v: Any) -> bool:
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, float) and not np.isfinite(x):
            return True
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return False


def random_walk(rng: np.random.Generator, obj: Any, stop: float = 0.25) -> Path_:
    """A path from the root to a random node: descend into a random child until `stop` fires or a leaf."""
    path: list = []
    node = obj
    while isinstance(node, (dict, list)) and node and (not path or rng.random() >= stop):
        key = pick(rng, list(node)) if isinstance(node, dict) else int(rng.integers(len(node)))
        path.append(key)
        node = node[key]
    return tuple(path)


def get_at(obj: Any, path: Path_) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def replace_at(obj: Any, path: Path_, fn: Callable[[Any], Any]) -> Any:
    """A copy of `obj` with the node at `path` replaced by fn(node) (only the path is copied). fn may
    return DELETE to remove the node from its container."""
    if not path:
        return fn(obj)
    head, rest = path[0], path[1:]
    new = replace_at(obj[head], rest, fn)
    if isinstance(obj, dict):
        out = dict(obj)
        if new is DELETE:
            del out[head]
        else:
            out[head] = new
        return out
    out = list(obj)
    if new is DELETE:
        del out[head]
    else:
        out[head] = new
    return out


DELETE = object()


def path_text(path: Path_) -> str:
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out or "<top>"


def deep(value: Any, depth: int) -> Any:
    """`value` nested in `depth` one-element lists (built iteratively)."""
    for _ in range(depth):
        value = [value]
    return value


def weird_values(rng: np.random.Generator, original: Any) -> list[tuple[Any, str]]:
    """Replacement values of the wrong type or range for a JSON node, with a name each."""
    out: list[tuple[Any, str]] = [
        (None, "null"), (True, "true"), (False, "false"), (0, "0"), (-1, "-1"), (7.5, "7.5"), (1e308, "1e308"),
        (2 ** 64, "2**64"), (-(2 ** 63) - 1, "-2**63-1"), (10 ** 40, "10**40"), ("", '""'), ("x" * 64, '"x"*64'),
        ("x" * int(pick(rng, [1000, 100_000])), "a very long string"), ([], "[]"), ({}, "{}"),
        ([0] * 33, "[0]*33"), ({"a": 1}, '{"a": 1}'), (deep(0, int(pick(rng, [40, 300]))), "nested lists"),
        ("\ud800", "a lone surrogate"), ("0x" + "00" * 32, '"0x00.."'),
    ]
    if type(original) is int:
        out += [(float(original), f"{float(original)!r} (float)"), (str(original), f"{str(original)!r} (str)"),
                (original + 1, f"{original + 1} (+1)"), (original - 1, f"{original - 1} (-1)"),
                (original + 2 ** 32, "+2**32"), (2 ** 64 - 1, "2**64-1"), (bool(original & 1), "a boolean"),
                (original + 0.5, "+0.5"), (-original - 1, "negated-1")]
    if isinstance(original, str):
        out += [(original[:-1], "one character shorter"), (original + "0", "one character longer"),
                (original + "00", "one byte longer"), (original[:-2], "one byte shorter"),
                (original.upper(), "upper case"), ("0x" + original, "0x prefix"), (" " + original, "leading space"),
                (original[:4] + " " + original[4:], "a space inside"), ("zz" + original[2:], "non-hex digits"),
                (original.encode().hex(), "hex of the hex"), ([original], "wrapped in a list")]
    if isinstance(original, list):
        out += [(original[:-1], "last element dropped"), (original + original[-1:], "last element doubled"),
                (original[::-1], "reversed"), (original + [None], "null appended"), ([original], "wrapped in a list"),
                (original * 2, "doubled"), (dict(enumerate(original)) if len(original) < 50 else {}, "an object")]
    if isinstance(original, dict):
        out += [(list(original.values()), "values as a list"), ([original], "wrapped in a list")]
    return out


def mutate_json(rng: np.random.Generator, obj: Any, lenient_keys: Sequence[str] = ("_h",)) -> Mutation:
    """One structural mutation of a JSON tree (a new tree; the original is not changed)."""
    path = random_walk(rng, obj)
    node = get_at(obj, path)
    where = path_text(path)
    lenient = any(k in lenient_keys for k in path if isinstance(k, str))
    ops = {"replace": 6, "swap": 1}
    if path:
        ops["delete"] = 1.5
    if isinstance(node, dict):
        ops.update(extra_key=1, rename_key=1)
    if isinstance(node, list) and node:
        ops.update(element=2)
    op = weighted(rng, ops)
    if op == "replace":
        value, name = pick(rng, weird_values(rng, node))
        return Mutation(replace_at(obj, path, lambda _: value), f"json: {where} := {name}", lenient)
    if op == "delete":
        return Mutation(replace_at(obj, path, lambda _: DELETE), f"json: delete {where}", lenient)
    if op == "extra_key":
        key = pick(rng, ["extra", "_h", "Extra", "comm_r " if "comm_r" in node else "zz"])
        if key in node:
            key = key + "_2"
        return Mutation(replace_at(obj, path, lambda d: {**d, key: pick(rng, [1, None, "x", [1]])}),
                        f"json: extra key {key!r} in {where}", lenient=True)
    if op == "rename_key":
        key = pick(rng, sorted(node)) if node else "x"
        new_key = pick(rng, [key.upper(), key + " ", key[:-1] or "k", key + "_"])

        def rename(d: dict) -> dict:
            return {(new_key if k == key else k): v for k, v in d.items()}
        return Mutation(replace_at(obj, path, rename), f"json: rename key {key!r} of {where} to {new_key!r}",
                        lenient)
    if op == "element":
        i = int(rng.integers(len(node)))
        value, name = pick(rng, weird_values(rng, node[i]))
        return Mutation(replace_at(obj, path + (i,), lambda _: value), f"json: {path_text(path + (i,))} := {name}",
                        lenient)
    other_path = random_walk(rng, obj)
    other = get_at(obj, other_path)
    return Mutation(replace_at(obj, path, lambda _: other), f"json: {where} := the value of {path_text(other_path)}",
                    lenient)


TEXT_OPS = {"bytes": 5, "whitespace": 1, "deep": 1.5, "duplicate_key": 1, "constant": 1, "number": 1.5,
            "trailing": 1, "encoding": 1.5, "bom": 0.5, "not_object": 1}


def mutate_json_text(rng: np.random.Generator, text: bytes, ops: dict[str, float] | None = None) -> Mutation:
    """One mutation of JSON text: generic byte mutations and JSON-aware ones (deep nesting, duplicate
    keys, NaN, long numbers, bad UTF-8, a byte-order mark, trailing data, whitespace)."""
    op = weighted(rng, ops or TEXT_OPS)
    if op == "bytes":
        m = mutate_bytes(rng, text)
        return Mutation(m.value, f"text: {m.desc}")
    if op == "whitespace":
        seps = [i for i in range(min(len(text), 4096)) if text[i:i + 1] in (b",", b":", b"{", b"[")]
        i = pick(rng, seps) + 1 if seps else 0
        ws = pick(rng, [b" ", b"\n", b"\t", b"\r\n  "])
        return Mutation(text[:i] + ws + text[i:], f"text: whitespace {ws!r} after byte {i - 1}", lenient=True)
    if op == "deep":
        depth = int(pick(rng, [33, 200, 1200, 100_000]))
        opener = pick(rng, [b"[", b'{"a":'])
        closer = b"]" if opener == b"[" else b"}"
        if rng.random() < 0.5:  # nest a whole document
            return Mutation(opener * depth + text + closer * depth, f"text: wrapped in {depth} x {opener!r}")
        i = text.find(b":") + 1 or 1  # nest the first value
        j = _value_end(text, i)
        return Mutation(text[:i] + opener * depth + text[i:j] + closer * depth + text[j:],
                        f"text: first value nested {depth} deep in {opener!r}")
    if op == "duplicate_key":
        i = text.find(b"{") + 1
        j = _value_end(text, text.find(b":", i) + 1)
        return Mutation(text[:i] + text[i:j] + b"," + text[i:], f"text: first member duplicated ({j - i} bytes)")
    if op == "constant":
        token = pick(rng, [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"nan", b"undefined"])
        return _replace_number(rng, text, token)
    if op == "number":
        token = pick(rng, [b"9" * 65, b"1" + b"0" * 5000, b"-0", b"1.0", b"1E2", b"0x10", b"01", b"+1",
                           b"18446744073709551616", b"1e-400", b"9" * 19])
        return _replace_number(rng, text, token)
    if op == "trailing":
        extra = pick(rng, [b" x", b"{}", text[:10], b"\x00", b"\n\n", b"]"])
        return Mutation(text + extra, f"text: trailing {extra!r}", lenient=extra == b"\n\n")
    if op == "encoding":
        bad = pick(rng, [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80", b"\xe2\x82", b"\\ud800", b"\\u0000",
                         b"\x00", "\u00e9".encode("latin-1"), "\u00e9".encode()])
        quotes = [i for i in range(min(len(text), 8192)) if text[i:i + 1] == b'"']
        i = pick(rng, quotes) + 1 if quotes else 0
        return Mutation(text[:i] + bad + text[i:], f"text: {bad!r} inserted at byte {i}")
    if op == "bom":
        bom = pick(rng, [b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"])
        return Mutation(bom + text, f"text: byte-order mark {bom!r}")
    value = pick(rng, [b"[]", b"null", b"1", b'"x"', b"[" + text + b"]", b"", b" ", b"{}"])
    return Mutation(value, f"text: the document replaced by {short(value, 20)}")


def _value_end(text: bytes, i: int) -> int:
    """End of the JSON value starting at byte i (a shallow scan: strings and bracket depth)."""
    depth, in_str, esc = 0, False, False
    for j in range(i, len(text)):
        c = text[j]
        if in_str:
            if esc:
                esc = False
            elif c == 0x5C:
                esc = True
            elif c == 0x22:
                in_str = False
            continue
        if c == 0x22:
            in_str = True
        elif c in (0x5B, 0x7B):
            depth += 1
        elif c in (0x5D, 0x7D):
            if depth == 0:
                return j
            depth -= 1
            if depth == 0:
                return j + 1
        elif c == 0x2C and depth == 0:
            return j
    return len(text)


def _replace_number(rng: np.random.Generator, text: bytes, token: bytes) -> Mutation:
    starts = [i for i in range(1, min(len(text), 20000)) if 0x30 <= text[i] <= 0x39 and text[i - 1] in b":,["]
    if not starts:
        return Mutation(token, f"text: the document replaced by {short(token, 20)}")
    i = pick(rng, starts)
    j = i
    while j < len(text) and 0x30 <= text[j] <= 0x39:
        j += 1
    return Mutation(text[:i] + token + text[j:], f"text: number at byte {i} := {short(token, 24)}")


# ---------------------------------------------------------------- .npy headers

NPY_MAGIC = b"\x93NUMPY"


def npy_data_offset(raw: bytes) -> int:
    """Where the array data of a .npy file (version 1, 2 or 3) begins."""
    major = raw[6]
    if major == 1:
        return 10 + struct.unpack("<H", raw[8:10])[0]
    return 12 + struct.unpack("<I", raw[8:12])[0]


def mutate_npy(rng: np.random.Generator, raw: bytes, shape: tuple[int, ...]) -> Mutation:
    """A damaged .npy header: magic, version, header length, dtype, shape, order or its syntax."""
    start = npy_data_offset(raw)
    header = raw[10:start].decode("latin-1")
    op = weighted(rng, {"magic": 1, "version": 1, "header_len": 1.5, "descr": 3, "shape": 3, "fortran": 1,
                        "syntax": 2, "header_bytes": 2})

    def rebuild(text: str, note: str) -> Mutation:
        body = text.rstrip("\n").rstrip()
        pad = (-(10 + len(body) + 1)) % 64
        body = body + " " * pad + "\n"
        return Mutation(raw[:8] + struct.pack("<H", len(body)) + body.encode("latin-1") + raw[start:], f"npy: {note}")

    if op == "magic":
        i = int(rng.integers(6))
        return Mutation(raw[:i] + bytes([raw[i] ^ 0x20]) + raw[i + 1:], f"npy: magic byte {i} changed")
    if op == "version":
        v = pick(rng, [(0, 0), (2, 0), (3, 0), (9, 9), (1, 7)])
        return Mutation(raw[:6] + bytes(v) + raw[8:], f"npy: version {v}")
    if op == "header_len":
        n = int(pick(rng, [0, 1, 0xFFFF, len(header) - 16, len(header) + 64]))
        return Mutation(raw[:8] + struct.pack("<H", n & 0xFFFF) + raw[10:], f"npy: header length {n}")
    if op == "descr":
        d = pick(rng, ["<u2", "<f8", "|O", "|b1", "<i8", ">u4", "|S32", "|V32", "<c16", "u1", "|i1", "<M8[s]"])
        return rebuild(header.replace("'|u1'", repr(d)), f"descr {d}")
    if op == "shape":
        s = pick(rng, [(0,), (), (shape[0] + 1, *shape[1:]), tuple(reversed(shape)), (2 ** 40, *shape[1:]),
                       (-1, *shape[1:]), (int(np.prod(shape)),), (*shape, 1), (shape[0] - 1, *shape[1:])])
        text = header.replace(repr(tuple(shape)), repr(tuple(s)) if len(s) != 1 else f"({s[0]},)")
        return rebuild(text, f"shape {s}")
    if op == "fortran":
        return rebuild(header.replace("False", "True"), "fortran_order True")
    if op == "syntax":
        text = pick(rng, ["[1, 2]", "{'descr': '|u1'}", "{}", "__import__('os')", header.replace("{", "(", 1),
                          header.replace("'descr'", "'dtype'"), "{'descr': '|u1', 'fortran_order': False, "
                          f"'shape': {tuple(shape)!r}, 'extra': 1, }}"])
        return rebuild(text, f"header text {short(text, 30)}")
    m = mutate_bytes(rng, raw, region=(10, start))
    return Mutation(m.value, f"npy header: {m.desc}")


# ---------------------------------------------------------------- file kinds

FILE_KINDS = {"missing": 2, "directory": 2, "fifo": 0.3, "symlink_loop": 1, "dangling_symlink": 1,
              "unreadable": 0 if IS_ROOT else 1, "empty": 1.5, "dev_zero": 0.5, "dev_null": 0.5,
              "below_file": 1, "sparse_huge": 0.5}


def make_kind(rng: np.random.Generator, path: Path, kind: str | None = None, huge: int = 1 << 26) -> tuple[Path, str]:
    """Replace the file at `path` by something else; returns the path to hand to the reader (it differs
    from `path` for 'below_file') and a description."""
    kind = kind or weighted(rng, FILE_KINDS)
    if path.is_dir() and not path.is_symlink():
        import shutil
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if kind == "missing":
        return path, "file: missing"
    if kind == "directory":
        path.mkdir()
        if rng.random() < 0.5:
            (path / "x").write_bytes(b"x")
        return path, "file: a directory"
    if kind == "fifo":
        os.mkfifo(path)
        return path, "file: a FIFO with no writer"
    if kind == "symlink_loop":
        path.symlink_to(path.name)
        return path, "file: a symlink to itself"
    if kind == "dangling_symlink":
        path.symlink_to(path.name + ".nowhere")
        return path, "file: a dangling symlink"
    if kind == "unreadable":
        path.write_bytes(b"{}")
        path.chmod(0)
        return path, "file: no read permission"
    if kind == "empty":
        path.write_bytes(b"")
        return path, "file: empty"
    if kind in ("dev_zero", "dev_null"):
        path.symlink_to(f"/dev/{kind[4:]}")
        return path, f"file: a symlink to /dev/{kind[4:]}"
    if kind == "below_file":
        path.write_bytes(b"x")
        return path / "x", "file: a path below a regular file"
    with open(path, "wb") as fh:  # sparse_huge
        fh.truncate(huge)
    return path, f"file: a sparse file of {huge:,} bytes"


# ---------------------------------------------------------------- TOML

def toml_dumps(doc: dict) -> str:
    """TOML text of a document: its top-level values, then one [table] per dict value (nested dicts
    inline). A value TOML cannot hold (a lone surrogate, an integer over 64 bits) is written as it
    is, for the reader to refuse."""
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for key, table in doc.items():
        if isinstance(table, dict):
            lines += [f"[{toml_key(key)}]", *(f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """A value in TOML syntax (strings with JSON's escapes, which are TOML's; nan and inf bare)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)
