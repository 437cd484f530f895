"""The termination policy as a pure state machine: inputs and a fake clock -> actions.

No process is started: what the Supervisor would do is what these tables say (C4: only
the own group, only at the deadline, at a stop request or a stop signal).
"""

from __future__ import annotations

import signal

import pytest

from skgate.proc.termination import Reason, RecordTimeout, SignalGroup, Termination

TERM, KILL, INT = signal.SIGTERM, signal.SIGKILL, signal.SIGINT


def policy(grace: float = 5.0) -> Termination:
    # Launched at t=100 with a 60 s frozen timeout: the deadline is t=160.
    return Termination(launched=100.0, timeout=60.0, grace=grace)


def test_nothing_happens_before_the_deadline() -> None:
    p = policy()
    assert p.advance(159.99) == []
    assert not p.look_first(159.99)
    assert p.wake_at() == 160.0
    assert not p.stopping()


def test_deadline_then_grace_then_kill_then_give_up() -> None:
    p = policy()
    # The tree is looked at first: an exit that raced the deadline counts (C2.1).
    assert p.look_first(160.0)
    assert p.advance(160.0) == [RecordTimeout(), SignalGroup(TERM, Reason.TIMEOUT)]
    assert p.timeout_fired and p.stopping()
    assert p.advance(160.0) == []  # the deadline fires once
    assert p.wake_at() == 165.0
    assert p.advance(164.9) == []
    assert p.advance(165.0) == [SignalGroup(KILL, Reason.GRACE_EXPIRED)]
    assert not p.gives_up(169.9)
    assert p.wake_at() == 170.0
    assert p.look_first(170.0) and p.gives_up(170.0)


def test_zero_grace_kills_in_the_same_turn_as_the_deadline() -> None:
    p = policy(grace=0.0)
    assert p.advance(161.0) == [
        RecordTimeout(),
        SignalGroup(TERM, Reason.TIMEOUT),
        SignalGroup(KILL, Reason.GRACE_EXPIRED),
    ]
    assert p.gives_up(161.0)


def test_a_stop_request_is_sigterm_then_sigkill_after_the_grace() -> None:
    p = policy()
    assert p.stop_signal(TERM, 120.0, requested=True) == [SignalGroup(TERM, Reason.STOP_REQUESTED)]
    assert p.wake_at() == 125.0
    assert p.advance(125.0) == [SignalGroup(KILL, Reason.GRACE_EXPIRED)]
    assert p.gives_up(130.0)


@pytest.mark.parametrize("sig", [TERM, INT, signal.SIGHUP])
def test_a_second_stop_signal_is_an_explicit_now(sig: int) -> None:
    p = policy()
    assert p.stop_signal(sig, 120.0) == [SignalGroup(sig, Reason.FORWARDED)]
    assert p.stop_signal(sig, 121.0) == [SignalGroup(KILL, Reason.ESCALATED)]
    assert p.gives_up(126.0) and not p.gives_up(125.9)
    assert p.stop_signal(sig, 122.0) == []  # nothing is stronger than SIGKILL


def test_the_policy_reads_no_clock() -> None:
    # Time is only what the inputs say: the same inputs give the same actions.
    runs = []
    for _ in range(2):
        p = policy()
        runs.append([p.advance(t) for t in (150.0, 160.0, 165.0, 170.0)])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("sig", [TERM, INT, signal.SIGHUP])
def test_an_external_stop_signal_ends_the_group_after_the_grace(sig: int) -> None:
    # Issue 21 s4: forwarded once and then nothing let a workload that ignores SIGTERM
    # run on for ever; the same grace -> SIGKILL as the timeout now follows.
    p = policy()
    assert p.stop_signal(sig, 120.0) == [SignalGroup(sig, Reason.FORWARDED)]
    assert p.stopping() and p.wake_at() == 125.0
    assert p.advance(124.9) == []
    assert p.advance(125.0) == [SignalGroup(KILL, Reason.GRACE_EXPIRED)]
    assert p.gives_up(130.0)


def test_the_deadline_during_a_stop_does_not_restart_the_grace() -> None:
    p = policy()
    p.stop_signal(TERM, 158.0)
    # Recorded, but the group already got its SIGTERM: the grace that runs is kept.
    assert p.advance(160.0) == [RecordTimeout()]
    assert p.advance(163.0) == [SignalGroup(KILL, Reason.GRACE_EXPIRED)]


def test_an_empty_group_is_not_killed_and_the_grace_is_not_waited_twice() -> None:
    # Issue 21 s4: only a setsid escapee is left after the timeout's SIGTERM: no SIGKILL
    # is due for nobody, and the escapee is waited for until the running grace ends.
    p = policy()
    p.advance(160.0)
    p.group_empty(161.0)
    assert p.kill_at is None
    assert p.advance(165.0) == []
    assert p.gives_up(165.0) and not p.gives_up(164.9)


def test_group_empty_changes_nothing_when_no_kill_is_due() -> None:
    p = policy()
    p.group_empty(120.0)
    assert not p.stopping() and p.wake_at() == 160.0
