"""export_params: parameters written under a cuzk- name in bellperson's layout read back point for point
and prove; stems that could name another file are refused; a failed export leaves no file behind.
On a GPU (marked): parameters of the GPU setup, vectors kept on the device, export equal to the CPU
setup's file."""
from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from cuzk.backend import get_backend
from cuzk.errors import InputError, ParamsCacheError
from cuzk.ff.fields import Fr
from cuzk.groth16 import Parameters, generate_parameters, prove, read_params, read_vk, verify, write_params
from cuzk.groth16 import params as params_io
from cuzk.groth16.synthetic import synthetic_circuit
from cuzk.porep import params_cache as P
from tests.permission_shim import deny_create

STEM = P.porep_stem(2 << 10)


@pytest.fixture(scope="module")
def keyed():
    rng = np.random.default_rng(16)
    cs = synthetic_circuit(40, 2, rng)
    toxic = [int(x) for x in rng.integers(2, 2**62, 5)]
    return cs, toxic, generate_parameters(cs, *toxic)


def names(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_export_reads_back_point_for_point_and_proves(keyed, tmp_path):
    cs, _, params = keyed
    files = P.export_params(params, tmp_path / "out", STEM)
    assert files.params == tmp_path / "out" / f"cuzk-{STEM}.params" and not files.official
    assert names(tmp_path / "out") == [f"cuzk-{STEM}.params", f"cuzk-{STEM}.vk"]
    back = read_params(files.params)
    assert back.load() == params and read_vk(files.vk) == params.vk
    proof = prove(back, cs, backend=get_backend("cpu"))
    assert verify(read_vk(files.vk), Fr.to_ints(cs.witness()[1:cs.num_inputs]), proof)
    again = tmp_path / "again.params"
    write_params(again, back)
    assert again.read_bytes() == files.params.read_bytes()


@pytest.mark.parametrize("stem", ["", "a/b", f"../{STEM}", f"x/../../{STEM}", "a\0b", f"cuzk-{STEM}", 7])
def test_stems_that_could_name_another_file_are_refused(keyed, tmp_path, stem):
    with pytest.raises(InputError, match="stem"):
        P.export_params(keyed[2], tmp_path, stem)
    assert names(tmp_path) == []


def test_an_old_record_is_removed_first(keyed, tmp_path):
    (tmp_path / f"cuzk-{STEM}.meta").write_text("{}")
    P.export_params(keyed[2], tmp_path, STEM)
    assert f"cuzk-{STEM}.meta" not in names(tmp_path)


class Failing:
    """A query vector whose chunks after the first `good` points raise, as a device copy might."""

    def __init__(self, points: np.ndarray, good: int) -> None:
        self.points, self.good = points, good

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, s: slice) -> np.ndarray:
        if s.start >= self.good:
            raise RuntimeError("vector failed midway")
        return self.points[s]


def test_vectors_failing_midway_leave_no_file(keyed, tmp_path, monkeypatch):
    params = keyed[2]
    P.export_params(params, tmp_path, STEM)  # an older pair: removed too, not left half replaced
    monkeypatch.setattr(params_io, "_CHUNK", 4)
    bad = Parameters(params.vk, params.h, Failing(params.l, 8), params.a, params.b_g1, params.b_g2)
    with pytest.raises(RuntimeError, match="midway"):
        P.export_params(bad, tmp_path, STEM)
    assert names(tmp_path) == []


def test_a_failing_vk_write_removes_the_new_params(keyed, tmp_path, monkeypatch):
    def full(path, vk):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(P, "write_vk", full)
    with pytest.raises(ParamsCacheError, match="No space left"):
        P.export_params(keyed[2], tmp_path, STEM)
    assert names(tmp_path) == []


def test_a_directory_below_a_file_is_a_typed_error(keyed, tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ParamsCacheError, match=str(tmp_path / "f")):
        P.export_params(keyed[2], tmp_path / "f" / "out", STEM)


def test_a_read_only_directory_is_a_typed_error(keyed, tmp_path, monkeypatch):
    """No file can be created in the directory (mode 0o500, injected so that it holds for root too)."""
    locked = tmp_path / "ro"
    locked.mkdir()
    deny_create(monkeypatch, locked)
    with pytest.raises(ParamsCacheError, match="Permission denied") as e:
        P.export_params(keyed[2], locked, STEM)
    assert e.value.path == str(locked / f"cuzk-{STEM}.params")
    assert names(locked) == []


@pytest.mark.gpu
def test_gpu_setup_kept_on_the_device_exports_the_cpu_file(keyed, tmp_path, monkeypatch):
    """The GPU setup's vectors stay on the device and are encoded there (in chunks of a few points,
    so several per vector); the file equals the one of the CPU setup with the same toxic waste."""
    from cuzk.backend.cuda import points as points_cuda
    from cuzk.groth16.setup_device import generate_parameters_on

    cs, toxic, params = keyed
    on_gpu = generate_parameters_on("cuda", cs, *toxic, keep_on_device=True)
    assert type(on_gpu.l).__module__.startswith("cupy")
    monkeypatch.setattr(points_cuda, "CHUNK_BYTES", 7 * 192)
    files = P.export_params(on_gpu, tmp_path, STEM)
    write_params(tmp_path / "cpu.params", params)
    assert files.params.read_bytes() == (tmp_path / "cpu.params").read_bytes()
    assert read_vk(files.vk) == params.vk
