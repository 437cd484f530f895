"""``skgate run`` and ``skgate start`` parsed without argparse (skgate.cli.quick_run,
issue 29) give exactly what argparse gives, and leave every other line to argparse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_quick import _plain

from conftest import ENV, wait_for
from skgate.cli.main import build_parser
from skgate.cli.quick_run import run_args

#: Every shape quick_run.py answers: each option of 'run', both spellings, repeats.
TAKEN = [
    ["run"],
    ["run", "--quiet"],
    ["run", "--root", "r", "--quiet", "--verdict-from", "exit-status"],
    ["run", "--root=r", "--json", "--verdict-from=summary"],
    ["run", "--root", "/tmp/some root", "--cwd", "运行/记录", "--outputs", "out"],
    ["run", "--root", "gbk-\udcc4\udce3", "--root", "second"],
    ["run", "--root", ""],
    ["run", "--root="],
    ["run", "--timeout", "600", "--grace", "0", "--lease-timeout", "1.5"],
    ["run", "--timeout=1e3", "--grace=2.25", "--lease-timeout=0"],
    ["run", "--jobs", "auto"],
    ["run", "--jobs", "8", "--job-memory-mb", "2048"],
    ["run", "--package", "required", "--foreign", "refuse", "--events", "jsonl"],
    ["run", "--summary-pattern", "done", "--summary-pattern=a=b", "--completion-marker", "ok"],
    ["run", "--approve-hook", "ab" * 32, "--approve-hook", "cd" * 32],
    ["run", "--hook-baseline", "b.json", "--python", "/usr/bin/python3", "--strict-hooks"],
    ["run", "--python-cpu-count", "--enforce-jobs", "--allow-long-paths"],
    ["run", "--devices", "1,0", "--devices=3"],
    ["run", "--profiler-schedule", "wait=1,warmup=1,active=2", "--vary", "jobs"],
    ["run", "--env", "A=B", "--env=C=", "--env", "D==x", "--unset-env", "E"],
    ["run", "--compiler-name", "my_opc", "--compiler-name=other"],
    ["run", "--scan-interval", "0.2", "--quiet", "--quiet"],
]

#: The same for ``start``, which has ``--json`` but neither ``--quiet`` nor ``--events``.
TAKEN_START = [
    ["start", *argv[1:]]
    for argv in TAKEN
    if not {"--quiet", "--events"} & {w.partition("=")[0] for w in argv}
] + [["start", "--json", "--root", "r"]]

#: Left to argparse: abbreviations, help, a stray word, a flag given a value, a value
#: argparse refuses or may read as an option, a missing value, other commands.
LEFT = [
    [],
    ["start", "--quiet"],
    ["preflight"],
    ["--root", "r", "run"],
    ["run", "-h"],
    ["run", "--help"],
    ["run", "--qui"],
    ["run", "--root"],
    ["run", "--quiet=1"],
    ["run", "stray"],
    ["run", "--root", "r", "x"],
    ["run", "--root", "-r"],
    ["run", "--root", "--quiet"],
    ["run", "--timeout", "0"],
    ["run", "--timeout", "-1"],
    ["run", "--timeout", "nan"],
    ["run", "--timeout", "inf0"],
    ["run", "--grace", "x"],
    ["run", "--jobs", "0"],
    ["run", "--jobs", "many"],
    ["run", "--job-memory-mb", "1.5"],
    ["run", "--devices", "a"],
    ["run", "--env", "NOEQUALS"],
    ["run", "--env", "=v"],
    ["run", "--verdict-from", "exit"],
    ["run", "--package", "maybe"],
    ["run", "--vary", "other"],
    ["run", "--events", "json"],
    ["run", "--scan-interval", "0"],
    ["run", "--version"],
    ["run", "-"],
    ["start", "--quiet"],
    ["start", "--events", "jsonl"],
    ["start", "--jso"],
    ["start", "x"],
]


@pytest.mark.parametrize("argv", TAKEN + TAKEN_START, ids=repr)
def test_the_quick_parse_is_argparses(argv: list[str]) -> None:
    quick = run_args(argv)
    assert quick is not None
    # Values and their types (2 is not 2.0), the handler by what it names, in order.
    assert list(_plain(dict(vars(quick))).items()) == list(
        _plain(vars(build_parser(argv[0]).parse_args(argv))).items()
    )


@pytest.mark.parametrize("argv", LEFT, ids=repr)
def test_every_other_command_line_goes_to_argparse(argv: list[str]) -> None:
    assert run_args(argv) is None


def _python(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """This interpreter with ``args``, in ``cwd``, with the tests' environment."""
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=ENV, capture_output=True, text=True,
        check=False, timeout=120,
    )  # fmt: skip


def test_a_run_line_of_a_common_shape_runs_without_argparse(tmp_path: Path) -> None:
    """A real ``skgate run`` (and ``start``) of the common shape never imports
    ``argparse`` (nor ``gettext``), and runs to its verdict; a line left to argparse
    still says what is wrong in one line, exit 2, with nothing recorded."""
    code = (
        "import sys; from skgate.cli.main import main; "
        "c = main(['run', '--root', 'r', '--quiet', '--verdict-from', 'exit-status', "
        "'--timeout=60', '--', 'true']); "
        "print(c, 'argparse' in sys.modules, 'gettext' in sys.modules)"
    )
    res = _python(tmp_path, "-c", code)
    assert res.stdout.split()[-3:] == ["0", "False", "False"], res.stdout + res.stderr
    start = code.replace("'run', ", "'start', ").replace("'--quiet', ", "")
    res = _python(tmp_path, "-c", start)
    assert res.stdout.split()[-3:] == ["0", "False", "False"], res.stdout + res.stderr
    # The started attempt runs to its end (its runner's reply said where it is).
    attempt = Path(res.stdout.split()[0])
    wait_for((attempt / "seal.json").is_file, "the started attempt's seal", 60)
    res = _python(tmp_path, "-m", "skgate", "run", "--root", "r2", "--timeout", "0", "--", "true")
    assert res.returncode == 2 and not (tmp_path / "r2").exists(), res.stderr
    assert res.stderr.count("\n") == 1 and "--timeout" in res.stderr, res.stderr
