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
4. start-up hook scan of the workload interpreter with exactly that environment (C6);
5. environment delta (redacted), ordered ``PYTHONPATH``, host facts;
6. foreign compilers (C4): refuse, or wait up to ``--lease-timeout``; never signalled;
7. device leases (C4), whose markers are exported to the workload.

This module never changes the environment it inspects (``os.environ`` is read only).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skgate import __version__
from skgate.evidence.files import CONTROL, VERDICT, read_json
from skgate.evidence.ledger import list_attempts
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.records import ProcessRecord
from skgate.model.request import RunRequest
from skgate.preflight import jobs, profiler
from skgate.preflight.hooks import scan as hooks
from skgate.proc import leases
from skgate.proc.observe import COMPILER_NAMES, boot_id, compiler_processes

Emit = Callable[..., object]

#: Comma-separated compiler process names to treat as foreign compilers (C4).
COMPILER_NAMES_VAR = "SKGATE_COMPILER_NAMES"
FOREIGN_POLL = 0.5

_SECRET = re.compile(
    r"(TOKEN|PASSW(OR)?D|SECRET|CREDENTIAL|PRIVATE|COOKIE|SESSION|AUTH|(^|_)KEY($|_)|"
    r"APIKEY|ACCESSKEY|PASSPHRASE)",
    re.IGNORECASE,
)
REDACTED = "<redacted>"
#: Variables whose full value is recorded even when unchanged (what the compile sees).
_RELEVANT_PREFIXES = (
    "ASCEND_",
    "NPU_",
    "SUPERKERNEL_",
    "PYTHON",
    "TORCH",
    "HCCL_",
    "SKGATE_",
    "LD_",
    "OMP_",
)
_RELEVANT_NAMES = ("PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "LOCAL_WORLD_SIZE", "WORLD_SIZE")
_PYTHON_RE = re.compile(r"^python(\d+(\.\d+)*)?$")
#: Interpreter flags of the command that change start-up, passed to the scan probes.
_STARTUP_FLAGS = "EsSI"
_FLAGS_WITH_ARG = ("-X", "-W", "--check-hash-based-pycs")


@dataclass
class LaunchPlan:
    """What the runner launches with, what it records, and whether it may launch."""

    env: dict[str, str]
    controls: dict[str, Any]
    blocked: tuple[str, ...]
    foreign: tuple[ProcessRecord, ...]
    _lease: leases.LeaseSet | None = field(default=None, repr=False)

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


# --------------------------------------------------------------------------- env


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


#: ``scheme://user:password@host``: the password part of a URL in any variable's value.
_URL_CREDENTIALS = re.compile(r"(?<=://)([^/@\s:]+):([^/@\s]+)@")


def _shown(name: str, value: str) -> str:
    if is_secret(name):
        return REDACTED
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}:{REDACTED}@", value)


def env_delta(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, Any]:
    """Added / removed / changed variables; values of secret-looking names redacted."""
    added = {k: _shown(k, after[k]) for k in sorted(after) if k not in before}
    removed = sorted(k for k in before if k not in after)
    changed = {
        k: {"from": _shown(k, before[k]), "to": _shown(k, after[k])}
        for k in sorted(after)
        if k in before and before[k] != after[k]
    }
    redacted = sorted(k for k in set(added) | set(changed) | set(removed) if is_secret(k))
    return {"added": added, "removed": removed, "changed": changed, "redacted": redacted}


def relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    return {
        k: _shown(k, env[k])
        for k in sorted(env)
        if k.startswith(_RELEVANT_PREFIXES) or k in _RELEVANT_NAMES
    }


def base_env(request: RunRequest, runner_env: Mapping[str, str]) -> dict[str, str]:
    env = dict(runner_env)
    env.update({str(k): str(v) for k, v in request.env.items()})
    for name in request.unset_env:
        env.pop(name, None)
    return env


def ordered_pythonpath(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The ``PYTHONPATH`` entries in order with existence (used when no scan ran)."""
    raw = env.get("PYTHONPATH", "")
    out = []
    for i, entry in enumerate(raw.split(os.pathsep) if raw else []):
        path = os.path.abspath(entry) if entry else entry
        out.append(
            {
                "index": i,
                "entry": entry,
                "path": path,
                "exists": bool(entry) and os.path.exists(path),
                "is_dir": bool(entry) and os.path.isdir(path),
            }
        )
    return out


def host_facts() -> dict[str, Any]:
    uname = os.uname()
    facts: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "kernel": f"{uname.sysname} {uname.release}",
        "kernel_version": uname.version,
        "machine": uname.machine,
        "boot_id": boot_id(),
        "runner_python": platform.python_version(),
        "skgate_version": __version__,
    }
    facts.update(jobs.probe_host())
    return facts


# --------------------------------------------------------------------------- interpreter


@dataclass(frozen=True)
class Interpreter:
    path: str | None
    how: str
    flags: tuple[str, ...] = ()
    command_is_python: bool = False
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "how": self.how,
            "flags": list(self.flags),
            "command_is_python": self.command_is_python,
            "note": self.note,
        }


def _which(name: str, env: Mapping[str, str], cwd: str) -> str | None:
    if os.sep in name:
        p = name if os.path.isabs(name) else os.path.join(cwd, name)
        return p if os.path.isfile(p) and os.access(p, os.X_OK) else None
    return shutil.which(name, path=env.get("PATH", os.defpath))


def _startup_flags(args: Iterable[str]) -> tuple[str, ...]:
    """Start-up flags (-E -s -S -I) given to the interpreter before the script/-c/-m."""
    found: list[str] = []
    it = iter(args)
    for arg in it:
        if arg in _FLAGS_WITH_ARG:
            next(it, None)
            continue
        if not arg.startswith("-") or arg == "-" or arg.startswith("--"):
            break
        letters = arg[1:]
        for i, ch in enumerate(letters):
            if ch in "cm":  # -c CMD / -m MOD: everything after is the program's
                return tuple(found)
            if ch in "XW":  # -Xfoo: the rest of the token is the option's value
                break
            if ch in _STARTUP_FLAGS and f"-{ch}" not in found:
                found.append(f"-{ch}")
            del i
    return tuple(found)


def _shebang(path: str) -> list[str] | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line.split()


def find_interpreter(request: RunRequest, env: Mapping[str, str]) -> Interpreter:
    """The interpreter the workload will run (C6 scans exactly that one)."""
    cwd = request.cwd
    if request.python:
        found = _which(request.python, env, cwd)
        if found is None:
            raise UsageError(
                f"--python {request.python} does not exist or is not executable; "
                "give the interpreter the workload runs"
            )
        return Interpreter(found, "--python")
    argv = list(request.argv)
    if argv and os.path.basename(argv[0]) == "env":
        rest = argv[1:]
        while rest and (rest[0].startswith("-") or "=" in rest[0]):
            rest = rest[1:]
        argv = rest
    if argv:
        name = os.path.basename(argv[0])
        resolved = _which(argv[0], env, cwd)
        if _PYTHON_RE.match(name):
            flags = _startup_flags(argv[1:])
            if resolved is None:
                return Interpreter(
                    None,
                    "command",
                    flags,
                    True,
                    f"the command's interpreter {argv[0]} is not found on the workload PATH",
                )
            return Interpreter(resolved, "command argv[0]", flags, True)
        if resolved is not None:
            tokens = _shebang(resolved)
            if tokens:
                interp, rest_tokens = tokens[0], tokens[1:]
                if os.path.basename(interp) == "env":
                    rest_tokens = [t for t in rest_tokens if t != "-S"]
                    while rest_tokens and rest_tokens[0].startswith("-"):
                        rest_tokens = rest_tokens[1:]
                    if rest_tokens:
                        interp, rest_tokens = rest_tokens[0], rest_tokens[1:]
                if _PYTHON_RE.match(os.path.basename(interp)):
                    found = _which(interp, env, cwd)
                    if found is not None:
                        return Interpreter(
                            found, f"shebang of {resolved}", _startup_flags(rest_tokens)
                        )
    fallback = _which("python3", env, cwd)
    if fallback is None:
        return Interpreter(
            None, "none", note="no python3 on the workload PATH: start-up hook scan skipped"
        )
    return Interpreter(fallback, "python3 on the workload PATH")


# --------------------------------------------------------------------------- steps


def _jobs_step(
    request: RunRequest, root: Path, env: dict[str, str]
) -> tuple[dict[str, Any], list[str]]:
    decision = jobs.decide(request.jobs, env, job_memory_mb=request.job_memory_mb)
    record = decision.to_dict()
    varied = "jobs" in request.vary
    record["varied"] = varied
    earlier: list[dict[str, Any]] = []
    for attempt in list_attempts(root):
        try:
            control = read_json(attempt / CONTROL)
        except EvidenceError:
            continue
        controls = control.get("controls") if isinstance(control, dict) else None
        value = jobs.frozen_value(controls)
        if value is None or not isinstance(controls, dict):
            continue
        if controls["jobs"].get("varied") is True:
            continue  # a declared diagnostic arm is not a reference
        if _not_started(attempt):
            continue  # never launched: nothing was compiled with it
        earlier.append({"attempt": attempt.name, "value": value})
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


def _not_started(attempt: Path) -> bool:
    try:
        verdict = read_json(attempt / VERDICT)
    except EvidenceError:
        return False
    return isinstance(verdict, dict) and verdict.get("state") == "not_started"


def _profiler_step(request: RunRequest, env: dict[str, str]) -> dict[str, Any]:
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


def _approvals(request: RunRequest) -> tuple[set[str], set[str]]:
    approved = {hooks.check_fingerprint(fp) for fp in request.approved_hooks}
    baseline = hooks.load_baseline(request.hook_baseline) if request.hook_baseline else set()
    return approved, baseline


def _hooks_step(
    request: RunRequest, env: Mapping[str, str]
) -> tuple[Interpreter, hooks.HookScan | None, dict[str, Any], list[str]]:
    approved, baseline = _approvals(request)
    interp = find_interpreter(request, env)
    if interp.path is None:
        record = {"schema": hooks.SCHEMA_HOOK_SCAN, "skipped": True, "notes": [interp.note]}
        blocked = (
            [f"{interp.note}; cannot scan start-up hooks (C6)"] if interp.command_is_python else []
        )
        return interp, None, record, blocked
    try:
        result = hooks.scan(
            interp.path,
            env,
            cwd=request.cwd,
            flags=interp.flags,
            approved=approved,
            baseline=baseline,
        )
    except hooks.InterpreterError as exc:
        if request.python:
            raise UsageError(
                f"--python {request.python} is not a working Python interpreter ({exc}); "
                "give the interpreter the workload runs"
            ) from None
        record = {"schema": hooks.SCHEMA_HOOK_SCAN, "skipped": False, "problems": [str(exc)]}
        return interp, None, record, [f"start-up hook scan of {interp.path} failed (C6): {exc}"]
    unused = sorted(approved - {f.fingerprint for f in result.findings})
    record = result.to_dict()
    record["approvals"] = {
        "approve_hook": sorted(approved),
        "baseline": request.hook_baseline,
        "unmatched": unused,
    }
    return interp, result, record, result.blocked_reasons()


def compiler_names(request: RunRequest, env: Mapping[str, str]) -> tuple[str, ...]:
    """The compiler process names of the foreign check and of stages (C3, C4)."""
    if request.compiler_names:
        return tuple(request.compiler_names)
    raw = env.get(COMPILER_NAMES_VAR, "")
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    return names or COMPILER_NAMES


def _foreign_step(
    request: RunRequest,
    env: Mapping[str, str],
    *,
    wait: bool,
    deadline: float,
    emit: Emit | None,
) -> tuple[dict[str, Any], list[str], tuple[ProcessRecord, ...]]:
    """List compilers this attempt does not own; refuse or wait. Never signal (C4)."""
    policy = request.foreign_policy
    if policy not in ("wait", "refuse"):
        raise UsageError(f"--foreign {policy!r} is not valid; use 'wait' or 'refuse'")
    names = compiler_names(request, env)
    seen: dict[tuple[int, int], ProcessRecord] = {}
    started = time.monotonic()
    announced = False
    while True:
        now = time.time()
        current = compiler_processes(names, exclude=(os.getpid(),))
        for st, argv in current:
            key = (st.pid, st.start_ticks)
            old = seen.get(key)
            seen[key] = ProcessRecord(
                pid=st.pid,
                start_ticks=st.start_ticks,
                ppid=st.ppid,
                pgid=st.pgid,
                sid=st.sid,
                argv=argv,
                name=st.name,
                first_seen=old.first_seen if old else now,
                last_seen=now,
            )
        if not current:
            break
        alive = [f"{st.name}[{st.pid}]" for st, _ in current]
        if policy == "refuse" or not wait or time.monotonic() >= deadline:
            break
        if not announced and emit is not None:
            emit(
                "preflight",
                step="foreign_wait",
                processes=[seen[(s.pid, s.start_ticks)].to_dict() for s, _ in current],
                timeout=request.lease_timeout,
            )
            announced = True
        time.sleep(min(FOREIGN_POLL, max(deadline - time.monotonic(), 0.0)))
    waited = round(time.monotonic() - started, 3)
    blocked: list[str] = []
    note = None
    if current and (policy == "refuse" or wait):
        shown = ", ".join(alive[:6]) + (" ..." if len(alive) > 6 else "")
        if policy == "refuse":
            why = "--foreign refuse"
        else:
            why = f"still running after {waited:g} s (--lease-timeout {request.lease_timeout:g})"
        blocked.append(
            f"foreign compiler processes not owned by this attempt: {shown}; {why}. skgate never "
            "signals them (C4): wait for them to finish, or use an isolated host/device"
        )
    elif current:
        note = (
            f"{len(current)} foreign compiler process(es) alive, not waited for "
            f"(a run with --foreign wait waits up to --lease-timeout {request.lease_timeout:g} s)"
        )
    elif announced and emit is not None:
        emit("preflight", step="foreign_cleared", waited_s=waited)
    record = {
        "policy": policy,
        "names": list(names),
        "seen": [r.to_dict() for r in seen.values()],
        "alive_at_end": len(current),
        "waited_s": waited,
        "note": note,
    }
    return record, blocked, tuple(seen.values())


# --------------------------------------------------------------------------- prepare


def prepare(
    request: RunRequest,
    root: Path,
    emit: Emit | None = None,
    *,
    runner_env: Mapping[str, str] | None = None,
    take_leases: bool = True,
) -> LaunchPlan:
    """Check and freeze every control of an attempt before launch (see module doc).

    ``take_leases=False`` is the ``skgate preflight`` mode: nothing is waited for and no
    lease is taken; lease availability is only reported.
    """
    runner = dict(os.environ if runner_env is None else runner_env)
    env = base_env(request, runner)
    blocked: list[str] = []
    controls: dict[str, Any] = {}

    jobs_record, jobs_blocked = _jobs_step(request, root, env)
    controls["jobs"] = jobs_record
    blocked.extend(jobs_blocked)

    controls["profiler"] = _profiler_step(request, env)

    interp, scan, hooks_record, hook_blocked = _hooks_step(request, env)
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
    controls["pythonpath"] = (
        [dict(e) for e in scan.pythonpath] if scan is not None else ordered_pythonpath(env)
    )
    controls["host"] = host_facts()

    deadline = time.monotonic() + request.lease_timeout
    wait = take_leases and not blocked  # a run blocked anyway never waits (C4 waits are long)
    foreign_record, foreign_blocked, foreign = _foreign_step(
        request, env, wait=wait, deadline=deadline, emit=emit
    )
    controls["foreign"] = foreign_record
    blocked.extend(foreign_blocked)

    lease: leases.LeaseSet | None = None
    if take_leases and not blocked:
        outcome = leases.acquire(
            request.devices, env, timeout=request.lease_timeout, emit=emit, deadline=deadline
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


# --------------------------------------------------------------------------- rendering


def render_lines(plan: LaunchPlan) -> list[str]:
    """Human-readable preflight result (the CLI prints these lines)."""
    c = plan.controls
    lines: list[str] = []
    py = c.get("python", {})
    lines.append(
        f"interpreter: {py.get('path') or '-'} ({py.get('how')})"
        + (f", Python {py['version']}" if py.get("version") else "")
        + (f" flags {' '.join(py['flags'])}" if py.get("flags") else "")
    )
    j = c.get("jobs", {})
    lines.append(f"compile jobs: {jobs.JOBS_VAR}={j.get('value')} ({j.get('rule')})")
    for note in j.get("notes", []):
        lines.append(f"  note: {note}")
    prof = c.get("profiler", {})
    lines.append(
        "profiler schedule: "
        + (f"{prof['text']} via {prof['env_var']}" if prof.get("text") else "framework default")
    )
    h = c.get("hooks", {})
    findings = h.get("findings", [])
    if h.get("skipped"):
        lines.append(
            "start-up hooks: scan skipped: " + "; ".join(str(n) for n in h.get("notes", []))
        )
    else:
        lines.append(
            f"start-up hooks: {len(findings)} finding(s), {h.get('unapproved', 0)} unapproved"
        )
    for f in findings:
        state = f"approved ({f['approved_by']})" if f.get("approved") else "BLOCKS"
        lines.append(f"  [{state}] {f['kind']}: {f['path']}")
        lines.append(f"      {f['detail']}")
        lines.append(f"      fingerprint {f['fingerprint']}")
    for a in h.get("allowances", []):
        lines.append(f"  [allowed] {a['path']}: {a['reason']}")
    for p in h.get("problems", []):
        lines.append(f"  [probe problem] {p}")
    for note in h.get("notes", []) if not h.get("skipped") else []:
        lines.append(f"  note: {note}")
    pp = c.get("pythonpath", [])
    if pp:
        lines.append("PYTHONPATH (in order):")
        for e in pp:
            flag = "" if e.get("exists") else "  (missing)"
            shadow = f"  shadows {', '.join(e['shadows'])}" if e.get("shadows") else ""
            lines.append(f"  {e['index']}: {e['entry']}{flag}{shadow}")
    fo = c.get("foreign", {})
    if fo.get("seen"):
        lines.append(
            f"foreign compilers seen ({fo.get('policy')}): "
            + ", ".join(f"{r['name']}[{r['pid']}]" for r in fo["seen"])
        )
    le = c.get("leases", {})
    if le.get("devices"):
        lines.append(f"device leases: {le.get('mode')} {le.get('devices')} under {le.get('root')}")
    delta = c.get("env", {}).get("delta", {})
    lines.append(
        "environment delta: "
        f"{len(delta.get('added', {}))} added, {len(delta.get('changed', {}))} changed, "
        f"{len(delta.get('removed', []))} removed"
    )
    if plan.blocked:
        lines.append("BLOCKED (nothing would be launched, exit 3):")
        lines.extend(f"  - {r}" for r in plan.blocked)
        if any("start-up hook (C6)" in r for r in plan.blocked):
            lines.append(
                "  to approve every finding at once: skgate preflight --freeze-baseline FILE, "
                "then run with --hook-baseline FILE"
            )
    else:
        lines.append("preflight clean: the run may launch")
    return lines
