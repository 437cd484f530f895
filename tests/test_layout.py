"""The package layout's own rules that import-linter cannot see (issue 9).

import-linter (``lint-imports``, configured in pyproject.toml) holds the layers; these
tests hold the rest: no private name crosses a module boundary, no module grows past 600
lines, and ``import skgate.report.html`` loads no part of the run machinery.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skgate.cli import table

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


#: What the read side (the report) must never load, by module-name prefix (issue 22 s3).
#: ``skgate.proc`` joins this list once the live probing has left ``evidence/load.py``.
READ_SIDE_FORBIDDEN = (
    "skgate.preflight",
    "skgate.runner",
    "skgate.proc.supervise",
    "skgate.api",
    "skgate.regress",
)


def _forbidden(loaded: set[str], prefixes: tuple[str, ...]) -> set[str]:
    return {m for m in loaded if any(m == p or m.startswith(p + ".") for p in prefixes)}


def test_the_report_loads_no_run_machinery() -> None:
    """The real modules ``import skgate.report.html`` loads (sys.modules of a fresh
    interpreter), not names guessed from their last part."""
    loaded = _loaded_by("import skgate.report.html, skgate.report.markdown")
    assert {"skgate.report.html", "skgate.evidence.load"} <= loaded
    assert _forbidden(loaded, READ_SIDE_FORBIDDEN) == set()


def test_the_read_side_check_sees_a_forbidden_module() -> None:
    loaded = _loaded_by("import skgate.report.html, skgate.runner.stage_tracker")
    # The package comes with its module (runner/ is the runner side as a whole).
    assert _forbidden(loaded, READ_SIDE_FORBIDDEN) == {
        "skgate.runner",
        "skgate.runner.stage_tracker",
    }


def test_import_skgate_report_html_loads_no_live_machinery() -> None:
    # Issue 22 s3: evidence/load.py imported proc.cgroup, proc.events, proc.observe and
    # proc.owned for its live=True look, so the report loaded them; the name check above
    # did not see it. The real list of modules: no live probing, preflight or runner.
    loaded = _loaded_by("import skgate.report.html")
    assert "skgate.report.html" in loaded
    live = sorted(
        m
        for m in loaded
        if m.startswith(
            ("skgate.proc", "skgate.preflight", "skgate.runner", "skgate.read.liveness")
        )
    )
    assert live == []


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
        "import importlib, skgate.cli.main as m; a = m.build_parser('start').parse_args("
        "['start', '--root', 'r']); importlib.import_module(a.handler.module); "
        "import skgate.api.detach"
    )
    assert "skgate.api.detach" in loaded and "skgate.cli.agents" in loaded
    heavy = {
        "skgate.runner",
        "skgate.api.lifecycle",
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


def test_skgate_help_loads_no_command_code() -> None:
    """``skgate --help`` comes from the static table (issue 22 s5): no area module, no
    spec, nothing of the runner, the report or the demo."""
    loaded = _loaded_by(
        "import contextlib, io, skgate.cli.main as m\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out: code = m.main(['--help'])\n"
        "assert code == 0 and 'check-outputs' in out.getvalue()"
    )
    assert "skgate.cli.table" in loaded
    areas = {f"skgate.cli.{a}" for a in ("specs", "args", "show", "watch", *table.AREAS)}
    heavy = ("skgate.runner", "skgate.report", "skgate.demo", "skgate.sim", "skgate.proc")
    assert loaded & areas == set()
    # The start-up stop-signal handlers are every command's (issue 28 s5): os and signal only.
    assert _forbidden(loaded, heavy) - {"skgate.proc", "skgate.proc.startup_signals"} == set()


def test_a_command_help_loads_its_spec_not_its_code() -> None:
    loaded = _loaded_by(
        "import contextlib, io, skgate.cli.main as m\n"
        "with contextlib.redirect_stdout(io.StringIO()): code = m.main(['status', '--help'])\n"
        "assert code == 0"
    )
    assert "skgate.cli.specs" in loaded
    assert loaded & {f"skgate.cli.{a}" for a in table.AREAS} == set()
    forbidden = _forbidden(loaded, ("skgate.evidence", "skgate.proc", "skgate.runner"))
    assert forbidden - {"skgate.proc", "skgate.proc.startup_signals"} == set()


def test_skgate_run_does_not_load_the_simulator() -> None:
    loaded = _loaded_by(
        "import importlib, skgate.cli.main as m; a = m.build_parser('run').parse_args("
        "['run', '--', 'true']); importlib.import_module(a.handler.module)"
    )
    assert "skgate.cli.run" in loaded
    assert not {m for m in loaded if m.startswith(("skgate.sim", "skgate.demo"))}


def test_one_signal_name_helper() -> None:
    """A signal's name is said by ``skgate.model.signals.signal_name`` alone (issue 22
    s6: four copies). The simulator's programs are left out: they stand for CANN's own
    programs, run by path without the skgate package, and word their messages as those do."""
    pattern = re.compile(r"Signals\([^()]*\)\.name|strsignal\(")
    copies = [
        str(p.relative_to(SRC))
        for p in _modules()
        if p.parent.name != "sim" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert copies == ["model/signals.py"]


def _imports_at_run_time(path: Path, modules: set[str]) -> set[str]:
    """The skgate modules ``path`` imports anywhere (function-level imports included),
    except under ``if TYPE_CHECKING:`` (annotations only, nothing loaded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                found.add(full if full in modules else node.module)
    return found & modules


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.slow
def test_no_import_cycle_even_through_function_level_imports() -> None:
    """import-linter sees only module-level imports; a function-level import can hide a
    cycle (issue 22 s6: rounds <-> scan, logscan <-> logscan_fast)."""
    paths = {_module_name(p): p for p in _modules()}
    names = set(paths)
    graph = {m: _imports_at_run_time(p, names) - {m} for m, p in paths.items()}
    assert _cycles(graph) == []


def test_the_cycle_check_sees_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


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
        ("runner/run.py", "_launch"),
        ("runner/run.py", "_supervise"),
        ("runner/run.py", "_execute"),
    ],
)
def test_the_supervision_core_reads_in_one_screen(module: str, qualname: str) -> None:
    """Issue 22 s2: the wait loop and the runner's supervise step fit in 80 lines each."""
    assert _function_lines(SRC / module, qualname) <= 80


def test_the_top_level_holds_packages_only() -> None:
    """Issue 30: folders name roles; beside the packages only the entry points stay
    (``__init__`` re-exports the public API, ``__main__`` is ``python -m skgate``)."""
    loose = sorted(
        p.name
        for p in SRC.iterdir()
        if p.is_file() and p.name not in {"__init__.py", "__main__.py", "py.typed"}
    )
    assert loose == []
    # Each folder of code is a package (data/ and schemas/ hold data files only).
    assert (
        sorted(
            p.name
            for p in SRC.iterdir()
            if p.is_dir() and any(p.glob("*.py")) and not (p / "__init__.py").is_file()
        )
        == []
    )
