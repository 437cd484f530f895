"""skgate's own errors: one base class, each kind mapped to one exit status (``model.exits``).

A compiler that fails, crashes or times out is evidence, not an exception. These are
for skgate's own problems and for bad input.
"""

from __future__ import annotations

import errno

from skgate.model.exits import EXIT_BLOCKED, EXIT_USAGE


class SkgateError(Exception):
    """Base error. ``str(err)`` is a one-line message that says what to do."""

    #: Exit status the CLI returns for this kind of error.
    exit_code = EXIT_USAGE


class UsageError(SkgateError):
    """Bad command-line input (exit 2)."""


class RootUnwritableError(UsageError):
    """The evidence root cannot be written (permissions, a read-only or full disk before
    an attempt's first record): nothing was recorded or run, since skgate never runs
    unrecorded. A root that is a file is bad input as any other (a plain UsageError).
    ``run`` exits 2, as for any input it refuses; ``start`` exits 3 for it (model.exits:
    its caller is told the root, not its input, stopped the start)."""


class EvidenceError(SkgateError):
    """An evidence file is missing, truncated, of an unknown version or the wrong shape."""


class EvidenceExistsError(EvidenceError):
    """An evidence file to be created is already there: evidence is never overwritten. A
    runner meeting one at its final names was written beside while its run ran
    (:attr:`skgate.model.events.Finished.disowned`)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: already exists; evidence is never overwritten")
        self.path = path


class BlockedError(SkgateError):
    """The attempt was refused before anything was launched (exit 3).

    ``reasons`` are recorded in the attempt directory when one could be made.
    """

    exit_code = EXIT_BLOCKED

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons or (message,)


class UnfinishedError(SkgateError):
    """The runner stopped before it finished the evidence (a second stop signal while
    finishing): the attempt is unfinished, its state unknown until recovered (exit 5)."""

    exit_code = 5


class StillLiveError(SkgateError):
    """The attempt's runner or an owned process may still live: ``recover``, ``cleanup``
    and ``retry`` refuse to act under it (exit 6, C4, C8). ``pids`` names them."""

    exit_code = 6

    def __init__(self, message: str, pids: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.pids = pids


def path_error(exc: OSError) -> UsageError | None:
    """A path given to skgate that cannot be used (missing, too long, of the wrong type,
    not readable): the user's environment, not a bug in skgate, said on one line (the
    command line and the MCP tools alike, issue 12). None when the error names no path:
    then it is skgate's own."""
    if exc.filename is None:
        return None
    hint = (
        "check its permissions, or run as the user who owns the evidence"
        if exc.errno in (errno.EACCES, errno.EPERM)
        else "check the path"
    )
    return UsageError(f"{exc.filename}: {exc.strerror or exc}; {hint}")
