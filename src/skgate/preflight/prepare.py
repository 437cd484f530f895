"""Preflight: everything checked and frozen before launch (C4, C5, C6).

:func:`prepare` turns a :class:`~skgate.model.request.RunRequest` into a :class:`LaunchPlan`: the
complete workload environment, the controls recorded in ``control.json["controls"]``,
and the reasons the attempt must not start. Blocking is not an error: the runner records
a ``not_started`` attempt with the reasons (exit 3) and it never counts as a compile
result. Bad user input (``--jobs 0``, a malformed schedule, a ``--python`` that is not
Python, an unreadable baseline) raises :class:`~skgate.model.errors.UsageError` instead.

Order (cheap checks first, waits last, so a run that is blocked anyway never waits):

1. base environment: runner environment + ``request.env`` - ``request.unset_env``;
2. compile concurrency (C5): decide, compare with earlier attempts of the root, export
   ``NPU_STATIC_KERNEL_COMPILE_JOBS``;
3. profiler schedule (C6): validate, export ``SKGATE_PROFILER_SCHEDULE``;
4. start-up hook scan of the workload interpreter for exactly that environment (C6),
   which never runs what it inspects before it is approved (see ``hooks.scan``);
5. environment delta (redacted), ordered ``PYTHONPATH``, host facts;
6. foreign compilers (C4): refuse, or wait up to ``--lease-timeout`` (visibly, woken
   by the blockers' pidfds: see ``foreign``); never signalled;
7. device leases (C4), whose markers are exported to the workload;
8. what will make the compile skip (C6, ``skips``): a static-kernel cache, stale
   ``kernel_meta/*.o``, a build path too deep (the only one that blocks, unless
   ``--allow-long-paths``), static kernels turned off by the launcher environment.

This module never changes the environment it inspects (``os.environ`` is read only).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from skgate.evidence.diskfull import low_space_warning
from skgate.evidence.files import CONTROL, VERDICT, check_root, read_json
from skgate.evidence.ledger import end_entries, list_attempts
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.events import Event, Preflight, PreflightStep
from skgate.model.request import RunRequest
from skgate.model.running import ProcessRecord
from skgate.preflight import jobs, self_hooks, torch_npu
from skgate.preflight.env import (
    REDACTED,
    base_env,
    env_delta,
    host_facts,
    ordered_pythonpath,
    relevant_env,
)
from skgate.preflight.foreign import (
    COMPILER_NAMES_VAR,
    NEVER_SIGNALLED,
    PROGRESS_EVERY,
    Notify,
    compiler_names,
    foreign_step,
)
from skgate.preflight.hooks import scan as hooks
from skgate.preflight.inputs import check_inputs, profiler_step, scan_inputs
from skgate.preflight.interpreter import Interpreter, find_interpreter
from skgate.preflight.render import render_lines, skip_lines
from skgate.preflight.skips import skips_step
from skgate.proc import leases
from skgate.proc.signals import deferred

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Emit = Callable[[Event], object]

#: Re-exported: callers and tests name them through this module (one public face).
__all__ = [
    "COMPILER_NAMES_VAR",
    "LaunchPlan",
    "base_env",
    "check_inputs",
    "compiler_names",
    "env_delta",
    "find_interpreter",
    "prepare",
    "render_lines",
    "skip_lines",
]


class LaunchPlan:
    """What the runner launches with, what it records, and whether it may launch. (A
    plain class, not a dataclass: one generated class less on every start-up, issue 29.)"""

    def __init__(
        self,
        *,
        env: dict[str, str],
        controls: dict[str, Any],
        blocked: tuple[str, ...],
        foreign: tuple[ProcessRecord, ...],
        _lease: leases.LeaseSet | None = None,
    ) -> None:
        self.env = env
        self.controls = controls
        self.blocked = blocked
        self.foreign = foreign
        self._lease = _lease

    @property
    def lease_fds(self) -> tuple[int, ...]:
        """The lock descriptors of the held device leases, for the launched command to
        inherit: a flock lives while any holder of its open description lives, so the
        lease outlasts the runner itself if the runner dies before its tree (C4)."""
        return tuple(self._lease.fds.values()) if self._lease is not None else ()

    def release(self) -> None:
        """Release device leases (idempotent). Call only after the whole owned tree is
        gone (C4), not when the leader exits."""
        if self._lease is not None:
            self._lease.release()


# --------------------------------------------------------------------------- steps


def _jobs_step(
    request: RunRequest, root: Path, env: dict[str, str], host: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    decision = jobs.decide(request.jobs, env, host, job_memory_mb=request.job_memory_mb)
    record = decision.to_dict()
    varied = "jobs" in request.vary
    record["varied"] = varied
    earlier: list[dict[str, Any]] = []
    ended = end_entries(root)
    # As strings, not Paths: one per attempt of the root, on every run (issue 29).
    for attempt in list_attempts(os.fspath(root)):
        name = os.path.basename(attempt)
        frozen = _frozen_jobs(attempt, ended.get(name))
        if frozen is None:
            continue
        value, arm, not_started = frozen
        if arm:
            continue  # a declared diagnostic arm is not a reference
        if not_started:
            continue  # never launched: nothing was compiled with it
        earlier.append({"attempt": name, "value": value})
    record["compared_with"] = earlier
    blocked: list[str] = []
    differing = [e for e in earlier if e["value"] != decision.value]
    if differing and not varied:
        ref = differing[0]
        blocked.append(
            f"compile concurrency {jobs.JOBS_VAR}={decision.value} differs from "
            f"{ref['value']} frozen by attempt {ref['attempt']} of this root (C5: compared "
            f"attempts use one value); use --jobs {ref['value']}, declare the change with "
            "--vary jobs, or use a fresh --root"
        )
    env[jobs.JOBS_VAR] = str(decision.value)
    return record, blocked


def _frozen_jobs(attempt: str, end: dict[str, Any] | None) -> tuple[int, bool, bool] | None:
    """(value, varied, not started) an earlier attempt froze, or None when it froze none:
    from its ledger end entry when that records them, else from its own files."""
    jobs_end = end.get("jobs") if end is not None else None
    if end is not None and isinstance(jobs_end, dict):
        value = jobs_end.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        return value, jobs_end.get("varied") is True, end.get("state") == "not_started"
    at = Path(attempt)
    try:
        control = read_json(at / CONTROL)
    except EvidenceError:
        return None
    controls = control.get("controls") if isinstance(control, dict) else None
    frozen = jobs.frozen_value(controls)
    if frozen is None or not isinstance(controls, dict):
        return None
    return frozen, controls["jobs"].get("varied") is True, _not_started(at)


def _not_started(attempt: Path) -> bool:
    try:
        verdict = read_json(attempt / VERDICT)
    except EvidenceError:
        return False
    return isinstance(verdict, dict) and verdict.get("state") == "not_started"


#: Hands preflight the result of a scan started early for exactly these inputs, or None
#: (then preflight scans itself); see :mod:`skgate.preflight.early`.
EarlyScan = Callable[[hooks.ScanInputs], "hooks.HookScan | None"]


def _hooks_step(
    request: RunRequest,
    env: Mapping[str, str],
    *,
    approve_all: bool = False,
    early: EarlyScan | None = None,
) -> tuple[Interpreter, hooks.HookScan | None, dict[str, Any], list[str]]:
    interp = find_interpreter(request, env)
    if interp.path is None:
        record = {"schema": hooks.SCHEMA_HOOK_SCAN, "skipped": True, "notes": [interp.note]}
        blocked = (
            [f"{interp.note}; cannot scan start-up hooks (C6)"] if interp.command_is_python else []
        )
        return interp, None, record, blocked
    inputs = scan_inputs(request, interp, env, approve_all)
    try:
        # A stop signal waits until the probes are gone (bounded by their timeout): the
        # runner never leaves an interpreter it started running on its own.
        with deferred():
            result = early(inputs) if early is not None else None
            if result is None:
                result = hooks.run_scan(inputs)
    except hooks.InterpreterError as exc:
        if request.python:
            raise UsageError(
                f"--python {request.python} is not a working Python interpreter ({exc}); "
                "give the interpreter the workload runs"
            ) from None
        record = {"schema": hooks.SCHEMA_HOOK_SCAN, "skipped": False, "problems": [str(exc)]}
        return interp, None, record, [f"start-up hook scan of {interp.path} failed (C6): {exc}"]
    unused = sorted(inputs.approved - {f.fingerprint for f in result.findings})
    record = result.to_dict()
    record["approvals"] = {
        "approve_hook": sorted(inputs.approved),
        "baseline": request.hook_baseline,
        "unmatched": unused,
    }
    return interp, result, record, result.blocked_reasons(interp.scanned_why(), interp.other_way())


# --------------------------------------------------------------------------- prepare


def prepare(
    request: RunRequest,
    root: Path,
    emit: Emit | None = None,
    *,
    runner_env: Mapping[str, str] | None = None,
    take_leases: bool = True,
    approve_all_hooks: bool = False,
    notify: Notify | None = None,
    progress_every: float = PROGRESS_EVERY,
    early_scan: EarlyScan | None = None,
    attempt_dir: Path | None = None,
    host: Mapping[str, Any] | None = None,
) -> LaunchPlan:
    """Check and freeze every control of an attempt before launch (see module doc).

    ``take_leases=False`` is the ``skgate preflight`` mode: nothing is waited for and no
    lease is taken; lease availability is only reported. ``approve_all_hooks`` is the
    ``--freeze-baseline`` mode: every static finding counts as approved, so the start-up
    probe runs and reports the modules the hooks import, and the baseline holds them all.
    ``notify`` receives one-line notes for the person waiting (a foreign-compiler or lease
    wait, its progress every ``progress_every`` seconds, how to stop waiting).
    ``early_scan`` hands over a hook scan started before the attempt existed, used only
    for exactly the inputs this preflight would scan (:mod:`skgate.preflight.early`).
    ``attempt_dir``: where ``--enforce-jobs`` installs its shim (None: report only).
    ``host``: :func:`jobs.probe_host`'s facts read before the attempt existed (the early
    work's), else read here.
    """
    check_root(root)  # the root run would refuse is refused here too (exit 2)
    runner = dict(os.environ if runner_env is None else runner_env)
    env = base_env(request, runner)
    blocked: list[str] = []
    controls: dict[str, Any] = {}

    # Once: the jobs decision and controls.host see the same facts.
    host = jobs.probe_host() if host is None else dict(host)
    jobs_record, jobs_blocked = _jobs_step(request, root, env, host)
    controls["jobs"] = jobs_record
    blocked.extend(jobs_blocked)

    controls["profiler"] = profiler_step(request, env)

    # C6: what would make the compile skip is named before launch; cheap, no waiting.
    skips_record, skips_blocked, _ = skips_step(request, env)
    controls["skips"] = skips_record
    blocked.extend(skips_blocked)

    interp, scan, hooks_record, hook_blocked = _hooks_step(
        request, env, approve_all=approve_all_hooks, early=early_scan
    )
    blocked.extend(hook_blocked)
    controls["hooks"] = hooks_record
    python = interp.to_dict()
    if scan is not None:
        python.update(
            {
                "executable": scan.interpreter.get("executable"),
                "version": scan.interpreter.get("version"),
                "implementation": scan.interpreter.get("implementation"),
                "prefix": scan.interpreter.get("prefix"),
            }
        )
    controls["python"] = python
    if request.python_cpu_count:
        jobs_record["python_cpu_count"] = jobs.python_cpu_count(
            jobs_record.get("value"), python.get("version"), env
        )
    if request.enforce_jobs:
        # C5, opt-in only: the shim makes the frozen -j the one op_compiler gets (loaded
        # only then, issue 29).
        from skgate.preflight.shim import install_shim  # noqa: PLC0415

        jobs_record["shim"] = install_shim(attempt_dir, env, jobs_record.get("value"))
    controls["pythonpath"] = (
        [dict(e) for e in scan.pythonpath] if scan is not None else ordered_pythonpath(env)
    )
    controls["host"] = host_facts(env, host)
    # Issue 27: the workload's torch-npu, from its dist-info where that interpreter
    # imports from (never imported, never skgate's own interpreter's).
    controls["torch_npu"] = torch_npu.torch_npu_record(
        torch_npu.search_dirs(scan.pythonpath, scan.interpreter.get("sitedirs") or ())
        if scan is not None
        else None
    )
    # The hooks skgate's own process already ran (C6 for skgate itself, issue 21): not
    # undone, but said and recorded, so an attempt made under them is never trusted blind.
    controls["skgate_self"] = self_hooks.own_hooks()
    if notify is not None and controls["skgate_self"]["untrusted"]:
        notify(f"skgate: warning: {controls['skgate_self']['note']}")
    # Issue 21 s2: a root short of space is said before launch (not recorded: the bound
    # is the operator's, and a full disk later is recorded as such, diskfull.json).
    if notify is not None:
        for line in low_space_warning(Path(request.root), os.environ):
            notify(line)

    deadline = time.monotonic() + request.lease_timeout
    wait = take_leases and not blocked  # a run blocked anyway never waits (C4 waits are long)
    foreign_record, foreign_blocked, foreign = foreign_step(
        request,
        env,
        wait=wait,
        deadline=deadline,
        emit=emit,
        notify=notify,
        progress_every=progress_every,
    )
    controls["foreign"] = foreign_record
    blocked.extend(foreign_blocked)

    lease: leases.LeaseSet | None = None
    if take_leases and not blocked:
        outcome = leases.acquire(
            request.devices,
            env,
            timeout=request.lease_timeout,
            emit=_lease_notes(emit, notify),
            deadline=deadline,
        )
        lease = outcome.lease
        controls["leases"] = outcome.controls
        blocked.extend(outcome.blocked)
        env.update(outcome.env)
    else:
        controls["leases"] = _lease_report(request, env, taken=False)

    controls["env"] = {
        "delta": env_delta(runner, env),
        "relevant": relevant_env(env),
        "redaction": "values of secret-looking names (TOKEN, PASSWORD, SECRET, KEY, ...) "
        f"are recorded as {REDACTED}",
    }
    return LaunchPlan(
        env=env, controls=controls, blocked=tuple(blocked), foreign=foreign, _lease=lease
    )


def _lease_notes(emit: Emit | None, notify: Notify | None) -> Emit | None:
    """Journal the lease steps as given, and tell the person when a lease wait starts."""
    if notify is None:
        return emit

    def both(event: Event) -> object:
        step = event.step_kind if isinstance(event, Preflight) else None
        fields = event.details if isinstance(event, Preflight) else {}
        if step is PreflightStep.LEASE_WAIT:
            who = fields.get("holder") or {}
            by = f" held by pid {who.get('pid')}" if isinstance(who, dict) and who else ""
            notify(
                f"skgate: waiting for device {fields.get('device')}{by} (another run's lease, "
                f"{NEVER_SIGNALLED}); waiting at most {fields.get('timeout')} s. To stop "
                "waiting: a shorter --lease-timeout, or other --devices"
            )
        elif step is PreflightStep.LEASE_ACQUIRED:
            notify(f"skgate: device lease taken after {float(fields.get('waited_s', 0)):.1f} s")
        return emit(event) if emit is not None else None

    return both


def _lease_report(request: RunRequest, env: Mapping[str, str], *, taken: bool) -> dict[str, Any]:
    if any(name in env for name in leases.MARKERS):
        record, problems = leases.inherited_lease(tuple(request.devices), env)
        record["problems"] = list(problems)
        return record
    root = leases.default_root(env)
    busy = [d for d in sorted(set(request.devices)) if leases.is_locked(root, d)]
    return {
        "mode": "not_taken" if not taken else "acquired",
        "devices": sorted(set(request.devices)),
        "root": str(root),
        "busy_now": busy,
    }
