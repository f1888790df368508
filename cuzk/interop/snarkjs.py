"""circom / snarkjs 0.7 interop on BLS12-381: .r1cs, .wtns and .zkey files, and snarkjs's
verification_key.json, proof.json and public.json.

Binary files are iden3's container: a 4-byte magic, version u32, section count u32, then sections
(id u32, size u64, bytes); every integer little-endian. Fr values are 32 bytes, plain (.r1cs, .wtns).
.zkey points are affine, Montgomery form, 48 little-endian bytes a coordinate (G2: x.c0 x.c1 y.c0 y.c1),
the identity all zeros: byte for byte cuzk's limb arrays.

Wires: circom numbers them ONE, outputs, public inputs, private inputs, internal; cuzk's columns are
ONE and the public inputs, then aux. A cuzk circuit is written with nOutputs = 0, nPubInputs =
num_inputs - 1, nPrvInputs = 0; a circom one is read with its outputs and public inputs as inputs.

A .zkey is its own key, not an export of bellperson-layout Parameters, because snarkjs's QAP
reduction differs (cuzk.groth16.qap.SnarkjsQap):
- its roots of unity are powers of 5^((r-1)/2^32) (bellperson's of 7^...), so constraint c sits at
  another point of the domain and every u_i(tau), v_i(tau), w_i(tau) (hence IC) changes;
- its H query is the 2n-domain's Lagrange basis at the odd points (n of them), for a prover that
  never divides by Z; bellperson's is [tau^i Z(tau) / delta] G1 against H's n - 1 coefficients.
write_zkey therefore runs the setup pipeline (cuzk.groth16.setup.key_points) with SnarkjsQap; its
verifying key (returned, and in the file) checks snarkjs's proofs with cuzk's verifier.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError, NonCanonicalError
from cuzk.ff.fields import Fq, Fr
from cuzk.groth16.circuit import Circuit, flat
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof
from cuzk.groth16.qap import SnarkjsQap
from cuzk.groth16.setup import key_points, random_scalar
from cuzk.r1cs import CSR, fr_array
from cuzk.util.atomic import atomic_write

R = Fr.modulus
Q = Fq.modulus
FR_BYTES, FQ_BYTES = 32, 48
_COEF = np.dtype([("matrix", "<u4"), ("constraint", "<u4"), ("signal", "<u4"), ("value", "<u8", (4,))])


class SnarkjsFormatError(InputError):
    """A circom / snarkjs file or JSON document that is malformed or not for BLS12-381 Groth16."""


# ---------------------------------------------------------------- iden3 binary container
def _write_bin(path: str | os.PathLike, magic: bytes, version: int, sections: list[tuple[int, bytes]]) -> None:
    """Write the container atomically (a temporary file renamed over `path`)."""
    def chunks():
        yield magic + np.array([version, len(sections)], "<u4").tobytes()
        for sid, data in sections:
            yield np.array([sid], "<u4").tobytes() + np.array([len(data)], "<u8").tobytes()
            yield data
    atomic_write(path, chunks())


def _read_bin(path: str | os.PathLike, magic: bytes, max_version: int) -> dict[int, memoryview]:
    data = memoryview(Path(path).read_bytes())
    if len(data) < 12 or bytes(data[:4]) != magic:
        raise SnarkjsFormatError(f"{path}: not a {magic.decode()} file")
    version, count = np.frombuffer(data[4:12], "<u4")
    if version > max_version:
        raise SnarkjsFormatError(f"{path}: {magic.decode()} version {version} is not supported")
    sections, pos = {}, 12
    for _ in range(count):
        if pos + 12 > len(data):
            raise SnarkjsFormatError(f"{path}: truncated section header at byte {pos}")
        sid = int(np.frombuffer(data[pos:pos + 4], "<u4")[0])
        size = int(np.frombuffer(data[pos + 4:pos + 12], "<u8")[0])
        if pos + 12 + size > len(data):
            raise SnarkjsFormatError(f"{path}: section {sid} runs past the end of the file")
        if sid in sections:
            raise SnarkjsFormatError(f"{path}: section {sid} appears twice")
        sections[sid] = data[pos + 12:pos + 12 + size]
        pos += 12 + size
    return sections


def _section(sections: dict[int, memoryview], sid: int, path, size: int | None = None) -> memoryview:
    if sid not in sections:
        raise SnarkjsFormatError(f"{path}: section {sid} is missing")
    if size is not None and len(sections[sid]) != size:
        raise SnarkjsFormatError(f"{path}: section {sid} has {len(sections[sid])} bytes, expected {size}")
    return sections[sid]


def _u32(*values: int) -> bytes:
    return np.array(values, "<u4").tobytes()


def _field_header(prime: int, nbytes: int) -> bytes:
    return _u32(nbytes) + prime.to_bytes(nbytes, "little")


def _check_prime(buf: memoryview, path, what: str, prime: int, nbytes: int) -> int:
    """Read `n8 || prime` at the start of buf and check it is BLS12-381's; returns the bytes read."""
    n8 = int(np.frombuffer(buf[:4], "<u4")[0])
    if n8 != nbytes or int.from_bytes(buf[4:4 + n8], "little") != prime:
        raise SnarkjsFormatError(f"{path}: {what} is not BLS12-381's (n8 = {n8})")
    return 4 + n8


# ---------------------------------------------------------------- field elements and points
def _mont_fr(plain: np.ndarray, path, what: str) -> np.ndarray:
    """Montgomery Fr from plain (n, 4) limbs, rejecting values >= r."""
    try:
        return Fr.from_canonical_limbs(np.asarray(plain, dtype=np.uint64), what)
    except NonCanonicalError as e:
        raise SnarkjsFormatError(f"{path}: {e}") from e


def _points(buf: memoryview, curve, path, what: str, subgroup: bool = False) -> np.ndarray:
    """Affine points from LE Montgomery bytes: canonical coordinates, on the curve (and in the
    subgroup when asked)."""
    shape = (2, 6) if curve is G1 else (2, 2, 6)
    size = 8 * int(np.prod(shape))
    if len(buf) % size:
        raise SnarkjsFormatError(f"{path}: {what}: {len(buf)} bytes is not a whole number of points")
    pts = np.frombuffer(buf, "<u8").astype(np.uint64).reshape(-1, *shape)
    ok = Fq.is_canonical(pts)
    ok = ok.all(axis=tuple(range(1, ok.ndim)))
    if ok.all():
        ok = curve.in_subgroup(pts) if subgroup else curve.is_on_curve(pts)
    bad = np.flatnonzero(~ok)
    if bad.size:
        raise SnarkjsFormatError(f"{path}: {what} point {bad[0]} is not a valid {curve.name} point")
    return pts


def _point_bytes(points: np.ndarray) -> bytes:
    return np.ascontiguousarray(points, dtype="<u8").tobytes()


# ---------------------------------------------------------------- .r1cs
def write_r1cs(path: str | os.PathLike, r1cs) -> None:
    """Write a circuit (Circuit, ConstraintSystem or (A, B, C, num_inputs)) as a circom .r1cs file."""
    c = flat(r1cs)
    n_vars = c.a.shape[1]
    header = (_field_header(R, FR_BYTES) + _u32(n_vars, 0, c.num_inputs - 1, 0)
              + np.array([n_vars], "<u8").tobytes() + _u32(c.num_constraints))
    labels = np.arange(n_vars, dtype="<u8").tobytes()
    _write_bin(path, b"r1cs", 1, [(1, header), (2, _constraint_words(c).tobytes()), (3, labels)])


def _constraint_words(c: Circuit) -> np.ndarray:
    """Section 2 as uint32 words: per constraint, for A, B, C, a term count then per term the wire
    index and the 8 words of its plain coefficient (9 words a term)."""
    mats = (c.a, c.b, c.c)
    counts = np.stack([np.diff(m.indptr) for m in mats], axis=1)
    lc_words = 1 + 9 * counts
    row_words = lc_words.sum(axis=1)
    lc_start = (np.cumsum(row_words) - row_words)[:, None] + np.cumsum(lc_words, axis=1) - lc_words
    words = np.empty(int(lc_words.sum()), "<u4")
    words[lc_start] = counts
    for j, m in enumerate(mats):
        rank = np.arange(m.nnz) - np.repeat(m.indptr[:-1], counts[:, j])
        pos = np.repeat(lc_start[:, j], counts[:, j]) + 1 + 9 * rank
        words[pos] = m.indices
        words[pos[:, None] + np.arange(1, 9)] = Fr.to_canonical_limbs(m.coeffs).view("<u4")[m.coeff_ids]
    return words


def read_r1cs(path: str | os.PathLike) -> Circuit:
    """A circom .r1cs file (BLS12-381) as a Circuit: columns ONE, outputs, public inputs, then the
    private inputs and internal wires as aux."""
    sections = _read_bin(path, b"r1cs", 1)
    head = _section(sections, 1, path)
    pos = _check_prime(head, path, "the field", R, FR_BYTES)
    if len(head) != pos + 28:
        raise SnarkjsFormatError(f"{path}: header section has {len(head)} bytes, expected {pos + 28}")
    n_vars, n_out, n_pub, _n_prv = (int(v) for v in np.frombuffer(head[pos:pos + 16], "<u4"))
    m = int(np.frombuffer(head[pos + 24:pos + 28], "<u4")[0])
    if 4 in sections or 5 in sections:
        raise SnarkjsFormatError(f"{path}: custom gates (PLONK) have no Groth16 R1CS")
    body = _section(sections, 2, path)
    if len(body) % 4:
        raise SnarkjsFormatError(f"{path}: constraint section is not a whole number of words")
    words = np.frombuffer(body, "<u4")
    starts, counts = np.empty(3 * m, np.int64), np.empty(3 * m, np.int64)
    p = _walk_lcs(words, starts, counts)
    if p < 0:
        raise SnarkjsFormatError(f"{path}: constraint section ends inside constraint {(-p - 1) // 3}")
    if p != len(words):
        raise SnarkjsFormatError(f"{path}: constraint section is {len(words) - p} words too long")
    rank = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    terms = words[(np.repeat(starts, counts) + 9 * rank)[:, None] + np.arange(9)]
    wires = terms[:, 0].astype(np.int64)
    if wires.size and wires.max() >= n_vars:
        raise SnarkjsFormatError(f"{path}: a constraint names wire {wires.max()} of {n_vars}")
    values = np.ascontiguousarray(terms[:, 1:]).view("<u8").astype(np.uint64)
    ids, coeffs = _coefficient_table(values, path)
    rows = np.repeat(np.arange(3 * m) // 3, counts)
    which = np.repeat(np.arange(3 * m) % 3, counts)
    mats = [_csr(rows[which == j], wires[which == j], ids[which == j], coeffs, (m, n_vars), path)
            for j in range(3)]
    return Circuit(*mats, 1 + n_out + n_pub)


@njit(cache=True)
def _walk_lcs(words, starts, counts):
    """Fill the first term's word and the term count of every linear combination (a sequential walk:
    each count says where the next one is); returns the words used, or -(lc + 1) if they run out."""
    p = 0
    for i in range(starts.shape[0]):
        if p >= words.shape[0]:
            return -(i + 1)
        starts[i] = p + 1
        counts[i] = words[p]
        p += 1 + 9 * np.int64(words[p])
    return p


def _coefficient_table(plain: np.ndarray, path) -> tuple[np.ndarray, np.ndarray]:
    """Ids into a table of distinct Montgomery coefficients with id 0 = 1 and id 1 = -1 (as CSR wants)."""
    special = Fr.from_ints([1, R - 1])
    mont = _mont_fr(plain, path, "coefficient")
    table, inverse = np.unique(np.concatenate([special, mont]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.concatenate([inverse[:2], np.setdiff1d(np.arange(len(table)), inverse[:2])])
    rank = np.empty(len(table), np.uint32)
    rank[order] = np.arange(len(table), dtype=np.uint32)
    return rank[inverse[2:]], np.ascontiguousarray(table[order])


def _csr(rows, cols, ids, coeffs, shape, path) -> CSR:
    order = np.lexsort((cols, rows))
    rows, cols, ids = rows[order], cols[order], ids[order]
    dup = np.flatnonzero((rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1]))
    if dup.size:
        raise SnarkjsFormatError(f"{path}: constraint {rows[dup[0]]} names wire {cols[dup[0]]} twice")
    indptr = np.zeros(shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    itype = np.int32 if shape[1] < 2**31 else np.int64
    return CSR(indptr, cols.astype(itype), ids, coeffs, shape)


# ---------------------------------------------------------------- .wtns
def write_wtns(path: str | os.PathLike, witness) -> None:
    """Write a full assignment (ONE, inputs, aux; (n, 4) Montgomery Fr or ints) as a .wtns file."""
    w = fr_array(witness)
    head = _field_header(R, FR_BYTES) + _u32(len(w))
    _write_bin(path, b"wtns", 2, [(1, head), (2, Fr.to_canonical_limbs(w).astype("<u8").tobytes())])


def read_wtns(path: str | os.PathLike) -> np.ndarray:
    """A .wtns file (BLS12-381) as an (n, 4) Montgomery Fr array."""
    sections = _read_bin(path, b"wtns", 2)
    head = _section(sections, 1, path, 4 + FR_BYTES + 4)
    pos = _check_prime(head, path, "the field", R, FR_BYTES)
    n = int(np.frombuffer(head[pos:pos + 4], "<u4")[0])
    body = _section(sections, 2, path, n * FR_BYTES)
    return _mont_fr(np.frombuffer(body, "<u8").reshape(n, 4), path, "witness value")


# ---------------------------------------------------------------- .zkey
@dataclass(frozen=True, eq=False)
class ZKey:
    """A Groth16 .zkey: the verifying key, snarkjs's sizes and its point vectors (affine arrays).
    a, b_g1, b_g2 have one point per wire (the identity where unused), c one per aux wire, h one
    per domain point (see the module docstring)."""

    vk: VerifyingKey
    num_vars: int
    num_public: int
    domain_size: int
    num_coefficients: int
    a: np.ndarray
    b_g1: np.ndarray
    b_g2: np.ndarray
    c: np.ndarray
    h: np.ndarray


def setup_zkey(r1cs, path: str | os.PathLike, rng: np.random.Generator | None = None) -> VerifyingKey:
    """A .zkey for `r1cs` from fresh toxic waste (`rng` makes it reproducible: tests only)."""
    return write_zkey(path, r1cs, *(random_scalar(rng) for _ in range(5)))


def write_zkey(path: str | os.PathLike, r1cs, tau: int, alpha: int, beta: int, gamma: int,
               delta: int) -> VerifyingKey:
    """Write the .zkey that snarkjs's `groth16 prove` takes, for the given toxic waste (non-zero Fr
    integers); returns its verifying key. No powers-of-tau file is involved: the key is computed from
    tau directly, and its contribution hash (for `zkey verify`) is left zero."""
    if not all(isinstance(x, int) and 0 < x < R for x in (tau, alpha, beta, gamma, delta)):
        raise InputError("toxic waste must be integers in [1, r)")
    c = flat(r1cs)
    k, n_vars = c.num_inputs, c.a.shape[1]
    qap = SnarkjsQap(c.num_constraints, k)
    n = qap.domain.n
    keys = key_points(c, qap, tau, alpha, beta, gamma, delta)
    vk = keys.vk

    header = (_field_header(Q, FQ_BYTES) + _field_header(R, FR_BYTES) + _u32(n_vars, k - 1, n)
              + b"".join(_point_bytes(p) for p in (vk.alpha_g1, vk.beta_g1, vk.beta_g2, vk.gamma_g2,
                                                   vk.delta_g1, vk.delta_g2)))
    coefs = _zkey_coefficients(c, qap)
    _write_bin(path, b"zkey", 1, [
        (1, _u32(1)), (2, header), (3, _point_bytes(vk.ic)), (4, _u32(len(coefs)) + coefs.tobytes()),
        (5, _point_bytes(keys.a)), (6, _point_bytes(keys.b_g1)), (7, _point_bytes(keys.b_g2)),
        (8, _point_bytes(keys.l)), (9, _point_bytes(keys.h)), (10, bytes(64) + _u32(0))])
    return vk


def _zkey_coefficients(c: Circuit, qap: SnarkjsQap) -> np.ndarray:
    """Section 4: A and B non-zeros by constraint (A first), then A's input rows (A[m + i, i] = 1);
    values c R^2 mod r (snarkjs multiplies them with plain witness values in Montgomery arithmetic)."""
    parts = []
    for j, mat in enumerate((c.a, c.b)):
        rows = np.repeat(np.arange(mat.shape[0]), np.diff(mat.indptr))
        parts.append((np.full(mat.nnz, j), rows, mat.indices, mat.values()))
    k = qap.inputs
    parts.append((np.zeros(k, np.int64), np.arange(qap.rows)[qap.input_rows], np.arange(k), Fr.ones(k)))
    matrix, rows, signals, values = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((matrix, rows))  # stable: terms keep their order within a row
    out = np.empty(len(order), _COEF)
    out["matrix"], out["constraint"], out["signal"] = matrix[order], rows[order], signals[order]
    out["value"] = Fr.from_canonical_limbs(values[order])  # the limbs of c R, read as an integer, times R
    return out


def read_zkey(path: str | os.PathLike) -> ZKey:
    """A Groth16 .zkey (snarkjs's or write_zkey's) for BLS12-381. Every point is checked to be on its
    curve, the verifying key's to be in the prime-order subgroup."""
    sections = _read_bin(path, b"zkey", 1)
    if bytes(_section(sections, 1, path, 4)) != _u32(1):
        raise SnarkjsFormatError(f"{path}: not a Groth16 zkey")
    head = _section(sections, 2, path, 4 + FQ_BYTES + 4 + FR_BYTES + 12 + 3 * 96 + 3 * 192)
    pos = _check_prime(head, path, "the base field", Q, FQ_BYTES)
    pos += _check_prime(head[pos:], path, "the scalar field", R, FR_BYTES)
    n_vars, n_pub, n = (int(x) for x in np.frombuffer(head[pos:pos + 12], "<u4"))
    pos += 12
    sizes = [(G1, 96), (G1, 96), (G2, 192), (G2, 192), (G1, 96), (G2, 192)]
    vk_pts = []
    for curve, size in sizes:
        vk_pts.append(_points(head[pos:pos + size], curve, path, "verifying key", subgroup=True)[0])
        pos += size
    alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2 = vk_pts
    ic = _points(_section(sections, 3, path, (n_pub + 1) * 96), G1, path, "IC", subgroup=True)
    coefs = _section(sections, 4, path)
    count = int(np.frombuffer(coefs[:4], "<u4")[0]) if len(coefs) >= 4 else -1
    if len(coefs) != 4 + count * _COEF.itemsize:
        raise SnarkjsFormatError(f"{path}: coefficient section has {len(coefs)} bytes for {count} entries")
    vk = VerifyingKey(alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic)
    vectors = [(5, G1, n_vars, "A"), (6, G1, n_vars, "B1"), (7, G2, n_vars, "B2"),
               (8, G1, n_vars - n_pub - 1, "C"), (9, G1, n, "H")]
    a, b1, b2, cq, h = (_points(_section(sections, sid, path, num * (96 if curve is G1 else 192)),
                                curve, path, name) for sid, curve, num, name in vectors)
    return ZKey(vk, n_vars, n_pub, n, count, a, b1, b2, cq, h)


# ---------------------------------------------------------------- JSON (verification key, proof, public)
def _load(source) -> object:
    """A parsed JSON document from a path, or the document itself (dict / list)."""
    if isinstance(source, (dict, list)):
        return source
    try:
        return json.loads(Path(source).read_text())
    except (OSError, ValueError) as e:
        raise SnarkjsFormatError(f"{source}: cannot read JSON: {e}") from e


def _int(value, what: str, modulus: int) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError) as e:
        raise SnarkjsFormatError(f"{what}: {value!r} is not a decimal integer") from e
    if not 0 <= v < modulus:
        raise SnarkjsFormatError(f"{what}: {v} is out of range")
    return v


def _json_point(obj, curve, what: str) -> np.ndarray:
    """snarkjs's [x, y, z] (G2: [[x0, x1], [y0, y1], [z0, z1]]) with z = 1 (or 0: the identity),
    checked to be in the prime-order subgroup."""
    g2 = curve is G2
    try:
        x, y, z = obj
        coords = [[_int(e, what, Q) for e in c] if g2 else _int(c, what, Q) for c in (x, y, z)]
    except (TypeError, ValueError) as e:
        raise SnarkjsFormatError(f"{what}: expected [x, y, z] coordinates, got {obj!r}") from e
    x, y, z = coords
    if z in ([0, 0], 0):
        return curve.identity(1)[0]
    if z not in ([1, 0], 1):
        raise SnarkjsFormatError(f"{what}: only affine points (z = 1) are supported")
    point = curve.from_ints([(tuple(x), tuple(y)) if g2 else (x, y)])
    if not curve.in_subgroup(point)[0]:
        raise SnarkjsFormatError(f"{what}: not a point of the {curve.name} subgroup")
    return point[0]


def _point_json(point: np.ndarray, curve) -> list:
    (xy,) = curve.to_ints(point[None])
    if xy is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]] if curve is G2 else ["0", "1", "0"]
    if curve is G2:
        return [[str(c) for c in xy[0]], [str(c) for c in xy[1]], ["1", "0"]]
    return [str(xy[0]), str(xy[1]), "1"]


def _check_kind(doc: dict, what: str) -> None:
    if not isinstance(doc, dict):
        raise SnarkjsFormatError(f"{what}: expected a JSON object")
    for key, want in (("protocol", "groth16"), ("curve", "bls12381")):
        if key in doc and doc[key] != want:
            raise SnarkjsFormatError(f"{what}: {key} is {doc[key]!r}, cuzk reads {want!r}")


def read_vk_json(source) -> VerifyingKey:
    """snarkjs's verification_key.json (a path or the parsed object) as a VerifyingKey.
    snarkjs keeps no delta_1 or beta_1 there (the verifier needs neither): they are left the identity."""
    doc = _load(source)
    _check_kind(doc, "verification key")
    try:
        ic = np.stack([_json_point(p, G1, f"IC[{i}]") for i, p in enumerate(doc["IC"])])
        g2 = {name: _json_point(doc[name], G2, name) for name in ("vk_beta_2", "vk_gamma_2", "vk_delta_2")}
        alpha = _json_point(doc["vk_alpha_1"], G1, "vk_alpha_1")
    except KeyError as e:
        raise SnarkjsFormatError(f"verification key: missing {e}") from e
    if "nPublic" in doc and doc["nPublic"] != len(ic) - 1:
        raise SnarkjsFormatError(f"verification key: nPublic {doc['nPublic']} but {len(ic)} IC points")
    zero = G1.identity(1)[0]
    return VerifyingKey(alpha, zero, g2["vk_beta_2"], g2["vk_gamma_2"], zero.copy(), g2["vk_delta_2"], ic)


def read_proof_json(source) -> Proof:
    """snarkjs's proof.json (a path or the parsed object) as a Proof."""
    doc = _load(source)
    _check_kind(doc, "proof")
    try:
        return Proof(_json_point(doc["pi_a"], G1, "pi_a"), _json_point(doc["pi_b"], G2, "pi_b"),
                     _json_point(doc["pi_c"], G1, "pi_c"))
    except KeyError as e:
        raise SnarkjsFormatError(f"proof: missing {e}") from e


def read_public_json(source) -> list[int]:
    """snarkjs's public.json (a path or the parsed list of decimal strings) as integers in [0, r)."""
    doc = _load(source)
    if not isinstance(doc, list):
        raise SnarkjsFormatError("public signals: expected a JSON list")
    return [_int(v, f"public signal {i}", R) for i, v in enumerate(doc)]


def vk_to_json(vk: VerifyingKey) -> dict:
    """A verification_key.json object that `snarkjs groth16 verify` accepts (without
    vk_alphabeta_12, which snarkjs's verifier does not read)."""
    return {"protocol": "groth16", "curve": "bls12381", "nPublic": len(vk.ic) - 1,
            "vk_alpha_1": _point_json(vk.alpha_g1, G1), "vk_beta_2": _point_json(vk.beta_g2, G2),
            "vk_gamma_2": _point_json(vk.gamma_g2, G2), "vk_delta_2": _point_json(vk.delta_g2, G2),
            "IC": [_point_json(p, G1) for p in vk.ic]}


def proof_to_json(proof: Proof) -> dict:
    """A proof.json object in snarkjs's form."""
    return {"pi_a": _point_json(proof.a, G1), "pi_b": _point_json(proof.b, G2),
            "pi_c": _point_json(proof.c, G1), "protocol": "groth16", "curve": "bls12381"}


def public_to_json(public_inputs) -> list[str]:
    """public.json: the public inputs (without ONE) as decimal strings."""
    return [str(v) for v in Fr.to_ints(fr_array(public_inputs))] if len(public_inputs) else []
