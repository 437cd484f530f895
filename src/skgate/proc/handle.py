"""A handle on one process named by (pid, start time) that a recycled pid cannot fool.

``skgate wait`` watches an attempt's runner through it (the handle's descriptor becomes
readable when the runner exits) and ``skgate stop`` signals the runner through it. Both
act on the runner only, never on the workload (C4: only the runner signals, and only its
own process group).

How identity is kept: ``pidfd_open`` first, then the start time is checked. A pidfd
names the process it was opened on for good, so once the check passes every later use
(waiting, ``pidfd_send_signal``) reaches that process or nothing. Where the kernel has
no pidfd (Linux < 5.3), the start time is checked again right before ``kill``: a small
window remains, the best a pid alone can give, and :attr:`ProcessHandle.exact` says so.
"""

from __future__ import annotations

import contextlib
import os
import signal

from skgate.proc.observe import is_alive


class ProcessHandle:
    """An open handle on a live process; :meth:`open` returns None when it is gone."""

    def __init__(self, pid: int, start_ticks: int, pidfd: int) -> None:
        self.pid = pid
        self.start_ticks = start_ticks
        self._pidfd = pidfd

    @classmethod
    def open(cls, pid: int, start_ticks: int) -> ProcessHandle | None:
        pidfd = -1
        with contextlib.suppress(OSError, AttributeError):
            pidfd = os.pidfd_open(pid)
        # Checked after the pidfd exists: if the start time matches now, the pidfd
        # refers to that very process (it cannot have been recycled in between).
        if not is_alive(pid, start_ticks):
            if pidfd >= 0:
                os.close(pidfd)
            return None
        return cls(pid, start_ticks, pidfd)

    @property
    def exact(self) -> bool:
        """True when identity is held by a pidfd (no pid-reuse window at all)."""
        return self._pidfd >= 0

    def fileno(self) -> int:
        """A descriptor readable once the process has exited, or -1 without pidfd."""
        return self._pidfd

    def alive(self) -> bool:
        return is_alive(self.pid, self.start_ticks)

    def send_signal(self, signum: int) -> bool:
        """Signal this process (and nothing else); False when it has gone."""
        try:
            if self._pidfd >= 0:
                signal.pidfd_send_signal(self._pidfd, signum)
                return True
            if not is_alive(self.pid, self.start_ticks):
                return False
            os.kill(self.pid, signum)
            return True
        except ProcessLookupError:
            return False

    def close(self) -> None:
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1

    def __enter__(self) -> ProcessHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
