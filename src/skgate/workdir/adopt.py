"""``skgate recover --adopt``: take over supervision of a live tree whose runner died.

Without it, a compile whose runner was killed runs on with no deadline at all (issue 21
s1): nobody enforces the frozen timeout. Adoption keeps the attempt's own frozen
deadline and grace, and finishes as the runner would have:

* the tree is the one liveness answer (:mod:`skgate.read.liveness`): the manifest, the
  process journal and the cgroup leaf; each process is held by a pidfd opened and then
  checked by start time, so a recycled pid is never signalled (C4). The leaf, where it
  exists, is re-read while waiting, so a process forked after the adoption is held too;
  without a leaf, such a process is not seen, and the journal says so;
* ``adopted`` goes into the journal with the adopter's pid, the pids held and how;
* at natural return (every held process ended on its own) the wait ends; at the frozen
  deadline ``timeout`` is journalled, SIGTERM goes to each held process, then after the
  frozen grace SIGKILL to those left (``signal_sent`` each, C4: only to processes the
  attempt owns, never by name or age);
* then the ordinary recovery finishes the attempt. The leader's exit status cannot be
  read by a process that is not its parent, so the natural return is not established
  and the verdict stays ``unknown`` (C2.5), with the adoption on record.
"""

from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path

from skgate.evidence import files
from skgate.evidence.journal import iter_journal
from skgate.evidence.load import load_control
from skgate.model.errors import StillLiveError
from skgate.model.events import Adopted, AdoptedTreeEnded, Launched, SignalSent, Timeout
from skgate.model.signals import signal_name
from skgate.proc.cgroup import LEAF_PREFIX, read_pids
from skgate.proc.handle import ProcessHandle
from skgate.proc.observe import read_stat
from skgate.read.liveness import LiveProcess, Source, probe


def _launched(attempt: Path) -> Launched | None:
    return next((e for e in iter_journal(attempt / files.EVENTS) if isinstance(e, Launched)), None)


def _deadline(attempt: Path) -> float | None:
    ev = _launched(attempt)
    return float(ev.deadline_wall) if ev is not None and ev.deadline_wall is not None else None


def _leaf(attempt: Path) -> Path | None:
    ev = _launched(attempt)
    cgroup = ev.cgroup if ev is not None else None
    if cgroup is not None and Path(cgroup).name.startswith(LEAF_PREFIX):
        return Path(cgroup)
    return None


ADOPTER = "skgate recover --adopt"


class Adoption:
    """The held processes of one adopted tree."""

    def __init__(self, attempt: Path, held: list[LiveProcess]) -> None:
        self.attempt = attempt
        self.handles: dict[tuple[int, int], ProcessHandle] = {}
        self.leaf = _leaf(attempt)
        for p in held:
            self._hold(p.pid, p.start_ticks)

    def _hold(self, pid: int, ticks: int) -> None:
        if (pid, ticks) in self.handles:
            return
        handle = ProcessHandle.open(pid, ticks)
        if handle is not None:
            self.handles[(pid, ticks)] = handle

    def refresh(self) -> None:
        """Drop the ended; hold what the leaf lists now (forked after the adoption)."""
        for key, handle in list(self.handles.items()):
            if not handle.alive():
                handle.close()
                del self.handles[key]
        if self.leaf is not None:
            for pid in read_pids(self.leaf):
                st = read_stat(pid)
                if st is not None and not st.zombie:
                    self._hold(pid, st.start_ticks)

    def wait(self, until: float | None) -> None:
        """Until nothing held lives, or the wall-clock time ``until``."""
        while True:
            self.refresh()
            if not self.handles:
                return
            now = time.time()
            if until is not None and now >= until:
                return
            fds = [h.fileno() for h in self.handles.values() if h.fileno() >= 0]
            # A pidfd is readable when its process exits; the leaf is re-read each
            # 0.2 s, and a process without a pidfd is polled at that pace.
            step = 0.2 if until is None else max(0.0, min(0.2, until - now))
            select.select(fds, [], [], step)

    def signal_all(self, signum: int, reason: str, journal: files.Journal) -> None:
        for handle in list(self.handles.values()):
            delivered = handle.send_signal(signum)
            journal.emit(
                SignalSent(
                    signal=signum,
                    name=signal_name(signum),
                    reason=reason,
                    delivered=delivered,
                    pid=handle.pid,
                    start_ticks=handle.start_ticks,
                    by=ADOPTER,
                )
            )

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()
        self.handles.clear()


def adopt(attempt: Path) -> str:
    """Supervise the live tree of ``attempt`` to its end (see the module doc); the caller
    holds the attempt's recover lock. Returns how it ended: ``natural`` or ``deadline``,
    or ``nothing`` when nothing owned lived."""
    live = probe(attempt)
    if live.runner_alive:
        raise StillLiveError(
            f"{attempt}: its runner ({live.describe()}) is alive and supervising it; "
            "nothing to adopt (see skgate status)",
            tuple(live.pids()),
        )
    if not live.owned:
        return "nothing"
    control = load_control(attempt)
    request = control.request
    deadline = _deadline(attempt)
    adoption = Adoption(attempt, list(live.owned))
    journal = files.Journal(attempt / files.EVENTS)
    try:
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
                note=None
                if adoption.leaf is not None or any(p.source is Source.CGROUP for p in live.owned)
                else "no cgroup leaf: a process forked after the adoption is not seen",
            )
        )
        adoption.wait(deadline)
        if not adoption.handles:
            journal.emit(AdoptedTreeEnded(mono=time.monotonic(), how="natural"))
            return "natural"
        journal.emit(Timeout(mono=time.monotonic(), timeout=request.timeout, by=ADOPTER))
        adoption.signal_all(signal.SIGTERM, "timeout", journal)
        adoption.wait(time.time() + request.grace)
        if adoption.handles:
            adoption.signal_all(signal.SIGKILL, "grace expired", journal)
            adoption.wait(time.time() + 5.0)
        journal.emit(
            AdoptedTreeEnded(
                mono=time.monotonic(),
                how="deadline",
                still_alive=tuple(h.pid for h in adoption.handles.values()),
            )
        )
        return "deadline"
    finally:
        adoption.close()
        journal.close()
