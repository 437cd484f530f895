"""One-factor-at-a-time diagnosis matrix (C6, last bullet): ``skgate regress --matrix``.

:func:`run_matrix` runs a baseline and one arm per factor (start-up hook, profiler, SK
trace, cache seed, compile jobs), each arm changing exactly one factor, each run an ordinary
gated attempt (:func:`skgate.api.run_attempt`, same timeout, same ownership rules, C4) in a
fresh root, then builds an attribution table saying what each arm proves and does not
prove. This module reads and validates the matrix file, runs the arms, attributes, renders
the table as Markdown and runs the ``skgate demo --scenario diagnose`` matrix. The
declared-change record, the control comparison, the ``regress.json`` writer and the C6 / C7
wording are shared with the compile-health gate and live in :mod:`skgate.regress.health`.

The result is written as ``regress.json`` (schema ``skgate.regress/1``, ``kind`` matrix)
into the diagnosis's own evidence root, never into a sealed attempt directory (C4).

Matrix file (TOML, or JSON; see ``examples/diagnose.toml``)::

    repeats = 1                      # optional; --repeats overrides
    [baseline]
    argv = ["python3", "-m", "skgate.sim.launcher", "--inputs", "2"]
    cwd = "fresh"                    # default: a fresh working directory per run
    env = { SKGATE_SIM_FAULTS = "fail_with_hook" }
    jobs = 2
    timeout = 60
    completion_marker = "skgate-sim: inference completed"
    [[arm]]
    startup_hook = "hooks/override"  # a directory holding sitecustomize.py
    [[arm]]
    profiler = true                  # or "NAME=VALUE" or { env = "NAME", value = "V" }
    [[arm]]
    sk_trace = 1024                  # ASCEND_PROF_SK_ON=1024, or { env = ..., value = ... }
    [[arm]]
    cache_seed = 7                   # SKGATE_SIM_CACHE_SEED=7, or { env = ..., value = ... }
    [[arm]]
    jobs = 4
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skgate.model.errors import SkgateError, UsageError
from skgate.model.records import PackageMode, State, Verdict
from skgate.model.request import DEFAULT_GRACE, DEFAULT_TIMEOUT, RunRequest
from skgate.preflight import prepare as preflight
from skgate.preflight.profiler import ProfilerSchedule
from skgate.regress.change import Change, _env_name, _inside, _jobs_text
from skgate.regress.common import (
    FAILED_WORDS,
    HOOK_NOT_PROVEN,
    HOOK_TRIGGER,
    INTERRUPTED_WORDS,
    REGRESS_FILE,
    SCHEMA_REGRESS,
    Progress,
    RunFn,
    _control_raw,
    _default_run,
    _fresh_root,
    _write_result,
)
from skgate.regress.controls import Difference, compare_controls
from skgate.runner import validate

#: The factors C6 lists for a diagnosis, in the order the table shows them.
FACTORS: tuple[str, ...] = ("startup_hook", "profiler", "sk_trace", "cache_seed", "jobs")
#: Environment switch of each env-borne factor when the matrix names no variable of its own
#: (the simulator's and CANN's names; a real launcher may give ``{env=..., value=...}``).
DEFAULT_FACTOR_ENV: Mapping[str, tuple[str, str | None]] = {
    "profiler": ("SKGATE_SIM_PROFILE", "1"),
    "sk_trace": ("ASCEND_PROF_SK_ON", None),
    "cache_seed": ("SKGATE_SIM_CACHE_SEED", None),
}
MAX_REPEATS = 20
FRESH = "fresh"


# --------------------------------------------------------------------------- matrix input


@dataclass(frozen=True)
class Arm:
    name: str
    factor: str
    change: Change

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "factor": self.factor, "change": self.change.to_dict()}


@dataclass(frozen=True)
class Matrix:
    """A validated matrix: the baseline request (root and cwd filled per run) and its arms."""

    source: str
    baseline: RunRequest
    fresh_cwd: bool
    arms: tuple[Arm, ...]
    repeats: int


_BASELINE_KEYS = {
    "argv",
    "cwd",
    "env",
    "unset_env",
    "jobs",
    "timeout",
    "grace",
    "outputs",
    "package",
    "summary_patterns",
    "completion_marker",
    "python",
    "approve_hooks",
    "hook_baseline",
    "profiler_schedule",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")


def _read_matrix_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"matrix file {path} cannot be read ({exc.strerror}); nothing was run"
        ) from None
    data: Any
    toml: Any = None
    if path.suffix.lower() != ".json":
        try:
            toml = importlib.import_module("tomllib")
        except ModuleNotFoundError:
            raise UsageError(
                f"matrix file {path}: TOML needs Python 3.11+ (tomllib); give the matrix as .json"
            ) from None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if toml is None else toml.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        # json.JSONDecodeError and tomllib.TOMLDecodeError are both ValueErrors.
        kind = "JSON" if toml is None else "TOML"
        raise UsageError(
            f"matrix file {path} is not valid {kind} ({exc}); nothing was run"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"matrix file {path}: expected a table/object at the top")
    return data


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise UsageError(f"{where}: expected a list of strings")
    return tuple(value)


def _number(value: Any, where: str, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{where}: expected a number of seconds")
    if value < 0 or (positive and value == 0):
        raise UsageError(f"{where}: must be {'more than' if positive else 'at least'} 0")
    return float(value)


def _baseline(data: Any, base_dir: Path) -> tuple[RunRequest, bool]:
    where = "matrix baseline"
    if not isinstance(data, dict):
        raise UsageError("matrix file has no [baseline] table; add one with at least argv")
    unknown = sorted(set(data) - _BASELINE_KEYS)
    if unknown:
        raise UsageError(
            f"{where}: unknown key(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_BASELINE_KEYS))}"
        )
    if "argv" not in data:
        raise UsageError(f"{where}: argv is missing (the command as a list of strings)")
    argv = _str_list(data["argv"], f"{where} argv")
    if not argv:
        raise UsageError(f"{where}: argv is empty")
    env_raw = data.get("env", {})
    if not isinstance(env_raw, dict) or not all(
        isinstance(k, str) and isinstance(v, (str, int)) and not isinstance(v, bool)
        for k, v in env_raw.items()
    ):
        raise UsageError(f'{where}: env must be a table of NAME = "value"')
    cwd_raw = data.get("cwd", FRESH)
    if not isinstance(cwd_raw, str):
        raise UsageError(f'{where}: cwd must be a path or "fresh"')
    fresh = cwd_raw == FRESH
    cwd = base_dir if fresh else (base_dir / cwd_raw)
    jobs = data.get("jobs")
    jobs_text: str | None = None
    if jobs is not None:
        jobs_text = "auto" if jobs == "auto" else _jobs_text(jobs, f"{where} jobs")
    package = data.get("package", PackageMode.OPTIONAL.value)
    if package not in [m.value for m in PackageMode]:
        raise UsageError(f"{where}: package must be 'required' or 'optional'")
    marker = data.get("completion_marker")
    if marker is not None and not isinstance(marker, str):
        raise UsageError(f"{where}: completion_marker must be a string")
    for key in ("outputs", "python", "hook_baseline", "profiler_schedule"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise UsageError(f"{where}: {key} must be a string")
    schedule = data.get("profiler_schedule")
    if schedule is not None:
        schedule = ProfilerSchedule.parse(schedule).to_text()
    hook_baseline = data.get("hook_baseline")
    request = RunRequest(
        argv=argv,
        cwd=str(cwd.absolute()),
        root=str(base_dir.absolute()),  # replaced per run
        timeout=_number(data.get("timeout", DEFAULT_TIMEOUT), f"{where} timeout", True),
        grace=_number(data.get("grace", DEFAULT_GRACE), f"{where} grace", False),
        outputs=data.get("outputs"),
        package_mode=PackageMode(package),
        summary_patterns=_str_list(data.get("summary_patterns", []), f"{where} summary_patterns"),
        completion_marker=marker,
        jobs=jobs_text,
        env={str(k): str(v) for k, v in env_raw.items()},
        unset_env=_str_list(data.get("unset_env", []), f"{where} unset_env"),
        python=data.get("python"),
        approved_hooks=_str_list(data.get("approve_hooks", []), f"{where} approve_hooks"),
        hook_baseline=str(base_dir / hook_baseline) if hook_baseline else None,
        profiler_schedule=schedule,
        quiet=True,
    )
    validate(request)
    return request, fresh


def _env_factor(factor: str, value: Any, where: str) -> tuple[str, str]:
    default_name, default_value = DEFAULT_FACTOR_ENV[factor]
    if isinstance(value, dict):
        extra = sorted(set(value) - {"env", "value"})
        if extra or not isinstance(value.get("env"), str) or "value" not in value:
            raise UsageError(f'{where}: use {{ env = "NAME", value = "V" }}')
        name, val = value["env"], value["value"]
    elif isinstance(value, str) and "=" in value:
        name, _, val = value.partition("=")
    elif value is True and default_value is not None:
        name, val = default_name, default_value
    elif isinstance(value, (str, int)) and not isinstance(value, bool):
        name, val = default_name, value
    else:
        raise UsageError(f"{where}: unsupported value {value!r}")
    if isinstance(val, bool) or not isinstance(val, (str, int)):
        raise UsageError(f"{where}: the value must be a string or an integer")
    return _env_name(str(name), where), str(val)


def _arm(index: int, data: Any, base_dir: Path) -> Arm:
    where = f"matrix arm {index + 1}"
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a table")
    name = data.get("name")
    keys = [k for k in data if k != "name"]
    unknown = [k for k in keys if k not in FACTORS]
    if unknown:
        raise UsageError(
            f"{where}: unknown factor {unknown[0]!r}; one of: {', '.join(FACTORS)}; nothing was run"
        )
    if len(keys) != 1:
        what = (
            "changes no factor" if not keys else f"changes {len(keys)} factors ({', '.join(keys)})"
        )
        raise UsageError(
            f"{where} {what}; each arm changes exactly one factor (C6); nothing was run"
        )
    factor = keys[0]
    value = data[factor]
    fwhere = f"{where} {factor}"
    if factor == "startup_hook":
        if not isinstance(value, str):
            raise UsageError(f"{fwhere}: give the hook directory as a string")
        hook_dir = (base_dir / value).absolute()
        if not (hook_dir / "sitecustomize.py").is_file():
            raise UsageError(f"{fwhere}: {hook_dir} holds no sitecustomize.py")
        change = Change(factor, f"start-up hook {hook_dir} on PYTHONPATH", hook_dir=str(hook_dir))
    elif factor == "jobs":
        jobs = _jobs_text(value, fwhere)
        change = Change(factor, f"compile jobs {jobs}", jobs=jobs)
    else:
        env_name, env_value = _env_factor(factor, value, fwhere)
        change = Change(factor, f"{env_name}={env_value}", env=((env_name, env_value),))
    if name is None:
        name = factor
    if not isinstance(name, str) or not _NAME.match(name) or name == "baseline":
        raise UsageError(f"{where}: name {name!r} must be short letters/digits/._- (not baseline)")
    return Arm(name, factor, change)


def load_matrix(
    path: Path, repeats: int | None = None, runner_env: Mapping[str, str] | None = None
) -> Matrix:
    """Read and validate a matrix file. Any problem: UsageError (exit 2), nothing run."""
    data = _read_matrix_file(path)
    base_dir = path.absolute().parent
    unknown = sorted(set(data) - {"baseline", "arm", "arms", "repeats"})
    if unknown:
        raise UsageError(f"matrix file {path}: unknown key(s) {', '.join(unknown)}")
    if "baseline" not in data:
        raise UsageError(f"matrix file {path} has no [baseline]; nothing was run")
    baseline, fresh = _baseline(data["baseline"], base_dir)
    arms_raw = data.get("arm", data.get("arms", []))
    if not isinstance(arms_raw, list) or not arms_raw:
        raise UsageError(f"matrix file {path} has no [[arm]] entries; nothing was run")
    arms = tuple(_arm(i, a, base_dir) for i, a in enumerate(arms_raw))
    names = [a.name for a in arms]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"matrix file {path}: arm name(s) {', '.join(dup)} used twice; name them")
    env = dict(os.environ if runner_env is None else runner_env)
    for arm in arms:
        if not arm.change.changes(baseline, env):
            raise UsageError(
                f"matrix arm {arm.name}: '{arm.change.label}' is already the baseline's; "
                "an arm must change its factor; nothing was run"
            )
    n = repeats if repeats is not None else data.get("repeats", 1)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_REPEATS:
        raise UsageError(f"repeats must be a whole number from 1 to {MAX_REPEATS}")
    return Matrix(str(path), baseline, fresh, arms, n)


# --------------------------------------------------------------------------- matrix run


@dataclass(frozen=True)
class RunOutcome:
    """One repeat of the baseline or an arm, as evidence for the table."""

    attempt: str | None
    state: str
    status: str  # pass | fail | invalid | not-comparable
    detail: str
    differences: tuple[Difference, ...] = ()

    @property
    def valid(self) -> bool:
        return self.status in ("pass", "fail")

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "state": self.state,
            "status": self.status,
            "detail": self.detail,
            "differences": [d.to_dict() for d in self.differences],
        }


def outcome_of(verdict: Verdict, differences: Sequence[Difference] = ()) -> RunOutcome:
    """Map one attempt's verdict to its weight as evidence (C2, C6)."""
    undeclared = tuple(d for d in differences if not d.declared)
    state = verdict.state
    if state is State.SUCCEEDED:
        status, detail = "pass", "succeeded"
    elif state is State.FAILED:
        status, detail = "fail", FAILED_WORDS
    elif state is State.INTERRUPTED:
        status, detail = "invalid", f"{INTERRUPTED_WORDS}: invalid, a clean retry is required"
    elif state is State.NOT_STARTED:
        status = "invalid"
        detail = "blocked before launch (not a compile result): " + "; ".join(verdict.reasons[:2])
    else:
        status, detail = "invalid", f"{state.value}: evidence missing, no conclusion"
    if undeclared and status in ("pass", "fail"):
        status = "not-comparable"
        detail = "frozen controls differ beyond the one change: " + "; ".join(
            d.text() for d in undeclared[:3]
        )
    return RunOutcome(verdict.attempt, state.value, status, detail, tuple(differences))


@dataclass(frozen=True)
class Row:
    arm: str
    factor: str
    change: str
    runs: tuple[RunOutcome, ...]
    outcome: str  # pass | fail | mixed | invalid | baseline
    proves: str
    not_proven: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "factor": self.factor,
            "change": self.change,
            "outcome": self.outcome,
            "proves": self.proves,
            "does_not_prove": self.not_proven,
            "runs": [r.to_dict() for r in self.runs],
        }


@dataclass(frozen=True)
class MatrixResult:
    source: str
    root: str
    repeats: int
    baseline: Row
    rows: tuple[Row, ...]
    conclusion: str  # startup_hook_trigger | triggers | no_trigger | baseline_not_clean
    triggers: tuple[str, ...]
    invalid: tuple[str, ...]
    summary: tuple[str, ...]
    path: str | None = None

    @property
    def complete(self) -> bool:
        """Every arm and the baseline have a valid, consistent result (nothing to retry)."""
        mixed = any(r.outcome == "mixed" for r in self.rows)
        return not self.invalid and not mixed and self.conclusion != "baseline_not_clean"

    @property
    def exit_code(self) -> int:
        return 0 if self.complete else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_REGRESS,
            "kind": "matrix",
            "created_at": time.time(),
            "matrix": self.source,
            "root": self.root,
            "repeats": self.repeats,
            "baseline": self.baseline.to_dict(),
            "arms": [r.to_dict() for r in self.rows],
            "result_file": self.path,
            "complete": self.complete,
            "conclusion": {
                "kind": self.conclusion,
                "triggers": list(self.triggers),
                "invalid": list(self.invalid),
                "lines": list(self.summary),
            },
        }


def _aggregate(runs: Sequence[RunOutcome]) -> str:
    valid = [r.status for r in runs if r.valid]
    if not valid:
        return "invalid"
    if all(s == "pass" for s in valid):
        return "pass"
    if all(s == "fail" for s in valid):
        return "fail"
    return "mixed"


def attribute(
    baseline_runs: Sequence[RunOutcome], arms: Sequence[tuple[Arm, Sequence[RunOutcome]]]
) -> tuple[Row, tuple[Row, ...], str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The attribution table (pure). Returns (baseline row, rows, conclusion kind,
    trigger arm names, invalid arm names, conclusion lines).

    Interrupted, blocked, unknown or not-comparable runs never count for or against a
    factor (C2.4): they are left out, and an arm with no valid run is ``invalid``.
    """
    base = _aggregate(baseline_runs)
    base_row = Row(
        "baseline",
        "-",
        "none (the reference configuration)",
        tuple(baseline_runs),
        base,
        {
            "pass": "the unchanged configuration compiles and completes",
            "fail": f"the unchanged configuration fails ({FAILED_WORDS})",
            "mixed": "the unchanged configuration is inconsistent across repeats",
            "invalid": "nothing: no valid run (a clean retry is required)",
        }[base],
        "anything about a single factor",
    )
    rows: list[Row] = []
    triggers: list[str] = []
    invalid: list[str] = []
    for arm, runs in arms:
        agg = _aggregate(runs)
        n_valid = sum(1 for r in runs if r.valid)
        if agg == "invalid":
            invalid.append(arm.name)
            why = "; ".join(sorted({r.detail for r in runs}))
            proves = f"nothing: {why}"
            not_proven = f"never evidence for or against {arm.factor}; rerun cleanly"
        elif base != "pass":
            proves = "nothing: the baseline has no consistent valid success to compare with"
            not_proven = f"anything about {arm.factor}"
        elif agg == "mixed":
            n_fail = sum(1 for r in runs if r.status == "fail")
            proves = f"inconsistent: {n_fail} of {n_valid} valid runs failed; not attributable"
            not_proven = f"that {arm.factor} is or is not a trigger; run more repeats"
        elif agg == "fail" and arm.factor == "startup_hook":
            triggers.append(arm.name)
            proves = f"{HOOK_TRIGGER}: loading the start-up hook alone gives {FAILED_WORDS}"
            not_proven = f"it {HOOK_NOT_PROVEN}"
        elif agg == "fail":
            triggers.append(arm.name)
            proves = f"this change alone ({arm.change.label}) gives {FAILED_WORDS}"
            not_proven = "that any named operator is defective, or how the factor acts elsewhere"
        else:
            proves = f"this change alone does not trigger a failure ({n_valid} valid run(s))"
            not_proven = f"that {arm.factor} is safe in other combinations, workloads or hosts"
        rows.append(
            Row(arm.name, arm.factor, arm.change.label, tuple(runs), agg, proves, not_proven)
        )
    by_name = {r.arm: r for r in rows}
    lines: list[str] = []
    if base != "pass":
        kind = "baseline_not_clean"
        lines.append(
            f"No attribution: the baseline is {base} "
            "(a factor can only be judged against a valid, consistent baseline success)."
        )
    elif not triggers:
        kind = "no_trigger"
        lines.append("No single-factor change triggered a failure in the valid runs.")
    elif all(by_name[t].factor == "startup_hook" for t in triggers):
        kind = "startup_hook_trigger"
        lines.append(
            f"Only the start-up-override arm fails: {HOOK_TRIGGER}. This {HOOK_NOT_PROVEN} (C6)."
        )
    else:
        kind = "triggers"
        lines.append(
            "Each of these changes alone triggers a failure: "
            + ", ".join(f"{t} ({by_name[t].change})" for t in triggers)
            + ". This does not prove any named operator defective."
        )
        if any(by_name[t].factor == "startup_hook" for t in triggers):
            lines.append(f"For the start-up-override arm: {HOOK_TRIGGER}; it {HOOK_NOT_PROVEN}.")
    mixed = [r.arm for r in rows if r.outcome == "mixed"]
    if mixed:
        lines.append(f"Inconsistent across repeats (not attributable): {', '.join(mixed)}.")
    if invalid:
        lines.append(
            f"Invalid arms (need a clean retry; not evidence for or against their factor): "
            f"{', '.join(invalid)}."
        )
    return base_row, tuple(rows), kind, tuple(triggers), tuple(invalid), tuple(lines)


def default_matrix_root() -> Path:
    stem = time.strftime("skgate-regress-%Y%m%dT%H%M%S")
    n = 1
    path = Path(stem)
    while path.exists():
        n += 1
        path = Path(f"{stem}-{n}")
    return path


def hook_approvals(request: RunRequest, hook_dir: str) -> tuple[str, ...]:
    """Fingerprints of the findings the preflight scan reports inside ``hook_dir``: the
    arm approves exactly its own declared hook (C6), nothing else it might drag in."""
    with tempfile.TemporaryDirectory(prefix="skgate-hookscan-") as tmp:
        plan = preflight.prepare(
            replace(request, root=tmp, quiet=True), Path(tmp), take_leases=False
        )
        plan.release()
    findings = plan.controls.get("hooks", {}).get("findings", [])
    fps = tuple(
        str(f["fingerprint"])
        for f in findings
        if isinstance(f, dict) and isinstance(f.get("path"), str) and _inside(f["path"], hook_dir)
    )
    if not fps:
        raise UsageError(
            f"start-up hook {hook_dir}: the workload interpreter does not load it (no finding "
            "under it in the preflight scan); check the command's interpreter; nothing was run"
        )
    return fps


def run_matrix(
    matrix: Matrix,
    root: Path | None = None,
    *,
    run: RunFn | None = None,
    progress: Progress | None = None,
    quiet: bool = True,
    runner_env: Mapping[str, str] | None = None,
) -> MatrixResult:
    """Run the baseline and every arm (``repeats`` times each), each in a fresh root."""
    env = dict(os.environ if runner_env is None else runner_env)
    session = (root if root is not None else default_matrix_root()).absolute()
    _fresh_root(session, "--root")
    # Approvals are learned before anything runs: an undeclared-looking hook is bad input.
    approvals = {
        a.name: hook_approvals(a.change.apply(matrix.baseline, env), a.change.hook_dir)
        for a in matrix.arms
        if a.change.hook_dir is not None
    }
    run_fn = run if run is not None else _default_run()
    session.mkdir(parents=True, exist_ok=True)
    plan: list[tuple[str, Arm | None]] = [("baseline", None)] + [(a.name, a) for a in matrix.arms]
    results: dict[str, list[RunOutcome]] = {}
    reference: dict[str, Any] | None = None
    ignore = ("request.cwd",) if matrix.fresh_cwd else ()
    for name, arm in plan:
        runs: list[RunOutcome] = []
        for k in range(1, matrix.repeats + 1):
            request = replace(matrix.baseline, root=str(session / "runs" / name), quiet=quiet)
            if matrix.fresh_cwd:
                work = session / "work" / f"{name}-{k}"
                work.mkdir(parents=True)
                request = replace(request, cwd=str(work))
            if arm is not None:
                request = arm.change.apply(request, env)
                extra = approvals.get(arm.name, ())
                request = replace(request, approved_hooks=(*request.approved_hooks, *extra))
            try:
                verdict = run_fn(request)
            except SkgateError as exc:
                runs.append(RunOutcome(None, "not_started", "invalid", f"not run: {exc}"))
                _say(progress, f"{name} #{k}: not run: {exc}")
                continue
            differences: list[Difference] = []
            attempt = Path(verdict.attempt) if verdict.attempt else None
            if attempt is not None and verdict.state is not State.NOT_STARTED:
                raw = _control_raw(attempt)
                if reference is None and arm is None:
                    reference = raw
                elif reference is not None:
                    changes = (arm.change,) if arm is not None else ()
                    differences = compare_controls(reference, raw, changes, ignore)
            outcome = outcome_of(verdict, differences)
            runs.append(outcome)
            _say(progress, f"{name} #{k}: {outcome.state} ({outcome.status})")
        results[name] = runs
    arms = [(a, results[a.name]) for a in matrix.arms]
    base_row, rows, kind, triggers, invalid, lines = attribute(results["baseline"], arms)
    result = MatrixResult(
        source=matrix.source,
        root=str(session),
        repeats=matrix.repeats,
        baseline=base_row,
        rows=rows,
        conclusion=kind,
        triggers=triggers,
        invalid=invalid,
        summary=lines,
        path=str(session / REGRESS_FILE),
    )
    _write_result(session, result.to_dict())
    return result


def _say(progress: Progress | None, text: str) -> None:
    if progress is not None:
        progress(text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_matrix_markdown(result: MatrixResult) -> list[str]:
    """The attribution table and conclusion as Markdown lines (the CLI prints them)."""
    out = [
        "# One-factor-at-a-time diagnosis (C6)",
        "",
        f"matrix: `{result.source}`; evidence: `{result.root}`; repeats per arm: {result.repeats}",
        "",
        "| arm | the one change | verdict per repeat | outcome | proves | does not prove |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in (result.baseline, *result.rows):
        verdicts = ", ".join(r.state + ("" if r.valid else f" ({r.status})") for r in row.runs)
        out.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (row.arm, row.change, verdicts, row.outcome, row.proves, row.not_proven)
            )
            + " |"
        )
    out += ["", "## Conclusion", ""]
    out += [f"- {line}" for line in result.summary]
    out += ["", "## Attempts", ""]
    for row in (result.baseline, *result.rows):
        for i, r in enumerate(row.runs, 1):
            out.append(f"- {row.arm} #{i}: {r.state}: {r.detail} ({r.attempt or 'not recorded'})")
    if result.path:
        out += ["", f"result file: `{result.path}`"]
    return out


# --------------------------------------------------------------------------- demo

DEMO_HOOK = """\
# A start-up override of the profiler schedule: the pattern C6 forbids. It loads in every
# interpreter that starts with this directory on PYTHONPATH, before the launcher's own
# initialisation. The diagnosis runs it as one declared factor, in one arm only.
import os

os.environ.setdefault("DEMO_PROFILER_SCHEDULE_OVERRIDE", "wait=1,warmup=1,active=2,repeat=1")
"""


def demo_matrix_data(python: str = sys.executable) -> dict[str, Any]:
    """The demo matrix (JSON-shaped): the simulator fails only when a start-up hook loads."""
    return {
        "baseline": {
            "argv": [python, "-m", "skgate.sim.launcher", "--inputs", "2"],
            "env": {"SKGATE_SIM_FAULTS": "fail_with_hook", "SKGATE_SIM_OPC_SECONDS": "0.02"},
            "jobs": 2,
            "timeout": 60,
            "grace": 2,
            "completion_marker": "skgate-sim: inference completed",
        },
        "arm": [
            {"name": "startup-hook", "startup_hook": "hook"},
            {"name": "profiler", "profiler": True},
            {"name": "sk-trace", "sk_trace": 1024},
        ],
    }


def demo_diagnose(
    workdir: Path, echo: Progress | None = None, *, run: RunFn | None = None
) -> tuple[list[str], bool]:
    """``skgate demo --scenario diagnose``: a small matrix on the simulator.

    Returns the table lines and whether the attribution came out as the scenario
    demands: the baseline and the profiler / SK-trace arms succeed, only the start-up
    hook arm fails, and the conclusion names the start-up launch path (C6).
    """
    workdir = workdir.absolute()
    (workdir / "hook").mkdir(parents=True, exist_ok=True)
    hook = workdir / "hook" / "sitecustomize.py"
    if not hook.exists():
        hook.write_text(DEMO_HOOK, encoding="utf-8")
    matrix_path = workdir / "diagnose.json"
    if not matrix_path.exists():
        matrix_path.write_text(json.dumps(demo_matrix_data(), indent=2) + "\n", encoding="utf-8")
    matrix = load_matrix(matrix_path)
    n = 1
    while (workdir / f"regress-{n}").exists():
        n += 1
    result = run_matrix(matrix, workdir / f"regress-{n}", run=run, progress=echo)
    ok = (
        result.conclusion == "startup_hook_trigger"
        and result.baseline.outcome == "pass"
        and all(
            r.outcome == ("fail" if r.factor == "startup_hook" else "pass") for r in result.rows
        )
    )
    return render_matrix_markdown(result), ok


__all__ = [
    "DEMO_HOOK",
    "FACTORS",
    "MAX_REPEATS",
    "Arm",
    "Matrix",
    "MatrixResult",
    "Row",
    "RunOutcome",
    "attribute",
    "demo_diagnose",
    "load_matrix",
    "outcome_of",
    "render_matrix_markdown",
    "run_matrix",
]
