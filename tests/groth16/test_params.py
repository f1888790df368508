"""bellperson .params / .vk files and 192-byte proofs: round trips, layout, typed errors with offsets."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from cuzk.errors import ParamsFormatError, ProofFormatError
from cuzk.groth16 import (PROOF_BYTES, Proof, prove, read_params, read_vk, verify, vk_from_bytes,
                          vk_to_bytes, write_params, write_vk)

VK_HEAD = 3 * 96 + 3 * 192  # alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2


@pytest.fixture(scope="module")
def params_file(keyed, tmp_path_factory):
    path = tmp_path_factory.mktemp("params") / "circuit.params"
    write_params(path, keyed[1])
    return path


def section_offsets(params) -> dict[str, int]:
    """Byte offset of each vector's u32 length in a .params file (bellperson's layout)."""
    offset, out = VK_HEAD + 4 + 96 * len(params.vk.ic), {}
    for name, size in (("h", 96), ("l", 96), ("a", 96), ("b_g1", 96), ("b_g2", 192)):
        out[name] = offset
        offset += 4 + size * len(getattr(params, name))
    out["end"] = offset
    return out


def test_params_round_trip_and_layout(keyed, params_file, cpu):
    cs, params = keyed
    data = params_file.read_bytes()
    offsets = section_offsets(params)
    assert len(data) == offsets["end"]
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        assert struct.unpack_from(">I", data, offsets[name])[0] == len(getattr(params, name))
    assert data[:VK_HEAD + 4 + 96 * len(params.vk.ic)] == vk_to_bytes(params.vk)
    assert data[0] & 0xE0 == 0  # uncompressed, not infinity
    mapped = read_params(params_file)
    assert mapped.lengths() == params.lengths()
    assert mapped.vk == params.vk
    assert "h" not in vars(mapped)  # nothing decoded yet
    assert mapped.load() == params
    proof = prove(mapped, cs, backend=cpu)
    assert verify(read_params(params_file, checked=False).vk, cs.witness()[1:cs.num_inputs], proof)
    mapped.close()


def test_vk_file_round_trip(keyed, tmp_path):
    vk = keyed[1].vk
    write_vk(tmp_path / "c.vk", vk)
    assert read_vk(tmp_path / "c.vk") == vk
    assert [p.name for p in tmp_path.iterdir()] == ["c.vk"]  # the temporary file was renamed
    with pytest.raises(ParamsFormatError, match="trailing"):
        vk_from_bytes(vk_to_bytes(vk) + b"\0")


def test_truncated_params(params_file, keyed, tmp_path, rng):
    data = params_file.read_bytes()
    offsets = section_offsets(keyed[1])
    cases = {1: 0, VK_HEAD + 2: VK_HEAD, offsets["l"] + 3: offsets["l"], offsets["b_g2"] + 4 + 100: offsets["b_g2"] + 4,
             len(data) - 1: offsets["b_g2"] + 4}
    cut = int(rng.integers(offsets["a"] + 4, offsets["b_g1"]))
    cases[cut] = offsets["a"] + 4 if cut >= offsets["a"] + 4 else offsets["a"]
    for length, offset in cases.items():
        bad = tmp_path / "bad.params"
        bad.write_bytes(data[:length])
        with pytest.raises(ParamsFormatError, match="truncated") as err:
            read_params(bad)
        assert err.value.offset == offset and str(bad) in str(err.value)
    bad.write_bytes(data + b"\0\0")
    with pytest.raises(ParamsFormatError, match="trailing") as err:
        read_params(bad)
    assert err.value.offset == len(data)


def test_corrupt_point_names_its_offset(params_file, keyed, tmp_path, rng):
    data = params_file.read_bytes()
    offsets = section_offsets(keyed[1])
    for name, size in (("l", 96), ("b_g2", 192)):
        i = int(rng.integers(0, len(getattr(keyed[1], name))))
        at = offsets[name] + 4 + i * size
        bad = bytearray(data)
        bad[at + size - 1] ^= 1  # the last byte of y: off the curve
        path = tmp_path / "bad.params"
        path.write_bytes(bytes(bad))
        mapped = read_params(path)  # lazily: the vector is only decoded when used
        with pytest.raises(ParamsFormatError) as err:
            getattr(mapped, name)
        assert err.value.offset == at and f"{name}[{i}]" in str(err.value)
    h1 = offsets["h"] + 4 + 96  # h[1]
    for patch, reason in ((b"\x40", "infinity"), (b"\x1f" + b"\xff" * 47, "not below p")):
        bad = bytearray(data)
        bad[h1:h1 + len(patch)] = bytes(x | y for x, y in zip(bad[h1:h1 + len(patch)], patch))
        path.write_bytes(bytes(bad))
        with pytest.raises(ParamsFormatError, match=reason) as err:
            read_params(path).h
        assert err.value.offset == h1 and "h[1]" in str(err.value)


def test_proof_bytes(keyed, cpu):
    cs, params = keyed
    proof = prove(params, cs, backend=cpu)
    data = proof.to_bytes()
    assert len(data) == PROOF_BYTES and all(data[i] & 0x80 for i in (0, 48, 144))  # compressed flags
    assert Proof.from_bytes(data) == proof
    for bad in (data[:-1], data + b"\0", bytes(48) + data[48:], data[:48] + b"\xc0" + bytes(95) + data[144:]):
        with pytest.raises(ProofFormatError):
            Proof.from_bytes(bad)
    assert not np.array_equal(proof.a, prove(params, cs, backend=cpu).a)  # fresh blinding each time


@pytest.mark.parametrize("keep", [True, False])
def test_vectors_are_kept_only_when_asked(keyed, params_file, keep):
    """keep: a vector decoded once and the same array after; without: decoded on each access (a prover
    taking one vector per MSM then holds one at a time), equal values either way."""
    params = keyed[1]
    mapped = read_params(params_file, checked=False, keep=keep)
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        first, again = getattr(mapped, name), mapped.vector(name)
        assert np.array_equal(first, getattr(params, name)) and np.array_equal(again, first)
        assert (again is first) == keep
    assert mapped.lengths() == params.lengths()
