"""What ``skgate --help`` and ``skgate status`` of a finished attempt import (issue 29).

Their start-up is most of their cost, and one import added on the way (``typing`` in a
model module, ``contextlib`` for one ``suppress``) silently gives back what was saved. So
these tests run the console script itself (``scripts/skgate``) under ``python -X
importtime``, which names every module the process imports, and check the heavy ones stay
out. They check modules, never times.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ENV

#: The console script as installed (pyproject ``script-files``): ``#!python``, no ``re``.
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "skgate"


def _imports(*args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Every module ``skgate ARGS`` imported, and how it ended."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(SCRIPT), *args],
        env={**ENV, "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    loaded = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return loaded, done


#: Never loaded by ``skgate --help``, ``--version`` or ``skgate`` alone: ``re`` and
#: ``enum`` (the wrapper pip writes for an entry point imports them), the parser and its
#: translation machinery, the text wrapper, the enum-wrapped ``signal``, any spec.
NOT_FOR_HELP = {
    "re",
    "enum",
    "types",
    "argparse",
    "gettext",
    "locale",
    "textwrap",
    "signal",
    "typing",
    "shutil",
    "contextlib",
    "skgate.cli.main",
    "skgate.cli.specs",
    "skgate.cli.args",
}

#: Never loaded by ``skgate status`` of a finished attempt: what its modules once pulled
#: in for annotations, one ``suppress``, one writer's threads or lock, the help epilog and
#: its wrapper, the Chinese reason tables; the dataclass machinery; OpenSSL; the
#: classifier, the live look and the run machinery; the verdicts of a changed attempt and
#: the next steps, which only other answers print.
NOT_FOR_STATUS = {
    "typing",
    "threading",
    "contextlib",
    "textwrap",
    "dataclasses",
    "inspect",
    "importlib",
    "signal",
    "shutil",
    "_hashlib",
    "fcntl",
    "skgate.verdict.classify",
    "skgate.verdict.changed",
    "skgate.verdict.words_next",
    "skgate.verdict.words_reasons",
    "skgate.verdict.words_stages",
    "skgate.cli.top",
    "skgate.model.wrap",
    "skgate.read.liveness",
    "skgate.evidence.load",
    "skgate.evidence.unsealed",
    "skgate.model.events",
    "skgate.proc.observe",
    "skgate.runner",
    "skgate.preflight",
}


#: The parser and what it loads, kept off the status lines skgate.cli.quick parses.
PARSER = {
    "argparse",
    "gettext",
    "locale",
    "skgate.cli.parser",
    "skgate.cli.specs",
    "skgate.cli.args",
}


def test_the_console_script_is_installed_as_written() -> None:
    # pyproject installs scripts/skgate itself (script-files), not an entry-point wrapper.
    text = SCRIPT.read_text()
    assert text.startswith("#!python\n")
    assert "import re" not in text
    assert "from skgate.cli.console import entry" in text


@pytest.mark.parametrize("args", [("--help",), ("--version",), ()])
def test_help_loads_no_parser(args: tuple[str, ...]) -> None:
    loaded, done = _imports(*args)
    assert done.returncode == (0 if args else 2), done.stderr[-2000:]
    assert {"skgate.cli.top", "skgate.proc.startup_signals"} <= loaded
    assert loaded & NOT_FOR_HELP == set()


def test_the_import_check_sees_argparse() -> None:
    # The check above can fail: a spelling argparse parses does load the parser.
    loaded, done = _imports("--he")
    assert done.returncode == 0
    assert {"argparse", "skgate.cli.main"} <= loaded


def test_status_of_a_finished_attempt_loads_only_the_read_path(finished_root: Path) -> None:
    loaded, done = _imports("status", str(finished_root))
    # A real answer, from the recorded verdict (a status that failed early would load
    # less and prove nothing).
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("SUCCEEDED")
    assert {"skgate.evidence.recorded", "skgate.model.records", "skgate.cli.quick"} <= loaded
    assert loaded & NOT_FOR_STATUS == set()
    # Parsed by skgate.cli.quick: no argparse, nor what its messages load (issue 29).
    assert loaded & PARSER == set()
    # The seal check's built-in sha256 is found at the first try (importtime lists a
    # failed import too): the other Python version's module name is never searched.
    assert ("_sha256" if sys.version_info >= (3, 12) else "_sha2") not in loaded
    assert {m for m in loaded if m.startswith(("skgate.runner", "skgate.preflight"))} == set()


def test_the_import_check_sees_the_status_parser(finished_root: Path) -> None:
    # A status line quick.py leaves to argparse loads the parser, and answers the same.
    loaded, done = _imports("status", "--interval", "1", str(finished_root))
    assert done.returncode == 0, done.stderr[-2000:]
    assert loaded >= PARSER
    assert done.stdout == _imports("status", str(finished_root))[1].stdout


def test_the_import_check_sees_a_changed_attempt(finished_root: Path, tmp_path: Path) -> None:
    # A copy whose sealed verdict was rewritten: status answers unknown, with the changed
    # attempt's words and its next step, and the same check then names their modules.
    root = tmp_path / "r"
    shutil.copytree(finished_root, root)
    verdict = root / "attempts" / "0001" / "verdict.json"
    verdict.write_text(verdict.read_text().replace('"succeeded"', '"failed"'))
    loaded, done = _imports("status", str(root))
    assert done.returncode == 5, done.stderr[-2000:]
    assert done.stdout.startswith("UNKNOWN: evidence changed after sealing: verdict.json")
    assert "  next step: " in done.stdout
    assert {"skgate.verdict.changed", "skgate.verdict.words_next"} <= loaded & NOT_FOR_STATUS


def test_the_import_check_sees_the_classifier(finished_root: Path) -> None:
    # ``classify`` recomputes: the same check then names what status leaves out.
    attempt = finished_root / "attempts" / "0001"
    loaded, done = _imports("classify", str(attempt))
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"skgate.verdict.classify", "skgate.evidence.load"} <= loaded & NOT_FOR_STATUS


#: What ``import json`` and ``import pathlib`` bring, kept off an English ``status``:
#: each alone costs about as much as the interpreter's start-up (issue 29). The evidence
#: is read by skgate.model.jsonread and paths are text (skgate.evidence.pathtext).
NOT_FOR_STATUS_TEXT = {
    "json",
    "json.decoder",
    "json.encoder",
    "json.scanner",
    "pathlib",
    "re",
    "fnmatch",
    "urllib",
    "urllib.parse",
    "ipaddress",
    "ntpath",
    "math",
    # Its lookups live in skgate.evidence.lookup: status loads none of the ledger's writers.
    "skgate.evidence.ledger",
}


@pytest.mark.parametrize("spelling", ["{root}", "{root}/", "{root}//attempts/./0001/"])
def test_status_text_loads_no_json_pathlib_or_re(finished_root: Path, spelling: str) -> None:
    loaded, done = _imports("status", spelling.format(root=finished_root))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("SUCCEEDED")
    assert {"skgate.model.jsonread", "skgate.evidence.pathtext"} <= loaded
    assert loaded & NOT_FOR_STATUS_TEXT == set()
    # The path printed is spelled as pathlib spells it, whatever the spelling given.
    assert done.stdout.splitlines()[-1] == f"  evidence: {finished_root / 'attempts' / '0001'}"


def test_the_import_check_sees_json(finished_root: Path) -> None:
    # ``--json`` prints with json: the same check then names it, and the record agrees.
    loaded, done = _imports("status", "--json", str(finished_root))
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"json", "re"} <= loaded
    assert '"state": "succeeded"' in done.stdout
