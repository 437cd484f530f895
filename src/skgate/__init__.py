"""skgate: the process-safety gate for Ascend SuperKernel static compilation.

The public API for controllers (people's scripts and AI agents) is re-exported here.
Heavier parts load on first use, so ``import skgate`` stays cheap for ``skgate run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skgate.model.errors import BlockedError, EvidenceError, SkgateError, UsageError
from skgate.model.records import Cause, Evidence, PackageMode, State, Verdict
from skgate.model.request import RunRequest
from skgate.verdict.classify import classify

if TYPE_CHECKING:
    from skgate.api import run, run_attempt, status
    from skgate.evidence.seal import verify
    from skgate.preflight.prepare import LaunchPlan, prepare
    from skgate.preflight.profiler import ProfilerSchedule
    from skgate.workdir.retry import retry

__version__ = "0.1.0"

_LAZY = {
    "run": "skgate.api",
    "run_attempt": "skgate.api",
    "status": "skgate.api",
    "retry": "skgate.workdir.retry",
    "prepare": "skgate.preflight.prepare",
    "LaunchPlan": "skgate.preflight.prepare",
    "ProfilerSchedule": "skgate.preflight.profiler",
    "verify": "skgate.evidence.seal",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'skgate' has no attribute {name!r}")
    import importlib  # noqa: PLC0415 - lazy on purpose (start-up cost of skgate run)

    return getattr(importlib.import_module(module), name)


__all__ = [
    "BlockedError",
    "Cause",
    "Evidence",
    "EvidenceError",
    "LaunchPlan",
    "PackageMode",
    "ProfilerSchedule",
    "RunRequest",
    "SkgateError",
    "State",
    "UsageError",
    "Verdict",
    "__version__",
    "classify",
    "prepare",
    "retry",
    "run",
    "run_attempt",
    "status",
    "verify",
]
