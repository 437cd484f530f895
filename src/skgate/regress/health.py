"""The compile-health regression gate (C6).

Built only from ordinary gated attempts (:func:`skgate.api.run_attempt`, same timeout,
same ownership rules, C4) and the files those attempts archive. The declared change lives
in :mod:`skgate.regress.change`, the comparison of frozen controls in
:mod:`skgate.regress.controls`, what the gate shares with the one-factor-at-a-time
diagnosis (``--matrix``, :mod:`skgate.regress.matrix.core`) in :mod:`skgate.regress.common`.

* :func:`health` - after an intentional change to profiler construction or import order,
  one isolated compile in a fresh evidence root with the reference attempt's frozen request
  plus the declared change. It passes only when the compiler returned naturally, every
  aggregate stage reports all inputs successful, the top-level exit status is 0 and the
  completion marker was seen (C6). Its frozen controls are compared with the reference's:
  any difference beyond the declared change makes the result not attributable (blocked).

Both procedures write ``regress.json`` (schema ``skgate.regress/1``, ``kind`` health or
matrix) into their own evidence root, never into a sealed attempt directory (C4: sealed
evidence is never rewritten).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence import files, ledger
from skgate.evidence.files import REGRESS_FILE
from skgate.evidence.load import load_control
from skgate.model.errors import UsageError
from skgate.model.exits import EXIT_BLOCKED
from skgate.model.frozen import replace
from skgate.model.outcomes import HealthOutcome
from skgate.model.records import State, Verdict
from skgate.model.request import RunRequest, frozen_jobs
from skgate.model.schema import SCHEMA_REGRESS
from skgate.preflight.request import outputs_dir, validate
from skgate.regress.change import Change, parse_declaration
from skgate.regress.common import (
    FAILED_WORDS,
    INTERRUPTED_WORDS,
    RunFn,
    control_raw,
    default_run,
    read_completion_seen,
    read_reference_verdict,
    require_fresh_root,
    write_result,
)
from skgate.regress.controls import Difference, compare_controls, control_view
from skgate.regress.reach import NOT_REACHED, ReachFinding, not_reached
from skgate.verdict.stages import compile_evidence_refusals
from skgate.verdict.words import HOOK_NOT_PROVEN, HOOK_TRIGGER

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

    result: HealthOutcome
    reference: str
    attempt: str | None
    root: str
    declared: tuple[Change, ...]
    checks: tuple[Check, ...]
    differences: tuple[Difference, ...]
    state: State | None
    reasons: tuple[str, ...]
    path: str | None = None
    note: str | None = None
    outputs_before: int = 0
    #: Why the declared change did not reach the compile (C6), with what to clear.
    not_reached: tuple[ReachFinding, ...] = ()

    @property
    def exit_code(self) -> int:
        return {
            HealthOutcome.PASS: 0,
            HealthOutcome.FAIL: 1,
            HealthOutcome.BLOCKED: EXIT_BLOCKED,
            HealthOutcome.NOT_REACHED: EXIT_BLOCKED,
        }[self.result]

    @property
    def profiling_accepted(self) -> bool:
        return self.result is HealthOutcome.PASS

    def statement(self) -> str:
        """The one sentence ``skgate report`` should carry about later profiling (C6)."""
        if self.result is HealthOutcome.PASS:
            return (
                "later profiling may be accepted: the fresh-root compile-health run returned "
                "naturally, every stage reported all inputs successful, exit status 0, and "
                "inference reached its completion marker (C6)"
            )
        if self.result is HealthOutcome.NOT_REACHED:
            return (
                f"later profiling may NOT be accepted: {NOT_REACHED}; the compile-health run "
                "is no evidence for it until what the findings name is cleared"
            )
        if self.result is HealthOutcome.BLOCKED:
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
            "result": self.result.value,
            "profiling_accepted": self.profiling_accepted,
            "statement": self.statement(),
            "reference": self.reference,
            "attempt": self.attempt,
            "root": self.root,
            "state": self.state.value if self.state is not None else None,
            "declared": [c.to_dict() for c in self.declared],
            "checks": [c.to_dict() for c in self.checks],
            "differences": [d.to_dict() for d in self.differences],
            "reasons": list(self.reasons),
            "note": self.note,
            "outputs_before": self.outputs_before,
            "not_reached": [f.to_dict() for f in self.not_reached],
            "result_file": self.path,
        }

    def lines(self) -> list[str]:
        head = {
            HealthOutcome.PASS: "HEALTH PASS",
            HealthOutcome.FAIL: "HEALTH FAIL",
            HealthOutcome.BLOCKED: "HEALTH BLOCKED (not attributable)",
            HealthOutcome.NOT_REACHED: "HEALTH NOT REACHED",
        }[self.result]
        out = [f"{head}: {self.statement()}"]
        out.append(f"  reference: {self.reference}")
        if self.attempt:
            state = self.state.value if self.state is not None else None
            out.append(f"  health attempt: {self.attempt} (state {state})")
        out.append(
            "  declared change: "
            + ("; ".join(c.label for c in self.declared) if self.declared else "none")
        )
        for c in self.checks:
            out.append(f"  [{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}")
        for d in self.differences:
            tag = "declared" if d.declared else "UNDECLARED"
            out.append(f"  [{tag}] {d.text()}")
        for f in self.not_reached:
            out.append(f"  [NOT REACHED] {f.text()}")
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
    verdict = read_reference_verdict(attempt_dir)
    why: list[str] = []
    if verdict.state is not State.SUCCEEDED:
        why.append(f"its verdict is {verdict.state.value}")
    if not verdict.natural_return:
        why.append("the compiler did not return naturally")
    if verdict.exit_status != 0:
        why.append(f"exit status {verdict.exit_status}")
    if verdict.summary is None or not verdict.summary.all_succeeded:
        why.append("its final summary does not show every input of every stage succeeded")
    why.extend(compile_evidence_refusals(verdict, frozen_jobs(control.controls)))
    if control.request.completion_marker is None:
        why.append("it has no --completion-marker, so completion cannot be compared")
    elif not read_completion_seen(attempt_dir):
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
    require_fresh_root(health_root, "--root")
    request = replace(ref_request, root=str(health_root), retry_of=None, quiet=quiet)
    for ch in changes:
        request = ch.apply(request, env)
    validate(request)
    # Same source and workload means the reference's working directory, whose outputs
    # directory may still hold earlier result roots: say so, the census counts them too.
    outputs = outputs_dir(request)
    before = len(list(outputs.iterdir())) if outputs.is_dir() else 0
    run_fn = run if run is not None else default_run()
    verdict = run_fn(request)
    attempt = Path(verdict.attempt) if verdict.attempt else None
    checks = _health_checks(verdict, attempt)
    differences: tuple[Difference, ...] = ()
    reasons: list[str] = []
    if verdict.state is State.NOT_STARTED:
        reasons.append("the health run was blocked before launch: " + "; ".join(verdict.reasons))
    if attempt is not None and (attempt / files.CONTROL).exists():
        differences = tuple(compare_controls(control_raw(reference), control_raw(attempt), changes))
    undeclared = [d for d in differences if not d.declared]
    if undeclared and verdict.state is not State.NOT_STARTED:
        reasons.append(
            "frozen controls differ from the reference beyond the declared change: "
            + "; ".join(d.text() for d in undeclared[:5])
            + (" ..." if len(undeclared) > 5 else "")
        )
    # C5/C6: a cache hit compiled nothing; a -j other than the frozen one is a control
    # that was not in effect. Neither is compile-health evidence.
    refused: list[str] = []
    if attempt is not None and (attempt / files.CONTROL).exists():
        frozen = frozen_jobs(control_raw(attempt).get("controls"))
        refused = compile_evidence_refusals(verdict, frozen)
        reasons.extend(f"not compile-health evidence: {r}" for r in refused)
    if verdict.state is State.INTERRUPTED:
        reasons.append(
            f"{INTERRUPTED_WORDS}: not a compile result; a clean retry is required "
            "before judging the change"
        )
    # C6: a candidate that succeeded without its declared change reaching the compile
    # (a cache hit among them) is no evidence for that change: say what to clear.
    reach = (
        not_reached(reference, attempt, verdict, changes)
        if attempt is not None and not undeclared and (attempt / files.CONTROL).exists()
        else ()
    )
    if verdict.state is State.NOT_STARTED or undeclared:
        outcome = HealthOutcome.BLOCKED
    elif reach:
        outcome = HealthOutcome.NOT_REACHED
    elif refused:
        outcome = HealthOutcome.BLOCKED
    elif all(c.ok for c in checks):
        outcome = HealthOutcome.PASS
    else:
        outcome = HealthOutcome.FAIL
    result = HealthResult(
        result=outcome,
        reference=str(reference),
        attempt=str(attempt) if attempt else None,
        root=str(health_root),
        declared=changes,
        checks=checks,
        differences=differences,
        state=verdict.state,
        reasons=tuple(reasons),
        path=str(health_root / REGRESS_FILE),
        note=note,
        outputs_before=before,
        not_reached=reach,
    )
    write_result(health_root, result.to_dict())
    return result


def _health_checks(verdict: Verdict, attempt: Path | None) -> tuple[Check, ...]:
    s = verdict.summary
    stages = ", ".join(f"{st.name} {st.succeeded}/{st.inputs}" for st in s.stages) if s else ""
    seen = read_completion_seen(attempt) if attempt is not None else None
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
    "parse_declaration",
]
