"""``skgate --help``, ``--version`` and ``skgate`` alone, answered without argparse (issue 29).

The console entry answers them from the static tables (skgate.cli.top); argparse still
builds the same parser (skgate.cli.main.build_parser) for every other command line. These
tests hold the two byte-identical at every width, so the fast answer can never drift from
what argparse would print, and check that the fast path really is the one taken.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest

from conftest import ENV, SKGATE
from skgate.cli import main as cli
from skgate.cli import table, top


def _argparse_says(args: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of argparse's own answer (cli.main.main)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("columns", range(20, 201))
def test_help_is_argparse_s_byte_for_byte(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    expected = cli.build_parser().format_help()
    fast = top.render_help(columns - 2)
    if columns >= 50:  # the usage line fits: the fast path answers (else argparse may)
        assert fast is not None
    assert fast in (None, expected)
    assert _argparse_says(["--help"]) == (0, expected, "")


@pytest.mark.parametrize("columns", [1, 10, 13, 20, 44, 45, 80, 200])
def test_version_is_argparse_s(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = _argparse_says(["--version"])
    assert (code, err) == (0, "")
    assert top.render_version(columns - 2) == out


def test_no_command_is_argparse_s_usage_error() -> None:
    code, out, err = _argparse_says([])
    assert (code, out) == (2, "")
    assert err == top.NO_COMMAND


def test_other_spellings_are_left_to_argparse() -> None:
    # Abbreviations, repeats and any command are argparse's to parse, as before.
    for args in (["--he"], ["--help", "--version"], ["status"], ["-h", "x"], ["--"]):
        assert top.answer(args) is None


def _close_stdout() -> None:
    os.close(1)  # in the child, before exec: it starts with no standard output


def _skgate(
    *args: str, columns: str = "80", no_stdout: bool = False
) -> subprocess.CompletedProcess[bytes]:
    env = {**ENV, "COLUMNS": columns}
    return subprocess.run(
        [*SKGATE, *args],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
        preexec_fn=_close_stdout if no_stdout else None,
    )


def _argparse_in_a_subprocess(
    *args: str, columns: str = "80", no_stdout: bool = False
) -> subprocess.CompletedProcess[bytes]:
    code = "import sys; from skgate.cli.main import main; sys.exit(main(sys.argv[1:]))"
    env = {**ENV, "COLUMNS": columns}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
        preexec_fn=_close_stdout if no_stdout else None,
    )


@pytest.mark.parametrize(
    ("args", "columns"),
    [(("--help",), "80"), (("-h",), "57"), (("--help",), "30"), (("--version",), "80"), ((), "80")],
)
def test_the_command_line_prints_what_argparse_prints(args: tuple[str, ...], columns: str) -> None:
    fast = _skgate(*args, columns=columns)
    slow = _argparse_in_a_subprocess(*args, columns=columns)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        slow.returncode,
        slow.stdout,
        slow.stderr,
    )


@pytest.mark.parametrize("args", [("--help",), ("--version",)])
def test_with_no_standard_output_the_answer_goes_to_stderr_as_argparse_s(
    args: tuple[str, ...],
) -> None:
    fast = _skgate(*args, no_stdout=True)
    slow = _argparse_in_a_subprocess(*args, no_stdout=True)
    assert fast.stderr.startswith(b"usage: skgate" if args == ("--help",) else b"skgate ")
    assert (fast.returncode, fast.stderr) == (slow.returncode, slow.stderr)


def test_columns_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "123")
    assert table.columns() == 123

    def no_terminal(_fd: int) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.setenv("COLUMNS", "x")
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    assert table.columns() == 80
