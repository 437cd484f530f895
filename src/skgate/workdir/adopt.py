"""``skgate recover --adopt``: take over supervision of a live tree whose runner died.

Without it, a compile whose runner was killed runs on with no deadline at all (issue 21
s1): nobody enforces the frozen timeout. Adoption keeps the attempt's own frozen
deadline and grace, and ends the tree as the runner would have (C4, issue 28 s1):

* what is waited for is the one liveness answer (:mod:`skgate.read.liveness`): the manifest,
  the process journal, the cgroup leaf, and a re-scan of ``/proc`` for the leader's
  session and group and the descendants of every owned process, re-read while waiting,
  so a process forked after the runner died (or after the adoption) is waited for on a
  host without a cgroup too (issue 28 s3);
* ``adopted`` goes into the journal with the adopter's pid, the pids found and how;
* the termination policy is the runner's own (:class:`~skgate.proc.termination.Termination`,
  one policy for both, so they cannot drift): at the frozen deadline ``timeout`` is
  journalled and SIGTERM goes to the attempt's own process group, SIGKILL after the
  frozen grace; a stop signal to the adopter starts the same sequence, a second one is
  SIGKILL at once; then escaped processes (``setsid``, another group) are waited for one
  more grace, reported, and never signalled;
* the group is signalled member by member, each by a pidfd checked by start time: the
  members are the live processes whose group is the leader's, in the leader's session
  (:func:`~skgate.read.liveness.session_members`), so a recycled group id is never signalled;
* then the ordinary recovery finishes the attempt. The leader's exit status cannot be
  read by a process that is not its parent, so the natural return is not established
  and the verdict stays ``unknown`` (C2.5), with the adoption on record.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from skgate.evidence import files
from skgate.evidence.journal import iter_journal
from skgate.evidence.load import load_control
from skgate.model.errors import StillLiveError
from skgate.model.events import (
    Adopted,
    AdoptedTreeEnded,
    Launched,
    SignalReceived,
    SignalSent,
    Timeout,
)
from skgate.model.signals import signal_name
from skgate.proc.cgroup import LEAF_PREFIX
from skgate.proc.handle import ProcessHandle
from skgate.proc.observe import scan
from skgate.proc.signals import STOP_SIGNALS, inherited_ignore
from skgate.proc.termination import Action, Reason, RecordTimeout, SignalGroup, Termination
from skgate.read.liveness import (
    LiveProcess,
    Source,
    leader_ref,
    live_processes,
    probe,
    session_members,
)

ADOPTER = "skgate recover --adopt"

#: How often the liveness answer is re-read while waiting (a pidfd wakes the wait at
#: once when a held process exits; a process forked meanwhile is found at this pace).
REREAD = 0.2


def _launched(attempt: Path) -> Launched | None:
    return next((e for e in iter_journal(attempt / files.EVENTS) if isinstance(e, Launched)), None)


def _leaf(attempt: Path) -> Path | None:
    ev = _launched(attempt)
    cgroup = ev.cgroup if ev is not None else None
    if cgroup is not None and Path(cgroup).name.startswith(LEAF_PREFIX):
        return Path(cgroup)
    return None


class Adoption:
    """The live owned processes of one adopted tree, each held by a pidfd."""

    def __init__(self, attempt: Path, held: list[LiveProcess]) -> None:
        self.attempt = attempt
        self.handles: dict[tuple[int, int], ProcessHandle] = {}
        self.leaf = _leaf(attempt)
        self.leader = leader_ref(attempt)
        for p in held:
            self._hold(p.pid, p.start_ticks)

    def _hold(self, pid: int, ticks: int) -> None:
        if (pid, ticks) in self.handles:
            return
        handle = ProcessHandle.open(pid, ticks)
        if handle is not None:
            self.handles[(pid, ticks)] = handle

    def refresh(self) -> None:
        """Drop the ended; hold what the liveness answer finds now (forked later too)."""
        for key, handle in list(self.handles.items()):
            if not handle.alive():
                handle.close()
                del self.handles[key]
        for p in live_processes(self.attempt, cgroup=str(self.leaf) if self.leaf else None):
            self._hold(p.pid, p.start_ticks)

    def wait(self, until: float | None) -> None:
        """Until something held ends, or the wall-clock time ``until``, or one re-read."""
        now = time.time()
        step = REREAD if until is None else max(0.0, min(REREAD, until - now))
        fds = [h.fileno() for h in self.handles.values() if h.fileno() >= 0]
        with contextlib.suppress(InterruptedError):
            select.select(fds, [], [], step)

    def group(self) -> list[ProcessHandle]:
        """The live members of the attempt's own process group, held by pidfd (C4)."""
        if self.leader is None:
            return []
        members: list[ProcessHandle] = []
        for pid, st in session_members(self.leader, scan()).items():
            if st.pgid != self.leader.pgid:
                continue  # another group of the session: the runner's killpg misses it too
            self._hold(pid, st.start_ticks)
            handle = self.handles.get((pid, st.start_ticks))
            if handle is not None:
                members.append(handle)
        return members

    def signal_group(self, signum: int, reason: Reason, journal: files.Journal) -> int:
        """Signal every live member of the own group; returns how many got it.

        SIGKILL is repeated while new members appear (one forked between the scan and
        the signal); a killed process forks nothing more, so it ends."""
        target = f"process group {self.leader.pgid}" if self.leader else "process group ?"

        def record(**what: object) -> None:
            journal.emit(
                SignalSent(
                    signal=signum, name=signal_name(signum), target=target,
                    reason=reason.value, by=ADOPTER, **what,  # type: ignore[arg-type]
                )
            )  # fmt: skip

        sent: set[tuple[int, int]] = set()
        for _ in range(8 if signum == signal.SIGKILL else 1):
            fresh = [h for h in self.group() if (h.pid, h.start_ticks) not in sent]
            if not fresh:
                break
            for handle in fresh:
                sent.add((handle.pid, handle.start_ticks))
                delivered = handle.send_signal(signum)
                record(delivered=delivered, pid=handle.pid, start_ticks=handle.start_ticks)
        if not sent:
            record(delivered=False, not_sent="the process group has no live member left")
        return len(sent)

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()
        self.handles.clear()


@contextlib.contextmanager
def _stop_signals() -> Iterator[list[int]]:
    """Stop signals to the adopter, noted for the loop (as the runner's, C2.4); only in
    the main thread of a process (the CLI), where a handler may be installed."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    old: dict[signal.Signals, signal._HANDLER] = {}
    for stop in STOP_SIGNALS:
        if not inherited_ignore(stop):
            old[stop] = signal.signal(stop, lambda signum, _frame: pending.append(signum))
    try:
        yield pending
    finally:
        for stop, handler in old.items():
            signal.signal(stop, handler)


def adopt(attempt: Path) -> str:
    """Supervise the live tree of ``attempt`` to its end (see the module doc); the caller
    holds the attempt's recover lock. Returns how it ended: ``natural`` or ``deadline``
    (``stopped`` after a stop signal), or ``nothing`` when nothing owned lived."""
    live = probe(attempt)
    if live.runner_alive:
        raise StillLiveError(
            f"{attempt}: its runner ({live.describe()}) is alive and supervising it; "
            "nothing to adopt (see skgate status)",
            tuple(live.pids()),
        )
    if not live.owned:
        return "nothing"
    request = load_control(attempt).request
    launched = _launched(attempt)
    deadline = launched.deadline_wall if launched is not None else None
    adoption = Adoption(attempt, list(live.owned))
    journal = files.Journal(attempt / files.EVENTS)
    # The handlers first: a stop signal from the moment 'adopted' is on record is acted
    # on (C2.4), never the default death that would leave the tree unsupervised again.
    try:
        with _stop_signals() as pending:
            journal.emit(
                Adopted(
                    mono=time.monotonic(),
                    by_pid=os.getpid(),
                    pids=tuple(p.pid for p in live.owned),
                    sources=tuple(sorted({p.source.value for p in live.owned})),
                    cgroup=str(adoption.leaf) if adoption.leaf else None,
                    pidfds=all(h.exact for h in adoption.handles.values()),
                    deadline_wall=deadline,
                    grace=request.grace,
                    note=_blind_spot(adoption, live.owned),
                )
            )
            return _supervise(
                adoption,
                timeout=request.timeout,
                grace=request.grace,
                deadline=deadline,
                pending=pending,
                journal=journal,
            )
    finally:
        adoption.close()
        journal.close()


def _blind_spot(adoption: Adoption, owned: tuple[LiveProcess, ...]) -> str | None:
    """What no source can see, said where the adoption is recorded (issue 28 s3)."""
    if adoption.leaf is not None or any(p.source is Source.CGROUP for p in owned):
        return None
    if adoption.leader is None:
        return "no cgroup leaf and no launch record: only the processes on record are seen"
    return (
        "no cgroup leaf: processes are found by the leader's session and group and by "
        "ancestry; one that left the session after the runner died, whose owned parent "
        "ended too, cannot be seen"
    )


def _supervise(
    adoption: Adoption,
    *,
    timeout: float,
    grace: float,
    deadline: float | None,
    pending: list[int],
    journal: files.Journal,
) -> str:
    # The runner's policy on the wall clock: the deadline is frozen as a wall time in
    # 'launched', and the adopter is another process (its monotonic clock is the same
    # machine's, but the runner's launch instant is only on record as wall time).
    policy = Termination(
        launched=(deadline if deadline is not None else float("inf")) - timeout,
        timeout=timeout,
        grace=grace,
    )
    how = "natural"
    while True:
        now = time.time()
        adoption.refresh()
        while pending:
            signum = pending.pop(0)
            journal.emit(SignalReceived(signal=signum, name=signal_name(signum)))
            how = "stopped"
            _perform(adoption, policy.stop_signal(signum, now), timeout, journal)
        if not adoption.handles:
            break
        if policy.kill_at is not None and not adoption.group():
            # Only escapes are left: no SIGKILL can reach anyone (issue 21 s4).
            policy.group_empty(now)
            adoption.signal_group(signal.SIGKILL, Reason.GRACE_EXPIRED, journal)
        actions = policy.advance(now)
        if any(isinstance(a, RecordTimeout) for a in actions) and how == "natural":
            how = "deadline"
        _perform(adoption, actions, timeout, journal)
        if policy.gives_up(now):
            break
        adoption.wait(policy.wake_at())
    journal.emit(
        AdoptedTreeEnded(
            mono=time.monotonic(),
            how=how,
            still_alive=tuple(sorted(h.pid for h in adoption.handles.values())) or None,
        )
    )
    return how


def _perform(
    adoption: Adoption, actions: list[Action], timeout: float, journal: files.Journal
) -> None:
    """Do what the policy decided (the runner's Supervisor does the same, C4)."""
    for act in actions:
        if isinstance(act, RecordTimeout):
            journal.emit(Timeout(mono=time.monotonic(), timeout=timeout, by=ADOPTER))
        elif isinstance(act, SignalGroup):
            adoption.signal_group(act.signum, act.reason, journal)
