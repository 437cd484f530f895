"""The C2 classifier: a pure function from archived evidence to a verdict.

The order is fixed by the contract and never changes: in_progress, succeeded, failed,
interrupted, unknown. Each reason names the rule it rests on, so a reader can check it.
Nothing here reads files, the clock or the process table: the same evidence always
gives the same verdict, and it can be recomputed later (``skgate classify``).
"""

from __future__ import annotations

from skgate.model.frozen import replace
from skgate.model.modes import SOURCE_EXIT_STATUS, VerdictFrom
from skgate.model.phrases import count
from skgate.model.records import Cause, Evidence, RecoveredWhen, State, Verdict
from skgate.model.signals import signal_name
from skgate.verdict import stages as stage_rules
from skgate.verdict.coverage import coverage_reason, evidence_extra
from skgate.verdict.exits import crashed_reason, exit_reason
from skgate.verdict.installs import with_installs
from skgate.verdict.notes import preexisting_note, recovered_note
from skgate.verdict.outputs import (
    census_inconclusive,
    output_check_failures,
    required_package_missing,
)
from skgate.verdict.stages import SummaryView


def natural_return(ev: Evidence) -> bool:
    """C2: the process tree ended on its own, with no signal from the runner or outside."""
    return (
        ev.launched
        and ev.ownership_recorded
        and ev.tree_ended
        and ev.leader_ended
        and ev.leader_exit_status is not None
        and ev.leader_exit_signal is None
        and not ev.timeout_fired
        and not ev.signals_sent
        and not ev.external_signals
        and ev.escaped_alive == 0
    )


def _verdict(
    ev: Evidence,
    state: State,
    cause: Cause | None,
    reasons: tuple[str, ...],
    missing: tuple[str, ...] = (),
    *,
    view: SummaryView | None = None,
) -> Verdict:
    if view is not None:
        reasons = (*reasons, *view.notes)
    jobs = view.findings.effective_jobs if view is not None else ()
    line = coverage_reason(ev)
    return Verdict(
        state=state,
        cause=cause,
        reasons=(*reasons, line) if line else reasons,
        extra=evidence_extra(ev),
        missing=missing,
        natural_return=natural_return(ev),
        exit_status=ev.leader_exit_status,
        exit_signal=ev.leader_exit_signal,
        timeout_fired=ev.timeout_fired,
        escaped=ev.escaped_total,
        census=ev.census,
        summary=view.summary if view is not None else ev.summary,
        summary_source=view.source if view is not None else None,
        compiled=view.compiled if view is not None else None,
        effective_jobs=jobs,
        peak_opc=ev.stages.peak_opc if ev.stages is not None else None,
    )


#: How a success reason names its summary source (C2: [summary] lines first).
_SOURCE_WORDS = {
    stage_rules.SOURCE_STAGES: "the op_compiler census after natural return",
}
_PRINTED = (stage_rules.SOURCE_SUMMARY_LINES, stage_rules.SOURCE_PATTERN)


def _escape_note(ev: Evidence) -> list[str]:
    if not ev.escaped_total:
        return []
    notes: list[str] = []
    calm = min(ev.escaped_torchrun, ev.escaped_total)
    if calm:
        # Issue 27: torchrun starts every worker with start_new_session=True: the
        # launcher's normal shape, said once and calmly (still watched, C4).
        notes.append(
            f"C4: {count(calm, 'owned process')} in torchrun's worker sessions (torchrun "
            "starts each worker in a session of its own): watched like the rest, never "
            "signalled"
        )
    others = ev.escaped_total - calm
    if others:
        they = "it was" if others == 1 else "they were"
        notes.append(
            f"C4: {count(others, 'owned process')} left the process group (setsid); "
            f"{they} watched, never signalled"
        )
    if ev.escaped_alive:
        notes[-1] += f", and {ev.escaped_alive} still lived when the runner finished"
    return notes


def _when_died(ev: Evidence, natural: bool) -> str:
    return "after natural return" if natural else "before natural return"


def _unfinished(ev: Evidence, natural: bool, escapes: list[str]) -> Verdict:
    reasons = [
        f"C2.5: the runner died before the verdict was written ({_when_died(ev, natural)}); "
        "no final state is derived from a partial set of files. Once no owned process "
        "lives, 'skgate recover' finishes what can honestly be finished"
    ]
    if ev.launched and ev.owned_alive and ev.deadline_passed:
        reasons.append(
            f"C2.5: the runner is gone without a verdict, its deadline has passed and "
            f"{count(ev.owned_alive, 'owned process')} still alive; nobody enforces the timeout "
            "now. Do not kill by name or age; inspect the ownership manifest"
        )
    missing = ["the verdict (verdict.json), the runner's final record"]
    if not ev.ownership_recorded and ev.launched:
        missing.insert(0, "ownership manifest (ownership.json)")
    return _verdict(ev, State.UNKNOWN, None, (*reasons, *escapes), tuple(missing))


def _stopping(ev: Evidence, may_have_run: bool, escapes: list[str]) -> Verdict | None:
    """C2.1 during the grace: the group was signalled (deadline, stop signal, stop
    request, or an adopter's deadline) but the runner has not written the verdict, or an
    owned process still lives (one ignoring SIGTERM, say). Nothing is final yet: the
    SIGKILL after the grace, or the process's own end, is still to come (issue 28 s2)."""
    if may_have_run and ev.owned_alive:
        reason = (
            f"C2.1: the attempt is being stopped and {count(ev.owned_alive, 'owned process')} "
            "still alive; no state is final while one lives: keep waiting, kill nothing by "
            "name or age"
        )
    elif ev.runner_alive:
        reason = (
            "C2.1: the attempt is being stopped by its runner, which is alive and has not "
            "written the verdict yet; no state is final before it: keep waiting"
        )
    else:
        return None
    return _verdict(ev, State.IN_PROGRESS, None, (reason, *escapes))


_DECLARED = "its exit status is its declared final summary (--verdict-from exit-status)"


def declared_exit_status(ev: Evidence, view: SummaryView, natural: bool) -> Verdict | None:
    """C2, last paragraph: a command that is not a compile declared (a frozen control)
    that its exit status is its final summary. None when the declaration does not decide:
    not declared, no natural return (interrupted or unknown as always), or compile
    evidence exists (an op_compiler, a printed summary, a cache hit): that evidence
    decides, and :func:`stage_evidence_decided` checks the two agree."""
    status = ev.leader_exit_status
    if ev.verdict_from is not VerdictFrom.EXIT_STATUS or not natural or status is None:
        return None
    printed = view.summary is not None and view.summary.present
    if view.findings.observed or printed or view.compiled is not None:
        return None
    if census_inconclusive(ev) is not None:
        return None  # an unreadable census is unknown whatever was declared (C8)
    escapes = preexisting_note(ev)
    if status == 0:
        outputs = output_check_failures(ev)  # C8 still holds after natural return
        state = State.FAILED if outputs else State.SUCCEEDED
        reasons = [
            f"C2.2: the command returned naturally with exit status 0, and {_DECLARED}; no "
            "op_compiler was observed and no compiler summary was read",
            *outputs,
        ]
    else:
        state = State.FAILED
        reasons = [
            f"C2.3: the command returned naturally with exit status {status}, and "
            f"{_DECLARED}; no op_compiler was observed: this is the command's own failure, "
            "not a compiler result"
        ]
    verdict = _verdict(ev, state, None, (*reasons, *escapes), view=view)
    return replace(verdict, summary_source=SOURCE_EXIT_STATUS)


def stage_evidence_decided(ev: Evidence, verdict: Verdict) -> Verdict:
    """C2, last paragraph: exit status was declared the result, but compile evidence
    decided the verdict. When that verdict and the declared exit status disagree, the
    conclusion is blocked (unknown, C2.5); when they agree the verdict says so."""
    status = verdict.exit_status
    if (
        ev.verdict_from is not VerdictFrom.EXIT_STATUS
        or verdict.summary_source == SOURCE_EXIT_STATUS
        or not verdict.natural_return
        or status is None
        or verdict.state not in (State.SUCCEEDED, State.FAILED)
    ):
        return verdict
    if ev.stages is not None and ev.stages.stages:
        what = "an owned op_compiler was observed"
    elif verdict.compiled is False:
        what = "the launcher reported a compile cache hit"
    else:
        what = "a final summary was printed"
    says = State.SUCCEEDED if status == 0 else State.FAILED
    last = verdict.reasons[-1] if verdict.reasons else ""
    coverage = [last] if last.startswith("C3: ownership record from ") else []  # stays last
    kept = list(verdict.reasons[: len(verdict.reasons) - len(coverage)])
    if says is verdict.state:
        note = (
            f"C2: --verdict-from exit-status was declared, but {what}: that evidence "
            f"decided ({verdict.state.value}), and exit status {status} agrees"
        )
        return replace(verdict, reasons=(*kept, note, *coverage))
    note = (
        f"C2.5: --verdict-from exit-status was declared, but {what}: that evidence says "
        f"{verdict.state.value} while exit status {status} says {says.value}; the "
        "declaration does not hold for a compile, so no conclusion is drawn"
    )
    # The reasons of the overruled verdict would state a final result: only the
    # contradiction is said (the report's stage section still shows each stage).
    return replace(verdict, state=State.UNKNOWN, cause=None, reasons=(note, *coverage))


def classify(ev: Evidence) -> Verdict:
    """Classify one attempt in the fixed C2 order; then what its package installs add
    (C8: a failed install is never a clean success)."""
    return with_installs(ev, stage_evidence_decided(ev, _classify(ev)))


def _classify(ev: Evidence) -> Verdict:
    if ev.journal_missing:
        # Without the journal nothing says whether, when or how the command ran: never
        # read that as "not started" (the run log or manifest may show it did run).
        return _verdict(
            ev,
            State.UNKNOWN,
            None,
            (
                "C2.5: the event journal (events.jsonl) is missing; launch, exits and signals "
                "cannot be established, so no conclusion is drawn",
            ),
            ("event journal (events.jsonl)",),
        )
    natural = natural_return(ev)
    escapes = _escape_note(ev) + preexisting_note(ev)
    # A launch intent without 'launched' (runner killed around the fork): the workload
    # may have run, and what it left alive counts as owned (C2.1, issue 21 s1).
    may_have_run = ev.launched or ev.launch_unconfirmed
    termination_begun = ev.timeout_fired or bool(ev.signals_sent) or bool(ev.external_signals)

    if not ev.runner_finished and ev.runner_alive and ev.evidence_full_free is not None:
        # The journal cannot grow, so it is silent on what the runner did since the disk
        # filled (the tree's end, a timeout): never "its timeout has not fired" (issue 28).
        what = (
            "finishing: evidence disk full"
            if may_have_run and not ev.owned_alive
            else "evidence disk full while the command runs"
        )
        return _verdict(
            ev,
            State.IN_PROGRESS,
            None,
            (
                f"C2.1: {what} ({ev.evidence_full_free} bytes free); the runner is alive and "
                "waits at most its grace for space, then leaves the attempt for 'skgate "
                "recover'; free space under the evidence root, kill nothing",
                *escapes,
            ),
        )

    # 1. in_progress: an owned process lives and the frozen timeout has not fired.
    if not ev.runner_finished and not termination_begun:
        if ev.runner_alive and not ev.launched:
            # Preflight is still running (for example waiting for a foreign compiler): the
            # attempt is live, not "not started"; nothing of it may be judged or killed.
            waits = "; ".join(ev.waiting_for)
            return Verdict(
                state=State.IN_PROGRESS,
                cause=None,
                # Issue 30: the in-progress phase before launch, typed, so every reader
                # says "WAITING ...; nothing launched yet", never "still running".
                waiting=ev.waiting,
                reasons=(
                    "C2.1: the runner that owns this attempt is alive and has not launched "
                    "the command yet (preflight); keep waiting, kill nothing",
                    *(
                        [f"C4: waiting for blockers, which are never signalled: {waits}"]
                        * bool(waits)
                    ),
                ),
            )
        if ev.runner_alive:
            return _verdict(
                ev,
                State.IN_PROGRESS,
                None,
                (
                    "C2.1: the runner that owns this attempt is alive and its frozen "
                    "timeout has not fired; keep waiting, observe read-only, kill nothing",
                    *escapes,
                ),
            )
        if may_have_run and ev.owned_alive and not ev.deadline_passed:
            return _verdict(
                ev,
                State.IN_PROGRESS,
                None,
                (
                    f"C2.1: {count(ev.owned_alive, 'owned process')} alive and the frozen deadline "
                    "has not passed; observe read-only, kill nothing. The runner that owns "
                    "this attempt is gone, so nobody will record the natural return: the "
                    "attempt can only end unknown, and a clean retry will be needed",
                    *escapes,
                ),
            )
        if may_have_run and ev.owned_alive:
            # Never unknown while something owned runs (C2.1): the timeout has not fired,
            # because the runner that would fire it is gone. Nothing may be cleaned up or
            # retried over it, and nobody may kill it by name or age (C4).
            return _verdict(
                ev,
                State.IN_PROGRESS,
                None,
                (
                    "C2.1: owned processes still running, runner gone: "
                    f"{count(ev.owned_alive, 'owned process')} alive after the frozen deadline, "
                    "which nobody "
                    "enforces now; observe read-only, kill nothing by name or age, inspect "
                    "the ownership manifest. The attempt can only end unknown, and a clean "
                    "retry will be needed",
                    *escapes,
                ),
            )

    if not ev.runner_finished and termination_begun:
        stopping = _stopping(ev, may_have_run, escapes)
        if stopping is not None:
            return stopping
    if not ev.runner_finished and not ev.runner_alive:
        # The runner died before its verdict: what it left is a partial set of files
        # (no census, no final manifest...), and no final state is derived from one.
        return _unfinished(ev, natural, escapes)
    if ev.disk_full is not None and (ev.launched or ev.launch_unconfirmed):
        # C3: the runner could not write all of its record; whatever the files left say,
        # no final state is drawn from evidence known to be incomplete (issue 21 s2).
        return _verdict(
            ev,
            State.UNKNOWN,
            None,
            (
                f"C3: evidence incomplete: disk full at {ev.disk_full}; the command was not "
                "disturbed (its output was drained), but no conclusion is drawn from an "
                "incomplete record. Free space under the evidence root and retry",
                *escapes,
            ),
            ("the evidence lost to the full disk (see diskfull.json)",),
        )
    if ev.launch_unconfirmed and not ev.launched:
        # C2: not_started says nothing ran; a runner killed between the intent and the
        # 'launched' entry may have forked the workload, so that is never concluded.
        return _verdict(
            ev,
            State.UNKNOWN,
            None,
            (
                "C2.5: the runner recorded its intent to launch (launch.json) but not the "
                "launch itself; it died around the fork, so the workload may have run: no "
                "conclusion is drawn (never 'not started')",
                *recovered_note(ev),
            ),
            ("the launch record ('launched' in events.jsonl)",),
        )
    if ev.recovered is RecoveredWhen.BEFORE_LAUNCH or not ev.launched:
        return Verdict(
            state=State.NOT_STARTED,
            cause=None,
            reasons=(
                "nothing was launched; this is not a compile result",
                *recovered_note(ev),
                *ev.not_started_reasons,
            ),
        )
    if ev.recovered is RecoveredWhen.BEFORE_NATURAL_RETURN:
        return _verdict(
            ev,
            State.UNKNOWN,
            None,
            (*recovered_note(ev), *escapes),
            ("terminal status (the runner's final record)",),
        )
    escapes = recovered_note(ev) + escapes

    view = stage_rules.summary_view(ev, natural)
    summary = view.summary
    summary_ok = view.usable
    found = view.findings

    inconclusive = census_inconclusive(ev)
    declared = declared_exit_status(ev, view, natural)
    if declared is not None:
        return declared

    # 2. succeeded: a launcher's exit 0 never turns a failed stage into a success (C2).
    clean = view.stack_natural and not found.failures and not view.launcher_errors
    if natural and ev.leader_exit_status == 0 and summary_ok and summary is not None and clean:
        outputs = output_check_failures(ev)
        if summary.all_succeeded and not outputs and inconclusive is None:
            return _verdict(
                ev,
                State.SUCCEEDED,
                None,
                (
                    "C2.2: the compiler stack returned naturally with exit status 0",
                    f"C2.2: {_SOURCE_WORDS.get(view.source or '', 'the final summary')} "
                    f"reports every input of all {len(summary.stages)} stage(s) succeeded",
                    *escapes,
                ),
                view=view,
            )
    no_summary = summary is None or not summary.present
    cached = natural and ev.leader_exit_status == 0 and view.compiled is False
    if cached and clean and no_summary and inconclusive is None:
        return _verdict(
            ev,
            State.SUCCEEDED,
            None,
            (
                "C2.2: the command returned naturally with exit status 0",
                *("C2.2: " + r for r in stage_rules.no_compile_reasons(view, ev.stages)),
                *escapes,
            ),
            view=view,
        )

    # 3. failed: only after the natural return of the whole compiler stack (every
    # observed op_compiler too), never on a contradictory summary or a disagreement.
    consistent = summary is None or summary.consistent
    # A cache hit compiled nothing, but a launcher that then returned non-zero failed on
    # its own, as any command with no compiler observed does (C2.3).
    hit_failed = view.compiled is False and natural and bool(ev.leader_exit_status)
    compiling = view.compiled is not False or hit_failed
    if view.stack_natural and consistent and not view.disagreements and compiling:
        why: list[str] = []
        if ev.leader_exit_status:
            why.append(exit_reason(ev, view))
        if hit_failed:
            why.extend("C2.3: " + r for r in stage_rules.no_compile_reasons(view, ev.stages))
        if (
            view.source != stage_rules.SOURCE_STAGES
            and summary is not None
            and summary.present
            and not summary.all_succeeded
        ):
            bad = [s for s in summary.stages if s.failed or s.succeeded != s.inputs]
            why.append(
                "C2.3: the final summary reports failures: "
                + "; ".join(f"stage {s.name}: {s.failed} of {s.inputs} failed" for s in bad)
            )
        if view.source not in _PRINTED:
            # With a printed summary as the source its failures are stated above; the
            # report's stage section still names each failed input and its log.
            why.extend(found.failures)
        said = view.launcher_failure(ev.leader_exit_status)
        if said is not None and ev.leader_exit_status == 0:
            # The swallowed case (C2): exit 0 and the launcher's own word of a failure.
            why.append(said)
        if summary_ok:
            why.extend(output_check_failures(ev))
        elif natural:
            why.extend(required_package_missing(ev))  # C8: whatever the stages say
        if why:
            # Only where something failed are error logs final compiler evidence: not
            # for a launcher that failed after every stage succeeded (C7).
            evidence_note = (
                ["C2.3: kept error logs are now final compiler evidence"]
                if found.failures
                or (summary is not None and summary.present and not summary.all_succeeded)
                or (ev.census is not None and ev.census.error_logs)
                else []
            )
            return _verdict(ev, State.FAILED, None, (*why, *evidence_note, *escapes), view=view)

    # 4. interrupted
    if ev.timeout_fired:
        sent = ", ".join(f"{signal_name(s.signal)} ({s.reason})" for s in ev.signals_sent)
        return _verdict(
            ev,
            State.INTERRUPTED,
            Cause.TIMEOUT,
            (
                "C2.4: the frozen top-level timeout fired; the runner signalled only its own "
                f"process group: {sent or 'no signal was needed'}",
                "C2.4: compile evidence is interrupted/invalid, not an operator failure; "
                "a clean retry is required before judging compiler support",
                *escapes,
            ),
            view=view,
        )
    crashed = crashed_reason(ev)
    if (
        ev.external_signals
        or ev.signals_sent
        or (ev.leader_exit_signal is not None and crashed is None)
    ):
        why = [f"C2.4: stopped through skgate stop: {r}" for r in ev.stop_reasons]
        if ev.external_signals:
            names = ", ".join(signal_name(s) for s in ev.external_signals)
            why.append(f"C2.4: the runner received {names} from outside and forwarded it")
        if ev.leader_exit_signal is not None:
            sent_by_runner = ev.leader_exit_signal in {s.signal for s in ev.signals_sent}
            why.append(
                f"C2.4: the top-level process was ended by {signal_name(ev.leader_exit_signal)}"
                + (
                    ""
                    if sent_by_runner or ev.external_signals
                    else " (not sent by this runner: a kill from outside, or a crash; either "
                    "way the compile did not return naturally)"
                )
            )
        if ev.signals_sent:
            names = ", ".join(signal_name(s.signal) for s in ev.signals_sent)
            why.append(f"C2.4: the runner signalled its own process group: {names}")
        return _verdict(
            ev,
            State.INTERRUPTED,
            Cause.EXTERNAL,
            (
                *why,
                "C2.4: compile evidence is interrupted/invalid, not an operator failure; "
                "a clean retry is required before judging compiler support",
                *escapes,
            ),
            view=view,
        )

    # 5. unknown: say exactly what is missing or contradictory; never infer failure.
    missing: list[str] = []
    reasons: list[str] = []
    if not ev.ownership_recorded:
        missing.append("ownership manifest (ownership.json)")
    if not ev.runner_finished:
        # Only a live runner gets here (a dead one is unfinished, above): it is still
        # ending its own group after a timeout or a signal and has not recorded the end.
        reasons.append("C2.5: the runner has not recorded the terminal status yet")
        missing.append("terminal status (the runner's final record)")
    elif ev.escaped_alive:
        reasons.append(
            f"C2.5: {count(ev.escaped_alive, 'escaped owned process', 'escaped owned processes')}"
            " still lived when the runner "
            "finished, so the tree did not return completely"
        )
        missing.append("natural return of escaped processes")
    if ev.runner_finished and not ev.leader_ended:
        missing.append("exit status of the top-level process")
    if ev.runner_finished and (summary is None or not summary.present):
        if view.compiled is not False:
            missing.append(
                "final aggregate summary ([summary] lines, a --summary-pattern match, or an "
                "op_compiler census after natural return)"
            )
        announced = stage_rules.announced_no_compile_reason(view)
        if announced is not None:
            reasons.append(f"C2.5: {announced}")
        elif not found.observed and view.compiled is None:
            reasons.append(
                "C2.5: no [summary] line was printed and no op_compiler process was observed, "
                "so no stage record exists"
            )
    if crashed is not None:
        reasons.append(crashed)
        missing.append("natural return of the top-level process")
    reasons.extend(f"C2.5: {why}" for why in found.not_final)
    reasons.extend(view.disagreements)
    if view.launcher_errors and not view.stack_natural:
        reasons.append(
            "C2.5: the launcher reported a failing op_compiler, but the compiler stack did "
            "not return naturally; failure is not inferred"
        )
    if view.compiled is False and ev.leader_exit_status:
        reasons.extend(
            f"C2.5: {r}; exit status {ev.leader_exit_status} is therefore not a compiler result"
            for r in stage_rules.no_compile_reasons(view, ev.stages)
        )
    if summary is not None and summary.problems:
        reasons.extend(f"C2.5: the final summary contradicts itself: {p}" for p in summary.problems)
    if inconclusive is not None:
        reasons.append(inconclusive)
        missing.append("a complete artifact census (unreadable directories under the outputs)")
    if natural and summary_ok and ev.leader_exit_status == 0 and not missing and not reasons:
        # Natural exit 0 and a consistent summary that still did not make "succeeded":
        # only the C8 output check can do that, and it was reported as failed above.
        reasons.append("C2.5: exit status, summary and outputs disagree")
    if not reasons:
        reasons.append("C2.5: evidence is missing; the verdict is blocked, failure is not inferred")
    return _verdict(ev, State.UNKNOWN, None, (*reasons, *escapes), tuple(missing), view=view)
