"""skgate: the process-safety gate for Ascend SuperKernel static compilation.

The public API for controllers (people's scripts and AI agents) is re-exported here.
Every name loads on first use, so ``import skgate`` stays cheap for ``skgate start``.
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: importing ``typing`` is a tenth of ``skgate --help``'s
# start-up (issue 22 s5); type checkers treat this name alike.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.api import run, run_attempt, status
    from skgate.evidence.seal import verify
    from skgate.model.errors import BlockedError, EvidenceError, SkgateError, UsageError
    from skgate.model.outcomes import PackageMode
    from skgate.model.records import Cause, Evidence, State, Verdict
    from skgate.model.request import RunRequest
    from skgate.preflight.prepare import LaunchPlan, prepare
    from skgate.preflight.profiler import ProfilerSchedule
    from skgate.verdict.classify import classify
    from skgate.workdir.retry import retry

__version__ = "0.1.0"

# Every name loads on first use: ``skgate start`` forks its runner before most of skgate
# is imported, and each module imported before that fork is paid on every start.
_LAZY = {
    "BlockedError": "skgate.model.errors",
    "EvidenceError": "skgate.model.errors",
    "SkgateError": "skgate.model.errors",
    "UsageError": "skgate.model.errors",
    "Cause": "skgate.model.records",
    "Evidence": "skgate.model.records",
    "PackageMode": "skgate.model.outcomes",
    "State": "skgate.model.records",
    "Verdict": "skgate.model.records",
    "RunRequest": "skgate.model.request",
    "classify": "skgate.verdict.classify",
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
    import importlib  # noqa: PLC0415 - lazy on purpose (start-up cost of skgate start)

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
