"""upload_params (cuzk.groth16.params_device, cuzk.backend.cuda.points): a .params file streamed to the
GPU and decoded there equals read_params' decode, point for point, and a bad point raises read_params'
error.

Without a GPU: the whole driver (chunks, offsets, the two pinned buffers, concurrent reads, the bad
point's index, the encoder's chunks) against Python emulations of the kernels written from the
comments of kernels/params/points.cu, numpy standing in for CuPy. On the GPU (marked): the real
kernels on files of small circuits, every kind of corrupt point in G1 and G2, proofs with the
uploaded vectors, and their export equal to the file they came from."""
from __future__ import annotations

import os
from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.backend.cuda import CudaBackend
from cuzk.backend.cuda import points as points_cuda
from cuzk.ec import encoding
from cuzk.ec.curves import G1, G2
from cuzk.errors import CuzkError, InputError, ParamsFormatError, VramBudgetError
from cuzk.ff.fields import Fr
from cuzk.groth16 import prove, read_params, verify, write_params
from cuzk.groth16.keys import PARAMS_VECTORS
from cuzk.groth16.params import encode_points
from cuzk.groth16.params_device import upload_params

from groth16.test_params import section_offsets  # tests/ is on the path

CURVES = {"g1": G1, "g2": G2}
SIZE = {"g1": 96, "g2": 192}
P_BYTES = (0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
           ).to_bytes(48, "big")
gpu = pytest.mark.gpu


@pytest.fixture(scope="module")
def params_file(keyed, tmp_path_factory):
    path = tmp_path_factory.mktemp("params") / "circuit.params"
    write_params(path, keyed[1])
    return path


def corrupt(data: bytes, at: int, size: int, kind: str) -> bytes:
    """`data` with the point at byte `at` (`size` bytes) made bad in one way."""
    bad = bytearray(data)
    half = size // 2
    if kind == "off_curve":
        bad[at + size - 1] ^= 1
    elif kind in ("compressed", "sign", "infinity"):
        bad[at] |= {"compressed": 0x80, "sign": 0x20, "infinity": 0x40}[kind]
    elif kind == "identity":
        bad[at:at + size] = b"\x40" + bytes(size - 1)
    elif kind == "zero":
        bad[at:at + size] = bytes(size)
    elif kind == "x_is_p":  # the first Fq of x (c1 in G2) equal to p
        bad[at:at + 48] = P_BYTES
    elif kind == "y_above_p":
        bad[at + half:at + half + 48] = b"\x1f" + b"\xff" * 47
    return bytes(bad)


KINDS = ("off_curve", "compressed", "sign", "infinity", "identity", "zero", "x_is_p", "y_above_p")


def host_error(path, name: str) -> ParamsFormatError:
    with pytest.raises(ParamsFormatError) as err:
        read_params(path, checked=False).vector(name)
    return err.value


# ---------------------------------------------------------------- without a GPU: emulated kernels
class _Stream:
    ptr = 0

    def __init__(self, **_kw) -> None:
        pass

    def wait_event(self, _event) -> None:
        pass

    def record(self):
        return SimpleNamespace(synchronize=lambda: None)

    def synchronize(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_exc) -> bool:
        return False


def _decode_kernel(group: str):
    """params_decode_<group>: out[i] = the point at raw[i] for i < n; a bad one (any reason the host
    decoder refuses, or the identity) lowers bad[0] to first + i and is stored as zeros."""
    curve, size = CURVES[group], SIZE[group]

    def run(grid, block, args):
        raw, n, first, out, bad = args
        assert grid[0] * block[0] >= int(n) and len(out) == int(n)
        for i in range(int(n)):
            try:
                pt = encoding.decode(curve, raw[i * size:(i + 1) * size].tobytes(), compressed=False,
                                     check_subgroup=False)[0]
            except CuzkError:
                pt = None
            if pt is None or not pt.any():
                bad[0] = min(int(bad[0]), int(first) + i)
                out[i] = 0
            else:
                out[i] = pt
    return run


def _encode_kernel(group: str):
    """params_encode_<group>: raw[i] = the encoding of pts[i] for i < n."""
    def run(grid, block, args):
        pts, n, raw = args
        assert grid[0] * block[0] >= int(n)
        data = encoding.encode(CURVES[group], pts[:int(n)], compressed=False)
        raw[:len(data)] = np.frombuffer(data, np.uint8)
    return run


KERNELS = {f"params_{op}_{g}": make(g) for g in ("g1", "g2")
           for op, make in (("decode", _decode_kernel), ("encode", _encode_kernel))}


@pytest.fixture
def emulated(monkeypatch) -> CudaBackend:
    """A CudaBackend whose CuPy is numpy and whose kernels are the emulations above."""
    fake = SimpleNamespace(uint8=np.uint8, uint64=np.uint64, empty=np.empty, full=np.full,
                           ascontiguousarray=np.ascontiguousarray,
                           cuda=SimpleNamespace(Stream=_Stream, get_current_stream=_Stream))
    monkeypatch.setattr(points_cuda, "cupy", lambda: fake)
    monkeypatch.setattr(points_cuda, "_pinned", lambda n: np.full(n, 0xAA, np.uint8))
    monkeypatch.setattr(points_cuda, "_h2d", lambda dst, src, stream: dst.__setitem__(..., src))
    monkeypatch.setattr(points_cuda, "_d2h", lambda dst, src, stream: dst.__setitem__(..., src[:dst.nbytes]))
    monkeypatch.setattr(points_cuda, "_device", lambda x: nullcontext())
    monkeypatch.setattr(points_cuda.loader, "function", KERNELS.__getitem__)
    monkeypatch.setattr(CudaBackend, "_on_device", lambda self: nullcontext())
    return CudaBackend(device=0, vram_budget="1GiB")


@pytest.mark.parametrize("chunk_bytes, readers", [(1, 1), (7 * 96 + 5, 3), (None, 4)])
def test_upload_equals_read_params(emulated, keyed, params_file, chunk_bytes, readers):
    params = upload_params(params_file, emulated, chunk_bytes=chunk_bytes, readers=readers)
    assert params == keyed[1] and params.vk == read_params(params_file).vk


def test_the_first_bad_point_raises_the_host_error(emulated, keyed, params_file, tmp_path):
    data, offsets = params_file.read_bytes(), section_offsets(keyed[1])
    for name, size, kinds in (("l", 96, ("off_curve", "zero")), ("b_g2", 192, ("identity", "x_is_p"))):
        n = len(getattr(keyed[1], name))
        first, second = n // 3, n - 1  # in different chunks; the first in file order is reported
        at = offsets[name] + 4
        bad = corrupt(corrupt(data, at + second * size, size, kinds[0]), at + first * size, size, kinds[1])
        path = tmp_path / f"{name}.params"
        path.write_bytes(bad)
        with pytest.raises(ParamsFormatError) as err:
            upload_params(path, emulated, chunk_bytes=5 * size, readers=2)
        want = host_error(path, name)
        assert (str(err.value), err.value.offset) == (str(want), want.offset)
        assert f"{name}[{first}]" in str(err.value) and err.value.offset == at + first * size


def test_the_vectors_together_must_fit_the_vram_budget(emulated, keyed, params_file):
    total = sum(int(getattr(keyed[1], name).nbytes) for name in PARAMS_VECTORS)
    small = CudaBackend(device=0, vram_budget=total)  # each vector fits, all five with a chunk do not
    with pytest.raises(VramBudgetError, match="parameter points"):
        upload_params(params_file, small)
    assert upload_params(params_file, CudaBackend(device=0, vram_budget=2 * total)) == keyed[1]


def test_a_failing_read_propagates(emulated, params_file):
    calls = []

    def read_into(pos: int, view: memoryview) -> None:
        calls.append(pos)
        if len(calls) == 5:
            raise ParamsFormatError("f", pos, "truncated while open")
        view[:] = bytes(len(view))

    with pytest.raises(ParamsFormatError, match="truncated"):
        emulated.upload_points(read_into, 0, 40, "g1", chunk_bytes=96, readers=1)


def test_reads_drop_the_page_cache_behind_them(emulated, params_file, monkeypatch):
    dropped = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, off, n, advice: dropped.append((off, n, advice)))
    mapped = read_params(params_file, checked=False)
    upload_params(params_file, emulated, chunk_bytes=500, readers=3)
    covered = set()
    for off, n, advice in dropped:
        assert advice == os.POSIX_FADV_DONTNEED
        covered.update(range(off, off + n))
    sections = set()
    for name in PARAMS_VECTORS:
        off, count = mapped.section(name)
        sections.update(range(off, off + count * SIZE["g2" if name == "b_g2" else "g1"]))
    assert covered == sections
    dropped.clear()
    upload_params(params_file, emulated, drop_cache=False)
    assert dropped == []


@pytest.mark.parametrize("chunk_bytes", [1, 96 * 5 + 1, None])
def test_encoded_chunks_are_the_file_encoding(emulated, keyed, chunk_bytes):
    for vector, group in ((keyed[1].l, "g1"), (keyed[1].b_g2, "g2")):
        with_identity = np.concatenate([vector, np.zeros_like(vector[:1]), vector[:3]])
        got = b"".join(bytes(v) for v in emulated.encoded_points(with_identity, group, chunk_bytes))
        assert got == encode_points(CURVES[group], with_identity)
    assert list(emulated.encoded_points(keyed[1].l[:0], "g1")) == []
    with pytest.raises(InputError, match="g2 points"):
        list(emulated.encoded_points(keyed[1].l, "g2"))


def test_upload_needs_the_cuda_backend(params_file):
    with pytest.raises(InputError, match=r"decodes points on its device \(cuda\), not cpu"):
        upload_params(params_file, "cpu")


# ---------------------------------------------------------------- on the GPU
@gpu
@pytest.mark.parametrize("chunk_bytes", [96 * 7 + 5, None])
def test_gpu_upload_equals_read_params(keyed, params_file, chunk_bytes):
    import cupy as cp

    params = upload_params(params_file, chunk_bytes=chunk_bytes, readers=3)
    for name in PARAMS_VECTORS:
        vector = getattr(params, name)
        assert isinstance(vector, cp.ndarray) and vector.dtype == cp.uint64
        assert np.array_equal(cp.asnumpy(vector), getattr(keyed[1], name)), name
    assert params.vk == keyed[1].vk


@gpu
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_corrupt_points_raise_the_host_error(keyed, params_file, tmp_path, kind, rng):
    data, offsets = params_file.read_bytes(), section_offsets(keyed[1])
    for name, size in (("h", 96), ("b_g2", 192)):
        i = int(rng.integers(0, len(getattr(keyed[1], name))))
        path = tmp_path / f"{name}.params"
        path.write_bytes(corrupt(data, offsets[name] + 4 + i * size, size, kind))
        with pytest.raises(ParamsFormatError) as err:
            upload_params(path, chunk_bytes=4 * size)
        want = host_error(path, name)
        assert (str(err.value), err.value.offset) == (str(want), want.offset)


@gpu
def test_gpu_decode_and_encode_of_many_points(rng):
    """Random multiples (and the generators) through both kernels: decode equals the host decoder,
    encode gives the host encoding back."""
    cuda = get_backend("cuda")
    for curve, group in ((G1, "g1"), (G2, "g2")):
        pts = curve.to_affine(curve.scalar_mul(curve.generator(), Fr.to_ints(Fr.random(3000, rng)) + [1]))
        data = encode_points(curve, pts)

        def read_into(pos: int, view: memoryview) -> None:
            view[:] = data[pos:pos + len(view)]

        dev, bad = cuda.upload_points(read_into, 0, len(pts), group, chunk_bytes=1000 * SIZE[group])
        assert bad is None and np.array_equal(dev.get(), pts)
        assert b"".join(bytes(v) for v in cuda.encoded_points(dev, group, 700 * SIZE[group])) == data


@gpu
def test_gpu_uploaded_params_prove_and_export_the_same_file(keyed, params_file, tmp_path):
    from cuzk.porep.params_cache import export_params

    cs, _ = keyed
    params = upload_params(params_file)
    proof = prove(params, cs, backend=get_backend("cuda"))
    assert verify(params.vk, Fr.to_ints(cs.witness()[1:cs.num_inputs]), proof)
    files = export_params(params, tmp_path, "circuit")
    assert files.params.read_bytes() == params_file.read_bytes()
