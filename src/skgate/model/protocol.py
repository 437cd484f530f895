"""The runner's reply protocol, read on the caller's side (no I/O: bytes in, a record out).

A runner started as a child (``python -m skgate.runner`` for :func:`skgate.api.run`,
``python -m skgate.api.detach`` for ``start``) ends its conversation with one JSON line:
its result, or ``{"error": MESSAGE, "exit_code": N}`` for skgate's own refusal.
"""

from __future__ import annotations

import enum
import json

from skgate.model.errors import BlockedError, SkgateError, UnfinishedError, UsageError
from skgate.model.exits import EXIT_BLOCKED
from skgate.model.frozen import record
from skgate.model.running import State

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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


class AttemptPhase(str, enum.Enum):
    """Where a live attempt is, as its journal tells it (``wait --json``'s ``phase``,
    ``start --json``'s ``phase``); never a verdict (C2: only the classifier gives one)."""

    PREFLIGHT = "preflight"
    WAITING_FOR_BLOCKERS = "waiting_for_blockers"
    RUNNING = "running"
    FINISHING = "finishing"
    FINAL = "final"
    NOT_STARTED = "not_started"


@record
class Started:
    """What ``skgate start --json`` prints."""

    attempt: str
    #: IN_PROGRESS (recorded: issue 29), or NOT_STARTED (blocked before launch).
    state: State
    runner_pid: int
    #: PREFLIGHT: ``start`` answers once the attempt is recorded (issue 29); RUNNING,
    #: WAITING_FOR_BLOCKERS or NOT_STARTED from a runner that answered later.
    phase: AttemptPhase
    waiting_for: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return EXIT_BLOCKED if self.state is State.NOT_STARTED else 0

    @classmethod
    def from_dict(cls, got: dict[str, Any]) -> Started:
        """The caller's side of the hand-shake (a damaged reply is skgate's own error)."""
        try:
            return cls(
                attempt=str(got["attempt"]),
                state=State(got["state"]),
                runner_pid=int(got["runner_pid"]),
                phase=AttemptPhase(got["phase"]),
                waiting_for=tuple(str(x) for x in got.get("waiting_for", [])),
                reasons=tuple(str(x) for x in got.get("reasons", [])),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise SkgateError(f"the detached runner's reply is damaged ({exc})") from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_START,
            "attempt": self.attempt,
            "state": self.state.value,
            "phase": self.phase.value,
            "runner_pid": self.runner_pid,
            "waiting_for": list(self.waiting_for),
            "reasons": list(self.reasons),
        }
