"""What preflight decides from the request alone, before the attempt exists: the
profiler schedule it exports (C6), the hook approvals it accepts, and the exact inputs
of the start-up hook scan (C6). :mod:`skgate.preflight.prepare` uses these, and so does
:mod:`skgate.preflight.early`, which starts the scan early; this module imports only
what that needs, since it is loaded before the rest of the runner."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from skgate.model.errors import UsageError
from skgate.model.request import RunRequest
from skgate.preflight import jobs, profiler
from skgate.preflight.env import base_env
from skgate.preflight.hooks.baseline import check_fingerprint, load_baseline
from skgate.preflight.hooks.rounds import ScanInputs
from skgate.preflight.interpreter import Interpreter, find_interpreter


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
    request: RunRequest, runner_env: Mapping[str, str] | None = None
) -> ScanInputs | None:
    """The inputs :func:`skgate.preflight.prepare.prepare` will scan with (the environment
    after the C5 and C6 exports), computed before the attempt exists; None when there is
    nothing to scan."""
    env = base_env(request, dict(os.environ if runner_env is None else runner_env))
    env[jobs.JOBS_VAR] = str(
        jobs.decide(request.jobs, env, job_memory_mb=request.job_memory_mb).value
    )
    profiler_step(request, env)
    interp = find_interpreter(request, env)
    if interp.path is None:
        return None
    return scan_inputs(request, interp, env, False)
