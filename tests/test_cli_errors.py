"""`cuzk` never shows a traceback for bad input: each OSError kind on each path option, malformed C1 content,
and bad output paths (checked before the long work) give one stderr line `cuzk: error: ...` naming the
path and exit status 2; an internal error gives one line and status 3 (`--debug` shows the traceback).
Every case runs the real command in a subprocess."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from cuzk.porep.synthetic import synthetic_c1
from tests.permission_shim import cli_code



def cli(*args, code: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m cuzk.cli ARGS` (or `python -c CODE ARGS`), with an empty parameter cache."""
    cmd = [sys.executable, *(["-c", code] if code else ["-m", "cuzk.cli"]), *map(str, args)]
    env = {**os.environ, "CUZK_CACHE_DIR": os.devnull + "/cuzk-test-no-cache"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def one_line(done: subprocess.CompletedProcess, status: int = 2, prefix: str = "cuzk: error: ") -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A directory with a regular file `f`, a directory `d`, a valid 2KiB C1 `c1.json`."""
    base = tmp_path_factory.mktemp("cli-errors")
    (base / "f").write_text("x")
    (base / "d").mkdir()
    c1 = synthetic_c1("StackedDrg2KiBV1_1", prover_id=bytes(32), sector_id=1, ticket=bytes(32), seed=bytes(32),
                      rng=np.random.default_rng(5), progress=False)
    c1.write(base / "c1.json")
    return base


# kind -> (path below the files directory, strerror)
FILE_KINDS = {"missing": ("missing", "No such file or directory"), "directory": ("d", "Is a directory"),
              "below-a-file": ("f/x", "Not a directory")}
DIR_KINDS = {"missing": ("missing", "No such file or directory"), "a-file": ("f", "Not a directory"),
             "below-a-file": ("f/x", "Not a directory")}
INPUTS = {  # option -> the command with X for the path under test (other paths: a regular file)
    "prove --c1": ["prove", "--c1", "X"],
    "verify --c1": ["verify", "--c1", "X", "--proof", "f", "--vk", "f"],
    "verify --proof": ["verify", "--c1", "f", "--proof", "X", "--vk", "f"],
    "verify --vk": ["verify", "--c1", "f", "--proof", "f", "--vk", "X"],
    "seal --data": ["seal", "new-sector", "--data", "X"],
}


def _command(files, template, path):
    return [str(path) if a == "X" else str(files / a) if a in ("f", "new-sector") else a for a in template]


@pytest.mark.parametrize("kind", FILE_KINDS)
@pytest.mark.parametrize("option", INPUTS)
def test_input_file_errors(files, option, kind):
    sub, reason = FILE_KINDS[kind]
    path = files / sub
    line = one_line(cli(*_command(files, INPUTS[option], path)))
    assert line == f"cuzk: error: {option.split()[1]} {path}: {reason}"
    assert not (files / "new-sector").exists()


@pytest.mark.parametrize("kind", DIR_KINDS)
def test_parents_dir_errors(files, kind):
    sub, reason = DIR_KINDS[kind]
    line = one_line(cli("seal", files / "new-sector", "--parents-dir", files / sub))
    assert line == f"cuzk: error: --parents-dir {files / sub}: {reason}"


@pytest.mark.parametrize("option", [*INPUTS, "seal --parents-dir"])
def test_input_without_permission(files, tmp_path, option):
    """Mode 0, injected in the command's process (tests/permission_shim.py) so that it holds for root too."""
    locked = tmp_path / "locked"
    if option.endswith("--parents-dir"):
        locked.mkdir()
        template = ["seal", "new-sector", "--parents-dir", "X"]
    else:
        locked.write_text("{}")
        template = INPUTS[option]
    line = one_line(cli(*_command(files, template, locked), code=cli_code("read", locked)))
    assert line == f"cuzk: error: {option.split()[1]} {locked}: Permission denied"


@pytest.mark.parametrize("out,reason", [
    ("d", "is a directory"), ("f/x.proof", "cannot create files in {f}: Not a directory"),
    ("missing/x.proof", "cannot create files in {missing}: No such file or directory"),
], ids=["directory", "below-a-file", "missing-parent"])
def test_prove_output_is_checked_before_proving(files, out, reason):
    """A valid C1 whose proof would take minutes: a bad --out fails at once."""
    t = time.perf_counter()
    line = one_line(cli("prove", "--c1", files / "c1.json", "--out", files / out, "--backend", "cpu"))
    assert time.perf_counter() - t < 5
    assert line == f"cuzk: error: --out {files / out}: " + reason.format(f=files / "f", missing=files / "missing")


@pytest.mark.parametrize("args,reason", [
    (["{f}/sector"], "sector directory {f}/sector: cannot create files in {f}: Not a directory"),
    (["{f}/a/b/sector"], "sector directory {f}/a/b/sector: cannot create files in {f}: Not a directory"),
    (["{d}"], "sector directory {d}: already exists"),
    (["{d}/s", "--seed", "random", "--c1", "{d}"], "--c1 {d}: is a directory"),
    (["{d}/s", "--seed", "random", "--c1", "{f}/c1.json"],
     "--c1 {f}/c1.json: cannot create files in {f}: Not a directory"),
], ids=["below-a-file", "deep-below-a-file", "exists", "c1-directory", "c1-below-a-file"])
def test_seal_outputs_are_checked_before_sealing(files, args, reason):
    """An 8MiB seal takes far longer than 5 s: bad output paths fail before it starts."""
    fill = dict(f=files / "f", d=files / "d")
    t = time.perf_counter()
    line = one_line(cli("seal", *(a.format(**fill) for a in args), "--proof", "StackedDrg8MiBV1_1", "-q"))
    assert time.perf_counter() - t < 5
    assert line == "cuzk: error: " + reason.format(**fill)
    assert not (files / "d" / "s").exists()


def test_demo_dir_below_a_file(files):
    line = one_line(cli("demo", "--dir", files / "f" / "demo", "--backend", "cpu"))
    assert line.startswith(f"cuzk: error: --dir {files / 'f' / 'demo'}/sector: cannot create files in") \
        and line.endswith("Not a directory")


def test_outputs_in_a_directory_without_write_permission(files, tmp_path):
    """Mode 0o500, injected in the command's process (tests/permission_shim.py) so that it holds for root too."""
    locked = tmp_path / "ro"
    locked.mkdir()
    code = cli_code("create", locked)
    prove = one_line(cli("prove", "--c1", files / "c1.json", "--out", locked / "p.proof", code=code))
    seal = one_line(cli("seal", locked / "a" / "sector", "-q", code=code))
    assert not any(locked.iterdir())
    assert prove == f"cuzk: error: --out {locked / 'p.proof'}: cannot create files in {locked}: Permission denied"
    assert seal == f"cuzk: error: sector directory {locked / 'a' / 'sector'}: cannot create files in {locked}: " \
                   "Permission denied"


@pytest.mark.parametrize("content,expected", [
    (b"[" * 100_000 + b"]" * 100_000, "nested more than 32 levels deep at byte offset 32"),
    (b'{"registered_proof": ' + b"7" * 100_000 + b"}", "a number of more than 64 digits at byte offset 21"),
    (b"[1, 2]", "C1 field <top>: expected an object, got an array of 2"),
    (b"\xff", "not UTF-8 at byte offset 0"),
], ids=["deep", "huge-number", "array", "utf8"])
def test_malformed_c1(files, tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    for command in (["prove", "--c1", bad], ["verify", "--c1", bad, "--proof", files / "f"]):
        assert expected in one_line(cli(*command))
    assert not (tmp_path / "bad.proof").exists()


def test_huge_registered_proof_is_quoted_short(files, tmp_path):
    js = json.loads((files / "c1.json").read_text())
    js["registered_proof"] = "R" * 100_000_000
    (tmp_path / "big.json").write_text(json.dumps(js))
    line = one_line(cli("prove", "--c1", tmp_path / "big.json"))
    assert "unknown registered seal proof 'RRRR" in line and "(100,000,000 characters)" in line and len(line) < 300


def test_proof_file_too_large(files, tmp_path):
    big = tmp_path / "proof.bin"
    with open(big, "wb") as f:
        f.truncate(1 << 40)  # sparse
    line = one_line(cli("verify", "--c1", files / "c1.json", "--proof", big))
    assert line == f"cuzk: error: --proof {big}: 1,099,511,627,776 bytes, more than the 1,048,576 allowed"


RAISE = ("import sys, cuzk.cli as c, cuzk.cli.porep as porep\ndef boom(args):\n    raise {exc}\nporep._prove = boom\n"
         "sys.exit(c.main(sys.argv[1:]))")


def test_internal_error_is_one_line_and_debug_shows_the_traceback(files):
    code = RAISE.format(exc="KeyError('x' * 100_000)")
    line = one_line(cli("prove", "--c1", files / "c1.json", code=code), 3, "cuzk: internal error (a bug in cuzk): ")
    assert "KeyError" in line and "--debug" in line and len(line) < 1100
    debug = cli("--debug", "prove", "--c1", files / "c1.json", code=code)
    assert debug.returncode == 3 and "Traceback" in debug.stderr and debug.stderr.splitlines()[-1] == line


def test_typed_error_with_debug(files, tmp_path):
    """--debug prints the traceback, then the same line and status."""
    done = cli("--debug", "prove", "--c1", files / "missing.json")
    assert done.returncode == 2 and "Traceback" in done.stderr
    assert done.stderr.splitlines()[-1] == f"cuzk: error: --c1 {files / 'missing.json'}: No such file or directory"
    (tmp_path / "bad.json").write_text("[]")
    done = cli("--debug", "prove", "--c1", tmp_path / "bad.json")
    assert done.returncode == 2 and "Traceback" in done.stderr and "C1FormatError" in done.stderr


def test_oserror_inside_the_work_is_one_line(files):
    code = RAISE.format(exc="PermissionError(13, 'Permission denied', '/some/cache/file')")
    assert one_line(cli("prove", "--c1", files / "c1.json", code=code)) == \
        "cuzk: error: /some/cache/file: Permission denied"


def test_interrupt(files):
    done = cli("prove", "--c1", files / "c1.json", code=RAISE.format(exc="KeyboardInterrupt"))
    assert done.returncode == 130 and done.stderr == "cuzk: interrupted\n"


def test_help_documents_the_exit_statuses():
    out = cli("--help").stdout
    assert "exit status:" in out and all(f"\n  {code} " in out for code in (0, 1, 2, 3, 130)) and "--debug" in out


@pytest.mark.parametrize("value", [" ".join(["00"] * 32), "00" * 31 + " 0", "0x" + "00" * 31, "g" * 64],
                         ids=["spaced", "space-inside", "short", "not-hex"])
def test_hex_options_need_exactly_64_hex_digits(tmp_path, value):
    """bytes.fromhex takes spaces: --prover-id / --ticket / --seed must be 64 hex digits, nothing else."""
    for option in ("--prover-id", "--ticket", "--seed"):
        done = cli("seal", tmp_path / "s", option, value)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"argument {option}:" in done.stderr.splitlines()[-1]
    assert not (tmp_path / "s").exists()


def test_fifo_input_is_refused_not_waited_on(files, tmp_path):
    os.mkfifo(tmp_path / "fifo")
    t = time.perf_counter()
    assert "not a regular file" in one_line(cli("prove", "--c1", tmp_path / "fifo", timeout=30))
    assert time.perf_counter() - t < 30


@pytest.mark.parametrize("args", [["seal", "s", "--proof", "R" * 5000], ["seal", "s", "--sector-id", "9" * 5000],
                                  ["selftest", *["x"] * 2000]], ids=["choice", "int", "many-words"])
def test_usage_errors_quote_huge_arguments_short(args):
    """argparse echoes a bad value in full; cuzk's parser cuts it (still usage, then one line, exit 2)."""
    done = cli(*args)
    lines = done.stderr.splitlines()
    message = lines[-1].split(" (choose from ")[0]  # the list of valid names is cuzk's own
    assert done.returncode == 2 and lines[0].startswith("usage:") and len(message) < 300, done.stderr
    assert message.endswith(("characters)", "..."))


@pytest.mark.parametrize("args, message", [
    (["selftest", "--log-n", "-3"], "argument --log-n: must be from 2 to 12, got -3"),
    (["selftest", "--log-n", "0"], "argument --log-n: must be from 2 to 12, got 0"),
    (["selftest", "--log-n", "4096"], "argument --log-n: must be from 2 to 12, got 4096"),
    (["selftest", "--log-n", "9" * 5000], "argument --log-n: not an integer: '99999"),
    (["daemon", "--results-ttl", "nan"], "argument --results-ttl: must be from 0.01 to 87660, got nan"),
    (["daemon", "--results-ttl", "1e400"], "argument --results-ttl: must be from 0.01 to 87660, got inf"),
], ids=["log-n-negative", "log-n-zero", "log-n-huge", "log-n-5000-digits", "ttl-nan", "ttl-inf"])
def test_out_of_range_numbers_are_usage_errors(args, message):
    """Before any work: argparse's usage and one error line naming the option, exit 2, no traceback."""
    done = cli(*args)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"usage: cuzk {args[0]}") and lines[-1].startswith(f"cuzk {args[0]}: error: {message}")
    assert len(lines[-1]) < 300
