"""Standard output and error that never turn a failed write into another exit status.

skgate's exit status is its answer: the verdict's code (``skgate.model.exits``). The
text is for the person reading. Before this guard, ``skgate run -- false | head -0``
exited 0, which reads as "succeeded", because the closed pipe raised out of the last
print. ``skgate status > /dev/full`` printed "internal error ... a bug in skgate". With
stdout closed, ``run`` ended with a traceback.

:func:`guard` wraps ``sys.stdout`` and ``sys.stderr`` once, in the console entry only.
A write or flush that fails (EPIPE, ENOSPC, EIO, EBADF ...) is recorded, never raised,
and later writes to that stream are dropped. The command runs to its end, and its exit
status stands. :func:`settle` then says in one line on stderr what could not be written
(silently for a closed pipe, as every Unix filter does) and points the failed
descriptor at ``/dev/null``, so the interpreter's last flush cannot print "Exception
ignored" either.

No import here: ``skgate status`` loads this module (issue 29).
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO


class _Failure:
    """The first failed write of one stream (shared by its text and binary layers)."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: OSError | None = None


class _Tolerant:
    """Writes and flushes that record their first ``OSError`` and never raise it; later
    writes are dropped. Anything else is the real stream's (isatty, fileno, encoding...)."""

    def __init__(self, stream: Any, failure: _Failure) -> None:
        self.stream = stream
        self.failure = failure

    def write(self, data: Any) -> int:
        if self.failure.error is None:
            try:
                return int(self.stream.write(data))
            except OSError as exc:
                self.failure.error = exc
        return len(data)

    def flush(self) -> None:
        if self.failure.error is None:
            try:
                self.stream.flush()
            except OSError as exc:
                self.failure.error = exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class Guarded(_Tolerant):
    """A text stream whose writes and flushes never raise ``OSError``; its ``.buffer``
    (bytes) shares the same record, so either layer's failure silences both."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream, _Failure())
        raw = getattr(stream, "buffer", None)
        self.buffer = _Tolerant(raw, self.failure) if raw is not None else None


def guard(sys: Any) -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` (a closed one stays None)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, Guarded):
            setattr(sys, name, Guarded(stream))


def settle(sys: Any) -> None:
    """After the command: flush, say what could not be written, and leave nothing for the
    interpreter's teardown to fail on. The exit status is not changed."""
    out, err = sys.stdout, sys.stderr
    for stream in (out, err):
        if isinstance(stream, Guarded):
            stream.flush()
    if isinstance(out, Guarded) and out.failure.error is not None:
        exc = out.failure.error
        _to_devnull(out)
        if exc.errno != errno.EPIPE:  # a closed pipe is the reader's choice, not news
            err.write(
                f"skgate: could not write to standard output ({exc.strerror or exc}); "
                "the exit status is still the answer's (see `skgate status`)\n"
            )
            err.flush()
    if isinstance(err, Guarded) and err.failure.error is not None:
        _to_devnull(err)


def _to_devnull(stream: Guarded) -> None:
    """Point the failed descriptor at /dev/null: whatever is still buffered in the real
    stream is then flushed there, silently, when the interpreter ends."""
    try:
        fd = stream.stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        return
    try:
        os.dup2(null, fd)
    except OSError:
        pass
    finally:
        os.close(null)
