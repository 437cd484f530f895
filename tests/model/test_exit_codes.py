"""The one exit-code table (model/exits.py) against the README, the parser and the code.

Also: every option and positional argument of every command has help text, and every
command a description and an epilog listing its own exit statuses. Commands other areas
add later are walked too, so a command without help fails here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from skgate.cli.main import COMMAND_AREA, build_parser, main
from skgate.model import exits
from skgate.model.records import EXIT_CODES, State

ROOT = Path(__file__).resolve().parents[2]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's full parser, as ``skgate COMMAND`` builds it (its area's spec)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for command in COMMAND_AREA:
        for action in build_parser(command)._actions:
            if isinstance(action, argparse._SubParsersAction):
                found[command] = action.choices[command]
    if not found:
        raise AssertionError("skgate has no subcommands")
    return found


def test_readme_table_is_the_code_table() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows == exits.markdown_table()


def test_every_command_is_in_the_table_and_nothing_else() -> None:
    commands = set(subparsers())
    assert commands == set(exits.COMMANDS) == set(COMMAND_AREA)
    for command in exits.COMMANDS:
        assert {0, 2, 130} <= set(exits.codes_for(command)), command


def test_verdict_codes_are_listed_for_the_verdict_commands() -> None:
    for state, code in EXIT_CODES.items():
        assert code in exits.codes_for("status"), state
        if state is not State.IN_PROGRESS:  # only status reports a live attempt
            for command in ("run", "classify", "retry"):
                assert code in exits.codes_for(command), (command, state)
    # check-outputs with --attempt returns the verdict's code for every non-terminal state.
    for state in (State.INTERRUPTED, State.UNKNOWN, State.IN_PROGRESS, State.NOT_STARTED):
        assert EXIT_CODES[state] in exits.codes_for("check-outputs"), state


def test_code_one_says_what_it_means_per_command() -> None:
    meanings = {
        c: [m for code, m in exits.rows_for(c) if code == 1]
        for c in ("verify", "lint-report", "uninstall", "demo", "run")
    }
    assert meanings["verify"][0].startswith("changes found")
    assert meanings["lint-report"][0].startswith("violations found")
    assert meanings["uninstall"][0].startswith("refused")
    assert meanings["demo"][0].startswith("mismatch")
    assert meanings["run"] == ["failed (naturally returned final compiler failures)"]


@pytest.mark.parametrize("command", sorted(subparsers()))
def test_every_option_and_argument_has_help(command: str) -> None:
    sub = subparsers()[command]
    assert sub.description, f"skgate {command} has no description"
    assert sub.epilog == exits.command_epilog(command)
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"skgate {command} {name} has no help"


@pytest.mark.parametrize("command", sorted(subparsers()))
def test_help_prints_the_commands_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"exit status of {command}:" in out
    for code in exits.codes_for(command):
        assert f"\n  {code} " in out, code
    assert "`" not in out.split(f"exit status of {command}:")[1]


def test_top_level_help_has_the_whole_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for row in exits.EXIT_TABLE:
        for meaning in row.for_command.values():
            assert " ".join(meaning.split()) in out
    assert "6 in progress (status only)" not in out


def test_run_interrupted_by_ctrl_c_exits_with_its_verdict_and_the_table_says_so() -> None:
    """`run` on Ctrl-C exits 4 with interrupted/external recorded (tests/test_runner.py
    test_signal_to_runner_is_forwarded_and_recorded_as_external); 130 only when there is
    no verdict yet (issue 30): the table and the code agree."""
    rows = dict(exits.rows_for("run"))
    assert "Ctrl-C" in rows[4] and "interrupted/external" in rows[4]
    assert "`run` only before the attempt is recorded" in rows[130]
