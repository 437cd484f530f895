"""The runner's reply protocol, read on the caller's side (no I/O: bytes in, a record out).

A runner started as a child (``python -m skgate.runner`` for :func:`skgate.api.run`,
``python -m skgate.detach`` for ``start``) ends its conversation with one JSON line:
its result, or ``{"error": MESSAGE, "exit_code": N}`` for skgate's own refusal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from skgate.model.errors import BlockedError, SkgateError, UnfinishedError, UsageError
from skgate.model.exits import EXIT_BLOCKED

SCHEMA_START = "skgate.start/1"


def read_reply(raw: bytes, failure: str) -> dict[str, Any]:
    """The caller's side: the runner's last JSON line, or its error raised as skgate's
    own (BlockedError for exit 3, UsageError otherwise); ``failure`` when there is none."""
    lines = raw.decode("utf-8", "backslashreplace").strip().splitlines()
    try:
        result: Any = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        raise SkgateError(failure)
    if "error" in result:
        code = int(result.get("exit_code", 2))
        for error in (BlockedError, UnfinishedError):
            if code == error.exit_code:
                raise error(str(result["error"]))
        raise UsageError(str(result["error"]))
    return result


@dataclass(frozen=True)
class Started:
    """What ``skgate start --json`` prints."""

    attempt: str
    state: str  # in_progress | not_started
    runner_pid: int
    phase: str  # running | waiting_for_blockers | not_started
    waiting_for: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return EXIT_BLOCKED if self.state == "not_started" else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_START,
            "attempt": self.attempt,
            "state": self.state,
            "phase": self.phase,
            "runner_pid": self.runner_pid,
            "waiting_for": list(self.waiting_for),
            "reasons": list(self.reasons),
        }
