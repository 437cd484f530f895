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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skgate.evidence.ledger import DEFAULT_ROOT, latest
from skgate.evidence.load import current_verdict
from skgate.model.errors import BlockedError, SkgateError, UnfinishedError, UsageError
from skgate.model.records import Verdict
from skgate.model.request import RunRequest


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
    lines = proc.stdout.decode("utf-8", "backslashreplace").strip().splitlines()
    try:
        result: Any = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        raise SkgateError(
            f"the skgate runner ended without a result (exit status {proc.returncode}); "
            f"see the evidence root {request.root}"
        )
    if "error" in result:
        code = int(result.get("exit_code", 2))
        if code == BlockedError.exit_code:
            raise BlockedError(str(result["error"]))
        if code == UnfinishedError.exit_code:
            raise UnfinishedError(str(result["error"]))
        raise UsageError(str(result["error"]))
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
    """Convenience wrapper: build a :class:`RunRequest` and run it."""
    request = RunRequest(
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
    return run_attempt(request)


def status(target: str | os.PathLike[str] = DEFAULT_ROOT) -> Verdict:
    """Read-only: the current verdict of an attempt, or of the latest attempt of a root."""
    path = Path(target)
    attempt = path if (path / "control.json").is_file() else latest(path)
    return current_verdict(attempt)
