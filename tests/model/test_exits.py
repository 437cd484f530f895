"""The exit-code table (model/exits.py) is the one source of every exit status."""

from __future__ import annotations

from pathlib import Path

from conftest import run_skgate
from skgate.model.errors import BlockedError, UsageError
from skgate.model.exits import EXIT_TABLE, STATE_CODES, code_of, verdict_help
from skgate.model.records import EXIT_CODES, State


def test_codes_and_names_are_unique() -> None:
    assert len({r.code for r in EXIT_TABLE}) == len(EXIT_TABLE)
    assert len({r.name for r in EXIT_TABLE}) == len(EXIT_TABLE)


def test_every_state_has_its_code_from_the_table() -> None:
    assert set(STATE_CODES) == {s.value for s in State}
    assert {s: EXIT_CODES[s] for s in State} == {s: STATE_CODES[s.value] for s in State}
    assert EXIT_CODES[State.FAILED] == code_of("failed") == 1
    assert EXIT_CODES[State.NOT_STARTED] == code_of("blocked") == BlockedError.exit_code


def test_errors_take_their_codes_from_the_table() -> None:
    assert UsageError.exit_code == code_of("usage") == 2
    assert BlockedError.exit_code == 3


def test_help_shows_the_table(tmp_path: Path) -> None:
    res = run_skgate("--help", cwd=tmp_path)
    assert res.returncode == 0
    assert verdict_help() in res.stdout
    for row in EXIT_TABLE:
        if row.help_label:
            assert f"{row.code} {row.help_label}" in res.stdout


def test_a_usage_error_exits_with_the_usage_code(tmp_path: Path) -> None:
    res = run_skgate("run", "--timeout", "-1", "--", "true", cwd=tmp_path)
    assert res.returncode == code_of("usage")
    assert "Traceback" not in res.stderr
