"""The ``skgate`` command as a person types it, for the benches that time it (issue 29).

The issue's figures are for ``skgate run``, ``skgate start`` and ``skgate status``: the
console script that ``pip install`` puts beside the interpreter (``scripts/skgate``).
``python -m skgate`` runs the same code behind ``runpy`` (``runpy`` and
``importlib.util`` imported, the package found by ``-m``) before skgate's first line;
``bench_runner.py``'s start-up part times both.
"""

from __future__ import annotations

import sys
from pathlib import Path


def skgate_argv(python: str = sys.executable) -> list[str]:
    """The ``skgate`` console script installed beside ``python``; ``python -m skgate``
    where there is none (a source tree run without ``pip install``)."""
    script = Path(python).parent / "skgate"
    return [str(script)] if script.is_file() else [python, "-m", "skgate"]
