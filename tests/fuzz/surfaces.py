"""The fuzzed surfaces: valid seeds (made once), and per surface a generator of mutated cases with
their oracle.

A Case is built in a worker process from a Generator seeded by (CUZK_FUZZ_SEED, surface, index) alone,
so any case replays by itself. Its `call` runs one public entry point; then the oracle judges:
  - a CuzkError: the input was refused as it must be (`refuse` may still object, e.g. to a valid input
    refused, or to files left behind); its message must be short (MESSAGE_LIMIT characters, with the
    scratch path counted as 5);
  - a result: `accept` checks that it is still right: a decoded point / proof / key re-encodes to the
    exact input bytes (strict encodings: nothing else may be accepted) and obeys the identity and
    subgroup rules; a C1 output or sector either reads as the original from a meaning-preserving input
    or fails vanilla verification; a changed proof does not verify;
  - anything else (another exception type, a hang, a signal, a changed input file) is a failure.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cuzk.errors import CuzkError

from .mutators import (FILE_KINDS, IS_ROOT, Mutation, NotStrictJson, make_kind, mutate_bytes, mutate_json,
                       mutate_json_text, mutate_npy, npy_data_offset, path_text, pick, random_walk, rbytes,
                       replace_at, same_meaning, set_u32, short, strict_equal, strict_loads, weighted)

PROOF_NAME = "StackedDrg2KiBV1_1"
STEM = "fuzz-tiny"
MESSAGE_LIMIT = 300
Problem = tuple[str, str]  # (kind, detail)


# ---------------------------------------------------------------- seeds

def tiny_circuit(fuzz_seed: int):
    """The small synthetic Groth16 circuit (6 constraints, 1 public input), the same for a seed."""
    from cuzk.groth16.synthetic import synthetic_circuit
    return synthetic_circuit(6, 1, np.random.default_rng([fuzz_seed, 1]))


class CacheEnv:
    """CUZK_CACHE_DIR set to `cache`, FIL_PROOFS_PARAMETER_CACHE unset and no official parameters, for
    the duration (restored on exit)."""

    def __init__(self, cache: Path, official: Path) -> None:
        self.cache, self.official = cache, official

    def __enter__(self) -> CacheEnv:
        from cuzk.porep import params_cache
        self.saved = {k: os.environ.get(k) for k in ("CUZK_CACHE_DIR", "FIL_PROOFS_PARAMETER_CACHE")}
        self.saved_official = params_cache.DEFAULT_OFFICIAL_DIR
        os.environ["CUZK_CACHE_DIR"] = str(self.cache)
        os.environ.pop("FIL_PROOFS_PARAMETER_CACHE", None)
        params_cache.DEFAULT_OFFICIAL_DIR = str(self.official)
        return self

    def __exit__(self, *exc) -> None:
        from cuzk.porep import params_cache
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        params_cache.DEFAULT_OFFICIAL_DIR = self.saved_official


def forge(c1, rng: np.random.Generator):
    """A verifying key with one ic point per public input of `c1`'s partitions and proofs that verify
    under it (made from known discrete logs: r t = a b + g (s_0 + sum x_j s_j) + d c), so that
    `cuzk verify` has a valid baseline without the 2KiB circuit's setup."""
    from cuzk import api
    from cuzk.ec.curves import G1, G2
    from cuzk.ff.fields import Fr
    from cuzk.groth16 import Proof, VerifyingKey
    r_mod = Fr.modulus
    inputs = api.public_inputs(c1)
    s = [int(x) for x in rng.integers(1, 2 ** 62, len(inputs[0]) + 1)]
    a, b, g, d = (int(x) for x in rng.integers(1, 2 ** 62, 4))
    g1 = G1.generator_mul([a, b, d, *s])
    g2 = G2.generator_mul([b, g, d])
    vk = VerifyingKey(g1[0], g1[1], g2[0], g2[1], g1[2], g2[2], g1[3:])
    proofs = []
    for x in inputs:
        r, t = (int(v) for v in rng.integers(1, 2 ** 62, 2))
        ic = (s[0] + sum(xi * si for xi, si in zip(x, s[1:]))) % r_mod
        c = (r * t - a * b - g * ic) * pow(d, -1, r_mod) % r_mod
        pa, pc = G1.generator_mul([r, c])
        proofs.append(Proof(pa, G2.generator_mul([t])[0], pc))
    return vk, proofs


def build_seeds(root: Path, fuzz_seed: int) -> None:
    """Write every valid seed under `root` (deterministic in the seed): a small circuit's .params,
    .vk and proof, point encodings, a sealed 2KiB sector with its parents cache, its C1 output, a
    forged 2KiB vk and proof for `cuzk verify`, a parameter-cache entry of the small circuit, and the
    seeds of state_surfaces (a journal, the small circuit's PCE file, cuzk.example.toml)."""
    import cuzk
    from cuzk import api
    from cuzk.backend import get_backend
    from cuzk.ec import encoding
    from cuzk.ec.curves import G1, G2
    from cuzk.ff.fields import Fr
    from cuzk.groth16 import as_circuit, prove, setup, verify, write_params, write_vk
    from cuzk.porep import params_cache
    from cuzk.porep.trees import fr_to_le

    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([fuzz_seed, 0])
    cs = tiny_circuit(fuzz_seed)
    circuit = as_circuit(cs)
    params = setup(cs, rng)
    w = cs.witness()
    proof = prove(params, circuit, w, get_backend("cpu"), rng=rng)
    inputs = Fr.to_ints(w[1:circuit.num_inputs])
    assert verify(params.vk, inputs, proof)
    write_params(root / "tiny.params", params)
    write_vk(root / "tiny.vk", params.vk)
    (root / "tiny.proof").write_bytes(proof.to_bytes())

    points = {}
    for curve in (G1, G2):
        inside = np.concatenate([curve.random(8, rng), curve.identity(1)])
        outside = curve.random_on_curve(6, rng)
        outside = outside[~curve.in_subgroup(outside)]
        for compressed in (True, False):
            size = encoding.point_size(curve, compressed)
            enc = encoding.encode(curve, inside, compressed)
            out = encoding.encode(curve, outside, compressed)
            points[f"{curve.name} {int(compressed)}"] = {
                "inside": [enc[i:i + size].hex() for i in range(0, len(enc), size)],
                "outside": [out[i:i + size].hex() for i in range(0, len(out), size)]}

    rand32 = lambda: bytes(rng.integers(0, 256, 32, dtype=np.uint8))  # noqa: E731
    ids = dict(prover_id=rand32(), sector_id=int(rng.integers(1, 1 << 62)), ticket=rand32())
    (root / "parents").mkdir(exist_ok=True)
    sector = cuzk.seal(PROOF_NAME, root / "sector", data=fr_to_le(Fr.random(64, rng)).tobytes(),
                       parents_dir=root / "parents", progress=False, **ids)
    seed32 = rand32()
    c1, _ = api.as_c1(sector, seed32)
    c1.write(root / "c1.json")
    vk2k, proofs2k = forge(c1, rng)
    write_vk(root / "forged.vk", vk2k)
    (root / "forged.proof").write_bytes(b"".join(p.to_bytes() for p in proofs2k))
    assert api.verify(c1, (root / "forged.proof").read_bytes(), vk=vk2k)

    with CacheEnv(root / "cache", root / "no-official"):
        params_cache.load_or_generate(STEM, circuit, progress=False, rng=rng)
    from .state_surfaces import build_state_seeds
    build_state_seeds(root, fuzz_seed)
    (root / "seeds.json").write_text(json.dumps({
        "fuzz_seed": fuzz_seed, "inputs": [int(x) for x in inputs], "points": points,
        "prover_id": ids["prover_id"].hex(), "sector_id": ids["sector_id"], "ticket": ids["ticket"].hex(),
        "seed": seed32.hex()}, indent=1))


def file_digest(path: Path) -> str:
    """SHA256 of a regular file (size and mtime for one over 16 MiB); the kind for anything else
    (never opened: a FIFO would block)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    if stat.S_ISLNK(st.st_mode):
        return f"link -> {os.readlink(path)}"
    if not stat.S_ISREG(st.st_mode):
        return f"mode {stat.S_IFMT(st.st_mode):o}"
    if st.st_size > 1 << 24:
        return f"size {st.st_size} mtime {st.st_mtime_ns}"
    if not st.st_mode & 0o444 and not IS_ROOT:
        return f"unreadable size {st.st_size} mtime {st.st_mtime_ns}"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(root: Path) -> dict[str, str]:
    """Every entry below `root` (not following links) with its file_digest (or 'dir')."""
    if not os.path.lexists(root):
        return {}
    if not root.is_dir() or root.is_symlink():
        return {".": file_digest(root)}
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = "dir" if p.is_dir() and not p.is_symlink() else file_digest(p)
    return out


def diff(before: dict[str, str], after: dict[str, str]) -> str:
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return ", ".join(f"{k} ({'new' if k not in before else 'gone' if k not in after else 'changed'})"
                     for k in changed[:6]) + (" ..." if len(changed) > 6 else "")


class Seeds:
    """The seeds under a directory, loaded on first use (in each worker)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.info = json.loads((root / "seeds.json").read_text())
        self.fuzz_seed = self.info["fuzz_seed"]
        self._cache: dict[str, Any] = {}

    def get(self, name: str, make: Callable[[], Any]) -> Any:
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    def bytes(self, name: str) -> bytes:
        return self.get(f"bytes:{name}", lambda: (self.root / name).read_bytes())

    @property
    def ids(self) -> tuple[bytes, int]:
        return bytes.fromhex(self.info["prover_id"]), self.info["sector_id"]

    @property
    def seed32(self) -> bytes:
        return bytes.fromhex(self.info["seed"])

    @property
    def vk(self):
        from cuzk.groth16 import read_vk
        return self.get("vk", lambda: read_vk(self.root / "tiny.vk"))

    @property
    def c1_obj(self) -> dict:
        return self.get("c1_obj", lambda: json.loads(self.bytes("c1.json")))

    @property
    def c1_dump(self) -> str:
        from cuzk.porep.c1 import C1Output
        return self.get("c1_dump", lambda: C1Output.loads(self.bytes("c1.json")).dumps())

    def points(self, curve: str, compressed: bool, which: str) -> list[bytes]:
        return [bytes.fromhex(h) for h in self.info["points"][f"{curve} {int(compressed)}"][which]]


# ---------------------------------------------------------------- cases

@dataclass
class Case:
    """One mutated input: `call` runs the entry point; `accept` / `refuse` return the problems with its
    result / CuzkError; `watched` paths must be unchanged by the call."""

    desc: str
    call: Callable[[], Any]
    accept: Callable[[Any], list[Problem]]
    refuse: Callable[[CuzkError], list[Problem]] = lambda e: []
    watched: list[Path] = field(default_factory=list)
    label: Callable[[Any], str] | None = None  # the outcome name of a result (default "accepted")


_PATH = re.compile(r"(?<![\w.])/[^\s'\"():,]+")


def message_text(message: str) -> str:
    """A message as its length is judged: every absolute path counted as '<path>' (naming the file is
    wanted; what must stay short is the prose and any quoted value)."""
    return _PATH.sub("<path>", message)


def must_refuse(what: str) -> Callable[[Any], list[Problem]]:
    return lambda result: [("accepted", f"{what}; returned {short(result, 60)}")]


def other_exception(e: BaseException) -> Problem:
    return (type(e).__name__, short(str(e), 160).strip("'\""))


def checked_call(fn: Callable[[], Any], what: str) -> tuple[Any, list[Problem]]:
    """Run an oracle step that calls cuzk: (result, []) / (None, []) for a CuzkError / a problem."""
    try:
        return fn(), []
    except CuzkError:
        return None, []
    except Exception as e:  # noqa: BLE001 - any other exception type is the finding
        kind, detail = other_exception(e)
        return None, [(kind, f"in {what}: {detail}")]


class Surface:
    name = ""
    count = 0  # cases in the default run
    timeout = 20.0  # seconds per case before it counts as a hang
    index = 0  # the case being generated (set by the runner; cases draw from their rng, not from this)

    def __init__(self, seeds: Seeds) -> None:
        self.seeds = seeds

    def warm(self) -> None:
        """Compile and load what the cases use, once per worker, outside the per-case time limit."""

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        raise NotImplementedError


PY_WEIRD: list[tuple[Any, str]] = [
    (None, "None"), (0, "0"), (-1, "-1"), (7.5, "7.5"), (True, "True"), ("", "''"), ("x", "'x'"),
    ("00" * 32, "a hex str"), ([0] * 32, "a list of 32 ints"), ({}, "{}"), ((1, 2), "a tuple"),
    (float("nan"), "nan"), (2 ** 64, "2**64"), (object(), "object()"), (np.zeros(32, np.uint8), "a numpy array"),
    (10 ** 5000, "an int of 5001 digits"), ({1, 2}, "a set"), (np.int64(5), "np.int64(5)"), (b"", "b''"),
]


def wrong_type(rng: np.random.Generator) -> tuple[Any, str]:
    return pick(rng, PY_WEIRD)


# ---------------------------------------------------------------- points

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB


def _coord_set(enc: bytes, off: int, value: int, keep_flags: bool) -> bytes:
    raw = bytearray(enc)
    flags = raw[off] & 0xE0 if keep_flags else 0
    raw[off:off + 48] = value.to_bytes(48, "big")
    raw[off] = (raw[off] & 0x1F) | flags
    return bytes(raw)


def _coord_get(enc: bytes, off: int) -> int:
    return int.from_bytes(bytes([enc[off] & 0x1F]) + enc[off + 1:off + 48], "big")


def point_mutation(rng: np.random.Generator, enc: bytes, g2: bool, compressed: bool,
                   outside: list[bytes], inside: list[bytes]) -> Mutation:
    """One mutation of a single encoded point; `lenient` marks a result that is a valid encoding again."""
    size = len(enc)
    coords = list(range(0, size, 48))
    op = weighted(rng, {"flag": 3, "noncanonical": 2, "random_x": 1, "outside": 2, "zero": 1, "identity_junk": 1.5,
                        "ff": 0.5, "negate": 1, "other_valid": 0.5})
    if op == "flag":
        bit = pick(rng, [0x80, 0x40, 0x20])
        return Mutation(bytes([enc[0] ^ bit]) + enc[1:], f"flag {bit:#04x} toggled")
    if op == "noncanonical":
        off = pick(rng, coords)
        v = _coord_get(enc, off)
        new = v + P if v + P < 1 << 381 else P + int(rng.integers(0, 1 << 20))
        if new >= 1 << 381:
            new = P
        what = "v + p" if new == v + P else "p + k"
        return Mutation(_coord_set(enc, off, new, off == 0), f"coordinate at byte {off} := {what}")
    if op == "random_x":
        v = int.from_bytes(rbytes(rng, 48), "big") % P
        off = pick(rng, coords)
        return Mutation(_coord_set(enc, off, v, off == 0), f"coordinate at byte {off} := random")
    if op == "outside":
        return Mutation(pick(rng, outside), "replaced by an on-curve point outside the subgroup")
    if op == "zero":
        return Mutation(bytes(size), "all zero bytes")
    if op == "identity_junk":
        raw = bytearray(size)
        raw[0] = 0x40 | (0x80 if compressed else 0)
        i = int(rng.integers(size))
        raw[i] |= pick(rng, [0x01, 0x20, 0x10, 0x80])
        return Mutation(bytes(raw), f"identity flag with byte {i} := {raw[i]:#04x}")
    if op == "ff":
        return Mutation(b"\xff" * size, "all 0xff bytes")
    if op == "negate":  # a valid encoding of -P: accepted, must round-trip
        if compressed:
            return Mutation(bytes([enc[0] ^ 0x20]) + enc[1:], "sign bit toggled (-P)", lenient=True)
        half = size // 2
        out = enc[:half]
        for off in range(half, size, 48):
            v = _coord_get(enc, off)
            out += ((P - v) % P).to_bytes(48, "big")
        return Mutation(out, "y negated (-P)", lenient=True)
    return Mutation(pick(rng, inside), "replaced by another valid point", lenient=True)


def ark_canonical(chunk: bytes, g2: bool) -> bool:
    """arkworks decodes the compressed encoding (checked) and re-encodes it to the same bytes."""
    import py_arkworks_bls12381 as ark
    cls = ark.G2Point if g2 else ark.G1Point
    try:
        return bytes(cls.from_compressed_bytes(chunk).to_compressed_bytes()) == chunk
    except Exception:  # noqa: BLE001
        return False


def point_problems(curve, result: Any, data: bytes, compressed: bool, check: bool, what: str) -> list[Problem]:
    """A decoded (n, 2, *coord) array: the exact input bytes again, on the curve, in the subgroup when
    checked, and (compressed) accepted by arkworks too."""
    from cuzk.ec import encoding
    size = encoding.point_size(curve, compressed)
    n = len(data) // size
    if not isinstance(result, np.ndarray) or result.shape != (n, *curve.affine_shape):
        return [("accepted", f"{what}: decoded to {type(result).__name__} "
                             f"{getattr(result, 'shape', '')}, expected {n} points")]
    if n == 0:
        return []
    again = encoding.encode(curve, result, compressed)
    if again != data:
        i = next(j for j in range(n) if again[j * size:(j + 1) * size] != data[j * size:(j + 1) * size])
        return [("accepted", f"{what}: a non-canonical encoding of point {i} accepted (re-encodes as "
                             f"{again[i * size:i * size + 6].hex()}.., input {data[i * size:i * size + 6].hex()}..)")]
    if not curve.is_on_curve(result).all():
        return [("accepted", f"{what}: a point off the curve accepted")]
    if check and not curve.in_subgroup(result).all():
        return [("accepted", f"{what}: a point outside the subgroup accepted")]
    if compressed and check:
        for i in range(n):
            chunk = data[i * size:(i + 1) * size]
            if chunk[0] & 0x40 == 0 and not ark_canonical(chunk, curve.name == "G2"):
                return [("accepted", f"{what}: point {i} accepted although arkworks refuses it")]
    return []


class Points(Surface):
    """cuzk.ec.encoding.decode: G1 / G2, compressed and uncompressed, one to three points."""

    name, count, timeout = "points", 700, 10.0

    def warm(self) -> None:
        from cuzk.ec import encoding
        from cuzk.ec.curves import G1, G2
        for curve in (G1, G2):
            for comp in (True, False):
                encoding.decode(curve, b"".join(self.seeds.points(curve.name, comp, "inside")), comp)

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.ec import encoding
        from cuzk.ec.curves import G1, G2
        curve = pick(rng, [G1, G2])
        compressed = bool(rng.random() < 0.6)
        check = bool(rng.random() < 0.85)
        g2 = curve is G2
        inside = self.seeds.points(curve.name, compressed, "inside")
        outside = self.seeds.points(curve.name, compressed, "outside")
        n = int(pick(rng, [1, 1, 1, 2, 3]))
        chunks = [pick(rng, inside) for _ in range(n)]
        orig = b"".join(chunks)
        head = f"{curve.name} {'compressed' if compressed else 'uncompressed'} x{n}, check_subgroup={check}"
        op = weighted(rng, {"point": 6, "bytes": 3, "type": 1})
        if op == "type":
            value, name = pick(rng, PY_WEIRD + [(bytearray(orig), "a bytearray"), (memoryview(orig), "a memoryview"),
                                                (orig.hex(), "the hex str"), (list(orig), "a list of ints")])

            def accept_type(result: Any) -> list[Problem]:
                if isinstance(value, (bytes, bytearray, memoryview)):  # bytes-like: as its bytes would decode
                    return point_problems(curve, result, bytes(value), compressed, check, f"decode of {name}")
                return [("accepted", f"{name} accepted as encoded points")]
            return Case(f"{head}: data is {name}", lambda: encoding.decode(curve, value, compressed, check),
                        accept_type)
        for _ in range(20):
            if op == "point":
                k = int(rng.integers(n))
                m = point_mutation(rng, chunks[k], g2, compressed, outside, inside)
                data = b"".join(chunks[:k] + [m.value] + chunks[k + 1:])
                desc = f"point {k}: {m.desc}"
            else:
                m = mutate_bytes(rng, orig)
                data, desc = m.value, m.desc
            if data != orig:
                break

        def accept(result: Any) -> list[Problem]:
            return point_problems(curve, result, data, compressed, check, "decode")

        def refuse(e: CuzkError) -> list[Problem]:
            size = encoding.point_size(curve, compressed)
            if not (compressed and check and data and len(data) % size == 0):
                return []
            if all(ark_canonical(data[i:i + size], g2) for i in range(0, len(data), size)):
                return [("refused valid", f"a valid encoding (arkworks accepts it) refused: {short(str(e), 100)}")]
            return []
        return Case(f"{head}: {desc}", lambda: encoding.decode(curve, data, compressed, check), accept, refuse)


# ---------------------------------------------------------------- proofs

class Proofs(Surface):
    """cuzk.groth16.Proof.from_bytes of a valid proof of the small circuit, mutated."""

    name, count, timeout = "proof", 350, 10.0

    def warm(self) -> None:
        from cuzk.groth16 import Proof, verify
        verify(self.seeds.vk, self.seeds.info["inputs"], Proof.from_bytes(self.seeds.bytes("tiny.proof")))

    def malleated(self) -> bytes:
        """(-A, -B, C): the same pairing product, so a valid proof too (Groth16 is malleable)."""
        def make() -> bytes:
            from cuzk.ec.curves import G1, G2
            from cuzk.groth16 import Proof
            p = Proof.from_bytes(self.seeds.bytes("tiny.proof"))
            return Proof(G1.neg(p.a), G2.neg(p.b), p.c).to_bytes()
        return self.seeds.get("malleated", make)

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.ec.curves import G1, G2
        from cuzk.groth16 import Proof, verify
        orig = self.seeds.bytes("tiny.proof")
        op = weighted(rng, {"point": 5, "bytes": 4, "length": 1, "type": 1})
        if op == "type":
            value, name = pick(rng, PY_WEIRD + [(bytearray(orig), "a bytearray"), (memoryview(orig), "a memoryview"),
                                                (orig.hex(), "the hex str"), (list(orig), "a list of ints")])

            def accept_type(result: Any) -> list[Problem]:
                if isinstance(value, (bytearray, memoryview)) and result == Proof.from_bytes(orig):
                    return []
                return [("accepted", f"{name} accepted as a proof")]
            return Case(f"proof is {name}", lambda: Proof.from_bytes(value), accept_type)
        for _ in range(20):
            if op == "point":
                which, off, size, curve = pick(rng, [("A", 0, 48, G1), ("B", 48, 96, G2), ("C", 144, 48, G1)])
                pts = self.seeds.points(curve.name, True, "inside")
                m = point_mutation(rng, orig[off:off + size], curve is G2, True,
                                   self.seeds.points(curve.name, True, "outside"), pts)
                if rng.random() < 0.15:
                    m = Mutation(b"\xc0" + bytes(size - 1), "the identity")
                data, desc = orig[:off] + m.value + orig[off + size:], f"{which}: {m.desc}"
            elif op == "length":
                data = pick(rng, [orig + orig, orig[:-1], orig + b"\0", b"", orig[:144], orig * 126 + orig[:1]])
                desc = f"length {len(data)}"
            else:
                m = mutate_bytes(rng, orig)
                data, desc = m.value, m.desc
            if data != orig:
                break
        pvk = self.seeds.vk

        def accept(result: Any) -> list[Problem]:
            if not isinstance(result, Proof):
                return [("accepted", f"returned {type(result).__name__}")]
            for name, pt, curve, off, size in (("A", result.a, G1, 0, 48), ("B", result.b, G2, 48, 96),
                                               ("C", result.c, G1, 144, 48)):
                if not pt.any():
                    return [("accepted", f"{name} is the identity")]
                problems = point_problems(curve, pt[None], data[off:off + size], True, True, f"proof {name}")
                if problems:
                    return problems
            if len(data) != 192:
                return [("accepted", f"a proof of {len(data)} bytes accepted")]
            if data == self.malleated():
                return []
            ok, problems = checked_call(lambda: verify(pvk, self.seeds.info["inputs"], result), "verify")
            if ok:
                return [("accepted", "a changed proof verifies")]
            return problems
        return Case(desc, lambda: Proof.from_bytes(data), accept)


# ---------------------------------------------------------------- parameter and vk files

def layout(data: bytes, with_vectors: bool) -> tuple[list[tuple[int, str, Any]], list[tuple[int, str]]]:
    """(points, lengths) of a valid .params / .vk: (offset, name, curve) of each point and (offset,
    name) of each u32 length."""
    from cuzk.ec.curves import G1, G2
    g1, g2 = 96, 192
    points, lengths = [], []
    off = 0
    for name, curve, size in (("alpha_g1", G1, g1), ("beta_g1", G1, g1), ("beta_g2", G2, g2), ("gamma_g2", G2, g2),
                              ("delta_g1", G1, g1), ("delta_g2", G2, g2)):
        points.append((off, name, curve))
        off += size
    sections = [("ic", G1, g1)] + ([("h", G1, g1), ("l", G1, g1), ("a", G1, g1), ("b_g1", G1, g1),
                                     ("b_g2", G2, g2)] if with_vectors else [])
    for name, curve, size in sections:
        lengths.append((off, name))
        count = struct.unpack(">I", data[off:off + 4])[0]
        off += 4
        for i in range(count):
            points.append((off, f"{name}[{i}]", curve))
            off += size
    assert off == len(data)
    return points, lengths


def key_mutation(rng: np.random.Generator, orig: bytes, seeds: Seeds, with_vectors: bool) -> Mutation:
    """A mutation of a .params / .vk image: a point, a length field, a section boundary or bytes."""
    points, lengths = seeds.get(f"layout:{hashlib.sha256(orig).hexdigest()}", lambda: layout(orig, with_vectors))
    op = weighted(rng, {"point": 4, "length": 2, "bytes": 4, "boundary": 1})
    if op == "point":
        off, name, curve = pick(rng, points)
        size = 96 if curve.name == "G1" else 192
        m = point_mutation(rng, orig[off:off + size], curve.name == "G2", False,
                           seeds.points(curve.name, False, "outside"), seeds.points(curve.name, False, "inside"))
        if rng.random() < 0.2:
            m = Mutation(b"\x40" + bytes(size - 1), "the identity")
        return Mutation(orig[:off] + m.value + orig[off + size:], f"{name} (byte {off}): {m.desc}", m.lenient)
    if op == "length":
        off, name = pick(rng, lengths)
        count = struct.unpack(">I", orig[off:off + 4])[0]
        v = int(pick(rng, [0xFFFFFFFF, 0x7FFFFFFF, 1 << 24, count + 1, max(count - 1, 0), 0, count * 2]))
        if v == count:
            v += 1
        return Mutation(set_u32(orig, off, v), f"length of {name} (byte {off}) := {v} (was {count})")
    if op == "boundary":
        offs = [o for o, _, _ in points] + [o for o, _ in lengths] + [len(orig)]
        cut = int(pick(rng, offs))
        if rng.random() < 0.5 or cut == len(orig):
            return Mutation(orig + bytes(int(pick(rng, [1, 4, 96]))), "trailing bytes")
        return Mutation(orig[:cut], f"truncated at a field boundary ({cut} of {len(orig)} bytes)")
    m = mutate_bytes(rng, orig)
    return m


def params_image(p) -> bytes:
    """bellperson's .params bytes of decoded Parameters (the oracle's re-encoding)."""
    from cuzk.ec.curves import G1, G2
    from cuzk.groth16.keys import PARAMS_VECTORS
    from cuzk.groth16.params import encode_points, vk_to_bytes
    out = [vk_to_bytes(p.vk)]
    for name in PARAMS_VECTORS:
        pts = getattr(p, name)
        out += [struct.pack(">I", len(pts)), encode_points(G2 if name == "b_g2" else G1, pts)]
    return b"".join(out)


def key_problems(vk, vectors: dict[str, np.ndarray], checked: bool, params: bool) -> list[Problem]:
    """Identity and subgroup rules for an accepted key: no identity in ic and the query vectors (nor in
    delta for .params, bellperson's rules), every point in its subgroup when checked."""
    from cuzk.ec.curves import G1, G2
    arrays = {"ic": vk.ic, **vectors}
    for name, arr in arrays.items():
        if len(arr) and not arr.reshape(len(arr), -1).any(axis=1).all():
            return [("accepted", f"an identity point in {name}")]
    if params:
        for name in ("delta_g1", "delta_g2"):
            if not getattr(vk, name).any():
                return [("accepted", f"{name} is the identity in a .params file")]
    if checked:
        for name in ("alpha_g1", "beta_g1", "delta_g1", "beta_g2", "gamma_g2", "delta_g2"):
            curve = G2 if name.endswith("g2") else G1
            if not curve.in_subgroup(getattr(vk, name)[None]).all():
                return [("accepted", f"{name} outside the subgroup accepted")]
        for name, arr in arrays.items():
            curve = G2 if name == "b_g2" else G1
            if len(arr) and not curve.in_subgroup(arr).all():
                return [("accepted", f"a point of {name} outside the subgroup accepted")]
    return []


WHILE_OPEN = {"truncate": 3, "zero_range": 1, "unlink": 1, "replace": 1, "append": 0.5}


def plan_open_change(rng: np.random.Generator, size: int, data_start: int = 0) -> tuple[str, int, str]:
    """(op, position, description) of a change to a file that a reader holds open: truncate, zero a
    range, unlink, rename another file over it, append."""
    op = weighted(rng, WHILE_OPEN)
    pos = int(rng.integers(data_start, size)) if rng.random() < 0.8 or op != "truncate" else 0
    desc = {"truncate": f"truncated to {pos} bytes", "zero_range": f"bytes {pos}..{pos + 96} zeroed in place",
            "unlink": "unlinked", "replace": "replaced (by a rename) with a half-length file",
            "append": "96 bytes appended"}[op]
    return op, pos, desc


def change_open_file(path: Path, plan: tuple[str, int, str], orig: bytes) -> None:
    op, pos, _ = plan
    if op == "truncate":
        os.truncate(path, pos)
    elif op == "zero_range":
        with open(path, "r+b") as fh:
            fh.seek(pos)
            fh.write(bytes(min(96, len(orig) - pos)))
    elif op == "unlink":
        path.unlink()
    elif op == "replace":
        tmp = path.with_name(path.name + ".new")
        tmp.write_bytes(orig[: len(orig) // 2])
        os.replace(tmp, path)
    else:
        with open(path, "ab") as fh:
            fh.write(bytes(96))


class ParamsFiles(Surface):
    """cuzk.groth16.read_params(path).load() of the small circuit's .params, mutated (or changed while
    open: a truncated mapped file is a SIGBUS)."""

    name, count, timeout = "params", 300, 10.0

    def warm(self) -> None:
        from cuzk.groth16 import read_params
        read_params(self.seeds.root / "tiny.params").load()

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.groth16 import read_params
        orig = self.seeds.bytes("tiny.params")
        path = scratch / "tiny.params"
        checked = bool(rng.random() < 0.85)
        head = f"checked={checked}"
        op = weighted(rng, {"image": 7, "kind": 1.5, "while_open": 1.5})
        lenient = False
        if op == "kind":
            path.write_bytes(orig)
            path, desc = make_kind(rng, path)
            data = None
        elif op == "while_open":
            path.write_bytes(orig)
            plan = plan_open_change(rng, len(orig), 96 * 3 + 192 * 3)

            def call_open() -> Any:
                mp = read_params(path, checked)
                try:
                    change_open_file(path, plan, orig)
                    return mp.load()
                finally:
                    mp.close()

            def accept_open(result: Any) -> list[Problem]:
                image = params_image(result)
                now = path.read_bytes() if path.is_file() else None
                if image not in (orig, now):
                    return [("accepted", "parameters changed while open decoded to neither the old nor the new "
                                         "file content")]
                return key_problems(result.vk, {n: getattr(result, n) for n in ("h", "l", "a", "b_g1", "b_g2")},
                                    checked, True)
            return Case(f"{head}: after read_params, the file {plan[2]}; then load()", call_open, accept_open)
        else:
            for _ in range(20):
                m = key_mutation(rng, orig, self.seeds, True)
                if m.value != orig:
                    break
            data, desc, lenient = m.value, m.desc, m.lenient
            path.write_bytes(data)

        def call() -> Any:
            mp = read_params(path, checked)
            try:
                return mp.load()
            finally:
                mp.close()

        def accept(result: Any) -> list[Problem]:
            if data is None:
                return [("accepted", f"parameters read from {desc[6:]}")]
            if params_image(result) != data:
                return [("accepted", "decoded parameters do not re-encode to the file's bytes")]
            return key_problems(result.vk, {n: getattr(result, n) for n in ("h", "l", "a", "b_g1", "b_g2")}, checked,
                                True)
        return Case(f"{head}: {desc}", call, accept, watched=[path])


class VkFiles(Surface):
    """cuzk.groth16.vk_from_bytes / read_vk of the small circuit's vk, mutated."""

    name, count, timeout = "vk", 250, 10.0

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.groth16 import read_vk, vk_from_bytes, vk_to_bytes
        orig = self.seeds.bytes("tiny.vk")
        checked = bool(rng.random() < 0.85)
        op = weighted(rng, {"bytes": 5, "file": 3, "kind": 1, "type": 1})
        if op == "type":
            value, name = pick(rng, PY_WEIRD + [(bytearray(orig), "a bytearray"), (memoryview(orig), "a memoryview"),
                                                (orig.hex(), "the hex str")])

            def accept_type(result: Any) -> list[Problem]:
                if isinstance(value, (bytearray, memoryview)) and result == self.seeds.vk:
                    return []
                return [("accepted", f"{name} accepted as a verifying key")]
            return Case(f"vk_from_bytes of {name}", lambda: vk_from_bytes(value, checked=checked), accept_type)
        path = scratch / "tiny.vk"
        if op == "kind":
            path.write_bytes(orig)
            path, desc = make_kind(rng, path)
            return Case(f"read_vk: {desc}", lambda: read_vk(path, checked), must_refuse("a verifying key read"),
                        watched=[path])
        for _ in range(20):
            m = key_mutation(rng, orig, self.seeds, False)
            if m.value != orig:
                break
        data = m.value

        def accept(result: Any) -> list[Problem]:
            if vk_to_bytes(result) != data:
                return [("accepted", "the decoded vk does not re-encode to the input bytes")]
            return key_problems(result, {}, checked, False)
        if op == "file":
            path.write_bytes(data)
            return Case(f"read_vk checked={checked}: {m.desc}", lambda: read_vk(path, checked), accept, watched=[path])
        return Case(f"vk_from_bytes checked={checked}: {m.desc}", lambda: vk_from_bytes(data, checked=checked), accept)


# ---------------------------------------------------------------- C1 output

PY_ONLY = [((1, 2), "a tuple"), (b"\x00" * 32, "bytes"), (float("nan"), "nan"), (float("inf"), "inf"),
           (np.int64(5), "np.int64(5)"), (10 ** 5000, "an int of 5001 digits"), ({1, 2}, "a set"),
           (object(), "object()"), (bytearray(32), "a bytearray")]


class C1(Surface):
    """cuzk.porep.c1.C1Output.loads / read / from_json of a real 2KiB C1 output, mutated."""

    name, count, timeout = "c1", 450, 15.0

    def warm(self) -> None:
        from cuzk.porep.c1 import C1Output
        C1Output.loads(self.seeds.bytes("c1.json")).verify(*self.seeds.ids)
        _ = self.seeds.c1_dump

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.porep.c1 import C1Output
        text = self.seeds.bytes("c1.json")
        obj = self.seeds.c1_obj
        op = weighted(rng, {"json": 5, "text": 4, "kind": 0.7, "python": 0.7})
        mode = weighted(rng, {"loads": 6, "str": 1, "read": 3})
        meaning: Any = None
        if op == "python":
            value, name = pick(rng, PY_ONLY)
            where = random_walk(rng, obj)
            mutated = replace_at(obj, where, lambda _: value)
            return Case(f"from_json: {path_text(where)} := {name}", lambda: C1Output.from_json(mutated),
                        c1_accept(self.seeds, None, False))
        if op == "kind":
            path = scratch / "c1.json"
            path.write_bytes(text)
            kinds = {k: v for k, v in FILE_KINDS.items() if k != "dev_zero"}
            path, desc = make_kind(rng, path, weighted(rng, kinds), huge=(1 << 30) + 1)
            return Case(f"read: {desc}", lambda: C1Output.read(path), must_refuse("a C1 output read"), watched=[path])
        for _ in range(20):
            if op == "json":
                m = mutate_json(rng, obj)
                try:
                    data = json.dumps(m.value, separators=(",", ":")).encode()
                except (ValueError, RecursionError):
                    continue
                meaning = m.value
            else:
                m = mutate_json_text(rng, text)
                data = m.value
                try:
                    meaning = strict_loads(data)
                except NotStrictJson:
                    meaning = None
            if data != text:
                break
        desc = m.desc
        accept = c1_accept(self.seeds, meaning, m.lenient)
        if mode == "read":
            path = scratch / "c1.json"
            path.write_bytes(data)
            return Case(f"read: {desc}", lambda: C1Output.read(path), accept, watched=[path])
        if mode == "str":
            try:
                s = data.decode("utf-8")
            except UnicodeDecodeError:
                s = data.decode("utf-8", "surrogateescape")
            return Case(f"loads(str): {desc}", lambda: C1Output.loads(s), accept)
        return Case(f"loads: {desc}", lambda: C1Output.loads(data), accept)


def c1_accept(seeds: Seeds, meaning: Any, lenient: bool) -> Callable[[Any], list[Problem]]:
    """The oracle of an accepted C1 output: the original only from an input of the same meaning (strict
    JSON; `lenient` for a change a reader may ignore), anything else fails vanilla verification."""
    def accept(c1: Any) -> list[Problem]:
        dump, problems = checked_call(c1.dumps, "C1Output.dumps")
        if problems:
            return problems
        if dump == seeds.c1_dump:
            if lenient or (meaning is not None and same_meaning(meaning, seeds.c1_obj)):
                return []
            if meaning is None:
                return [("accepted", "input that is not strict JSON read as the original")]
            return [("accepted", "a changed value read as the original")]
        ok, problems = checked_call(lambda: c1.verify(*seeds.ids) or True, "C1Output.verify")
        if ok:
            return [("accepted", "a changed C1 output passes vanilla verification")]
        return problems
    return accept


# ---------------------------------------------------------------- sector directories

SECTOR_FILES = ("meta.json", "data.bin", "sealed.bin", "labels.npy", "tree_d.npy", "tree_c.npy", "tree_r_last.npy")
NPY = ("labels.npy", "tree_d.npy", "tree_c.npy", "tree_r_last.npy")
SIZE_PRESERVING = {"flip": 4, "flip_many": 2, "set": 2, "zero_range": 1, "ff_range": 1, "swap": 0.5}
SIZE_CHANGING = {"insert": 1, "delete": 1, "truncate": 2, "extend": 1.5, "empty": 0.5}


def _lower_hex(value: Any) -> Any:
    """Hex strings in lower case (meta.json's hex is read case-insensitively, as bytes.fromhex does)."""
    if isinstance(value, dict):
        return {k: _lower_hex(v) for k, v in value.items()}
    if isinstance(value, str) and value and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    return value


def npy_same(raw: bytes, orig: np.ndarray) -> bool:
    """Whether `raw` loads (without pickles) as exactly `orig` (dtype, shape, order, values)."""
    import io
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except Exception:  # noqa: BLE001
        return False
    return arr.dtype == orig.dtype and arr.shape == orig.shape and np.array_equal(arr, orig) \
        and arr.flags.c_contiguous == orig.flags.c_contiguous


class Sectors(Surface):
    """cuzk.api.as_c1(sector directory, seed) (Sector.open and its vanilla proofs, what prove runs
    first) on a mutated copy of a real 2KiB sector; a changed result must fail vanilla verification."""

    name, count, timeout = "sector", 300, 15.0

    def warm(self) -> None:
        from cuzk import api
        c1, ids = api.as_c1(self.seeds.root / "sector", self.seeds.seed32)
        assert c1.dumps() == self.seeds.c1_dump and ids == self.seeds.ids

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk import api
        src = self.seeds.root / "sector"
        path = scratch / "sector"
        shutil.copytree(src, path)
        op = weighted(rng, {"meta_json": 3, "meta_text": 2, "npy_header": 2, "npy_data": 1.5, "npy_size": 1,
                            "bin": 2, "kind": 2, "dir": 0.7, "while_open": 0.8, "extra_file": 0.3})
        harmless = False  # a change the sector may accept when the C1 output stays the original
        target = "meta.json"
        seed = self.seeds.seed32
        if op in ("meta_json", "meta_text"):
            raw = (src / "meta.json").read_bytes()
            meta = json.loads(raw)
            for _ in range(20):
                if op == "meta_json":
                    m = mutate_json(rng, meta)
                    try:
                        new = json.dumps(m.value, indent=1).encode()
                    except (ValueError, RecursionError):
                        continue
                    meaning = m.value
                else:
                    m = mutate_json_text(rng, raw)
                    new = m.value
                    try:
                        meaning = strict_loads(new)
                    except NotStrictJson:
                        meaning = None
                if new != raw:
                    break
            (path / "meta.json").write_bytes(new)
            harmless = m.lenient or (meaning is not None and same_meaning(_lower_hex(meaning), meta))
            desc = f"meta.json {m.desc}"
        elif op in ("npy_header", "npy_data", "npy_size"):
            target = pick(rng, NPY)
            raw = (src / target).read_bytes()
            arr = np.load(src / target)
            start = npy_data_offset(raw)
            for _ in range(20):
                if op == "npy_header":
                    m = mutate_npy(rng, raw, arr.shape)
                elif op == "npy_data":
                    m = mutate_bytes(rng, raw, SIZE_PRESERVING, region=(start, len(raw)))
                else:
                    m = mutate_bytes(rng, raw, SIZE_CHANGING, region=(start, len(raw)))
                if m.value != raw:
                    break
            (path / target).write_bytes(m.value)
            harmless = op == "npy_data" or npy_same(m.value, arr)
            desc = f"{target} {m.desc}"
        elif op == "bin":
            target = pick(rng, ["data.bin", "sealed.bin"])
            raw = (src / target).read_bytes()
            content = rng.random() < 0.5
            for _ in range(20):
                m = mutate_bytes(rng, raw, SIZE_PRESERVING if content else SIZE_CHANGING)
                if m.value != raw:
                    break
            (path / target).write_bytes(m.value)
            harmless = content
            desc = f"{target} {m.desc}"
        elif op == "kind":
            target = pick(rng, SECTOR_FILES)
            kind = weighted(rng, {k: v for k, v in FILE_KINDS.items() if k not in ("dev_zero", "below_file")})
            _, d = make_kind(rng, path / target, kind)
            desc = f"{target} {d}"
        elif op == "dir":
            shutil.rmtree(path)
            kind = weighted(rng, {"missing": 1, "empty": 1, "below_file": 1, "symlink_loop": 1, "directory": 1})
            if kind == "empty":
                path.write_bytes(b"")
                d = "file: an empty regular file"
            elif kind == "directory":
                path.mkdir()
                d = "file: an empty directory"
            else:
                path, d = make_kind(rng, path, kind)
            desc = f"the sector path: {d}"
        elif op == "extra_file":
            name = pick(rng, ["junk.bin", "c1.json", ".hidden", "meta.json.bak"])
            (path / name).write_bytes(rbytes(rng, 64))
            harmless = True
            desc = f"an extra file {name}"
        else:
            return self._while_open(rng, path, seed)

        def accept(result: Any) -> list[Problem]:
            return self._check(result, harmless, "the damaged sector")
        return Case(desc, lambda: api.as_c1(path, seed), accept, watched=[path] if path.exists() else [])

    def _check(self, result: Any, harmless: bool, what: str) -> list[Problem]:
        c1, ids = result
        dump, problems = checked_call(c1.dumps, "C1Output.dumps")
        if problems:
            return problems
        if dump == self.seeds.c1_dump and ids == self.seeds.ids:
            return [] if harmless else [("accepted", f"{what} is proven as the original (nothing noticed)")]
        ok, problems = checked_call(lambda: c1.verify(*ids) or True, "C1Output.verify")
        if ok:
            return [("accepted", f"{what} gives a changed C1 output that passes vanilla verification")]
        return problems

    def _while_open(self, rng: np.random.Generator, path: Path, seed: bytes) -> Case:
        from cuzk import api
        from cuzk.porep.seal import Sector
        target = pick(rng, NPY)
        raw = (path / target).read_bytes()
        plan = plan_open_change(rng, len(raw), npy_data_offset(raw))

        def call() -> Any:
            sector = Sector.open(path)
            sector.labels()
            for name in ("tree_d", "tree_c", "tree_r_last"):
                sector.tree(name)
            change_open_file(path / target, plan, raw)
            return api.as_c1(sector, seed)

        def accept(result: Any) -> list[Problem]:
            return self._check(result, True, f"a sector whose {target} was {plan[2]} while open")
        return Case(f"after Sector.open, labels() and tree(), {target} {plan[2]}; then as_c1", call, accept)


# ---------------------------------------------------------------- parameter cache

class ParamsCache(Surface):
    """cuzk.porep.params_cache: read_meta, find_vk and load_or_generate over a mutated copy of a real
    cache entry (cuzk-fuzz-tiny.{params,vk,meta,lock}); nothing may be left behind on an error."""

    name, count, timeout = "params_cache", 220, 20.0

    def files(self):
        from cuzk.porep import params_cache
        return params_cache.cuzk_files(STEM)

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.groth16 import as_circuit, read_vk, vk_to_bytes
        from cuzk.porep import params_cache
        cache = scratch / "cache"
        shutil.copytree(self.seeds.root / "cache", cache)
        env = CacheEnv(cache, scratch / "no-official")
        entry = cache / "params"
        stem = params_cache.CUZK_PREFIX + STEM
        orig_meta_raw = (self.seeds.root / "cache" / "params" / f"{stem}.meta").read_bytes()
        orig_meta = json.loads(orig_meta_raw)
        target = weighted(rng, {"meta": 4, "params": 1.5, "vk": 1.5, "lock": 0.7, "dir": 0.7})
        meta_meaning: Any = orig_meta
        if target == "meta":
            op = weighted(rng, {"json": 4, "text": 4, "kind": 2})
            p = entry / f"{stem}.meta"
            if op == "json":
                m = mutate_json(rng, orig_meta)
                try:
                    p.write_bytes(json.dumps(m.value, indent=1).encode())
                except (ValueError, RecursionError):
                    p.write_bytes(b"[")
                meta_meaning = m.value
            elif op == "text":
                m = mutate_json_text(rng, orig_meta_raw)
                p.write_bytes(m.value)
                try:
                    meta_meaning = strict_loads(m.value)
                except NotStrictJson:
                    meta_meaning = None
            else:
                _, d = make_kind(rng, p, huge=1 << 20)
                m = Mutation(None, d)
                meta_meaning = "kind"
            desc = f".meta {m.desc}"
        elif target in ("params", "vk"):
            p = entry / f"{stem}.{target}"
            raw = p.read_bytes()
            if rng.random() < 0.3:
                _, d = make_kind(rng, p)
            else:
                for _ in range(20):
                    m = mutate_bytes(rng, raw)
                    if m.value != raw:
                        break
                p.write_bytes(m.value)
                d = m.desc
            desc = f".{target} {d}"
        elif target == "lock":
            p = entry / f"{stem}.lock"
            kind = weighted(rng, {"directory": 1, "fifo": 0.5, "symlink_loop": 1, "dangling_symlink": 1,
                                  "unreadable": 0 if IS_ROOT else 1, "dev_null": 0.5})
            _, d = make_kind(rng, p, kind)
            desc = f".lock {d}"
        else:
            kind = pick(rng, ["file", "below_file", "missing_parent_file"])
            if kind == "file":
                shutil.rmtree(entry)
                entry.write_bytes(b"x")
                desc = "the params directory is a regular file"
            elif kind == "below_file":
                shutil.rmtree(cache)
                cache.write_bytes(b"x")
                desc = "CUZK_CACHE_DIR is a regular file"
            else:
                shutil.rmtree(entry)
                entry.symlink_to("params")
                desc = "the params directory is a symlink to itself"
        call_kind = weighted(rng, {"read_meta": 4, "find_vk": 3, "load_or_generate": 3})
        circuit = self.seeds.get("circuit", lambda: as_circuit(tiny_circuit(self.seeds.fuzz_seed)))
        digest = self.seeds.get("digest", lambda: circuit.digest())
        before = snapshot(cache)
        setup_rng = np.random.default_rng(int(rng.integers(1 << 62)))

        def call() -> Any:
            with env:
                if call_kind == "read_meta":
                    return params_cache.read_meta(self.files())
                if call_kind == "find_vk":
                    return params_cache.find_vk(STEM)
                loaded = params_cache.load_or_generate(STEM, circuit, progress=False, rng=setup_rng)
                if not loaded.generated:
                    loaded.params.load()
                return loaded

        def meta_ok(value: Any) -> bool:
            return isinstance(value, dict) and value.get("circuit_digest") == digest

        def accept(result: Any) -> list[Problem]:
            with env:
                files = self.files()
                if call_kind == "read_meta":
                    if result is None:
                        if target != "meta":
                            return [("accepted", "an intact .meta read as stale")]
                        return []
                    if not isinstance(result, dict):
                        return [("accepted", f"read_meta returned {type(result).__name__}")]
                    if meta_meaning == "kind" or meta_meaning is None:
                        return [("accepted", "a .meta that is not a JSON object file read as a record")]
                    if not strict_equal(result, meta_meaning):
                        return [("accepted", "read_meta returned something else than the file holds")]
                    return []
                if call_kind == "find_vk":
                    vk, where = result
                    raw = files.vk.read_bytes() if files.vk.is_file() else None
                    if raw is None or vk_to_bytes(vk) != raw:
                        return [("accepted", "find_vk returned a vk that is not the .vk file's content")]
                    if not meta_ok(meta_meaning if target == "meta" else orig_meta):
                        return [("accepted", "find_vk used a cuzk .vk whose .meta is not a valid record (policy)")]
                    return []
                if result.generated:
                    meta = params_cache.read_meta(files)
                    if not meta_ok(meta) or read_vk(files.vk) != result.vk:
                        return [("accepted", "load_or_generate generated, but the entry is not fresh afterwards")]
                    return []
                if not meta_ok(meta_meaning if target == "meta" else orig_meta):
                    return [("accepted", "load_or_generate used parameters whose .meta does not match")]
                if target == "vk" and vk_to_bytes(result.vk) != files.vk.read_bytes():
                    return [("accepted", "the vk used is not the .vk file's content")]
                return []

        def refuse(e: CuzkError) -> list[Problem]:
            after = snapshot(cache)
            drop = lambda s: {k: v for k, v in s.items() if not k.endswith(".lock")}  # noqa: E731
            if drop(after) != drop(before):
                return [("left files", f"{type(e).__name__}, and the cache changed: {diff(drop(before), drop(after))}")]
            return []
        watched = [] if call_kind == "load_or_generate" else [cache]
        return Case(f"{call_kind}: {desc}", call, accept, refuse, watched=watched)


# ---------------------------------------------------------------- parents cache

class Parents(Surface):
    """cuzk.porep.graph.parents_cache(proof, path) of a mutated copy of the 2KiB parents cache file (and
    its digest record, when there is one): the result must be the true parents or a CuzkError."""

    name, count, timeout = "parents", 200, 10.0

    def true_parents(self) -> np.ndarray:
        from cuzk.porep.graph import parents_cache
        return self.seeds.get("parents", lambda: parents_cache(PROOF_NAME))

    def warm(self) -> None:
        self.true_parents()

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.porep.graph import parents_cache
        src = self.seeds.root / "parents"
        path = scratch / "parents"
        shutil.copytree(src, path)
        names = sorted(p.name for p in src.iterdir())
        cache_file = next(n for n in names if n.endswith(".cache"))
        target = pick(rng, names) if rng.random() < 0.85 else cache_file
        op = weighted(rng, {"bytes": 5, "kind": 2, "dir_arg": 1})
        arg: Path = path
        if op == "bytes":
            raw = (src / target).read_bytes()
            for _ in range(20):
                m = mutate_bytes(rng, raw) if not target.endswith(".sha256") else mutate_json_text(
                    rng, raw, {"bytes": 3, "trailing": 1, "encoding": 1, "not_object": 1})
                if m.value != raw:
                    break
            (path / target).write_bytes(m.value)
            desc = f"{target}: {m.desc}"
        elif op == "kind":
            _, d = make_kind(rng, path / target, weighted(rng, {k: v for k, v in FILE_KINDS.items()
                                                                if k != "below_file"}))
            desc = f"{target}: {d}"
        else:
            arg = pick(rng, [path / cache_file / "x", path / "missing-dir" / cache_file])
            desc = f"path argument {arg.relative_to(scratch)}"
        if rng.random() < 0.5 and op != "dir_arg":
            arg = path / cache_file
        truth = self.true_parents()

        def accept(result: Any) -> list[Problem]:
            if not (isinstance(result, np.ndarray) and result.dtype == truth.dtype and np.array_equal(result, truth)):
                return [("accepted", "parents_cache returned parents that are not the graph's")]
            return []
        watched = [path / n for n in names if n != target]
        where = str(arg.relative_to(scratch)).replace(cache_file, "<file>")
        return Case(f"parents_cache({where}): {desc.replace(cache_file, '<file>')}",
                    lambda: parents_cache(PROOF_NAME, arg), accept, watched=watched)


# ---------------------------------------------------------------- API argument types

SEAL_ARGS = ("proof", "prover_id", "sector_id", "ticket", "data", "parents_dir")
API_CALLS = sorted(["encoding.decode(G1, x)", "Proof.from_bytes(x)", "vk_from_bytes(x)", "read_params(x)", "read_vk(x)",
                    "C1Output.loads(x)", "C1Output.read(x)", "C1Output.from_json(x)", "Sector.open(x)",
                    "as_c1(x, seed)", "as_c1(sector dir, seed=x)", "as_c1(c1, seed=x)", "cuzk.verify(c1, proof=x)",
                    "cuzk.verify(c1, proof, vk=x)", "cuzk.verify(sector dir, proof, seed=x)",
                    "groth16.verify(vk, inputs=x, proof)", "groth16.verify(x, inputs, proof)",
                    "groth16.verify(vk, inputs, x)", "parents_cache(x)", "parents_cache(proof, path=x)",
                    *(f"seal({k}=x)" for k in SEAL_ARGS)])


class ApiTypes(Surface):
    """Public API calls with an argument of the wrong Python type or range (None, str, list, float,
    bool, huge ints, numpy values...): a CuzkError, unless the value is a legitimate one."""

    name, count, timeout = "api", 250, 20.0

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        import cuzk
        from cuzk import api
        from cuzk.ec import encoding
        from cuzk.ec.curves import G1
        from cuzk.groth16 import Proof, read_params, read_vk, verify, vk_from_bytes
        from cuzk.porep.c1 import C1Output
        from cuzk.porep.graph import parents_cache
        from cuzk.porep.seal import Sector
        from cuzk.porep.registry import get_proof
        value, name = wrong_type(rng)
        sector_dir = self.seeds.root / "sector"

        def proof_id(v: Any):
            try:
                return get_proof(v)
            except Exception:  # noqa: BLE001 - judged by the case itself
                return None
        proof = self.seeds.bytes("tiny.proof")
        vk = self.seeds.vk
        prover_id, sector_id = self.seeds.ids
        seal_args = dict(prover_id=prover_id, sector_id=sector_id, ticket=bytes.fromhex(self.seeds.info["ticket"]))

        def seal_with(key: str) -> Callable[[], Any]:
            args = dict(seal_args, **{key: value})
            proof_name = value if key == "proof" else PROOF_NAME
            args.pop("proof", None)
            return lambda: cuzk.seal(proof_name, scratch / "s", progress=False, **args)

        call_name = pick(rng, API_CALLS)
        if call_name in ("seal(proof=x)", "parents_cache(x)") and proof_id(value) is not None \
                and proof_id(value).sector_size != 2048:  # a valid id, but a sector too large to seal here
            value, name = "nope", "'nope' (instead of a valid id of a large sector)"
        forged_vk = self.seeds.get("forged_vk", lambda: read_vk(self.seeds.root / "forged.vk"))
        c1 = self.seeds.get("c1", lambda: C1Output.loads(self.seeds.bytes("c1.json")))
        calls: dict[str, Callable[[], Any]] = {
            "encoding.decode(G1, x)": lambda: encoding.decode(G1, value),
            "Proof.from_bytes(x)": lambda: Proof.from_bytes(value),
            "vk_from_bytes(x)": lambda: vk_from_bytes(value),
            "read_params(x)": lambda: read_params(value),
            "read_vk(x)": lambda: read_vk(value),
            "C1Output.loads(x)": lambda: C1Output.loads(value),
            "C1Output.read(x)": lambda: C1Output.read(value),
            "C1Output.from_json(x)": lambda: C1Output.from_json(value),
            "Sector.open(x)": lambda: Sector.open(value),
            "as_c1(x, seed)": lambda: api.as_c1(value, self.seeds.seed32),
            "as_c1(sector dir, seed=x)": lambda: api.as_c1(sector_dir, value),
            "as_c1(c1, seed=x)": lambda: api.as_c1(c1, value),
            "cuzk.verify(c1, proof=x)": lambda: cuzk.verify(c1, value, vk=forged_vk),
            "cuzk.verify(c1, proof, vk=x)": lambda: cuzk.verify(c1, self.seeds.bytes("forged.proof"), vk=value),
            "cuzk.verify(sector dir, proof, seed=x)": lambda: cuzk.verify(sector_dir, self.seeds.bytes("forged.proof"),
                                                                          value, vk=forged_vk),
            "groth16.verify(vk, inputs=x, proof)": lambda: verify(vk, value, Proof.from_bytes(proof)),
            "groth16.verify(x, inputs, proof)": lambda: verify(value, self.seeds.info["inputs"],
                                                               Proof.from_bytes(proof)),
            "groth16.verify(vk, inputs, x)": lambda: verify(vk, self.seeds.info["inputs"], value),
            "parents_cache(x)": lambda: parents_cache(value),
            "parents_cache(proof, path=x)": lambda: parents_cache(PROOF_NAME, value),
            **{f"seal({k}=x)": seal_with(k) for k in SEAL_ARGS},
        }
        seal_out = scratch / "s"

        def legit(result: Any) -> bool:
            """Values that are right for the parameter (Python ints, bools included; the documented
            None defaults; path strings), so the call may succeed."""
            if call_name in ("seal(proof=x)", "parents_cache(x)") and proof_id(value) is not None:
                return True
            if call_name == "seal(sector_id=x)" and isinstance(value, (int, np.integer)) and 0 <= value < 1 << 64:
                return True
            if call_name in ("parents_cache(proof, path=x)", "seal(parents_dir=x)") and isinstance(value, str):
                return True  # a relative path ('' is '.'): the file or directory is made in the (scratch) cwd
            if call_name == "as_c1(c1, seed=x)" and value is None:
                return True  # the seed is optional for a C1 output, which carries its own
            if call_name.startswith(("parents_cache(proof, path=x)", "seal(parents_dir=x)", "seal(data=x)")) \
                    and value is None:
                return True  # the documented default
            if call_name == "encoding.decode(G1, x)" and isinstance(value, (bytes, bytearray, memoryview)) \
                    and isinstance(result, np.ndarray) and result.shape == (0, 2, 6):
                return True  # no bytes: no points
            if call_name == "groth16.verify(vk, inputs=x, proof)" and result is False:
                return True  # a wrong-length list of Fr values is InputError; a right one is just False
            return False

        def accept(result: Any) -> list[Problem]:
            if legit(result):
                return []
            return [("accepted", f"{call_name} with x = {name} returned {short(result, 50)}")]

        def refuse(e: CuzkError) -> list[Problem]:
            if call_name.startswith("seal(") and os.path.lexists(seal_out):
                return [("left files", f"{call_name} with x = {name} failed but left {seal_out.name}")]
            return []
        return Case(f"{call_name} with x = {name}", calls[call_name], accept, refuse)


# ---------------------------------------------------------------- CLI

def cli_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FIL_PROOFS_PARAMETER_CACHE", "CUZK_DEBUG")}
    env.update(CUZK_CACHE_DIR=str(scratch / "cache"), NUMBA_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    return env


class Cli(Surface):
    """`python -m cuzk.cli` in a subprocess: verify / prove / seal with a damaged file, path or argument.
    It must exit 1 or 2 with one line on stderr (argparse usage errors: its usage and one error line),
    never a traceback, an internal error (3) or a signal, and leave no output behind on failure."""

    name, count, timeout = "cli", 30, 150.0

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        root = self.seeds.root
        for name in ("c1.json", "forged.proof", "forged.vk"):
            shutil.copy(root / name, scratch / name)
        (scratch / "cache").mkdir()
        scenario = weighted(rng, {"verify": 4, "prove": 2, "seal": 3, "argv": 1})
        may_succeed = False
        if scenario == "verify":
            argv = ["verify", "--c1", "c1.json", "--proof", "forged.proof", "--vk", "forged.vk"]
            which = pick(rng, ["c1.json", "forged.proof", "forged.vk"])
            raw = (scratch / which).read_bytes()
            if rng.random() < 0.2:
                p, d = make_kind(rng, scratch / which)
                argv[argv.index(which)] = str(p.relative_to(scratch))
            else:
                for _ in range(20):
                    if which == "c1.json":
                        m = (mutate_json_text(rng, raw) if rng.random() < 0.5 else
                             _dumped(mutate_json(rng, self.seeds.c1_obj)))
                    elif which == "forged.vk":
                        m = key_mutation(rng, raw, self.seeds, False)
                    else:
                        m = mutate_bytes(rng, raw)
                    if m.value != raw:
                        break
                (scratch / which).write_bytes(m.value)
                d = m.desc
                if which == "c1.json":
                    may_succeed = _same_public(m.value, self.seeds.c1_obj)
            desc = f"verify, {which}: {d}"
        elif scenario == "prove":
            argv = ["prove", "--c1", "c1.json", "-q"]
            raw = (scratch / "c1.json").read_bytes()
            op = pick(rng, ["truncate", "non_utf8", "deep", "type", "vanilla", "kind", "out"])
            if op == "truncate":
                cut = int(rng.integers(0, len(raw) - 1))
                (scratch / "c1.json").write_bytes(raw[:cut])
                desc = f"prove, c1.json truncated to {cut} bytes"
            elif op == "non_utf8":
                i = int(rng.integers(len(raw)))
                (scratch / "c1.json").write_bytes(raw[:i] + b"\xff" + raw[i:])
                desc = f"prove, c1.json with 0xff at byte {i}"
            elif op == "deep":
                n = int(pick(rng, [100, 100_000]))
                (scratch / "c1.json").write_bytes(b"[" * n + raw + b"]" * n)
                desc = f"prove, c1.json nested {n} deep"
            elif op == "type":
                key = pick(rng, ["comm_r", "comm_d", "registered_proof", "seed", "vanilla_proofs", "replica_id"])
                value = pick(rng, [None, 7.5, "x" * 100_000, [], {}, True])
                obj = dict(self.seeds.c1_obj, **{key: value})
                (scratch / "c1.json").write_text(json.dumps(obj))
                desc = f"prove, c1.json {key} := {short(value, 20)}"
            elif op == "vanilla":
                obj = self.seeds.c1_obj
                key = next(iter(obj["vanilla_proofs"]))
                lp = obj["vanilla_proofs"][key][0][0]["labeling_proofs"][0]
                parents = [list(p) for p in lp["parents"]]
                parents[0][0] ^= 1
                new = json.loads(json.dumps(obj))
                new["vanilla_proofs"][key][0][0]["labeling_proofs"][0]["parents"] = parents
                (scratch / "c1.json").write_text(json.dumps(new))
                desc = "prove, c1.json with a labeling parent changed (vanilla verification fails)"
            elif op == "kind":
                p, d = make_kind(rng, scratch / "c1.json")
                argv[2] = str(p.relative_to(scratch))
                desc = f"prove, c1.json {d}"
            else:
                out = pick(rng, ["outdir", "c1.json/x", "missing-dir/x.proof", "forged.vk/x"])
                if out == "outdir":
                    (scratch / out).mkdir()
                argv += ["--out", out]
                desc = f"prove --out {out}"
        elif scenario == "seal":
            argv, desc = self._seal_args(rng, scratch)
        else:
            tokens = ["prove", "verify", "seal", "gpu", "--c1", "--proof", "--vk", "--out", "--backend", "nope",
                      "c1.json", "-", "--", "\u00e9", "x" * 5000, "--sector-id", "--debug", "-q", "--dir"]
            argv = [pick(rng, tokens) for _ in range(int(rng.integers(0, 5)))]
            if argv and argv[0] in ("gpu",):
                argv[0] = "verify"
            if rng.random() < 0.5:
                argv = [pick(rng, ["prove", "verify", "seal"])] + argv
            if argv[:1] == ["seal"]:
                argv.append("new-sector")
            may_succeed = True  # garbage may form a valid command (`seal new-sector`): judged on the rest
            desc = f"argv {short(argv, 80)}"
        before = snapshot(scratch)

        def call() -> Any:
            return subprocess.run([sys.executable, "-m", "cuzk.cli", *argv], cwd=scratch, env=cli_env(scratch),
                                  capture_output=True, text=True, errors="replace", timeout=120)

        def accept(done: subprocess.CompletedProcess) -> list[Problem]:
            problems = cli_problems(done, scratch, may_succeed)
            if done.returncode != 0:
                drop = lambda s: {k: v for k, v in s.items() if not k.startswith("cache")}  # noqa: E731
                after = snapshot(scratch)
                if drop(after) != drop(before):
                    problems.append(("left files", f"exit {done.returncode}, and files changed: "
                                                   f"{diff(drop(before), drop(after))}"))
            return problems
        return Case(f"cuzk {desc}", call, accept, label=lambda done: f"exit {done.returncode}")

    def _seal_args(self, rng: np.random.Generator, scratch: Path) -> tuple[list[str], str]:
        argv = ["seal", "new-sector", "-q"]
        op = pick(rng, ["sector_id", "hex", "data", "parents", "out", "c1", "proof"])
        if op == "sector_id":
            v = pick(rng, ["7.5", "-1", "18446744073709551616", "abc", "", "1e3", "0x10"])
            return argv + ["--sector-id", v], f"seal --sector-id {v!r}"
        if op == "hex":
            opt = pick(rng, ["--prover-id", "--ticket", "--seed"])
            v = pick(rng, ["00" * 31, "00" * 33, "zz" * 32, "0x" + "00" * 31, "", "0" * 63, "00 " * 32])
            return argv + [opt, v], f"seal {opt} {short(v, 20)}"
        if op == "data":
            kind = pick(rng, ["short", "long", "noncanonical", "kind"])
            data = scratch / "data.bin"
            if kind == "kind":
                p, d = make_kind(rng, data)
                return argv + ["--data", str(p.relative_to(scratch))], f"seal --data {d}"
            content = {"short": bytes(2047), "long": bytes(4096), "noncanonical": b"\xff" * 2048}[kind]
            data.write_bytes(content)
            return argv + ["--data", "data.bin"], f"seal --data {kind} ({len(content)} bytes)"
        if op == "parents":
            p = scratch / "parents"
            kind = pick(rng, ["file", "missing", "below_file", "corrupt"])
            if kind == "corrupt":
                shutil.copytree(self.seeds.root / "parents", p)
                f = next(x for x in p.iterdir() if x.name.endswith(".cache"))
                raw = bytearray(f.read_bytes())
                raw[int(rng.integers(len(raw)))] ^= 1 << int(rng.integers(8))
                f.write_bytes(bytes(raw))
                return argv + ["--parents-dir", "parents"], "seal --parents-dir with a flipped bit in the cache file"
            p, d = make_kind(rng, p, {"file": "empty", "missing": "missing", "below_file": "below_file"}[kind])
            return argv + ["--parents-dir", str(p.relative_to(scratch))], f"seal --parents-dir {d}"
        if op == "out":
            kind = pick(rng, ["exists_dir", "exists_file", "below_file"])
            if kind == "exists_dir":
                (scratch / "new-sector").mkdir()
            elif kind == "exists_file":
                (scratch / "new-sector").write_bytes(b"x")
            else:
                (scratch / "f").write_bytes(b"x")
                argv[1] = "f/new-sector"
            return argv, f"seal OUT {kind}"
        if op == "c1":
            out = pick(rng, ["outdir", "f/x", "missing-dir/c1.json"])
            if out == "outdir":
                (scratch / out).mkdir()
            if out.startswith("f/"):
                (scratch / "f").write_bytes(b"x")
            return argv + ["--seed", "00" * 32, "--c1", out], f"seal --seed .. --c1 {out}"
        v = pick(rng, ["StackedDrg32GiBV1_1", "nope", "", "stackeddrg2kibv1_1"])
        return argv + ["--proof", v], f"seal --proof {v!r}"


def _dumped(m: Mutation) -> Mutation:
    try:
        return Mutation(json.dumps(m.value).encode(), m.desc, m.lenient)
    except (ValueError, RecursionError):
        return Mutation(b"[", m.desc + " (unserialisable: '[')")


def _same_public(raw: bytes, orig: dict) -> bool:
    """Whether a C1 text is strict JSON with the original public values (what verify reads besides the
    vanilla proofs' structure, which `verify` does not check)."""
    try:
        obj = strict_loads(raw)
    except NotStrictJson:
        return False
    keys = ("registered_proof", "comm_r", "comm_d", "replica_id", "seed", "ticket")
    return isinstance(obj, dict) and all(k in obj and strict_equal(obj[k], orig[k]) for k in keys)


_CHOICES = re.compile(r"\(choose from [^)]*\)")  # argparse lists the valid names: not an echo of input


def cli_problems(done: subprocess.CompletedProcess, scratch: Path, may_succeed: bool) -> list[Problem]:
    """The CLI's contract for bad input (see cuzk.cli EPILOG)."""
    err = done.stderr.replace(str(scratch), "<dir>")
    lines = [line for line in err.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    rc = done.returncode
    if rc < 0:
        return [("signal", f"killed by signal {-rc}; stderr: {short(last, 120)}")]
    if "Traceback" in err:
        return [("traceback", f"exit {rc}: {short(last, 160)}")]
    if rc == 3:
        return [("internal error", short(last, 200))]
    if rc == 0:
        return [] if may_succeed else [("accepted", f"exit 0: {short(done.stdout.strip()[-120:], 120)}")]
    if rc not in (1, 2):
        return [("exit status", f"exit {rc}: {short(last, 160)}")]
    if rc == 2:
        usage = bool(lines) and lines[0].startswith("usage:")  # argparse: its usage, then one error line
        if not usage and len(lines) != 1:
            return [("stderr lines", f"{len(lines)} lines on stderr: {short(err, 160)}")]
        if ": error: " not in last and not last.startswith("cuzk: error"):
            return [("stderr", f"exit 2 without an error line: {short(last, 160)}")]
        if len(message_text(_CHOICES.sub("(choose from ...)", last))) > MESSAGE_LIMIT:
            return [("long message", f"{len(last)} characters: {short(last, 100)}")]
    return []


class HarnessCheck(Surface):
    """Cases of known outcome for the harness's own test (not part of a fuzz run): a SIGBUS, a hang,
    a TypeError, a long message, a changed input, an accepted bad input, a clean refusal."""

    name, count, timeout = "harness", 0, 3.0

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        import signal
        import time

        from cuzk.errors import InputError
        f = scratch / "input"
        f.write_bytes(b"x")

        def raise_(e: BaseException) -> Any:
            raise e
        calls = [lambda: os.kill(os.getpid(), signal.SIGBUS), lambda: time.sleep(60),
                 lambda: raise_(TypeError("boom")), lambda: raise_(InputError("x" * 1000)),
                 lambda: raise_(InputError(f"wrote {f.write_bytes(b'y')} byte")), lambda: 1,
                 lambda: raise_(InputError("fine"))]
        return Case(f"harness case {self.index}", calls[self.index], must_refuse("bad input"), watched=[f])


from .state_surfaces import STATE_SURFACES  # noqa: E402 - they build on the classes above
from .post_surfaces import POST_SURFACES  # noqa: E402
from .snap_surfaces import SNAP_SURFACES  # noqa: E402

SURFACES: list[type[Surface]] = [Points, Proofs, ParamsFiles, VkFiles, C1, Sectors, ParamsCache, Parents, ApiTypes,
                                 Cli, *STATE_SURFACES, *POST_SURFACES, *SNAP_SURFACES]
SURFACE_IDS = {cls.name: i + 1 for i, cls in enumerate(SURFACES)} | {HarnessCheck.name: 99}
