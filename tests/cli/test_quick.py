"""``skgate status`` parsed without argparse (skgate.cli.quick, issue 29) gives exactly
what argparse gives, and leaves every other command line to argparse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ENV
from skgate.cli.main import build_parser
from skgate.cli.quick import status_args
from skgate.cli.table import Handler

#: Every shape quick.py answers, with targets argparse takes as they are.
TAKEN = [
    ["status"],
    ["status", "r"],
    ["status", "/tmp/some root/attempts/0001"],
    ["status", "--json"],
    ["status", "--all"],
    ["status", "r", "--json"],
    ["status", "--json", "r"],
    ["status", "--all", "r", "--json"],
    ["status", "--json", "--all"],
    ["status", "--json", "--json", "r"],
    ["status", ""],
    ["status", "status"],
    ["status", "a=b"],
    ["status", "运行/记录"],
    ["status", "gbk-\udcc4\udce3"],
    ["status", "r-", "--all"],
]

#: Left to argparse: options quick.py does not take, abbreviations, a second target,
#: a dash word, '--', any other command, options before the command.
LEFT = [
    [],
    ["--help"],
    ["status", "--watch"],
    ["status", "--interval", "1", "--watch"],
    ["status", "--js"],
    ["status", "--json=1"],
    ["status", "-h"],
    ["status", "--help"],
    ["status", "a", "b"],
    ["status", "-"],
    ["status", "-1"],
    ["status", "--", "x"],
    ["statu", "r"],
    ["classify", "r"],
    ["report", "r"],
    ["--version", "status"],
]


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    handler = values.get("handler")
    if isinstance(handler, Handler):  # compared by what it names
        values["handler"] = (handler.module, handler.function)
    return {name: (type(value), value) for name, value in values.items()}  # 2 is not 2.0


@pytest.mark.parametrize("argv", TAKEN, ids=repr)
def test_the_quick_parse_is_argparses(argv: list[str]) -> None:
    quick = status_args(argv)
    assert quick is not None
    expected = _plain(vars(build_parser("status").parse_args(argv)))
    assert _plain(dict(vars(quick))) == expected
    assert list(vars(quick)) == list(expected)  # the same names, in the same order


@pytest.mark.parametrize("argv", LEFT, ids=repr)
def test_every_other_command_line_goes_to_argparse(argv: list[str]) -> None:
    assert status_args(argv) is None


def test_a_quick_status_answers_as_the_parsed_one(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Through main(): an empty root is a usage error either way, with the same message.
    from skgate.cli import main as cli

    root = str(tmp_path / "none")
    quick = cli.main(["status", root])
    said = capsys.readouterr()
    parsed = cli.main(["status", root, "--", "x"])  # '--' sends it to argparse
    assert (quick, said) == (parsed, capsys.readouterr())
    assert quick != 0 and said.err.startswith("skgate: ")


SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "skgate"


def _ended(args: list[str], stdout: str) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of the console script, its stdout a pipe read to the
    end (``read``), a pipe nobody reads any more (``broken``) or closed (``closed``)."""
    argv = [sys.executable, str(SCRIPT), *args]
    if stdout == "read":
        done = subprocess.run(argv, env=ENV, capture_output=True, timeout=120, check=False)
        return done.returncode, done.stdout, done.stderr
    if stdout == "broken":
        r, w = os.pipe()
        os.close(r)  # the reader is gone before anything is written: EPIPE at the flush
        try:
            done = subprocess.run(
                argv, env=ENV, stdout=w, stderr=subprocess.PIPE, timeout=120, check=False
            )
        finally:
            os.close(w)
        return done.returncode, b"", done.stderr
    done = subprocess.run(
        argv,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    return done.returncode, b"", done.stderr


@pytest.mark.parametrize("stdout", ["read", "broken", "closed"])
@pytest.mark.parametrize("json", [[], ["--json"]])
def test_a_quick_status_ends_as_an_argparse_one(
    finished_root: Path, stdout: str, json: list[str]
) -> None:
    # The quick line ends without the interpreter's teardown (cli.main._read_only); a line
    # argparse parses ('--interval', unused without --watch) ends through it. Same end.
    quick = _ended(["status", *json, str(finished_root)], stdout)
    parsed = _ended(["status", "--interval", "1", *json, str(finished_root)], stdout)
    assert quick == parsed
    if stdout == "read":
        assert quick[0] == 0 and quick[1].startswith(b"{" if json else b"SUCCEEDED")
    else:  # nothing to read it: no message, no traceback, the verdict's status (0)
        assert quick == (0, b"", b"")
