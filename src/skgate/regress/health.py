"""Compile-health regression gate and what it shares with the diagnosis matrix (C6).

Both C6 procedures are built only from ordinary gated attempts (:func:`skgate.api.run_attempt`,
same timeout, same ownership rules, C4) and the files those attempts archive. This module
holds the health gate and the parts both procedures use: the declared-change record
(:class:`Change`) and its grammar, the comparison of frozen controls between two attempts,
the evidence helpers, the ``regress.json`` writer and the C6 / C7 wording. The
one-factor-at-a-time diagnosis (``--matrix``) lives in :mod:`skgate.regress.matrix.core`.

* :func:`health` - after an intentional change to profiler construction or import order,
  one isolated compile in a fresh evidence root with the reference attempt's frozen request
  plus the declared change. It passes only when the compiler returned naturally, every
  aggregate stage reports all inputs successful, the top-level exit status is 0 and the
  completion marker was seen (C6). Its frozen controls are compared with the reference's:
  any difference beyond the declared change makes the result not attributable (blocked).

Both procedures write ``regress.json`` (schema ``skgate.regress/1``, ``kind`` health or
matrix) into their own evidence root, never into a sealed attempt directory (C4: sealed
evidence is never rewritten).

Schema history: ``skgate.regress/1`` first version (2026-11).

Change grammar (``--declare`` of the health gate), one item per flag:

=========================  ===============================================================
``env:NAME=VALUE``         set ``NAME`` in the workload environment
``unset:NAME``             remove ``NAME`` from the workload environment
``profiler-schedule=SPEC`` the schedule handed to the launcher (``wait=..,warmup=..,...``)
``jobs=N``                 a different frozen compile concurrency (declared vary, C5)
=========================  ===============================================================
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skgate.evidence import files, ledger
from skgate.evidence.load import load_control
from skgate.evidence.logscan import LogScan
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.records import State, Verdict
from skgate.model.request import RunRequest
from skgate.preflight import prepare as preflight
from skgate.preflight.jobs import JOBS_VAR, parse_jobs
from skgate.preflight.profiler import ENV_VAR as SCHEDULE_VAR
from skgate.preflight.profiler import ProfilerSchedule
from skgate.runner import outputs_dir, validate

SCHEMA_REGRESS = "skgate.regress/1"
REGRESS_FILE = "regress.json"

#: Runs one gated attempt; :func:`skgate.api.run_attempt` unless a caller injects another.
RunFn = Callable[[RunRequest], Verdict]
Progress = Callable[[str], None]

#: Settings of the gate's own observation (which process names count as foreign
#: compilers, C4), not runtime setup of the compile: they never make runs incomparable.
GATE_ONLY_ENV = frozenset({preflight.COMPILER_NAMES_VAR})

# C6 / C7 wording, kept in one place so reports and tests quote the same text.
HOOK_TRIGGER = "the start-up launch path is the trigger"
HOOK_NOT_PROVEN = (
    "does not prove the schedule value, the profiler feature, SK trace or the named "
    "operators defective"
)
FAILED_WORDS = "naturally returned final compiler failures"
INTERRUPTED_WORDS = "top-level timeout or external interruption"


# --------------------------------------------------------------------------- changes


@dataclass(frozen=True)
class Change:
    """One declared change to a frozen request, and the controls it may move.

    ``kind`` is a matrix factor (``startup_hook`` ... ``jobs``) or a health declaration
    (``env``, ``unset``, ``profiler_schedule``, ``jobs``).
    """

    kind: str
    label: str
    env: tuple[tuple[str, str], ...] = ()
    unset: tuple[str, ...] = ()
    jobs: str | None = None
    profiler_schedule: str | None = None
    hook_dir: str | None = None

    def env_names(self) -> set[str]:
        names = {n for n, _ in self.env} | set(self.unset)
        if self.hook_dir is not None:
            names.add("PYTHONPATH")
        return names

    def allows(self, key: str, value: Any) -> bool:
        """May the control ``key`` (see :func:`control_view`) differ because of this change?"""
        for name in self.env_names():
            if key in (f"request.env.{name}", f"env.{name}", "request.unset_env"):
                return True
            if name == "PYTHONPATH" and key == "pythonpath":
                return True
            if name == SCHEDULE_VAR and key in ("profiler", "request.profiler_schedule"):
                return True
            if name == JOBS_VAR and key == "jobs.value":
                return True
        if self.jobs is not None and key in (
            "request.jobs",
            "request.vary",
            "jobs.value",
            f"env.{JOBS_VAR}",
        ):
            return True
        if self.profiler_schedule is not None and key in (
            "request.profiler_schedule",
            "profiler",
            f"env.{SCHEDULE_VAR}",
        ):
            return True
        if self.hook_dir is not None and key.startswith("hooks.finding."):
            # Only the declared hook's own findings: anything else it drags in still blocks.
            path = value.get("path") if isinstance(value, dict) else None
            return isinstance(path, str) and _inside(path, self.hook_dir)
        return False

    def apply(self, request: RunRequest, runner_env: Mapping[str, str]) -> RunRequest:
        env = dict(request.env)
        unset = [n for n in request.unset_env if n not in self.env_names()]
        for name, value in self.env:
            env[name] = value
        for name in self.unset:
            env.pop(name, None)
            unset.append(name)
        if self.hook_dir is not None:
            # The hook directory goes first, for this run only (C6: declared, as a factor).
            current = env.get("PYTHONPATH", runner_env.get("PYTHONPATH", ""))
            env["PYTHONPATH"] = self.hook_dir + (os.pathsep + current if current else "")
        out = replace(request, env=env, unset_env=tuple(unset))
        if self.jobs is not None:
            # A declared vary (C5): the value changes on purpose and is recorded as such.
            out = replace(out, jobs=self.jobs, vary=tuple(sorted({*out.vary, "jobs"})))
        if self.profiler_schedule is not None:
            out = replace(out, profiler_schedule=self.profiler_schedule)
        return out

    def changes(self, request: RunRequest, runner_env: Mapping[str, str]) -> bool:
        """Does applying this change alter the request at all?"""
        before = base_effective(request, runner_env)
        after = base_effective(self.apply(request, runner_env), runner_env)
        return before != after

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "label": self.label,
            "env": dict(self.env),
            "unset": list(self.unset),
            "jobs": self.jobs,
            "profiler_schedule": self.profiler_schedule,
            "hook_dir": self.hook_dir,
        }


def base_effective(request: RunRequest, runner_env: Mapping[str, str]) -> tuple[Any, ...]:
    """What a change can alter: effective env, jobs and schedule."""
    env = preflight.base_env(request, runner_env)
    return (sorted(env.items()), request.jobs, request.profiler_schedule)


def _inside(path: str, directory: str) -> bool:
    p, d = os.path.realpath(path), os.path.realpath(directory)
    return p == d or p.startswith(d.rstrip(os.sep) + os.sep)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _env_name(name: str, where: str) -> str:
    if not _ENV_NAME.match(name):
        raise UsageError(f"{where}: {name!r} is not an environment variable name")
    return name


def _jobs_text(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{where}: jobs must be a positive integer")
    parsed = parse_jobs(str(value))
    if parsed == "auto" or parsed is None:
        raise UsageError(f"{where}: jobs must be a positive integer, not {value!r}")
    return str(parsed)


def parse_declaration(text: str) -> Change:
    """One ``--declare`` item (grammar in the module docstring). Bad input: UsageError."""
    where = f"--declare {text!r}"
    if text.startswith("env:"):
        name, sep, value = text[4:].partition("=")
        if not sep:
            raise UsageError(f"{where}: use env:NAME=VALUE")
        return Change("env", f"env {name}={value}", env=((_env_name(name, where), value),))
    if text.startswith("unset:"):
        name = _env_name(text[6:], where)
        return Change("unset", f"unset {name}", unset=(name,))
    key, sep, value = text.partition("=")
    if sep and key == "profiler-schedule":
        spec = ProfilerSchedule.parse(value).to_text()
        return Change("profiler_schedule", f"profiler schedule {spec}", profiler_schedule=spec)
    if sep and key == "jobs":
        jobs = _jobs_text(value, where)
        return Change("jobs", f"compile jobs {jobs}", jobs=jobs)
    raise UsageError(
        f"{where}: unknown change; use env:NAME=VALUE, unset:NAME, profiler-schedule=SPEC or jobs=N"
    )


# --------------------------------------------------------------------------- control comparison


def _sub(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def control_view(control: Mapping[str, Any]) -> dict[str, Any]:
    """The frozen controls of one attempt (``control.json``) that must match for two
    attempts to be compared (C5, C6): request, jobs, schedule, interpreter, ordered
    ``PYTHONPATH``, the effective environment that matters, hook findings, host."""
    req = _sub(control, "request")
    c = _sub(control, "controls")
    view: dict[str, Any] = {}
    for key in (
        "argv",
        "cwd",
        "timeout",
        "grace",
        "outputs",
        "package_mode",
        "summary_patterns",
        "completion_marker",
        "jobs",
        "unset_env",
        "python",
        "profiler_schedule",
        "vary",
        "devices",
    ):
        view[f"request.{key}"] = req.get(key)
    for name, value in sorted((req.get("env") or {}).items()):
        view[f"request.env.{name}"] = value
    jobs = _sub(c, "jobs")
    view["jobs.value"] = jobs.get("value")
    prof = _sub(c, "profiler")
    view["profiler"] = prof.get("text") or prof.get("schedule")
    py = _sub(c, "python")
    for key in ("executable", "version", "implementation", "flags"):
        view[f"python.{key}"] = py.get(key)
    view["pythonpath"] = [e.get("entry") for e in c.get("pythonpath") or [] if isinstance(e, dict)]
    env = _sub(c, "env")
    for name, value in sorted((env.get("relevant") or {}).items()):
        if name not in GATE_ONLY_ENV:
            view[f"env.{name}"] = value
    hooks = _sub(c, "hooks")
    for f in hooks.get("findings") or []:
        if isinstance(f, dict):
            view[f"hooks.finding.{f.get('fingerprint')}"] = {
                "kind": f.get("kind"),
                "path": f.get("path"),
                "approved": f.get("approved"),
            }
    host = _sub(c, "host")
    for key in ("hostname", "machine", "kernel"):
        view[f"host.{key}"] = host.get(key)
    return view


@dataclass(frozen=True)
class Difference:
    key: str
    reference: Any
    observed: Any
    declared: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "reference": self.reference,
            "observed": self.observed,
            "declared": self.declared,
        }

    def text(self) -> str:
        return f"{self.key}: {_short(self.reference)} -> {_short(self.observed)}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "(none)"
    return text if len(text) <= 80 else text[:77] + "..."


def compare_controls(
    reference: Mapping[str, Any],
    observed: Mapping[str, Any],
    changes: Iterable[Change] = (),
    ignore: Iterable[str] = (),
) -> list[Difference]:
    """Every control that differs between two ``control.json`` files, each marked whether a
    declared change accounts for it. Pure: the same files always give the same answer."""
    a, b = control_view(reference), control_view(observed)
    skip = set(ignore)
    declared = tuple(changes)
    out: list[Difference] = []
    for key in sorted(set(a) | set(b)):
        if key in skip or a.get(key) == b.get(key):
            continue
        value = b.get(key) if b.get(key) is not None else a.get(key)
        ok = any(ch.allows(key, value) for ch in declared)
        out.append(Difference(key, a.get(key), b.get(key), ok))
    return out


# --------------------------------------------------------------------------- evidence helpers


def _completion_seen(attempt_dir: Path) -> bool | None:
    path = attempt_dir / files.LOGSCAN
    if not path.exists():
        return None
    try:
        return LogScan.from_dict(files.read_json(path), str(path)).completion_seen
    except EvidenceError:
        return None


def _read_verdict(attempt_dir: Path) -> Verdict:
    path = attempt_dir / files.VERDICT
    if not path.exists():
        raise UsageError(
            f"reference attempt {attempt_dir} has no verdict yet (still running or cut off); "
            "pick a finished attempt; nothing was run"
        )
    return Verdict.from_dict(files.read_json(path), str(path))


def _control_raw(attempt_dir: Path) -> dict[str, Any]:
    return load_control(attempt_dir).raw


def _fresh_root(root: Path, what: str) -> None:
    """A fresh root is one that does not exist or is an empty directory."""
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(f"{what} {root} is not fresh (it exists and is not empty); pick a new one")


def _write_result(root: Path, data: Mapping[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / REGRESS_FILE
    files.write_json_new(path, dict(data))
    return path


# --------------------------------------------------------------------------- health gate


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class HealthResult:
    """Outcome of the compile-health gate: ``pass``, ``fail`` or ``blocked``."""

    result: str
    reference: str
    attempt: str | None
    root: str
    declared: tuple[Change, ...]
    checks: tuple[Check, ...]
    differences: tuple[Difference, ...]
    state: str | None
    reasons: tuple[str, ...]
    path: str | None = None
    note: str | None = None
    outputs_before: int = 0

    @property
    def exit_code(self) -> int:
        return {"pass": 0, "fail": 1, "blocked": 3}[self.result]

    @property
    def profiling_accepted(self) -> bool:
        return self.result == "pass"

    def statement(self) -> str:
        """The one sentence ``skgate report`` should carry about later profiling (C6)."""
        if self.result == "pass":
            return (
                "later profiling may be accepted: the fresh-root compile-health run returned "
                "naturally, every stage reported all inputs successful, exit status 0, and "
                "inference reached its completion marker (C6)"
            )
        if self.result == "blocked":
            return (
                "later profiling may NOT be accepted: the compile-health run is not "
                "attributable (" + "; ".join(self.reasons) + ")"
            )
        failed = [c.name for c in self.checks if not c.ok]
        return "later profiling may NOT be accepted: failed checks: " + ", ".join(failed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_REGRESS,
            "kind": "health",
            "created_at": time.time(),
            "result": self.result,
            "profiling_accepted": self.profiling_accepted,
            "statement": self.statement(),
            "reference": self.reference,
            "attempt": self.attempt,
            "root": self.root,
            "state": self.state,
            "declared": [c.to_dict() for c in self.declared],
            "checks": [c.to_dict() for c in self.checks],
            "differences": [d.to_dict() for d in self.differences],
            "reasons": list(self.reasons),
            "note": self.note,
            "outputs_before": self.outputs_before,
            "result_file": self.path,
        }

    def lines(self) -> list[str]:
        head = {
            "pass": "HEALTH PASS",
            "fail": "HEALTH FAIL",
            "blocked": "HEALTH BLOCKED (not attributable)",
        }[self.result]
        out = [f"{head}: {self.statement()}"]
        out.append(f"  reference: {self.reference}")
        if self.attempt:
            out.append(f"  health attempt: {self.attempt} (state {self.state})")
        out.append(
            "  declared change: "
            + ("; ".join(c.label for c in self.declared) if self.declared else "none")
        )
        for c in self.checks:
            out.append(f"  [{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}")
        for d in self.differences:
            tag = "declared" if d.declared else "UNDECLARED"
            out.append(f"  [{tag}] {d.text()}")
        for r in self.reasons:
            out.append(f"  - {r}")
        if self.outputs_before:
            out.append(
                f"  note: the outputs directory already held {self.outputs_before} item(s) before "
                "this run; the checks rest on the summary, exit status and marker"
            )
        if self.path:
            out.append(f"  result: {self.path}")
        return out


def check_reference(attempt_dir: Path) -> tuple[Verdict, RunRequest]:
    """The reference must be a natural success with its completion marker seen (exit 2)."""
    control = load_control(attempt_dir)
    verdict = _read_verdict(attempt_dir)
    why: list[str] = []
    if verdict.state is not State.SUCCEEDED:
        why.append(f"its verdict is {verdict.state.value}")
    if not verdict.natural_return:
        why.append("the compiler did not return naturally")
    if verdict.exit_status != 0:
        why.append(f"exit status {verdict.exit_status}")
    if verdict.summary is None or not verdict.summary.all_succeeded:
        why.append("its final summary does not show every input of every stage succeeded")
    if control.request.completion_marker is None:
        why.append("it has no --completion-marker, so completion cannot be compared")
    elif not _completion_seen(attempt_dir):
        why.append("its completion marker was never seen")
    if why:
        raise UsageError(
            f"reference attempt {attempt_dir} is not a natural success ({'; '.join(why)}); "
            "pick a succeeded attempt run with --completion-marker; nothing was run"
        )
    return verdict, control.request


def default_health_root(reference: Path) -> Path:
    base = ledger.root_of(reference) or reference.parent
    stem = f"{base.name}-health-{reference.name}"
    n = 1
    while (base.parent / f"{stem}-{n}").exists():
        n += 1
    return base.parent / f"{stem}-{n}"


def health(
    reference: Path,
    *,
    root: Path | None = None,
    declared: Sequence[str] = (),
    note: str | None = None,
    quiet: bool = True,
    run: RunFn | None = None,
    runner_env: Mapping[str, str] | None = None,
) -> HealthResult:
    """Run the fresh-root compile-health gate against ``reference`` (see module doc).

    Bad input (not an attempt, not a natural success, a change that changes nothing, a
    root that is not fresh) raises UsageError before anything runs.
    """
    targets = ledger.resolve(reference)
    if len(targets) != 1 or targets[0] != reference:
        raise UsageError(f"--reference {reference}: give one attempt directory, not a root")
    _, ref_request = check_reference(reference)
    env = dict(os.environ if runner_env is None else runner_env)
    changes = tuple(parse_declaration(d) for d in declared)
    for ch in changes:
        if not ch.changes(ref_request, env):
            raise UsageError(
                f"declared change '{ch.label}' is already in the reference; declare only what "
                "differs; nothing was run"
            )
    health_root = (root if root is not None else default_health_root(reference)).absolute()
    _fresh_root(health_root, "--root")
    request = replace(ref_request, root=str(health_root), retry_of=None, quiet=quiet)
    for ch in changes:
        request = ch.apply(request, env)
    validate(request)
    # Same source and workload means the reference's working directory, whose outputs
    # directory may still hold earlier result roots: say so, the census counts them too.
    outputs = outputs_dir(request)
    before = len(list(outputs.iterdir())) if outputs.is_dir() else 0
    run_fn = run if run is not None else _default_run()
    verdict = run_fn(request)
    attempt = Path(verdict.attempt) if verdict.attempt else None
    checks = _health_checks(verdict, attempt)
    differences: tuple[Difference, ...] = ()
    reasons: list[str] = []
    if verdict.state is State.NOT_STARTED:
        reasons.append("the health run was blocked before launch: " + "; ".join(verdict.reasons))
    if attempt is not None and (attempt / files.CONTROL).exists():
        differences = tuple(
            compare_controls(_control_raw(reference), _control_raw(attempt), changes)
        )
    undeclared = [d for d in differences if not d.declared]
    if undeclared and verdict.state is not State.NOT_STARTED:
        reasons.append(
            "frozen controls differ from the reference beyond the declared change: "
            + "; ".join(d.text() for d in undeclared[:5])
            + (" ..." if len(undeclared) > 5 else "")
        )
    if verdict.state is State.INTERRUPTED:
        reasons.append(
            f"{INTERRUPTED_WORDS}: not a compile result; a clean retry is required "
            "before judging the change"
        )
    if verdict.state is State.NOT_STARTED or undeclared:
        outcome = "blocked"
    elif all(c.ok for c in checks):
        outcome = "pass"
    else:
        outcome = "fail"
    result = HealthResult(
        result=outcome,
        reference=str(reference),
        attempt=str(attempt) if attempt else None,
        root=str(health_root),
        declared=changes,
        checks=checks,
        differences=differences,
        state=verdict.state.value,
        reasons=tuple(reasons),
        path=str(health_root / REGRESS_FILE),
        note=note,
        outputs_before=before,
    )
    _write_result(health_root, result.to_dict())
    return result


def _health_checks(verdict: Verdict, attempt: Path | None) -> tuple[Check, ...]:
    s = verdict.summary
    stages = ", ".join(f"{st.name} {st.succeeded}/{st.inputs}" for st in s.stages) if s else ""
    seen = _completion_seen(attempt) if attempt is not None else None
    return (
        Check(
            "natural return",
            verdict.natural_return,
            "the compiler returned on its own"
            if verdict.natural_return
            else f"not a natural return (state {verdict.state.value})",
        ),
        Check(
            "all stages succeeded",
            bool(s is not None and s.all_succeeded and s.consistent),
            stages or "no final aggregate summary",
        ),
        Check("exit status 0", verdict.exit_status == 0, f"exit status {verdict.exit_status}"),
        Check(
            "completion marker seen",
            seen is True,
            "inference reached its completion point" if seen else "completion marker not seen",
        ),
        Check(
            "verdict succeeded",
            verdict.state is State.SUCCEEDED,
            f"classifier state {verdict.state.value} (C2)",
        ),
    )


def health_statement(root: Path) -> str | None:
    """For ``skgate report``: the profiling sentence of a health root, if it has one."""
    path = root / REGRESS_FILE
    if not path.is_file():
        return None
    try:
        data = files.read_json(path)
    except EvidenceError:
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_REGRESS:
        return None
    if data.get("kind") != "health" or not isinstance(data.get("statement"), str):
        return None
    return str(data["statement"])


def _default_run() -> RunFn:
    from skgate.api import run_attempt  # noqa: PLC0415 - api imports the ledger; keep lazy

    return run_attempt


__all__ = [
    "FAILED_WORDS",
    "HOOK_NOT_PROVEN",
    "HOOK_TRIGGER",
    "INTERRUPTED_WORDS",
    "SCHEMA_REGRESS",
    "Change",
    "Check",
    "Difference",
    "HealthResult",
    "compare_controls",
    "control_view",
    "health",
    "health_statement",
    "parse_declaration",
]
