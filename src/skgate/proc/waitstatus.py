"""Process-status helpers of the supervisor: the subreaper, wait statuses, CPU time.

Kept apart from :mod:`skgate.proc.supervise` so that the wait loop reads in one place.
"""

from __future__ import annotations

import contextlib
import os
import time

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process a child subreaper; False when the kernel refuses."""
    # ctypes only here: the runner loads this module to record its attempt, which
    # ``skgate start``'s caller waits for, long before it becomes a subreaper (issue 29).
    import ctypes  # noqa: PLC0415

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def cpu_seconds() -> float:
    """This process's own CPU time (user + system of all its threads, children excluded):
    its overhead. ``process_time`` counts nanoseconds where ``os.times`` counts 10 ms
    clock ticks, too coarse for a supervision phase of a few hundred ms (issue 29)."""
    return round(time.process_time(), 4)


def decode_wait_status(status: int) -> tuple[int | None, int | None]:
    """(exit status, terminating signal) from a ``waitpid`` status."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    return None, None


def peek_exit(pid: int) -> tuple[int | None, int | None] | None:
    """The leader's exit, seen without reaping it (WNOWAIT keeps the zombie)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None:
        return None
    if info.si_code == os.CLD_EXITED:
        return info.si_status, None
    return None, info.si_status


def drain_fd(fd: int) -> None:
    """Empty a non-blocking fd (the signal wake-up pipe)."""
    with contextlib.suppress(OSError):
        while os.read(fd, 512):
            pass
