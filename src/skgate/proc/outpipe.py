"""The command's output pipe, as the supervisor reads it (C3: every byte to ``run.log``).

Made before the launch, so the pipe keeper (:mod:`skgate.proc.keeper`) holds its read end
before the command exists (C4: from its first write on, a reader is left whatever happens
to the runner); read without blocking by the supervisor's loop.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

CHUNK = 1 << 16


class OutputPipe:
    """Both ends, close-on-exec; the write end goes to the command at its launch."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe2(os.O_CLOEXEC)

    def handed_over(self) -> None:
        """The command holds the write end now (or the launch failed): ours goes."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> None:
        self.handed_over()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1


def read_chunk(fd: int) -> bytes | None:
    """One non-blocking read: the data; ``b""`` at the end (every writer closed it, or it
    failed); None when there is nothing now (try again when it is readable)."""
    try:
        return os.read(fd, CHUNK)
    except BlockingIOError:
        return None
    except OSError as exc:
        return None if exc.errno == errno.EINTR else b""


def drain(fd: int, sink: Callable[[bytes], None]) -> None:
    """Everything still in the pipe, to ``sink`` (the tree has ended)."""
    while True:
        try:
            data = os.read(fd, CHUNK)
        except OSError:
            return
        if not data:
            return
        sink(data)
