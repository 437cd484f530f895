"""The line a person reads while a run waits for owned processes after its leader returned.

A foreground run whose leader exited while owned processes live must not go quiet
(issue 23): the supervisor says once who it waits for and that they are never signalled
before the frozen deadline (C2.1, C4), then repeats it every few seconds. Only the words
are here; when to say them is :mod:`skgate.proc.supervise`.
"""

from __future__ import annotations

import time

from skgate.model.signals import signal_name
from skgate.proc.observe import ProcStat

#: Owned processes named in one "waiting for" line; the rest are counted.
WAITING_SHOWN = 6


def waiting_line(
    exit_status: int | None,
    exit_signal: int | None,
    live: dict[int, ProcStat],
    deadline_wall: float,
    *,
    first: bool,
    after: float,
) -> str:
    """The line a person reads while the leader has returned and owned processes live:
    who, and that they are never signalled before the frozen deadline (C2.1, C4)."""
    n = len(live)
    noun = "owned process" if n == 1 else "owned processes"
    shown = ", ".join(f"{st.name}[{pid}]" for pid, st in sorted(live.items())[:WAITING_SHOWN])
    if n > WAITING_SHOWN:
        shown += f" and {n - WAITING_SHOWN} more"
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(deadline_wall))
    never = f"never signalled before the deadline at {at}"
    if first:
        if exit_signal is not None:
            how = f"ended by {signal_name(exit_signal)}"
        else:
            how = f"exited with status {exit_status}"
        return f"skgate: leader {how}; waiting for {n} {noun}: {shown}, {never}"
    return f"skgate: still waiting after {after:.0f} s for {n} {noun}: {shown}, {never}"
