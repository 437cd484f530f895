"""One-factor-at-a-time diagnosis matrix (C6, last bullet): ``skgate regress --matrix``.

:func:`run_matrix` runs a baseline and one arm per factor (start-up hook, profiler, SK
trace, cache seed, compile jobs), each arm changing exactly one factor, each run an ordinary
gated attempt (:func:`skgate.api.run_attempt`, same timeout, same ownership rules, C4) in a
fresh root, then builds an attribution table saying what each arm proves and does not
prove. This module runs the arms, attributes and renders the table as Markdown; the
matrix file is read in :mod:`skgate.regress.matrix.load`, the demo matrix is
:mod:`skgate.regress.matrix.demo`. The declared-change record, the control comparison, the
``regress.json`` writer and the C6 / C7 wording are shared with the compile-health gate
(:mod:`skgate.regress.change`, :mod:`skgate.regress.controls`, :mod:`skgate.regress.common`).

The result is written as ``regress.json`` (schema ``skgate.regress/1``, ``kind`` matrix)
into the diagnosis's own evidence root, never into a sealed attempt directory (C4).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skgate.evidence import files, ledger, seal
from skgate.evidence.files import REGRESS_FILE
from skgate.model.errors import UsageError
from skgate.model.frozen import replace
from skgate.model.outcomes import ArmOutcome, Conclusion, RunStatus
from skgate.model.records import State, Verdict
from skgate.model.request import RunRequest, frozen_jobs
from skgate.model.schema import SCHEMA_REGRESS
from skgate.preflight import prepare as preflight
from skgate.read.liveness import current_verdict
from skgate.regress.change import is_inside
from skgate.regress.common import (
    FAILED_WORDS,
    INTERRUPTED_WORDS,
    Progress,
    RunFn,
    control_raw,
    require_fresh_root,
    write_result,
)
from skgate.regress.controls import HOST_IDENTITY, HOST_KEYS, Difference, compare_controls
from skgate.regress.executor import (
    ArmState,
    ArmStatus,
    Board,
    Executor,
    Listener,
    LocalExecutor,
    Unit,
    UnitResult,
)
from skgate.regress.matrix.load import FACTORS, MAX_REPEATS, Arm, Matrix, load_matrix
from skgate.regress.reach import not_reached
from skgate.verdict.stages import compile_evidence_refusals
from skgate.verdict.words import HOOK_NOT_PROVEN, HOOK_TRIGGER

# --------------------------------------------------------------------------- matrix run


@dataclass(frozen=True)
class RunOutcome:
    """One repeat of the baseline or an arm, as evidence for the table."""

    attempt: str | None
    state: State
    status: RunStatus
    detail: str
    differences: tuple[Difference, ...] = ()

    @property
    def valid(self) -> bool:
        return self.status in (RunStatus.PASS, RunStatus.FAIL)

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "state": self.state.value,
            "status": self.status.value,
            "detail": self.detail,
            "differences": [d.to_dict() for d in self.differences],
        }


def outcome_of(
    verdict: Verdict, differences: Sequence[Difference] = (), frozen: int | None = None
) -> RunOutcome:
    """Map one attempt's verdict to its weight as evidence (C2, C5, C6).

    ``frozen`` is the attempt's frozen jobs value: an op_compiler that ran with another
    -j, or a cache hit that compiled nothing, is no comparable compile evidence.
    """
    undeclared = tuple(d for d in differences if not d.declared)
    refused = compile_evidence_refusals(verdict, frozen)
    state = verdict.state
    if state is State.SUCCEEDED:
        status, detail = RunStatus.PASS, "succeeded"
    elif state is State.FAILED:
        status, detail = RunStatus.FAIL, FAILED_WORDS
    elif state is State.INTERRUPTED:
        status, detail = (
            RunStatus.INVALID,
            f"{INTERRUPTED_WORDS}: invalid, a clean retry is required",
        )
    elif state is State.NOT_STARTED:
        status = RunStatus.INVALID
        detail = "blocked before launch (not a compile result): " + "; ".join(verdict.reasons[:2])
    else:
        # The fixed words are only the short form: the verdict's own reasons follow, as
        # they are, so the table and the report say why (issue 21: they find flakes).
        status, detail = RunStatus.INVALID, unknown_detail(verdict)
    if undeclared and status in (RunStatus.PASS, RunStatus.FAIL):
        status = RunStatus.NOT_COMPARABLE
        detail = "frozen controls differ beyond the one change: " + "; ".join(
            d.text() for d in undeclared[:3]
        )
    if refused and status in (RunStatus.PASS, RunStatus.FAIL):
        status = RunStatus.NOT_COMPARABLE
        detail = "; ".join(refused)
    return RunOutcome(verdict.attempt, state, status, detail, tuple(differences))


#: The short form of an unknown (or in-progress) verdict in the table; its reasons follow.
NO_CONCLUSION = "evidence missing, no conclusion"


def unknown_detail(verdict: Verdict) -> str:
    """``"<state>: evidence missing, no conclusion: <every reason>"``, never the short form
    alone: the reasons are what tell a flaky arm from a real gap in the evidence."""
    head = f"{verdict.state.value}: {NO_CONCLUSION}"
    reasons = [r for r in verdict.reasons if r.strip()]
    return f"{head}: " + "; ".join(reasons) if reasons else f"{head} (the verdict gives no reason)"


@dataclass(frozen=True)
class Row:
    arm: str
    factor: str
    change: str
    runs: tuple[RunOutcome, ...]
    outcome: ArmOutcome
    proves: str
    not_proven: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "factor": self.factor,
            "change": self.change,
            "outcome": self.outcome.value,
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
    conclusion: Conclusion
    triggers: tuple[str, ...]
    invalid: tuple[str, ...]
    summary: tuple[str, ...]
    path: str | None = None
    executor: str = "local"
    #: The node each unit ran on ("arm#k" -> hostname, node id, task id), when known.
    nodes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every arm and the baseline have a valid, consistent result (nothing to retry)."""
        mixed = any(r.outcome is ArmOutcome.MIXED for r in self.rows)
        clean = self.conclusion is not Conclusion.BASELINE_NOT_CLEAN
        return not self.invalid and not mixed and clean

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
            "executor": self.executor,
            "nodes": {k: dict(v) for k, v in self.nodes.items()},
            "complete": self.complete,
            "conclusion": {
                "kind": self.conclusion.value,
                "triggers": list(self.triggers),
                "invalid": list(self.invalid),
                "lines": list(self.summary),
            },
        }


def _aggregate(runs: Sequence[RunOutcome]) -> ArmOutcome:
    valid = [r.status for r in runs if r.valid]
    if not valid:
        return ArmOutcome.INVALID
    if all(s is RunStatus.PASS for s in valid):
        return ArmOutcome.PASS
    if all(s is RunStatus.FAIL for s in valid):
        return ArmOutcome.FAIL
    return ArmOutcome.MIXED


def attribute(
    baseline_runs: Sequence[RunOutcome], arms: Sequence[tuple[Arm, Sequence[RunOutcome]]]
) -> tuple[Row, tuple[Row, ...], Conclusion, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
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
            ArmOutcome.PASS: "the unchanged configuration compiles and completes",
            ArmOutcome.FAIL: f"the unchanged configuration fails ({FAILED_WORDS})",
            ArmOutcome.MIXED: "the unchanged configuration is inconsistent across repeats",
            ArmOutcome.INVALID: "nothing: no valid run (a clean retry is required)",
        }[base],
        "anything about a single factor",
    )
    rows: list[Row] = []
    triggers: list[str] = []
    invalid: list[str] = []
    for arm, runs in arms:
        agg = _aggregate(runs)
        n_valid = sum(1 for r in runs if r.valid)
        if agg is ArmOutcome.INVALID:
            invalid.append(arm.name)
            why = "; ".join(sorted({r.detail for r in runs}))
            proves = f"nothing: {why}"
            not_proven = f"never evidence for or against {arm.factor}; rerun cleanly"
        elif base is not ArmOutcome.PASS:
            proves = "nothing: the baseline has no consistent valid success to compare with"
            not_proven = f"anything about {arm.factor}"
        elif agg is ArmOutcome.MIXED:
            n_fail = sum(1 for r in runs if r.status is RunStatus.FAIL)
            proves = f"inconsistent: {n_fail} of {n_valid} valid runs failed; not attributable"
            not_proven = f"that {arm.factor} is or is not a trigger; run more repeats"
        elif agg is ArmOutcome.FAIL and arm.factor == "startup_hook":
            triggers.append(arm.name)
            proves = f"{HOOK_TRIGGER}: loading the start-up hook alone gives {FAILED_WORDS}"
            not_proven = f"it {HOOK_NOT_PROVEN}"
        elif agg is ArmOutcome.FAIL:
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
    if base is not ArmOutcome.PASS:
        kind = Conclusion.BASELINE_NOT_CLEAN
        lines.append(
            f"No attribution: the baseline is {base} "
            "(a factor can only be judged against a valid, consistent baseline success)."
        )
    elif not triggers:
        kind = Conclusion.NO_TRIGGER
        lines.append("No single-factor change triggered a failure in the valid runs.")
    elif all(by_name[t].factor == "startup_hook" for t in triggers):
        kind = Conclusion.STARTUP_HOOK_TRIGGER
        lines.append(
            f"Only the start-up-override arm fails: {HOOK_TRIGGER}. This {HOOK_NOT_PROVEN} (C6)."
        )
    else:
        kind = Conclusion.TRIGGERS
        lines.append(
            "Each of these changes alone triggers a failure: "
            + ", ".join(f"{t} ({by_name[t].change})" for t in triggers)
            + ". This does not prove any named operator defective."
        )
        if any(by_name[t].factor == "startup_hook" for t in triggers):
            lines.append(f"For the start-up-override arm: {HOOK_TRIGGER}; it {HOOK_NOT_PROVEN}.")
    mixed = [r.arm for r in rows if r.outcome is ArmOutcome.MIXED]
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
        # approve_all_hooks: the arm's declared hook may run in the start-up probe, so
        # the modules it imports (inside hook_dir) are found and approved with it (C6).
        plan = preflight.prepare(
            replace(request, root=tmp, quiet=True),
            Path(tmp),
            take_leases=False,
            approve_all_hooks=True,
        )
        plan.release()
    findings = plan.controls.get("hooks", {}).get("findings", [])
    fps = tuple(
        str(f["fingerprint"])
        for f in findings
        if isinstance(f, dict) and isinstance(f.get("path"), str) and is_inside(f["path"], hook_dir)
    )
    if not fps:
        raise UsageError(
            f"start-up hook {hook_dir}: the workload interpreter does not load it (no finding "
            "under it in the preflight scan); check the command's interpreter; nothing was run"
        )
    return fps


def _units(matrix: Matrix, session: Path, quiet: bool, env: Mapping[str, str]) -> list[Unit]:
    """Every unit of the matrix (baseline first), each a request for the driver's root."""
    # Approvals are learned before anything runs: an undeclared-looking hook is bad input.
    approvals = {
        a.name: hook_approvals(a.change.apply(matrix.baseline, env), a.change.hook_dir)
        for a in matrix.arms
        if a.change.hook_dir is not None
    }
    plan: list[tuple[str, Arm | None]] = [("baseline", None)] + [(a.name, a) for a in matrix.arms]
    units: list[Unit] = []
    for name, arm in plan:
        for k in range(1, matrix.repeats + 1):
            request = replace(matrix.baseline, root=str(session / "runs" / name), quiet=quiet)
            if arm is not None:
                request = arm.change.apply(request, env)
                extra = approvals.get(arm.name, ())
                request = replace(request, approved_hooks=(*request.approved_hooks, *extra))
            units.append(Unit(name, k, request, f"{name}-{k}" if matrix.fresh_cwd else None))
    return units


def _resumed(units: Sequence[Unit]) -> tuple[list[UnitResult], list[Unit]]:
    """Units already answered by a sealed, intact attempt of the root (``--resume``), and
    the units still to run. The k-th intact attempt of an arm's root answers repeat k."""
    done: list[UnitResult] = []
    todo: list[Unit] = []
    by_name: dict[str, list[Path]] = {}
    for unit in units:
        if unit.name not in by_name:
            root = Path(unit.request.root)
            by_name[unit.name] = [
                a
                for a in ledger.list_attempts(root)
                if (a / files.SEAL).is_file() and not seal.verify_attempt(a)
            ]
        found = by_name[unit.name]
        if len(found) >= unit.repeat:
            attempt = found[unit.repeat - 1]
            verdict = current_verdict(attempt).with_attempt(str(attempt))
            done.append(
                UnitResult(
                    unit,
                    verdict=verdict,
                    node=ledger.nodes(attempt.parent.parent).get(attempt.name),
                )
            )
        else:
            todo.append(unit)
    return done, todo


def run_matrix(
    matrix: Matrix,
    root: Path | None = None,
    *,
    run: RunFn | None = None,
    progress: Progress | None = None,
    quiet: bool = True,
    runner_env: Mapping[str, str] | None = None,
    executor: Executor | None = None,
    listeners: Sequence[Listener] = (),
    resume: bool = False,
) -> MatrixResult:
    """Run the baseline and every arm (``repeats`` times each), each in a fresh root,
    through ``executor`` (default: :class:`LocalExecutor`, one after the other here).

    ``resume``: the root holds an earlier run of the same matrix; units that already have
    an intact sealed attempt are not run again (a lost node's units are).
    """
    env = dict(os.environ if runner_env is None else runner_env)
    session = (root if root is not None else default_matrix_root()).absolute()
    if resume:
        if not (session / "runs").is_dir():
            raise UsageError(
                f"--resume: {session} holds no earlier matrix run (no runs/); "
                "give the root of one, or drop --resume"
            )
    else:
        require_fresh_root(session, "--root")
    units = _units(matrix, session, quiet, env)
    exe = executor if executor is not None else LocalExecutor(run)
    done, todo = _resumed(units) if resume else ([], units)
    board = Board([u.key for u in units], [*listeners, _line_listener(progress)])
    for u in todo:
        board.update(u.key, state=ArmState.QUEUED)
    for r in done:
        board.update(
            r.unit.key,
            state=ArmState.of_verdict(r.verdict.state) if r.verdict else ArmState.NONE,
            note="resumed",
            final=True,
        )
    session.mkdir(parents=True, exist_ok=True)
    got = {r.unit.key: r for r in (*done, *(exe.run(todo, session, board) if todo else ()))}
    results: dict[str, list[RunOutcome]] = {}
    reference: dict[str, Any] | None = None
    # Ignored: what the executor varies on purpose, the host's name (identity, not compile
    # behaviour, C5) and, when declared, every host fact.
    ignore = (
        *(("request.cwd",) if matrix.fresh_cwd else ()),
        *exe.ignored_controls,
        *(HOST_KEYS if matrix.hosts_may_differ else HOST_IDENTITY),
    )
    arms_by_name = {a.name: a for a in matrix.arms}
    baseline_dir: Path | None = None
    for unit in units:
        arm = arms_by_name.get(unit.name)
        res = got[unit.key]
        runs = results.setdefault(unit.name, [])
        if res.lost is not None:
            runs.append(RunOutcome(None, State.UNKNOWN, RunStatus.INVALID, res.lost))
            continue
        if res.verdict is None:
            runs.append(
                RunOutcome(None, State.NOT_STARTED, RunStatus.INVALID, f"not run: {res.error}")
            )
            continue
        verdict = res.verdict
        differences: list[Difference] = []
        frozen: int | None = None
        attempt = Path(verdict.attempt) if verdict.attempt else None
        if attempt is not None and verdict.state is not State.NOT_STARTED:
            raw = control_raw(attempt)
            frozen = frozen_jobs(raw.get("controls"))
            if reference is None and arm is None:
                reference, baseline_dir = raw, attempt
            elif reference is not None:
                changes = (arm.change,) if arm is not None else ()
                differences = compare_controls(reference, raw, changes, ignore)
        outcome = outcome_of(verdict, differences, frozen)
        if arm is not None and arm.change.op_types and attempt is not None and outcome.valid:
            # C6: the arm's change must reach the compile of the op types it touches.
            reach = not_reached(baseline_dir or attempt, attempt, verdict, (arm.change,))
            if reach:
                detail = "; ".join(f.text() for f in reach)
                outcome = replace(outcome, status=RunStatus.NOT_COMPARABLE, detail=detail)
        runs.append(outcome)
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
        executor=exe.name,
        nodes={k: dict(r.node) for k, r in got.items() if r.node},
    )
    write_result(session, result.to_dict(), replace=resume)
    return result


def _line_listener(progress: Progress | None) -> Listener:
    """The one-line progress of a finished unit (what ``regress`` always printed)."""

    def hear(arm: ArmStatus, now: float) -> None:
        if progress is not None and arm.ended is not None and arm.ended == now:
            progress(f"{arm.key}: {arm.state}" + (f" ({arm.note})" if arm.note else ""))

    return hear


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
        verdicts = ", ".join(
            r.state.value + ("" if r.valid else f" ({r.status.value})") for r in row.runs
        )
        out.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    row.arm,
                    row.change,
                    verdicts,
                    row.outcome.value,
                    row.proves,
                    row.not_proven,
                )
            )
            + " |"
        )
    out += ["", "## Conclusion", ""]
    out += [f"- {line}" for line in result.summary]
    out += ["", "## Attempts", ""]
    for row in (result.baseline, *result.rows):
        for i, r in enumerate(row.runs, 1):
            # The detail often starts with the state's own word ("succeeded"): say it once.
            word = r.state.value
            said = r.detail if r.detail.split(":")[0].strip() == word else f"{word}: {r.detail}"
            out.append(f"- {row.arm} #{i}: {said} ({r.attempt or 'not recorded'})")
    if result.path:
        out += ["", f"result file: `{result.path}`"]
    return out


# --------------------------------------------------------------------------- demo

__all__ = [
    "FACTORS",
    "MAX_REPEATS",
    "Arm",
    "Matrix",
    "MatrixResult",
    "Row",
    "RunOutcome",
    "attribute",
    "load_matrix",
    "outcome_of",
    "render_matrix_markdown",
    "run_matrix",
]
