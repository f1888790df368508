"""Regression tests for bad Groth16 input: identity points where bellperson refuses them,
files that change while open (in a subprocess, so that a SIGBUS would show), unreadable paths and
wrong Python types; every one a typed CuzkError."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

from cuzk.errors import (BytesTypeError, CuzkError, InputError, ParamsFormatError, ParamsReadError,
                         ProofFormatError)
from cuzk.groth16 import (PROOF_BYTES, Proof, prove, read_params, read_vk, verify, verify_batch, vk_from_bytes,
                          vk_to_bytes, write_params)
from cuzk.util.atomic import atomic_write

G1_SIZE, G2_SIZE = 96, 192
VK_FIELDS = {"alpha_g1": (0, G1_SIZE), "beta_g1": (96, G1_SIZE), "beta_g2": (192, G2_SIZE),
             "gamma_g2": (384, G2_SIZE), "delta_g1": (576, G1_SIZE), "delta_g2": (672, G2_SIZE)}
IC_LENGTH = 864  # byte offset of ic's u32 length
VECTORS = {"h": G1_SIZE, "l": G1_SIZE, "a": G1_SIZE, "b_g1": G1_SIZE, "b_g2": G2_SIZE}
WRONG_TYPES = [None, "x" * PROOF_BYTES, list(range(PROOF_BYTES)), PROOF_BYTES, 1.5, object(),
               np.zeros(PROOF_BYTES, np.uint8)]


def identity(size: int) -> bytes:
    """The canonical uncompressed identity: the infinity flag, every other bit zero."""
    return b"\x40" + bytes(size - 1)


def sections(params) -> dict[str, tuple[int, int]]:
    """(byte offset of the points, points) of ic and each params vector, in bellperson's layout."""
    out, offset = {"ic": (IC_LENGTH + 4, len(params.vk.ic))}, IC_LENGTH + 4 + G1_SIZE * len(params.vk.ic)
    for name, size in VECTORS.items():
        out[name] = (offset + 4, len(getattr(params, name)))
        offset += 4 + size * len(getattr(params, name))
    return out


def patched(data: bytes, at: int, patch: bytes) -> bytes:
    return data[:at] + patch + data[at + len(patch):]


@pytest.fixture(scope="module")
def files(keyed, tmp_path_factory):
    """(params, .params bytes, .vk bytes) of the module's circuit."""
    params = keyed[1]
    path = tmp_path_factory.mktemp("good") / "c.params"
    write_params(path, params)
    return params, path.read_bytes(), vk_to_bytes(params.vk)


def test_zero_bytes_in_vk_fields_refused(files, tmp_path):
    _, params_data, vk_data = files
    for name, (at, size) in VK_FIELDS.items():
        for suffix, data, reader in ((".vk", vk_data, read_vk), (".params", params_data, read_params)):
            path = tmp_path / f"zero_{name}{suffix}"
            path.write_bytes(patched(data, at, bytes(size)))
            with pytest.raises(ParamsFormatError, match="all-zero") as err:
                reader(path)
            assert err.value.offset == at and name in str(err.value) and str(path) in str(err.value)


def test_identity_in_vk_fields_as_bellperson(files, tmp_path):
    """bellperson's VerifyingKey::read accepts the identity in alpha..delta; its prover refuses delta."""
    params, params_data, vk_data = files
    for name, (at, size) in VK_FIELDS.items():
        vk_path, params_path = tmp_path / f"inf_{name}.vk", tmp_path / f"inf_{name}.params"
        vk_path.write_bytes(patched(vk_data, at, identity(size)))
        params_path.write_bytes(patched(params_data, at, identity(size)))
        vk = read_vk(vk_path)
        assert not getattr(vk, name).any() and np.array_equal(vk.ic, params.vk.ic)
        if name.startswith("delta"):
            with pytest.raises(ParamsFormatError, match=f"{name} is the point at infinity") as err:
                read_params(params_path)
            assert err.value.offset == at
        else:
            loaded = read_params(params_path)
            assert not getattr(loaded.vk, name).any()
            loaded.close()


def test_identity_in_query_vectors_refused(files, tmp_path, rng):
    """bellperson refuses the identity in ic (VerifyingKey::read) and in h, l, a, b_g1, b_g2
    (Parameters::read); canonical identity and all-zero bytes alike."""
    params, params_data, vk_data = files
    for name, (start, count) in sections(params).items():
        size = VECTORS.get(name, G1_SIZE)
        i = int(rng.integers(0, count))
        at = start + i * size
        for bad, reason in ((identity(size), "is the point at infinity"), (bytes(size), "all-zero")):
            path = tmp_path / f"{name}.params"
            path.write_bytes(patched(params_data, at, bad))
            with pytest.raises(ParamsFormatError, match=reason) as err:
                getattr(read_params(path), name) if name != "ic" else read_params(path)
            assert err.value.offset == at and f"{name}[{i}]" in str(err.value)
            if name == "ic":
                with pytest.raises(ParamsFormatError, match=reason) as err:
                    vk_from_bytes(patched(vk_data, at, bad))
                assert err.value.offset == at


def test_huge_length_fails_before_allocating(files, tmp_path):
    params, params_data, vk_data = files
    cases = {"ic": (vk_data, IC_LENGTH),
             **{name: (params_data, sections(params)[name][0] - 4) for name in VECTORS}}
    for name, (data, at) in cases.items():
        path = tmp_path / f"huge_{name}"
        path.write_bytes(patched(data, at, struct.pack(">I", 0xFFFFFFFF)))
        tracemalloc.start()
        try:
            with pytest.raises(ParamsFormatError, match="truncated") as err:
                read_params(path) if data is params_data else read_vk(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert err.value.offset == at + 4 and name in str(err.value)
        assert peak < len(data) + (1 << 20)


TRUNCATE_WHILE_OPEN = textwrap.dedent("""
    import os, sys
    from cuzk.errors import ParamsFormatError
    from cuzk.groth16 import read_params
    path, cut = sys.argv[1], int(sys.argv[2])
    params = read_params(path)
    os.truncate(path, cut)
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        try:
            getattr(params, name)
        except ParamsFormatError as e:
            print("ParamsFormatError", name, e.offset, e)
            break
    else:
        print("read everything")
""")


def test_params_truncated_while_open_is_a_typed_error(files, tmp_path, rng):
    """A memory-mapped file truncated underneath raised SIGBUS on the next read; run in a subprocess so
    that a signal shows as a negative return code."""
    params, params_data, _ = files
    spans = sections(params)
    for name in ("h", str(rng.choice(["l", "a", "b_g1", "b_g2"]))):
        start, count = spans[name]
        cut = int(rng.integers(start, start + count * VECTORS[name]))
        path = tmp_path / f"cut_{name}.params"
        path.write_bytes(params_data)
        proc = subprocess.run([sys.executable, "-c", TRUNCATE_WHILE_OPEN, str(path), str(cut)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"return code {proc.returncode}: {proc.stderr[-2000:]}"
        words = proc.stdout.split()
        assert words[:3] == ["ParamsFormatError", name, str(cut)], proc.stdout
        assert "truncated while open" in proc.stdout and str(path) in proc.stdout


def test_params_replaced_while_open_reads_the_opened_file(files, tmp_path):
    """A file replaced by rename (as atomic_write does) while open: the open file is read, unchanged."""
    params, params_data, _ = files
    path = tmp_path / "c.params"
    path.write_bytes(params_data)
    loaded = read_params(path)
    atomic_write(path, b"not parameters")
    assert loaded.load() == params
    loaded.close()


def test_unreadable_paths_and_closed_files(files, tmp_path):
    _, params_data, _ = files
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "file").write_bytes(b"x")
    for path, reason in ((tmp_path / "missing", "cannot open"), (tmp_path, "not a regular file"),
                         (fifo, "not a regular file"), (tmp_path / "file" / "below", "cannot open")):
        for reader in (read_params, read_vk):
            with pytest.raises(ParamsReadError, match=reason) as err:
                reader(path)
            assert str(path) in str(err.value) and isinstance(err.value, OSError)
    for bad in (None, 5, ["c.params"]):
        with pytest.raises(InputError, match="path"):
            read_params(bad)
    path = tmp_path / "c.params"
    path.write_bytes(params_data)
    loaded = read_params(path)
    h = loaded.h
    loaded.close()
    assert loaded.h is h  # decoded before close: still usable
    with pytest.raises(ParamsReadError, match="after close"):
        loaded.l


def test_wrong_types_to_proof_and_vk_bytes(files, keyed, cpu):
    params, _, vk_data = files
    proof = prove(params, keyed[0], backend=cpu)
    data = proof.to_bytes()
    for bad in WRONG_TYPES:
        with pytest.raises(ProofFormatError, match=f"got {type(bad).__name__}"):
            Proof.from_bytes(bad)
        with pytest.raises(BytesTypeError):
            vk_from_bytes(bad)
    for bad in (memoryview(data)[:-1], memoryview(data + b"\0")):
        with pytest.raises(ProofFormatError, match=f"{PROOF_BYTES} bytes"):
            Proof.from_bytes(bad)
    assert Proof.from_bytes(memoryview(data)) == Proof.from_bytes(bytearray(data)) == proof
    assert vk_from_bytes(memoryview(vk_data)) == vk_from_bytes(bytearray(vk_data)) == params.vk


def test_wrong_types_to_verify(files, keyed, cpu):
    params, _, _ = files
    cs = keyed[0]
    inputs = cs.witness()[1:cs.num_inputs]
    proof = prove(params, cs, backend=cpu)
    calls = [lambda: verify(None, inputs, proof), lambda: verify(params, inputs, proof),
             lambda: verify(params.vk, None, proof), lambda: verify(params.vk, "12", proof),
             lambda: verify(params.vk, inputs, proof.to_bytes()), lambda: verify(params.vk, inputs, None),
             lambda: verify_batch(params.vk, 5, [proof]), lambda: verify_batch(params.vk, [inputs], None),
             lambda: verify_batch(params.vk, [inputs], [proof.to_bytes()])]
    for call in calls:
        with pytest.raises(InputError) as err:
            call()
        assert isinstance(err.value, CuzkError) and not isinstance(err.value, TypeError)
    assert verify(params.vk, inputs, proof) and verify_batch(params.vk, [inputs], [proof])
