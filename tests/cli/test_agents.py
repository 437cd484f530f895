"""start, wait, stop and mcp explain themselves: help on every option, exit codes."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from skgate.cli import main as cli

#: Options shared with 'run' (add_run_options) are documented by the run area.
OWN = {
    "start": {"--json"},
    "wait": {"--max", "--json", "--follow", "--quiet", "--progress-every", "target"},
    "stop": {"--reason", "--json", "target"},
    "mcp": {"--max-wait"},
}


def parsers(command: str) -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser(command)  # that command only, its epilog as skgate shows it
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


@pytest.mark.parametrize("command", sorted(OWN))
def test_every_option_has_help_and_the_epilog_gives_exit_codes(command: str) -> None:
    p = parsers(command)[command]
    assert p.epilog and f"exit status of {command}" in p.epilog
    seen = set()
    for action in p._actions:
        names = set(action.option_strings) or {action.dest}
        if names & OWN[command]:
            seen |= names & OWN[command]
            assert action.help and action.help != argparse.SUPPRESS, names
    assert seen == OWN[command]


def test_wait_on_nothing_is_a_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["wait", str(tmp_path / "nowhere"), "--max", "0"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no such attempt" in err


def test_start_without_dashes_records_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "r"
    assert cli.main(["start", "--root", str(root), "true"]) == 2
    assert "missing '--'" in capsys.readouterr().err
    assert not root.exists()
