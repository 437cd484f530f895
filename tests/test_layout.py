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
