"""The runner's echo of the command's output to a terminal, off the supervision loop."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable

Echo = Callable[[bytes], None]


class TerminalEcho:
    """Echo the command's output from a thread, never blocking the supervision loop.

    The loop that enforces the frozen deadline (C4) must not wait on a terminal: a
    paused pager or a full pipe on stdout would stall the timeout and the run log. The
    loop hands chunks to a bounded queue; when the terminal does not keep up, chunks are
    dropped from the echo (never from ``run.log``, the evidence) and counted.
    """

    MAX_CHUNKS = 256

    def __init__(self, write: Echo) -> None:
        self._write = write
        self._queue: queue.Queue[bytes | None] = queue.Queue(self.MAX_CHUNKS)
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="skgate-echo", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            with contextlib.suppress(OSError, ValueError):  # a closed terminal
                self._write(data)

    def __call__(self, data: bytes) -> None:
        try:
            self._queue.put_nowait(data)
        except queue.Full:
            self.dropped += len(data)

    def close(self, timeout: float = 1.0) -> None:
        """Let the thread flush what is queued, waiting at most ``timeout``; never blocks
        the caller on the terminal itself (the thread is a daemon)."""
        if self.dropped:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(
                    f"\n[skgate: {self.dropped} bytes of output were not echoed because the "
                    "terminal did not keep up; run.log has all of it]\n".encode()
                )
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)
