"""Checks of a run request that need the file system, before anything is recorded or run
(bad input: UsageError, exit 2), and the request's outputs directory as a ``Path``.

The pure checks and the outputs rule itself are in :mod:`skgate.model.request`."""

from __future__ import annotations

import math
import os
from pathlib import Path

from skgate.evidence.files import check_root
from skgate.model.errors import UsageError
from skgate.model.request import RunRequest, validate_patterns
from skgate.model.sources import allowed_sources


def validate(request: RunRequest, *, command: bool = True) -> None:
    """Bad input is refused before anything is recorded or run (exit 2). ``command``:
    the request must name one (``skgate preflight`` checks the rest without it)."""
    if command and not request.argv:
        raise UsageError("no command given; put it after '--', e.g. skgate run -- bash run.sh")
    if request.argv and (not request.argv[0].strip() or "\0" in "".join(request.argv)):
        raise UsageError(
            f"the command name {request.argv[0]!r} is empty (or an argument holds a NUL "
            "byte); give the program to run, e.g. skgate run -- bash run.sh"
        )
    # Finite values only: an infinite timeout is no frozen timeout at all (C4), and
    # evidence files must stay valid JSON (no Infinity/NaN).
    if not (math.isfinite(request.timeout) and request.timeout > 0):
        raise UsageError(
            f"timeout (--timeout) must be a finite, positive number of seconds, not "
            f"{request.timeout}"
        )
    if not (math.isfinite(request.grace) and request.grace >= 0):
        raise UsageError(
            f"grace (--grace) must be a finite number of seconds >= 0, not {request.grace}"
        )
    if not (math.isfinite(request.scan_interval) and request.scan_interval > 0):
        raise UsageError("scan interval must be a finite, positive number of seconds")
    if not (math.isfinite(request.lease_timeout) and request.lease_timeout >= 0):
        raise UsageError("lease timeout (--lease-timeout) must be a finite number >= 0")
    cwd = Path(request.cwd)
    if not cwd.exists():
        raise UsageError(f"working directory {request.cwd} does not exist; pass an existing one")
    if not cwd.is_dir():
        raise UsageError(f"working directory {request.cwd} is not a directory; pass a directory")
    # The evidence root is input too: a file there is exit 2 before anything is made,
    # for run, start, preflight and retry alike (one rule, issue 23).
    check_root(Path(request.root))
    validate_patterns(request.summary_patterns, request.completion_marker)
    allowed_sources(os.environ)  # SKGATE_OWNERSHIP_SOURCES, read by the runner (C3)
    for name in (*request.unset_env, *request.env):
        # No such variable can exist: an --unset-env A=b meant something else.
        if not name or "=" in name or "\0" in name:
            raise UsageError(
                f"environment variable name {name!r} is not valid (empty, or holding '=' "
                "or a NUL byte); --unset-env takes a NAME, --env NAME=VALUE"
            )


def outputs_dir(request: RunRequest) -> Path:
    """The request's outputs directory (rule: :meth:`RunRequest.outputs_path`)."""
    return Path(request.outputs_path())


def legacy_outputs_dir(request: RunRequest) -> Path | None:
    """torch-npu 2.7's outputs directory, looked at only when none was given."""
    legacy = request.legacy_outputs_path()
    return Path(legacy) if legacy is not None else None
