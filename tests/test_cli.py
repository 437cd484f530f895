"""The CLI frame: the command-to-area map is complete, and errors are one line."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import pytest

from skgate import cli


def registered(area: str) -> set[str]:
    parser = argparse.ArgumentParser()
    sub: argparse._SubParsersAction[Any] = parser.add_subparsers()
    importlib.import_module(f"skgate.{area}").register(sub)
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
