"""What preflight decides from the request alone, before the attempt exists: the
profiler schedule it exports (C6), the hook approvals it accepts, and the exact inputs
of the start-up hook scan (C6). :mod:`skgate.preflight.prepare` uses these, and so does
:mod:`skgate.preflight.early`, which starts the scan early; this module imports only
what that needs, since it is loaded before the rest of the runner."""

from __future__ import annotations

import os
from collections.abc import Mapping

from skgate.evidence import regular
from skgate.model.errors import UsageError
from skgate.model.request import RunRequest
from skgate.preflight import jobs, profiler
from skgate.preflight.env import base_env
from skgate.preflight.hooks.baseline import check_fingerprint, load_baseline

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.preflight.hooks.rounds import ScanInputs
    from skgate.preflight.interpreter import Interpreter

# Start-up (issue 29): check_inputs runs before ``skgate start``'s runner records its
# attempt, which its caller waits for; the scan's inputs (hooks.rounds: subprocess,
# hashlib) and the interpreter lookup (shutil) are loaded by the functions that use them.


def profiler_step(request: RunRequest, env: dict[str, str]) -> dict[str, Any]:
    if request.profiler_schedule is not None:
        sched = profiler.ProfilerSchedule.parse(request.profiler_schedule)
        record = profiler.describe(sched)
        record["source"] = "--profiler-schedule"
        env[profiler.ENV_VAR] = sched.to_text()
        return record
    inherited = env.get(profiler.ENV_VAR)
    if inherited:
        try:
            sched = profiler.ProfilerSchedule.parse(inherited)
        except UsageError as exc:
            raise UsageError(f"inherited {profiler.ENV_VAR}: {exc}") from None
        record = profiler.describe(sched)
        record["source"] = f"inherited {profiler.ENV_VAR}"
        env[profiler.ENV_VAR] = sched.to_text()
        return record
    record = profiler.describe(None)
    record["source"] = None
    return record


def approvals(request: RunRequest) -> tuple[set[str], set[str]]:
    approved = {check_fingerprint(fp) for fp in request.approved_hooks}
    baseline = load_baseline(request.hook_baseline) if request.hook_baseline else set()
    return approved, baseline


def scan_inputs(
    request: RunRequest, interp: Interpreter, env: Mapping[str, str], approve_all: bool
) -> ScanInputs:
    from skgate.preflight.hooks.rounds import ScanInputs  # noqa: PLC0415 - see the top

    approved, baseline = approvals(request)
    assert interp.path is not None
    return ScanInputs(
        python=interp.path,
        env=tuple(sorted(env.items())),
        cwd=request.cwd,
        flags=interp.flags,
        approved=frozenset(approved),
        baseline=frozenset(baseline),
        strict=request.strict_hooks,
        approve_all=approve_all,
    )


def early_scan_inputs(
    request: RunRequest,
    runner_env: Mapping[str, str] | None = None,
    host: Mapping[str, Any] | None = None,
) -> ScanInputs | None:
    """The inputs :func:`skgate.preflight.prepare.prepare` will scan with (the environment
    after the C5 and C6 exports), computed before the attempt exists; None when there is
    nothing to scan. ``host``: :func:`jobs.probe_host`'s facts, probed here when None."""
    env = base_env(request, dict(os.environ if runner_env is None else runner_env))
    env[jobs.JOBS_VAR] = str(
        jobs.decide(request.jobs, env, host, job_memory_mb=request.job_memory_mb).value
    )
    profiler_step(request, env)
    from skgate.preflight.interpreter import find_interpreter  # noqa: PLC0415 - see the top

    interp = find_interpreter(request, env)
    if interp.path is None:
        return None
    return scan_inputs(request, interp, env, False)


def check_inputs(request: RunRequest, runner_env: Mapping[str, str] | None = None) -> None:
    """Every input error of a request, before anything is allocated or recorded.

    Bad input is exit 2 with nothing recorded (issue 12): the same parsers preflight uses
    later run here first, so ``--jobs 99999999999999999999``, a malformed profiler
    schedule, a bad ``--approve-hook``, an unreadable ``--hook-baseline``, a ``--python``
    that is not an executable file and an empty ``--compiler-name`` never leave a
    permanent not-started attempt. Reads files, runs nothing.
    """
    env = base_env(request, dict(os.environ if runner_env is None else runner_env))
    jobs.parse_jobs(request.jobs)
    profiler_step(request, dict(env))
    approvals(request)
    if request.foreign_policy not in ("wait", "refuse"):
        raise UsageError(
            f"--foreign {request.foreign_policy!r} is not valid; use 'wait' or 'refuse'"
        )
    for name in request.compiler_names:
        if not name.strip() or name != name.strip() or "/" in name:
            raise UsageError(
                f"--compiler-name {name!r} is not a process name (an empty one would match "
                "every process); give a name such as op_compiler"
            )
    if request.python:
        from skgate.preflight.interpreter import find_interpreter  # noqa: PLC0415 - see the top

        found = find_interpreter(request, env).path
        if (
            found is None
            or not os.path.isfile(found)
            or not os.stat(found).st_mode & 0o111
            or not os.access(found, os.X_OK)
            or not _executable_format(found)
        ):
            raise UsageError(
                f"--python {request.python} is not an executable program; give the interpreter "
                "the workload runs"
            )


def _executable_format(path: str) -> bool:
    """An ELF binary or a ``#!`` script: what exec can run (a text file, say, is not)."""
    head = regular.read_head(path, 4)  # a FIFO named --python: never waited on
    return head is not None and head.startswith((b"\x7fELF", b"#!"))
