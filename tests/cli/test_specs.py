"""The static command table and specs (issue 22 s5) cannot drift from the code they stand for.

``skgate --help`` comes from :mod:`skgate.cli.table` and each command's parser from
:mod:`skgate.cli.specs`, neither importing command code: so each value they copy from
that code, and each handler they name, is checked here against the real one.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import pytest

from skgate.cli import args as cli_args
from skgate.cli import specs, table
from skgate.model import exits


def test_the_copied_values_equal_their_sources() -> None:
    from skgate.demo import scenarios as demo
    from skgate.evidence import files
    from skgate.model import phrases, request
    from skgate.regress.matrix import load
    from skgate.report import facts

    assert tuple(demo.scenario_names()) == specs.DEMO_SCENARIOS
    assert specs.REPORT_LANGS == phrases.LANGS
    assert specs.REPORT_FORMATS == facts.FORMATS
    assert specs.MAX_REPEATS == load.MAX_REPEATS
    assert cli_args.DEFAULT_ROOT == files.DEFAULT_ROOT
    assert cli_args.DEFAULT_TIMEOUT == request.DEFAULT_TIMEOUT
    assert cli_args.DEFAULT_GRACE == request.DEFAULT_GRACE


def _registered(command: str) -> tuple[dict[str, argparse.ArgumentParser], dict[str, str]]:
    """The parsers a command's spec registers, and the one-line help of each."""
    parser = argparse.ArgumentParser()
    sub: argparse._SubParsersAction[Any] = parser.add_subparsers()
    specs.SPECS[command](sub)
    helps = {a.dest: str(a.help) for a in sub._choices_actions}
    return dict(sub.choices), helps


def test_the_table_is_what_the_specs_register_in_the_exit_table_order() -> None:
    assert tuple(specs.SPECS) == tuple(c.name for c in table.COMMANDS)
    for c in table.COMMANDS:
        parsers, helps = _registered(c.name)
        assert list(parsers) == [c.name]
        assert helps == {c.name: c.summary}
    assert tuple(c.name for c in table.COMMANDS) == exits.COMMANDS


@pytest.mark.parametrize("command", [c.name for c in table.COMMANDS])
def test_each_handler_is_a_function_of_its_own_area(command: str) -> None:
    area = table.COMMAND_AREA[command]
    handler = _registered(command)[0][command].get_default("handler")
    assert isinstance(handler, table.Handler)
    assert handler.module == f"skgate.cli.{area}"
    assert callable(getattr(importlib.import_module(handler.module), handler.function))


def test_a_handler_runs_its_function(monkeypatch: pytest.MonkeyPatch) -> None:
    from skgate.cli import run as cli_run

    seen: list[argparse.Namespace] = []

    def fake(args: argparse.Namespace) -> int:
        seen.append(args)
        return 7

    monkeypatch.setattr(cli_run, "cmd_classify", fake)
    ns = argparse.Namespace(x=1)
    assert table.Handler("skgate.cli.run", "cmd_classify")(ns) == 7
    assert seen == [ns]
