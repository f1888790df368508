"""The CUDA kernel modules without a GPU: the loader's table, sources and cache keys, and a compile
check of every module for every supported architecture with nvcc (the generated headers: test_codegen).

The compile check uses the loader's inlined source and options (loader.nvcc_command) without
optimisation (front end and ptxas still see every line, inline PTX included, in seconds). The default
run compiles for the oldest and the newest architecture (DEFAULT_ARCHS); the others, and the optimised
build for sm_90 as the device runs it, are marked slow. Skips when nvcc is missing.
"""
from __future__ import annotations

import importlib.resources
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.backend.cuda import loader

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_120")
DEFAULT_ARCHS = ("sm_80", max(ARCHS, key=lambda a: int(a.removeprefix("sm_"))))  # 2 of the 5 compiles a module
UNOPTIMISED = ("-Xcicc", "-O0", "-Xptxas", "-O0")
SPILLS = ("msm_g2_accum", "msm_g2_precompute")  # G2 at 255 registers spilled before the split too
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _kernel_files() -> set[str]:
    root = importlib.resources.files(loader.__package__).joinpath("kernels")
    out = set()

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            else:
                out.add(f"{prefix}{child.name}")

    walk(root, "")
    return out


def test_table_covers_every_source() -> None:
    files = _kernel_files()
    assert {m.path for m in loader.MODULES.values()} == {f for f in files if f.endswith(".cu")}
    assert len(loader.KERNELS) == sum(len(m.kernels) for m in loader.MODULES.values()), "a kernel in two modules"
    for name in loader.MODULES:
        assert '#include "' not in loader.source(name)
    assert loader.MAX_MULTIPLES == 16


def test_every_header_is_included_somewhere() -> None:
    included = set()
    for m in loader.MODULES.values():
        stack = [m.path]
        while stack:
            rel = stack.pop()
            if rel not in included:
                included.add(rel)
                stack += re.findall(r'^#include "([^"]+)"', loader._read(rel), re.M)
    assert included == _kernel_files()


def test_cache_key_changes_with_arch_version_and_module() -> None:
    key = loader.cache_key("ntt", "sm_90", (13, 0))
    assert key != loader.cache_key("ntt", "sm_89", (13, 0))
    assert key != loader.cache_key("ntt", "sm_90", (12, 8))
    assert key != loader.cache_key("msm_scalars", "sm_90", (13, 0))
    assert key == loader.cache_key("ntt", "sm_90", (13, 0))
    assert loader.cubin_path("ntt", "sm_90", (13, 0)).name == f"ntt-sm_90-{key}.cubin"


def test_cache_dir_precedence(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CUZK_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert loader.cache_dir() == tmp_path / "home" / ".cache" / "cuzk" / "kernels"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert loader.cache_dir() == tmp_path / "xdg" / "cuzk" / "kernels"
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "own"))
    assert loader.cache_dir() == tmp_path / "own" / "kernels"


def test_unknown_kernel_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no CUDA kernel"):
        loader.function("no_such_kernel")


def _nvcc(name: str, arch: str, tmp_path: Path, extra: tuple[str, ...]) -> subprocess.CompletedProcess:
    src, out = tmp_path / f"{name}.cu", tmp_path / f"{name}.cubin"
    src.write_text(loader.source(name))
    res = subprocess.run(loader.nvcc_command(src, out, arch, ("-Xptxas", "-v", *extra)), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert out.stat().st_size > 0
    return res


def _entries(ptxas_log: str) -> set[str]:
    return set(re.findall(r"Compiling entry function '(\w+)'", ptxas_log))


@needs_nvcc
@pytest.mark.parametrize("arch", [a if a in DEFAULT_ARCHS else pytest.param(a, marks=pytest.mark.slow) for a in ARCHS])
@pytest.mark.parametrize("name", sorted(loader.MODULES))
def test_module_compiles(name: str, arch: str, tmp_path: Path) -> None:
    res = _nvcc(name, arch, tmp_path, UNOPTIMISED)
    assert _entries(res.stderr) == set(loader.MODULES[name].kernels)


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(loader.MODULES))
def test_module_compiles_optimised(name: str, tmp_path: Path) -> None:
    res = _nvcc(name, "sm_90", tmp_path, ())
    assert _entries(res.stderr) == set(loader.MODULES[name].kernels)
    assert "warning" not in res.stderr.lower(), res.stderr
    if name not in SPILLS:
        assert not re.search(r"[1-9]\d* bytes spill stores", res.stderr), res.stderr


@needs_nvcc
def test_build_fills_the_cache_once(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    (first,) = loader.build(["msm_scalars"], ["sm_90"], "nvcc")
    assert not first.cached and first.path.parent == tmp_path / "kernels" and first.path.stat().st_size > 0
    (again,) = loader.build(["msm_scalars"], ["sm_90"], "nvcc")
    assert again.cached and again.path == first.path


def test_gpu_commands_without_a_gpu(capsys) -> None:
    from cuzk.backend.cuda import device
    from cuzk.cli import main

    if device.cuda_available():
        pytest.skip("a GPU is visible")
    assert main(["gpu", "info"]) == 1
    assert main(["gpu", "build"]) == 2  # no GPU and no --arch: a CuzkError
    with pytest.raises(SystemExit):
        main(["gpu", "build", "--arch", "90"])
    assert "sm_90" in capsys.readouterr().err
