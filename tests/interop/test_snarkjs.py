"""cuzk.interop.snarkjs: .r1cs / .wtns / .zkey files and snarkjs JSON, against fixtures made once with
snarkjs 0.7.6 (tests/interop/data/snarkjs/README.md says how) and fresh random round trips."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from cuzk.ff import limbs
from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError
from cuzk.ff.fields import Fr
from cuzk.groth16 import Proof, as_circuit, prove, setup, verify
from cuzk.groth16.synthetic import synthetic_circuit
from cuzk.interop import snarkjs as sj
from cuzk.interop.snarkjs import SnarkjsFormatError

DATA = Path(__file__).parent / "data" / "snarkjs"
R = limbs.FR_MODULUS


def fixture_circuit():
    """The circuit and witness behind every fixture file."""
    cs = synthetic_circuit(13, 2, np.random.default_rng(7))
    return as_circuit(cs), cs.witness()


def dense(circuit):
    return [m.to_dense_ints() for m in (circuit.a, circuit.b, circuit.c)], circuit.num_inputs


# ---------------------------------------------------------------- what snarkjs accepted stays the same
def test_r1cs_and_wtns_bytes_match_what_snarkjs_checked(tmp_path):
    circuit, witness = fixture_circuit()
    sj.write_r1cs(tmp_path / "c.r1cs", circuit)
    sj.write_wtns(tmp_path / "c.wtns", witness)
    assert (tmp_path / "c.r1cs").read_bytes() == (DATA / "circuit.r1cs").read_bytes()
    assert (tmp_path / "c.wtns").read_bytes() == (DATA / "circuit.wtns").read_bytes()


def test_zkey_bytes_match_the_one_snarkjs_proved_with(tmp_path):
    circuit, _ = fixture_circuit()
    vk = sj.write_zkey(tmp_path / "c.zkey", circuit, 11, 12, 13, 14, 15)
    assert (tmp_path / "c.zkey").read_bytes() == (DATA / "circuit.zkey").read_bytes()
    assert sj.read_zkey(tmp_path / "c.zkey").vk == vk


def test_zkey_coefficients_equal_snarkjs_setup():
    """Section 4 depends on the circuit only: snarkjs's own `groth16 setup` wrote the same bytes."""
    ours = sj._read_bin(DATA / "circuit.zkey", b"zkey", 1)
    theirs = sj._read_bin(DATA / "snarkjs.zkey", b"zkey", 1)
    assert bytes(ours[4]) == bytes(theirs[4])
    assert bytes(ours[2][:4 + 48 + 4 + 32 + 12]) == bytes(theirs[2][:4 + 48 + 4 + 32 + 12])


# ---------------------------------------------------------------- snarkjs's proofs under cuzk's verifier
def test_verifier_accepts_snarkjs_proof_from_snarkjs_setup():
    vk = sj.read_vk_json(DATA / "snarkjs_vk.json")
    proof = sj.read_proof_json(DATA / "snarkjs_proof.json")
    public = sj.read_public_json(DATA / "public.json")
    _, witness = fixture_circuit()
    assert public == Fr.to_ints(witness[1:3])
    assert verify(vk, public, proof)
    assert verify(sj.read_zkey(DATA / "snarkjs.zkey").vk, public, proof)
    assert not verify(vk, [public[0], (public[1] + 1) % R], proof)
    assert not verify(vk, public, Proof(proof.a, proof.b, G1.neg(proof.c)))


def test_verifier_accepts_snarkjs_proof_from_our_zkey():
    vk = sj.read_zkey(DATA / "circuit.zkey").vk
    proof = sj.read_proof_json(DATA / "zkey_proof.json")
    public = sj.read_public_json(DATA / "public.json")
    assert verify(vk, public, proof)
    assert not verify(vk, public[::-1], proof)
    other = sj.read_proof_json(DATA / "snarkjs_proof.json")  # valid, but under another key
    assert not verify(vk, public, other)


def test_imported_r1cs_and_wtns_prove_with_cuzk():
    """A circom-format circuit and witness read back drive cuzk's own setup / prove / verify."""
    circuit = sj.read_r1cs(DATA / "circuit.r1cs")
    witness = sj.read_wtns(DATA / "circuit.wtns")
    rng = np.random.default_rng()
    params = setup(circuit, rng)
    proof = prove(params, circuit, witness, rng=rng)
    assert verify(params.vk, sj.read_public_json(DATA / "public.json"), proof)


def test_read_zkey_of_snarkjs_matches_its_vk_json():
    z = sj.read_zkey(DATA / "snarkjs.zkey")
    vk = sj.read_vk_json(DATA / "snarkjs_vk.json")
    for name in ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic"):
        assert np.array_equal(getattr(z.vk, name), getattr(vk, name)), name
    circuit, _ = fixture_circuit()
    assert (z.num_vars, z.num_public, z.domain_size) == (circuit.a.shape[1], 2, circuit.domain_size)
    assert (len(z.a), len(z.b_g2), len(z.c), len(z.h)) == (z.num_vars, z.num_vars, z.num_vars - 3, 16)


# ---------------------------------------------------------------- fresh random round trips
def test_r1cs_round_trip_random_circuit(tmp_path):
    rng = np.random.default_rng()
    cs = synthetic_circuit(int(rng.integers(2, 200)), int(rng.integers(1, 5)), rng)
    circuit = as_circuit(cs)
    sj.write_r1cs(tmp_path / "c.r1cs", circuit)
    back = sj.read_r1cs(tmp_path / "c.r1cs")
    assert dense(back) == dense(circuit)
    assert np.array_equal(back.a.coeffs[:2], Fr.from_ints([1, R - 1]))  # CSR's id 0 = 1, id 1 = -1
    assert not cs.first_unsatisfied(cs.witness(), (back.a, back.b, back.c))


def test_wtns_round_trip_with_edge_values(tmp_path):
    values = [1, 0, 1, R - 1, R - 2, 2**255 % R] + [random.randrange(R) for _ in range(50)]
    sj.write_wtns(tmp_path / "w.wtns", values)
    assert Fr.to_ints(sj.read_wtns(tmp_path / "w.wtns")) == values


def test_json_round_trips_random_points():
    rng = np.random.default_rng()
    proof = Proof(G1.random(1, rng)[0], G2.random(1, rng)[0], G1.random(1, rng)[0])
    assert sj.read_proof_json(json.loads(json.dumps(sj.proof_to_json(proof)))) == proof
    vk = sj.read_zkey(DATA / "circuit.zkey").vk
    back = sj.read_vk_json(sj.vk_to_json(vk))
    for name in ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic"):
        assert np.array_equal(getattr(back, name), getattr(vk, name))
    identity = sj.read_proof_json({"pi_a": ["0", "1", "0"], "pi_b": [["0", "0"], ["1", "0"], ["0", "0"]],
                                   "pi_c": sj.proof_to_json(proof)["pi_c"]})
    assert not identity.a.any() and not identity.b.any()
    public = [0, 1, R - 1]
    assert sj.read_public_json(sj.public_to_json(public)) == public


# ---------------------------------------------------------------- bad input
def _patched(tmp_path, name: str, offset: int, data: bytes | None = None) -> Path:
    """A copy of a fixture with `data` written at `offset` (default: its low bit flipped)."""
    path = tmp_path / name
    shutil.copy(DATA / name, path)
    raw = bytearray(path.read_bytes())
    data = bytes([raw[offset] ^ 1]) if data is None else data
    raw[offset:offset + len(data)] = data
    path.write_bytes(bytes(raw))
    return path


def test_bad_binary_files(tmp_path):
    with pytest.raises(SnarkjsFormatError, match="not a r1cs"):
        sj.read_r1cs(DATA / "circuit.wtns")
    with pytest.raises(SnarkjsFormatError, match="not BLS12-381"):  # prime: section 1 starts at 24
        sj.read_wtns(_patched(tmp_path, "circuit.wtns", 28, b"\x02"))
    with pytest.raises(SnarkjsFormatError, match="not below r"):
        sj.read_wtns(_patched(tmp_path, "circuit.wtns", 812 - 32, R.to_bytes(32, "little")))
    truncated = tmp_path / "t.r1cs"
    truncated.write_bytes((DATA / "circuit.r1cs").read_bytes()[:-10])
    with pytest.raises(SnarkjsFormatError, match="past the end"):
        sj.read_r1cs(truncated)
    with pytest.raises(SnarkjsFormatError, match="ends inside constraint 13"):  # header claims 14 rows
        sj.read_r1cs(_patched(tmp_path, "circuit.r1cs", 84, (14).to_bytes(4, "little")))
    zkey = (DATA / "circuit.zkey").read_bytes()
    h_at = zkey.index(bytes(sj._read_bin(DATA / "circuit.zkey", b"zkey", 1)[9])[:96])
    with pytest.raises(SnarkjsFormatError, match="H point 0"):
        sj.read_zkey(_patched(tmp_path, "circuit.zkey", h_at))
    with pytest.raises(SnarkjsFormatError, match="not a zkey"):
        sj.read_zkey(DATA / "circuit.r1cs")
    with pytest.raises(InputError, match="toxic waste"):
        sj.write_zkey(tmp_path / "z.zkey", fixture_circuit()[0], 0, 1, 2, 3, 4)


def test_bad_json():
    proof = json.loads((DATA / "snarkjs_proof.json").read_text())
    with pytest.raises(SnarkjsFormatError, match="curve"):
        sj.read_proof_json({**proof, "curve": "bn128"})
    with pytest.raises(SnarkjsFormatError, match="pi_a: not a point"):
        sj.read_proof_json({**proof, "pi_a": [proof["pi_a"][0], "5", "1"]})
    with pytest.raises(SnarkjsFormatError, match="affine"):
        sj.read_proof_json({**proof, "pi_a": [*proof["pi_a"][:2], "2"]})
    with pytest.raises(SnarkjsFormatError, match="missing"):
        sj.read_proof_json({"pi_a": proof["pi_a"]})
    with pytest.raises(SnarkjsFormatError, match="out of range"):
        sj.read_public_json([str(R)])
    with pytest.raises(SnarkjsFormatError, match="cannot read JSON"):
        sj.read_vk_json(DATA / "missing.json")
