"""The pipe keeper: the compile's output pipe outlives the runner (C4).

The compile writes its stdout and stderr into a pipe that the runner drains into
``run.log``. If the runner dies (SIGKILL, OOM), the pipe has no reader left, and the
compile's next write ends it: SIGPIPE for a C program, ``BrokenPipeError`` for Python
(the interpreter ignores SIGPIPE), which torchair's own prints then raise. A gate that
dies must not take the compile with it.

So at launch the runner starts a keeper: a small interpreter in a session of its own
(terminal signals aimed at the runner never reach it) that holds a second copy of the
pipe's read end and a lock on ``run.kept.log``, and waits on a liveness pipe whose write
end only the runner holds. The runner creates the file and takes its lock itself, then
hands the locked descriptor over (a ``flock`` belongs to the open file description, so
the keeper holds it from its exec on): the launch never waits for the keeper's
interpreter to start (issue 29: that wait was 9.4 ms of every start-up), and the keeper
imports nothing but the built-in ``os`` (``-I -S``, no site, no ``fcntl``):

* the runner finishes normally: it writes one byte, the keeper removes its empty file and
  exits, and the runner reaps it before the seal;
* the runner dies: the liveness pipe reads end-of-file, and the keeper drains the output
  pipe into ``run.kept.log`` until every writer is gone (the compile's natural return),
  then releases the lock and exits. Bytes the runner had read but not yet written are
  lost (a window of one ``read``); ``run.log`` itself is never touched again. When the
  disk is full the keeper goes on draining and drops what it cannot write, so the
  compile is never stopped by the evidence disk.

The lock is how a later reader knows the keeper is still draining
(:func:`keeper_draining`): while it is held, the attempt is not finished and must not
be recovered or sealed (issue 21). A lock dies with its holder, so a keeper that was
killed never blocks anyone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import subprocess
import sys
from pathlib import Path

KEPT_LOG = "run.kept.log"

#: The keeper itself: no site, no user environment (``-I -S``), only ``os``. argv: output
#: read fd, liveness read fd, the locked ``run.kept.log`` fd, its path.
_KEEPER = """\
import os, sys
out, alive, fd, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
while True:
    try:
        said = os.read(alive, 1)
        break
    except InterruptedError:
        continue
if said:
    try:
        os.unlink(path)
    except OSError:  # its directory removed meanwhile (issue 28): nothing left to remove
        pass
    os._exit(0)
# The runner read this pipe without blocking, and the flag belongs to the shared open
# file description: with the runner gone, the keeper may wait on it.
os.set_blocking(out, True)
room = True
while True:
    try:
        data = os.read(out, 1 << 16)
    except InterruptedError:
        continue
    if not data:
        break
    view = memoryview(data)
    while room and view:
        try:
            view = view[os.write(fd, view):]
        except InterruptedError:
            continue
        except OSError:
            room = False
os._exit(0)
"""


class PipeKeeper:
    """The runner's handle on its keeper (see the module docstring)."""

    def __init__(self, proc: subprocess.Popen[bytes], alive_w: int, path: Path) -> None:
        self._proc = proc
        self._alive_w = alive_w
        self.path = path

    @property
    def pid(self) -> int:
        return self._proc.pid

    @classmethod
    def start(cls, out_fd: int, attempt: Path) -> PipeKeeper | None:
        """Start a keeper holding ``out_fd``; None when it cannot start (the run goes on
        without one: the keeper protects the compile, it is not needed to supervise it)."""
        path = attempt / KEPT_LOG
        try:
            # Created and locked here: a file in the way is never written through (O_EXCL,
            # O_NOFOLLOW), and the lock is held before the keeper even exists.
            kept = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
            )
        except OSError:
            return None
        alive_r, alive_w = os.pipe2(os.O_CLOEXEC)
        try:
            fcntl.flock(kept, fcntl.LOCK_EX)
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _KEEPER,
                 str(out_fd), str(alive_r), str(kept), str(path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(out_fd, alive_r, kept),
                close_fds=True,
                start_new_session=True,
            )  # fmt: skip
        except OSError:
            os.close(alive_w)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        finally:
            # The keeper's copy holds the lock from here on (the same open file
            # description); Popen returned only once its exec succeeded.
            os.close(kept)
            os.close(alive_r)
        return cls(proc, alive_w, path)

    def release(self, timeout: float = 5.0) -> None:
        """The runner's normal end: tell the keeper, reap it, leave no file behind."""
        if self._alive_w >= 0:
            with contextlib.suppress(OSError):
                os.write(self._alive_w, b"d")
            os.close(self._alive_w)
            self._alive_w = -1
        try:
            self._wait(timeout)
        except subprocess.TimeoutExpired:
            # Our own child, by its Popen handle (never by name): it did not answer.
            self._proc.kill()
            self._proc.wait()
        with contextlib.suppress(FileNotFoundError):
            if self.path.stat().st_size == 0:
                self.path.unlink()

    def _wait(self, timeout: float) -> None:
        """Reap the keeper once it has exited, within ``timeout`` seconds. Woken by its
        pidfd (our unreaped child: the pid cannot be reused), not by ``Popen.wait``'s
        polling, which sleeps 0.5 ms, then 1, 2, ... between looks: the runner's finish
        waited up to twice the keeper's time to end (issue 29)."""
        try:
            pidfd = os.pidfd_open(self._proc.pid)
        except (AttributeError, OSError):  # before Linux 5.3: Popen's own polling
            self._proc.wait(timeout=timeout)
            return
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            if not poller.poll(timeout * 1000):
                raise subprocess.TimeoutExpired(self._proc.args, timeout)
        finally:
            os.close(pidfd)
        self._proc.wait()


def keeper_draining(attempt: Path) -> bool:
    """True while a keeper holds ``run.kept.log``'s lock (it is still draining the
    compile's output after the runner died): the attempt is not done (issue 21)."""
    try:
        fd = os.open(attempt / KEPT_LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)
    return False
