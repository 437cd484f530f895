"""The package layout's own rules that import-linter cannot see (issue 9).

import-linter (``lint-imports``, configured in pyproject.toml) holds the layers; these
tests hold the rest: no private name crosses a module boundary, no module grows past 600
lines, and ``import skgate.report`` loads no part of the run machinery.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "skgate"
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _private_imports(path: Path, base: Path = SRC) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("skgate"):
            found += [
                f"{path.relative_to(base)}:{node.lineno}: {node.module}.{a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    return found


def test_no_private_name_is_imported_across_modules() -> None:
    assert [hit for p in _modules() for hit in _private_imports(p)] == []


def test_the_private_import_check_sees_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from skgate.proc.leases import _secret\n", encoding="utf-8")
    assert _private_imports(bad, tmp_path) == ["bad.py:1: skgate.proc.leases._secret"]


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_import_skgate_report_loads_no_run_machinery() -> None:
    code = (
        "import skgate.report.markdown, skgate.report.facts, skgate.report.load, "
        "skgate.report.lint, sys; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('skgate'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "skgate.report.markdown" in loaded
    heavy = [m for m in loaded if m.split(".")[-1] in {"runner", "supervise", "hooks", "leases"}]
    assert heavy == []


def _loaded_by(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "; import sys; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {m for m in out if m.startswith("skgate")}


def test_skgate_start_forks_its_runner_before_loading_the_run_machinery() -> None:
    """``skgate start``'s caller loads only what parsing and the fork need; the runner
    loads the rest after it has started its early work (start latency, issue 13)."""
    loaded = _loaded_by(
        "import skgate.cli.main as m; m.build_parser('start').parse_args(['start', '--root', "
        "'r']); import skgate.detach"
    )
    assert "skgate.detach" in loaded and "skgate.cli.agents" in loaded
    heavy = {
        "skgate.runner",
        "skgate.lifecycle",
        "skgate.model.records",
        "skgate.preflight.prepare",
        "skgate.preflight.hooks.scan",
        "skgate.proc.supervise",
        "skgate.evidence.ledger",
    }
    assert loaded & heavy == set()


def test_the_runner_loads_its_finishing_code_only_after_the_launch() -> None:
    loaded = _loaded_by("import skgate.runner, skgate.preflight.early")
    assert "skgate.runner" in loaded
    later = {
        "skgate.model.records",
        "skgate.model.stages",
        "skgate.verdict.classify",
        "skgate.evidence.seal",
        "skgate.evidence.load",
        "skgate.demo",
    }
    assert loaded & later == set()
    early = _loaded_by("import skgate.preflight.early")
    assert early & {"skgate.preflight.prepare", "skgate.preflight.hooks.scan"} == set()


def test_skgate_run_does_not_load_the_simulator() -> None:
    loaded = _loaded_by("import skgate.cli.main as m; m.build_parser('run')")
    assert "skgate.cli.run" in loaded
    assert not {m for m in loaded if m.startswith(("skgate.sim", "skgate.demo"))}


def _function_lines(path: Path, qualname: str) -> int:
    """Lines of one function (``Class.method`` or ``function``), decorators excluded."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    *owner, name = qualname.split(".")
    body: list[ast.stmt] = tree.body
    if owner:
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner[0])
        body = cls.body
    fn = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)
    assert fn.end_lineno is not None
    return fn.end_lineno - fn.lineno + 1


@pytest.mark.parametrize(
    ("module", "qualname"),
    [
        ("proc/supervise.py", "Supervisor.wait"),
        ("proc/supervise.py", "Supervisor._step"),
        ("runner.py", "_launch"),
        ("runner.py", "_supervise"),
        ("runner.py", "_execute"),
    ],
)
def test_the_supervision_core_reads_in_one_screen(module: str, qualname: str) -> None:
    """Issue 22 s2: the wait loop and the runner's supervise step fit in 80 lines each."""
    assert _function_lines(SRC / module, qualname) <= 80
