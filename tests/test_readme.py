"""The README gives exactly two set-up commands, and CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_exactly_two_setup_commands() -> None:
    cmds = setup_commands()
    assert len(cmds) == 2
    assert all("\n" not in c for c in cmds)
    assert cmds[0].endswith("skgate demo")
    assert "'.[test]'" in cmds[1] and ".ci/suites" in cmds[1]
    # The suites script runs the tests themselves (and every other check).
    assert "python -m pytest -q" in (ROOT / ".ci" / "suites").read_text()


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    test_cmd = setup_commands()[1]
    # CI makes its own fresh venv; the rest of the line must be the same, word for word.
    after_venv = test_cmd.split(" && ", 2)[2]
    assert after_venv in ci
