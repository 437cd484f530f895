"""When the runner ends its own group: the termination policy, apart from the syscalls.

A pure state machine (no clock, no signal, no process: the time is the ``now`` each input
carries, so tests drive it with a fake clock). :class:`~skgate.proc.supervise.Supervisor`
feeds it what happened and performs the actions it returns, as trio's deadlines and Bazel's
process-wrapper keep the policy apart from the system calls.

The policy (C4: only the runner, and only the exact process group it created):

* the frozen top-level deadline fires once: the timeout is recorded and the group gets
  SIGTERM; after the frozen grace it gets SIGKILL;
* a stop signal to the runner (SIGTERM, SIGINT, SIGHUP from outside, C2.4) or a
  ``skgate stop`` request starts the same sequence: the signal goes to the group, SIGKILL
  follows after the grace (issue 21 s4: a workload that ignores SIGTERM must not outlive
  an explicit stop, and ``status`` must never be final while it lives);
* another stop signal while the grace runs is an explicit "now": SIGKILL at once;
* once SIGKILL was sent (or the group has no member left), only escaped processes (setsid,
  never signalled) can remain: they are waited for one more grace, then reported, and the
  runner gives up waiting;
* a group with no live member is never signalled (issue 21 s4): the grace it would wait
  for is cut short, and the skipped signal is recorded as not sent.
"""

from __future__ import annotations

import enum
import signal

from skgate.model.frozen import record


class Reason(enum.Enum):
    """Why a signal goes to the group (the ``reason`` of a ``signal_sent`` record)."""

    TIMEOUT = "timeout"
    GRACE_EXPIRED = "grace-expired"
    FORWARDED = "forwarded"
    STOP_REQUESTED = "stop-requested"
    ESCALATED = "escalated"


@record
class SignalGroup:
    """Send ``signum`` to the own process group (if it still has a live member)."""

    signum: int
    reason: Reason


@record
class RecordTimeout:
    """The frozen deadline passed: journal ``timeout`` (before any signal it causes)."""


Action = SignalGroup | RecordTimeout


class Termination:
    """The deadline -> grace -> kill -> give-up sequence of one supervised run."""

    def __init__(self, *, launched: float, timeout: float, grace: float) -> None:
        self.deadline = launched + timeout
        self.grace = grace
        self.timeout_fired = False
        self.kill_at: float | None = None  # SIGKILL goes to the group, once stopping began
        self.give_up_at: float | None = None  # escaped survivors stop being waited for

    # -- inputs ---------------------------------------------------------------------

    def stop_signal(self, signum: int, now: float, *, requested: bool = False) -> list[Action]:
        """A stop signal reached the runner; ``requested`` when it is a ``skgate stop``."""
        if self.kill_at is None and self.give_up_at is None:
            self.kill_at = now + self.grace
            reason = Reason.STOP_REQUESTED if requested else Reason.FORWARDED
            return [SignalGroup(signum, reason)]
        if self.kill_at is not None:
            return self._kill(now, Reason.ESCALATED)
        return []  # SIGKILL was sent already: nothing stronger exists

    def advance(self, now: float) -> list[Action]:
        """Time passed: fire the deadline, then the end of the grace, when they are due."""
        actions: list[Action] = []
        if not self.timeout_fired and now >= self.deadline:
            self.timeout_fired = True
            actions.append(RecordTimeout())
            if self.kill_at is None and self.give_up_at is None:
                actions.append(SignalGroup(signal.SIGTERM, Reason.TIMEOUT))
                self.kill_at = now + self.grace
        if self.kill_at is not None and now >= self.kill_at:
            # Even with the leader gone: what ignored SIGTERM must not survive.
            actions += self._kill(now, Reason.GRACE_EXPIRED)
        return actions

    def group_empty(self, now: float) -> None:
        """The own group has no live member: no SIGKILL can reach anyone, so none is due;
        escaped processes are waited for until the grace that was running ends."""
        if self.kill_at is not None:
            self.give_up_at, self.kill_at = max(now, self.kill_at), None

    # -- questions ------------------------------------------------------------------

    def look_first(self, now: float) -> bool:
        """Must the tree be looked at before acting? An exit that raced the deadline
        counts first (C2.1), and giving up needs to know who is left."""
        if not self.timeout_fired and now >= self.deadline:
            return True
        return self.give_up_at is not None and now >= self.give_up_at

    def gives_up(self, now: float) -> bool:
        """Stop waiting for what is left (only escaped processes: never signalled)."""
        return self.give_up_at is not None and now >= self.give_up_at

    def stopping(self) -> bool:
        """Has the runner begun ending the group (deadline, signal or stop request)?"""
        return self.timeout_fired or self.kill_at is not None or self.give_up_at is not None

    def wake_at(self) -> float | None:
        """The next instant the policy may act at, if any."""
        due = [t for t in (self.kill_at, self.give_up_at) if t is not None]
        if not self.timeout_fired:
            due.append(self.deadline)
        return min(due) if due else None

    def _kill(self, now: float, reason: Reason) -> list[Action]:
        self.kill_at, self.give_up_at = None, now + self.grace
        return [SignalGroup(signal.SIGKILL, reason)]
