"""Compile check of the CUDA NTT kernels (kernels/ntt.cu) without a GPU: nvcc, else NVRTC."""
import shutil
import subprocess

import pytest

from cuzk.backend.cuda.ntt import KERNEL_DIR, KERNEL_SOURCE

ENTRY_POINTS = ("ntt_pass", "fr_powers", "fr_twiddles", "fr_quotient")


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return None
    return nvrtc


@pytest.mark.skipif(shutil.which("nvcc") is None and _nvrtc() is None, reason="needs nvcc or NVRTC")
def test_ntt_kernels_compile(tmp_path):
    if shutil.which("nvcc"):
        cubin = tmp_path / "ntt.cubin"
        res = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-I", str(KERNEL_DIR),
                              str(KERNEL_SOURCE), "-o", str(cubin)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert "warning" not in res.stderr.lower(), res.stderr
        for name in ENTRY_POINTS:
            assert f"Compiling entry function '{name}'" in res.stderr
        assert res.stderr.count("0 bytes stack frame, 0 bytes spill stores") == len(ENTRY_POINTS), res.stderr
    else:
        nvrtc = _nvrtc()
        err, prog = nvrtc.nvrtcCreateProgram(KERNEL_SOURCE.read_bytes(), b"ntt.cu", 0, [], [])
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
        opts = [b"--std=c++17", b"-arch=sm_90", f"-I{KERNEL_DIR}".encode()]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            pytest.fail(log.decode(errors="replace"))
