"""The CLI frame: the command-to-area map is complete, and errors are one line."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import run_skgate
from evidence_fixtures import make_attempt, record_verdict
from skgate.cli import main as cli
from skgate.cli import specs
from skgate.model.records import State, Verdict


def registered(command: str) -> set[str]:
    parser = argparse.ArgumentParser()
    sub: argparse._SubParsersAction[Any] = parser.add_subparsers()
    specs.SPECS[command](sub)
    return set(sub.choices)


def test_each_command_spec_registers_that_command_only_in_a_known_area() -> None:
    # main builds one command's parser: a spec that registered a second command would
    # leave that one unparseable (it is never built on its own name).
    for command in specs.SPECS:
        assert registered(command) == {command}
        assert cli.COMMAND_AREA[command] in cli.AREAS
    assert set(specs.SPECS) == set(cli.COMMAND_AREA)


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


def test_status_of_a_copied_root_names_where_the_attempt_is_now(tmp_path: Path) -> None:
    # verdict.json records the absolute path at run time; after a copy, status must point
    # at the copy a person can open, not at the original (issue 14).
    a = make_attempt(tmp_path / "orig", 1, State.SUCCEEDED)
    data = json.loads((a / "verdict.json").read_text())
    data["attempt"] = str(a)
    record_verdict(a, Verdict.from_dict(data, "verdict.json"))  # as its runner wrote it
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "orig", copy)
    shutil.rmtree(tmp_path / "orig")
    res = run_skgate("status", str(copy), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"evidence: {copy / 'attempts' / '0001'}" in res.stdout
    assert "orig" not in res.stdout
