"""``skgate demo --scenario diagnose``: a small matrix on the simulator whose only failing arm is
the start-up hook (C6)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from skgate.model.outcomes import ArmOutcome, Conclusion
from skgate.regress.common import (
    Progress,
    RunFn,
)
from skgate.regress.matrix.core import render_matrix_markdown, run_matrix
from skgate.regress.matrix.load import load_matrix

DEMO_HOOK = """\
# A start-up override of the profiler schedule: the pattern C6 forbids. It loads in every
# interpreter that starts with this directory on PYTHONPATH, before the launcher's own
# initialisation. The diagnosis runs it as one declared factor, in one arm only.
import os

os.environ.setdefault("DEMO_PROFILER_SCHEDULE_OVERRIDE", "wait=1,warmup=1,active=2,repeat=1")
"""


def demo_matrix_data(python: str = sys.executable) -> dict[str, Any]:
    """The demo matrix (JSON-shaped): the simulator fails only when a start-up hook loads."""
    return {
        "baseline": {
            "argv": [python, "-m", "skgate.sim.launcher", "--inputs", "2"],
            "env": {"SKGATE_SIM_FAULTS": "fail_with_hook", "SKGATE_SIM_OPC_SECONDS": "0.02"},
            "jobs": 2,
            "timeout": 60,
            "grace": 2,
            "completion_marker": "skgate-sim: inference completed",
        },
        "arm": [
            {"name": "startup-hook", "startup_hook": "hook"},
            {"name": "profiler", "profiler": True},
            {"name": "sk-trace", "sk_trace": 1024},
        ],
    }


def demo_diagnose(
    workdir: Path, echo: Progress | None = None, *, run: RunFn | None = None
) -> tuple[list[str], bool]:
    """``skgate demo --scenario diagnose``: a small matrix on the simulator.

    Returns the table lines and whether the attribution came out as the scenario
    demands: the baseline and the profiler / SK-trace arms succeed, only the start-up
    hook arm fails, and the conclusion names the start-up launch path (C6).
    """
    workdir = workdir.absolute()
    (workdir / "hook").mkdir(parents=True, exist_ok=True)
    hook = workdir / "hook" / "sitecustomize.py"
    if not hook.exists():
        hook.write_text(DEMO_HOOK, encoding="utf-8")
    matrix_path = workdir / "diagnose.json"
    if not matrix_path.exists():
        matrix_path.write_text(json.dumps(demo_matrix_data(), indent=2) + "\n", encoding="utf-8")
    matrix = load_matrix(matrix_path)
    n = 1
    while (workdir / f"regress-{n}").exists():
        n += 1
    result = run_matrix(matrix, workdir / f"regress-{n}", run=run, progress=echo)
    ok = (
        result.conclusion is Conclusion.STARTUP_HOOK_TRIGGER
        and result.baseline.outcome is ArmOutcome.PASS
        and all(
            r.outcome is (ArmOutcome.FAIL if r.factor == "startup_hook" else ArmOutcome.PASS)
            for r in result.rows
        )
    )
    return render_matrix_markdown(result), ok
