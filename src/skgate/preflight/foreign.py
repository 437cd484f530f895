"""Foreign compilers (C4): compilers this attempt does not own are blockers to wait for
or refuse, never signalled.

A wait is visible (issue 13): one line when it starts naming each blocker (pid, name,
age, never signalled) and how to stop waiting, then a progress line every
``progress_every`` seconds, through the ``notify`` callback the caller gives (the CLI
prints them: every few seconds on a terminal, every 30 s in a log). The journal gets
``foreign_wait`` when the wait starts and ``foreign_wait_end`` when it ends, with the
blockers, the outcome and the duration.

Waking up: each blocker is held by a pidfd (``pidfd_open``, then checked against the
recorded start time, so a recycled pid is never waited for by mistake) and the waiter
sleeps in ``poll`` on all of them, so it wakes the moment the last one exits, not on a
polling tick. Where pidfds are unavailable (old kernels) it falls back to checking
liveness every ``FALLBACK_POLL`` seconds. The process table is rescanned when every
known blocker is gone, and every ``RESCAN`` seconds, for compilers that started since.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable, Mapping, Sequence

from skgate.model.errors import UsageError
from skgate.model.events import Event, ForeignWait, ForeignWaitEnd
from skgate.model.request import RunRequest
from skgate.model.running import ProcessRecord
from skgate.proc.observe import COMPILER_NAMES, clock_ticks, compiler_processes, is_alive

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Emit = Callable[[Event], object]
Notify = Callable[[str], None]

#: Comma-separated compiler process names to treat as foreign compilers (C4).
COMPILER_NAMES_VAR = "SKGATE_COMPILER_NAMES"
#: Seconds between liveness checks where no pidfd can be had.
FALLBACK_POLL = 0.02
#: Seconds between rescans of the process table while blockers are known alive.
RESCAN = 2.0
#: Default seconds between progress lines (a log; the CLI uses a few seconds on a tty).
PROGRESS_EVERY = 30.0
NEVER_SIGNALLED = "never signalled (C4)"


def compiler_names(request: RunRequest, env: Mapping[str, str]) -> tuple[str, ...]:
    """The compiler process names of the foreign check and of stages (C3, C4)."""
    if request.compiler_names:
        return tuple(request.compiler_names)
    raw = env.get(COMPILER_NAMES_VAR, "")
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    return names or COMPILER_NAMES


def _uptime() -> float | None:
    try:
        with open("/proc/uptime", "rb") as fh:
            return float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def age_s(start_ticks: int) -> float | None:
    """Seconds since a process started, from its start time in clock ticks since boot."""
    up = _uptime()
    return None if up is None else max(0.0, up - start_ticks / clock_ticks())


def matched_name(record: ProcessRecord, names: Sequence[str] = COMPILER_NAMES) -> str:
    """The compiler name a process matched as (C4): its comm, or else its argv[0]'s base
    name (``exec -a opc sleep`` matches as opc although its comm is sleep)."""
    if record.name in names or not record.argv:
        return record.name
    first = os.path.basename(record.argv[0])
    return first if first in names else record.name


def process_label(record: ProcessRecord, names: Sequence[str] = COMPILER_NAMES) -> str:
    """``opc[22867]``, with the comm beside it when that is not the name it matched as."""
    matched = matched_name(record, names)
    comm = f" (comm {record.name})" if matched != record.name else ""
    return f"{matched}[{record.pid}]{comm}"


def blocker_text(record: ProcessRecord, names: Sequence[str] = COMPILER_NAMES) -> str:
    age = age_s(record.start_ticks)
    shown = f"{age:.0f} s" if age is not None else "unknown"
    matched = matched_name(record, names)
    comm = f"comm {record.name}, " if matched != record.name else ""
    return f"{matched}[{record.pid}] ({comm}age {shown}, {NEVER_SIGNALLED})"


class Blockers:
    """Foreign processes being waited for, each by a pidfd verified by its start time."""

    def __init__(self) -> None:
        self.fds: dict[tuple[int, int], int] = {}
        self.polled: set[tuple[int, int]] = set()  # no pidfd: liveness checks instead

    def add(self, pid: int, start_ticks: int) -> None:
        key = (pid, start_ticks)
        if key in self.fds or key in self.polled:
            return
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return  # already gone
        except (AttributeError, OSError):
            if is_alive(pid, start_ticks):
                self.polled.add(key)
            return
        # The pidfd names whatever process has this pid now: it is ours to wait for only
        # if that process still has the recorded start time (checked after opening).
        if is_alive(pid, start_ticks):
            self.fds[key] = fd
        else:
            os.close(fd)

    @property
    def alive(self) -> int:
        return len(self.fds) + len(self.polled)

    def wait(self, timeout: float) -> None:
        """Sleep until a blocker exits or ``timeout`` seconds pass."""
        timeout = max(0.0, timeout)
        if self.polled:
            timeout = min(timeout, FALLBACK_POLL)
        if self.fds:
            poller = select.poll()
            by_fd = {fd: key for key, fd in self.fds.items()}
            for fd in by_fd:
                poller.register(fd, select.POLLIN)
            for fd, _ in poller.poll(timeout * 1000.0):
                os.close(fd)
                del self.fds[by_fd[fd]]
        elif timeout > 0:
            time.sleep(timeout)
        for key in list(self.polled):
            if not is_alive(*key):
                self.polled.discard(key)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        self.polled.clear()


def _records(
    seen: dict[tuple[int, int], ProcessRecord], names: Sequence[str]
) -> list[tuple[int, int]]:
    """Rescan the process table into ``seen``; the keys of the compilers alive now."""
    now = time.time()
    alive = []
    for st, argv in compiler_processes(names, exclude=(os.getpid(),)):
        key = (st.pid, st.start_ticks)
        old = seen.get(key)
        seen[key] = ProcessRecord(
            pid=st.pid,
            start_ticks=st.start_ticks,
            ppid=st.ppid,
            pgid=st.pgid,
            sid=st.sid,
            argv=argv,
            name=st.name,
            first_seen=old.first_seen if old else now,
            last_seen=now,
        )
        alive.append(key)
    return alive


def foreign_step(
    request: RunRequest,
    env: Mapping[str, str],
    *,
    wait: bool,
    deadline: float,
    emit: Emit | None,
    notify: Notify | None = None,
    progress_every: float = PROGRESS_EVERY,
) -> tuple[dict[str, Any], list[str], tuple[ProcessRecord, ...]]:
    """List compilers this attempt does not own; refuse or wait. Never signal (C4)."""
    policy = request.foreign_policy
    if policy not in ("wait", "refuse"):
        raise UsageError(f"--foreign {policy!r} is not valid; use 'wait' or 'refuse'")
    names = compiler_names(request, env)
    seen: dict[tuple[int, int], ProcessRecord] = {}
    started = time.monotonic()
    current = _records(seen, names)
    announced = False
    outcome = "none"
    if current and policy == "wait" and wait and time.monotonic() < deadline:
        announced = True
        _announce(request, [seen[k] for k in current], emit, notify, names)
        outcome = _wait(
            current, seen, names, deadline=deadline, notify=notify, every=progress_every
        )
        current = [] if outcome == "cleared" else _records(seen, names)
    waited = round(time.monotonic() - started, 3)
    alive = [process_label(seen[k], names) for k in current]
    blocked: list[str] = []
    note = None
    if current and (policy == "refuse" or wait):
        shown = ", ".join(alive[:6]) + (" ..." if len(alive) > 6 else "")
        if policy == "refuse":
            why = "--foreign refuse"
        else:
            why = f"still running after {waited:g} s (--lease-timeout {request.lease_timeout:g})"
        blocked.append(
            f"foreign compiler processes not owned by this attempt: {shown}; {why}. skgate never "
            "signals them (C4): wait for them to finish, or use an isolated host/device"
        )
    elif current:
        note = (
            f"{len(current)} foreign compiler process(es) alive, not waited for "
            f"(a run with --foreign wait waits up to --lease-timeout {request.lease_timeout:g} s)"
        )
    if announced:
        if emit is not None:
            emit(
                ForeignWaitEnd(
                    outcome=outcome,
                    waited_s=waited,
                    blockers=tuple(seen[k].to_dict() for k in seen),
                    alive_at_end=len(current),
                )
            )
        if notify is not None:
            notify(
                f"skgate: foreign compilers gone after {waited:.1f} s; continuing"
                if outcome == "cleared"
                else f"skgate: still {len(current)} foreign compiler(s) after {waited:.1f} s "
                f"(--lease-timeout {request.lease_timeout:g}): not launching"
            )
    record = {
        "policy": policy,
        "names": list(names),
        "seen": [r.to_dict() for r in seen.values()],
        "alive_at_end": len(current),
        "waited_s": waited,
        "note": note,
    }
    return record, blocked, tuple(seen.values())


def _announce(
    request: RunRequest,
    blockers: Sequence[ProcessRecord],
    emit: Emit | None,
    notify: Notify | None,
    names: Sequence[str] = COMPILER_NAMES,
) -> None:
    if emit is not None:
        emit(
            ForeignWait(
                blockers=tuple(b.to_dict() for b in blockers),
                ages_s=tuple(age_s(b.start_ticks) for b in blockers),
                timeout=request.lease_timeout,
                policy=request.foreign_policy,
            )
        )
    if notify is not None:
        notify(
            f"skgate: waiting for {len(blockers)} foreign compiler process(es) this attempt "
            "does not own: "
            + ", ".join(blocker_text(b, names) for b in blockers)
            + f"; waiting at most {request.lease_timeout:g} s (--lease-timeout). To stop "
            "waiting: --foreign refuse (refuse at once) or a shorter --lease-timeout"
        )


def _wait(
    keys: Sequence[tuple[int, int]],
    seen: dict[tuple[int, int], ProcessRecord],
    names: Sequence[str],
    *,
    deadline: float,
    notify: Notify | None,
    every: float,
) -> str:
    """Wait until no foreign compiler is left ("cleared") or the deadline ("timed_out")."""
    blockers = Blockers()
    start = time.monotonic()
    next_progress = start + every
    next_rescan = start + RESCAN
    try:
        for key in keys:
            blockers.add(*key)
        while True:
            now = time.monotonic()
            if blockers.alive == 0 or now >= next_rescan:
                alive = _records(seen, names)
                if not alive:
                    return "cleared"
                for key in alive:
                    blockers.add(*key)
                next_rescan = now + RESCAN
            if now >= deadline:
                return "timed_out"
            if now >= next_progress:
                # Advanced with or without someone to tell: a progress time left in the
                # past made every later wait a zero-timeout poll, a busy loop that starved
                # the compile it waited for (a Ray arm's runner has no notify; CI).
                next_progress = now + every
                if notify is not None:
                    left = [
                        seen[k] for k in list(blockers.fds) + list(blockers.polled) if k in seen
                    ]
                    notify(
                        f"skgate: still waiting for {len(left)} foreign compiler(s) after "
                        f"{now - start:.0f} s of at most {deadline - start:.0f} s: "
                        + ", ".join(blocker_text(b, names) for b in left[:6])
                    )
            blockers.wait(min(deadline, next_progress, next_rescan) - now)
    finally:
        blockers.close()
