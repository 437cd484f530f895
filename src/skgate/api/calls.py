"""The Python API for controllers (scripts, auto-tune loops, AI agents).

:func:`run_attempt` runs one gated attempt and returns its verdict record. The runner
runs in a child process (``python -m skgate.runner``, protocol in that module's doc):
it must be a child subreaper, handle SIGCHLD and reap processes, which a library must
not do inside its caller's process (the caller may have threads, its own children, or
its own SIGCHLD handler). The caller is never signalled and never blocks on anything but
the child.

Example::

    from skgate.api import run
    verdict = run(["bash", "run.sh"], timeout=7200, jobs="auto")
    if verdict.state is State.INTERRUPTED: ...   # a clean retry is needed (C2.4)

For runs that outlive the caller (an agent, a Ray task): :func:`start` returns once the
detached runner has launched the command, :func:`wait` waits read-only in bounded steps,
:func:`stop` asks the runner to interrupt (see :mod:`skgate.api.lifecycle`)::

    started = start(["bash", "run.sh"], timeout=7200)
    while (result := wait(started.attempt, max_seconds=120)).outcome == "in_progress":
        ...  # the compile runs on, untouched
    stop(started.attempt, "auto-tune budget spent")  # the one sanctioned interruption
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skgate.api import lifecycle
from skgate.api.lifecycle import StopResult, WaitResult
from skgate.evidence.files import DEFAULT_ROOT
from skgate.evidence.ledger import latest
from skgate.model.errors import UsageError
from skgate.model.frozen import fields
from skgate.model.protocol import Started, read_reply
from skgate.model.records import Verdict
from skgate.model.request import RunRequest
from skgate.read.liveness import current_verdict


def run_attempt(request: RunRequest) -> Verdict:
    """Run one attempt under the gate and return its verdict (never raises for the
    workload's own failure: that is a verdict). Raises UsageError / BlockedError for bad
    input or an evidence root that cannot be written."""
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "skgate.runner"],
        input=json.dumps(request.to_dict()).encode(),
        stdout=subprocess.PIPE,
        stderr=None,  # the workload's echo goes to the caller's stderr
        env=env,
        check=False,
    )
    result = read_reply(
        proc.stdout,
        f"the skgate runner ended without a result (exit status {proc.returncode}); "
        f"see the evidence root {request.root}",
    )
    return Verdict.from_dict(result)


def run(
    argv: Sequence[str],
    *,
    root: str | os.PathLike[str] = DEFAULT_ROOT,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = RunRequest.timeout,
    grace: float = RunRequest.grace,
    jobs: str | int | None = None,
    env: Mapping[str, str] | None = None,
    quiet: bool = True,
    **options: Any,
) -> Verdict:
    """Convenience wrapper: build a :class:`RunRequest` and run it.

    ``argv`` is a list of arguments, never one command string: a string is refused with
    :class:`UsageError` (it would run as a list of characters; skgate never goes through
    a shell). ``options`` are further :class:`RunRequest` fields; an unknown one is a
    :class:`UsageError` naming it.
    """
    request = _request(
        argv,
        root=root,
        cwd=cwd,
        timeout=timeout,
        grace=grace,
        jobs=jobs,
        env=env,
        quiet=quiet,
        options=options,
    )
    return run_attempt(request)


def _request(
    argv: Sequence[str],
    *,
    root: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None,
    timeout: float,
    grace: float,
    jobs: str | int | None,
    env: Mapping[str, str] | None,
    quiet: bool,
    options: dict[str, Any],
) -> RunRequest:
    if isinstance(argv, (str, bytes)):
        raise UsageError(
            f"skgate.api.run takes the command as a list of arguments, not one string "
            f"({argv!r}); for example run(['bash', 'run.sh']) (no shell is ever used)"
        )
    known = set(fields(RunRequest))
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(
            f"skgate.api.run: unknown option(s) {', '.join(unknown)}; the options are the "
            f"fields of RunRequest: {', '.join(sorted(known - {'argv'}))}"
        )
    return RunRequest(
        argv=tuple(argv),
        cwd=str(Path(cwd) if cwd is not None else Path.cwd()),
        root=str(Path(root).absolute()),
        timeout=timeout,
        grace=grace,
        jobs=str(jobs) if jobs is not None else None,
        env=dict(env or {}),
        quiet=quiet,
        **options,
    )


def start(
    argv: Sequence[str],
    *,
    root: str | os.PathLike[str] = DEFAULT_ROOT,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = RunRequest.timeout,
    grace: float = RunRequest.grace,
    jobs: str | int | None = None,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> Started:
    """Launch under a detached runner and return at once (``skgate start``). A fresh
    interpreter runs it, so nothing of the caller's process (threads, locks, sockets)
    is copied into the runner."""
    request = _request(
        argv,
        root=root,
        cwd=cwd,
        timeout=timeout,
        grace=grace,
        jobs=jobs,
        env=env,
        quiet=True,
        options=options,
    )
    return lifecycle.start(request)


def wait(
    target: str | os.PathLike[str] = DEFAULT_ROOT, *, max_seconds: float | None = None
) -> WaitResult:
    """Wait read-only for the final verdict, at most ``max_seconds`` (``skgate wait``)."""
    return lifecycle.wait(target, max_seconds=max_seconds)


def stop(target: str | os.PathLike[str], reason: str = "") -> StopResult:
    """Ask the attempt's runner to interrupt it, with a reason (``skgate stop``)."""
    return lifecycle.stop(target, reason)


def status(target: str | os.PathLike[str] = DEFAULT_ROOT) -> Verdict:
    """Read-only: the current verdict of an attempt, or of the latest attempt of a root."""
    path = Path(target)
    attempt = path if (path / "control.json").is_file() else latest(path)
    return current_verdict(attempt)
