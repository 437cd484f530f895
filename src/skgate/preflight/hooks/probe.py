"""Parent side of the hook probes: one probe interpreter in its own session, bounded by a
deadline, its result read from the JSON file it wrote (never from its stdout)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from skgate.proc.cgroup import MIGRATION_LOCK

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

#: Issue 21 s4: a probe must not outlive a runner SIGKILLed in preflight. Linux's
#: PR_SET_PDEATHSIG (1) asks for SIGKILL (9) when the parent dies; it must be set before
#: the probe interpreter runs any start-up hook, and survives execve. A preexec_fn could
#: set it, but is unsafe in the threaded runner, so the probe's own interpreter, isolated
#: (``-I -S``: no start-up hook runs), sets it and execs the probe (same pid, same
#: session). If the runner died before the prctl, the parent pid differs and nothing is
#: exec'd. An interpreter without ctypes runs the probe without it.
DEATHSIG_SHIM = (
    "import os, sys\n"
    "try:\n"
    "    import ctypes\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[1]): os._exit(70)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def with_deathsig(argv: Sequence[str]) -> list[str]:
    """``argv`` (a Python interpreter and its arguments) run so that it dies with this
    process: through the same interpreter, so nothing else must be executable (Linux;
    elsewhere unchanged)."""
    if not sys.platform.startswith("linux") or not argv:
        return list(argv)
    return [argv[0], "-I", "-S", "-c", DEATHSIG_SHIM, str(os.getpid()), *argv]


class ProbeCancelled(Exception):
    """The scan was cancelled (its attempt ended before launch); its probes are gone."""


class Cancel:
    """Cancels the probes of one scan from another thread: :meth:`set` wakes the scan's
    waits through a pipe, and the scan thread, the only one that reaps its probes, ends
    each live probe's own session (C4) and raises :class:`ProbeCancelled`. No new probe
    starts once it is set."""

    def __init__(self) -> None:
        self._r, self._w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.is_set = False
        self._closed = False

    @property
    def fd(self) -> int:
        return self._r

    def set(self) -> None:
        self.is_set = True
        if self._closed:
            return  # its descriptors may belong to another file by now: never touch them
        with contextlib.suppress(OSError):
            os.write(self._w, b"x")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._r, self._w):
            with contextlib.suppress(OSError):
                os.close(fd)


def wait_exit(proc: subprocess.Popen[bytes], deadline: float, cancel: Cancel | None = None) -> int:
    """Wait for ``proc`` until ``deadline``, woken by its pidfd the moment it exits.

    ``Popen.wait(timeout=...)`` polls with growing sleeps (up to 50 ms each), which is
    most of a probe's cost; a pidfd becomes readable exactly at exit. Raises
    :class:`ProbeCancelled` when ``cancel`` is set first (the probe still runs).
    """
    wake = [cancel.fd] if cancel is not None else []
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        while True:  # no pidfd (Linux < 5.3): short waits, so a cancel is seen soon
            if cancel is not None and cancel.is_set:
                raise ProbeCancelled("the hook scan was cancelled") from None
            left = deadline - time.monotonic()
            try:
                return proc.wait(timeout=max(0.0, min(left, 0.05)))
            except subprocess.TimeoutExpired:
                if left <= 0.05:
                    raise
    try:
        ready, _, _ = select.select([pidfd, *wake], [], [], max(0.0, deadline - time.monotonic()))
    finally:
        os.close(pidfd)
    if pidfd in ready:
        return proc.wait()
    if ready:
        raise ProbeCancelled("the hook scan was cancelled")
    raise subprocess.TimeoutExpired(proc.args, deadline)


def _log_file() -> BinaryIO:
    """Where a probe's output goes: an anonymous memory file (closed in ``result``).

    ``memfd_create`` needs no directory; ``tempfile`` first tests its directories by
    writing into each, which costs a runner about 10 ms before its first probe.
    """
    try:
        fd = os.memfd_create("skgate-probe-log", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        import tempfile  # noqa: PLC0415 - only without memfd (start-up cost, issue 29)

        return tempfile.TemporaryFile()
    return open(fd, "w+b")


class Probe:
    """One probe subprocess; several run at once (each is an interpreter start-up)."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        out: Path,
        cancel: Cancel | None = None,
    ) -> None:
        if cancel is not None and cancel.is_set:
            raise ProbeCancelled("the hook scan was cancelled before this probe started")
        self.cancel = cancel
        self.argv = list(argv)
        self.out = out
        self.log = _log_file()
        self.problem: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            with MIGRATION_LOCK:  # never born inside an attempt's cgroup leaf
                self.proc = subprocess.Popen(
                    with_deathsig(self.argv),
                    env=dict(env),
                    cwd=cwd if cwd and os.path.isdir(cwd) else None,
                    stdin=subprocess.DEVNULL,
                    stdout=self.log,
                    stderr=self.log,
                    start_new_session=True,  # its own group: a timeout ends exactly it (C4)
                )
        except OSError as exc:
            self.problem = f"cannot execute {self.argv[0]} ({exc.strerror})"

    def end(self) -> None:
        """Kill this probe's own session and reap it, if it was not reaped yet."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        with contextlib.suppress(OSError):
            self.log.close()

    def result(self, deadline: float) -> tuple[Any | None, str | None]:
        """Wait until ``deadline`` (monotonic); return (parsed result, None) or (None, why)."""
        with self.log:
            if self.proc is None:
                return None, self.problem
            try:
                code = wait_exit(self.proc, deadline, self.cancel)
            except (subprocess.TimeoutExpired, ProbeCancelled) as exc:
                # Not reaped yet (only this thread reaps it): its session is still its own.
                self.end()
                if isinstance(exc, ProbeCancelled):
                    raise
                return None, f"probe {self.argv[0]} did not finish in time (killed)"
            self.log.seek(0)
            raw = self.log.read()[-2000:].decode("utf-8", "backslashreplace")
        tail = raw.strip().splitlines()
        last = tail[-1] if tail else "no output"
        if code != 0:
            return None, f"probe {self.argv[0]} exited with status {code}: {last}"
        try:
            return json.loads(self.out.read_text(encoding="utf-8")), None
        except (OSError, ValueError, SyntaxError, MemoryError, RecursionError):
            return None, f"probe {self.argv[0]} wrote no result: {last}"


def results(probes: Sequence[Probe], deadline: float) -> list[tuple[Any | None, str | None]]:
    """Every probe's result; on a cancel, every probe of the round is ended first."""
    try:
        return [p.result(deadline) for p in probes]
    except ProbeCancelled:
        for p in probes:
            p.end()
        raise
