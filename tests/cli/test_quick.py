"""``skgate status`` parsed without argparse (skgate.cli.quick, issue 29) gives exactly
what argparse gives, and leaves every other command line to argparse."""

from __future__ import annotations

from typing import Any

import pytest

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
