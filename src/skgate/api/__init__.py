"""The caller's side of a run: the Python API, start/wait/stop and the detached runner.

``calls``: :func:`run`, :func:`run_attempt`, :func:`start`, :func:`wait`, :func:`stop`,
:func:`status` (re-exported here, so ``from skgate.api import run`` keeps working);
``lifecycle``: what ``skgate start/wait/stop`` do; ``detach``: ``skgate start``'s detached
runner. Every name loads on first use: ``skgate start`` imports ``skgate.api.detach``
before its fork and must not pay for the rest (start latency).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.api.calls import run, run_attempt, start, status, stop, wait

_CALLS = ("run", "run_attempt", "start", "status", "stop", "wait")


def __getattr__(name: str) -> Any:
    if name not in _CALLS:
        raise AttributeError(f"module 'skgate.api' has no attribute {name!r}")
    from skgate.api import calls  # noqa: PLC0415 - lazy on purpose (see the module doc)

    return getattr(calls, name)


__all__ = ["run", "run_attempt", "start", "status", "stop", "wait"]
