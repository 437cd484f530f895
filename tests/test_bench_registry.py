"""Every benchmark is one CI runs (issue 29: benchmarks that cannot rot).

``bench/run_all.py --quick`` is CI's smoke step; a bench it does not list is never run
there, so it can crash unseen (``bench_names.py`` was such a file until this test). Each
listed bench must also take ``--quick``, the argument that smoke step gives it.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _takes_quick(script: Path) -> bool:
    """Whether the script's parser declares ``--quick`` (``add_argument("--quick", ...)``)."""
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and any(isinstance(a, ast.Constant) and a.value == "--quick" for a in node.args)
        ):
            return True
    return False


def test_every_bench_file_is_run_by_run_all() -> None:
    run_all = _run_all()
    listed = {argv[0] for argv, _ in run_all.BENCHES.values()}
    files = {p.name for p in BENCH.glob("*.py")}
    assert files - listed - run_all.NOT_BENCHES == set(), "benches run_all.py does not run"
    assert listed - files == set(), "run_all.py lists scripts that are not in bench/"
    assert files >= run_all.NOT_BENCHES


def test_every_listed_bench_takes_quick() -> None:
    run_all = _run_all()
    missing = sorted(
        argv[0] for argv, _ in run_all.BENCHES.values() if not _takes_quick(BENCH / argv[0])
    )
    assert missing == []


def test_the_quick_check_reads_the_parser(tmp_path: Path) -> None:
    # The check itself can fail: a script without the argument is told apart.
    without = tmp_path / "b.py"
    without.write_text('import argparse\nargparse.ArgumentParser().add_argument("--rounds")\n')
    with_it = tmp_path / "c.py"
    with_it.write_text('import argparse\nargparse.ArgumentParser().add_argument("--quick")\n')
    assert not _takes_quick(without)
    assert _takes_quick(with_it)
