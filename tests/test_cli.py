"""The `cuzk` command: version and the built-in selftest."""
import pytest

from cuzk import __version__
from cuzk.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_selftest_passes_on_cpu(capsys):
    assert main(["selftest", "--backend", "cpu", "--log-n", "4"]) == 0
    out = capsys.readouterr().out
    assert "5/5 checks passed" in out
    assert out.count(" ok ") == 5


def test_unknown_backend_is_rejected(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["selftest", "--backend", "tpu"])
    assert exit_info.value.code == 2
