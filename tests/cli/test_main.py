"""The CLI frame: the command-to-area map is complete, and errors are one line."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

import pytest

from skgate.cli import main as cli


def registered(area: str) -> set[str]:
    parser = argparse.ArgumentParser()
    sub: argparse._SubParsersAction[Any] = parser.add_subparsers()
    importlib.import_module(f"skgate.cli.{area}").register(sub)
    return set(sub.choices)


def test_every_registered_command_is_mapped_to_its_area() -> None:
    for area in cli.AREAS:
        for command in registered(area):
            assert cli.COMMAND_AREA.get(command) == area, command
    assert set(cli.COMMAND_AREA.values()) <= set(cli.AREAS)


def test_full_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in cli.COMMAND_AREA:
        assert command in out


def test_unknown_command_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "invalid choice" in err


def test_public_api_names_resolve() -> None:
    import skgate

    for name in skgate.__all__:
        assert getattr(skgate, name) is not None, name


def test_an_unexpected_error_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from skgate.cli import run as cli_run

    def broken(_args: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.delenv("SKGATE_DEBUG", raising=False)
    monkeypatch.setattr(cli_run, "cmd_classify", broken)
    assert cli.main(["classify", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("skgate: internal error: RuntimeError: boom")
    assert len(err.strip().splitlines()) == 1


def test_status_all_reports_a_damaged_attempt_and_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skgate.evidence.files import write_json_new

    for n in (1, 2):
        d = tmp_path / "attempts" / f"{n:04d}"
        d.mkdir(parents=True)
        (d / "events.jsonl").write_text("")
    write_json_new(tmp_path / "attempts" / "0001" / "control.json", {"schema": "skgate.control/9"})
    (tmp_path / "attempts" / "0002" / "control.json").write_text("{ truncated")
    assert cli.main(["status", str(tmp_path), "--all"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert all("damaged evidence" in line for line in out)
