"""The C2 classifier: fixed order, reasons citing rules, and properties proved by hypothesis."""

from __future__ import annotations

import signal
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from skgate.model.records import (
    Cause,
    Census,
    Evidence,
    PackageMode,
    RootCensus,
    SignalSent,
    Stage,
    State,
    Summary,
)
from skgate.verdict.classify import classify, natural_return

GOOD = Summary(
    lines=("[summary] stage=compile inputs=4 succeeded=4 failed=0",),
    stages=(Stage("compile", 4, 4, 0),),
)
BAD = Summary(
    lines=("[summary] stage=compile inputs=4 succeeded=3 failed=1",),
    stages=(Stage("compile", 4, 3, 1),),
)


def census(error: int = 0, succ: int = 4, run: int = 1, live: bool = False) -> Census:
    return Census("out", True, (RootCensus("ts1_pid1_outputs", error, succ, run),), live, 0.0)


def natural(**kw: object) -> Evidence:
    base = Evidence(
        launched=True,
        ownership_recorded=True,
        leader_ended=True,
        leader_exit_status=0,
        tree_ended=True,
        runner_finished=True,
        summary=GOOD,
        census=census(),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_natural_success() -> None:
    v = classify(natural())
    assert v.state is State.SUCCEEDED
    assert v.natural_return
    assert any(r.startswith("C2.2") for r in v.reasons)


def test_not_started_is_not_a_compile_result() -> None:
    v = classify(Evidence(launched=False, not_started_reasons=("hook found",)))
    assert v.state is State.NOT_STARTED
    assert "hook found" in v.reasons


def test_failure_needs_natural_return() -> None:
    v = classify(natural(leader_exit_status=1, summary=BAD, census=census(error=1, run=0)))
    assert v.state is State.FAILED
    assert any("exit status 1" in r for r in v.reasons)


def test_error_logs_and_no_package_after_natural_return_is_failure_c8() -> None:
    v = classify(natural(census=census(error=2, succ=2, run=0)))
    assert v.state is State.FAILED
    assert any(r.startswith("C8") for r in v.reasons)


def test_required_package_missing_is_failure_c8() -> None:
    v = classify(natural(census=census(error=0, run=0), package_mode=PackageMode.REQUIRED))
    assert v.state is State.FAILED


def test_error_logs_with_a_package_are_provisional_leftovers() -> None:
    assert classify(natural(census=census(error=3, run=1))).state is State.SUCCEEDED


def test_timeout_is_interrupted_not_failed() -> None:
    v = classify(
        natural(
            leader_exit_status=None,
            leader_exit_signal=signal.SIGTERM,
            timeout_fired=True,
            signals_sent=(SignalSent(signal.SIGTERM, "timeout"),),
            summary=BAD,
            census=census(error=5, run=0),
        )
    )
    assert v.state is State.INTERRUPTED
    assert v.cause is Cause.TIMEOUT


def test_outside_kill_of_leader_is_external_interruption() -> None:
    v = classify(natural(leader_exit_status=None, leader_exit_signal=signal.SIGKILL))
    assert v.state is State.INTERRUPTED
    assert v.cause is Cause.EXTERNAL


def test_missing_summary_is_unknown_with_what_is_missing() -> None:
    v = classify(natural(summary=None))
    assert v.state is State.UNKNOWN
    assert any("summary" in m for m in v.missing)


def test_contradictory_summary_is_unknown_never_failed() -> None:
    contradiction = replace(BAD, problems=("stage compile: succeeded + failed != inputs",))
    v = classify(natural(leader_exit_status=1, summary=contradiction))
    assert v.state is State.UNKNOWN
    assert any("contradicts" in r for r in v.reasons)


def test_runner_gone_with_owned_alive_before_deadline_is_in_progress() -> None:
    ev = Evidence(launched=True, ownership_recorded=True, owned_alive=3)
    assert classify(ev).state is State.IN_PROGRESS
    assert classify(replace(ev, deadline_passed=True)).state is State.UNKNOWN


def test_escaped_survivors_make_it_unknown() -> None:
    v = classify(natural(escaped_alive=1, escaped_total=1))
    assert v.state is State.UNKNOWN
    assert not v.natural_return


# -- properties (issue 2, section 4) ----------------------------------------------------

stages = st.builds(
    Stage,
    name=st.sampled_from(["compile", "package", "link"]),
    inputs=st.integers(0, 50),
    succeeded=st.integers(0, 50),
    failed=st.integers(0, 50),
)
summaries = st.one_of(
    st.none(),
    st.builds(
        Summary,
        lines=st.just(("[summary] ...",)),
        stages=st.lists(stages, max_size=3).map(tuple),
        problems=st.lists(st.just("contradiction"), max_size=1).map(tuple),
    ),
)
censuses = st.one_of(
    st.none(),
    st.builds(
        census,
        error=st.integers(0, 1000),
        succ=st.integers(0, 1000),
        run=st.integers(0, 2),
        live=st.booleans(),
    ),
)
sigs = st.sampled_from([signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP])
evidence = st.builds(
    Evidence,
    launched=st.just(True),
    ownership_recorded=st.booleans(),
    leader_ended=st.booleans(),
    leader_exit_status=st.one_of(st.none(), st.integers(0, 255)),
    leader_exit_signal=st.one_of(st.none(), sigs),
    tree_ended=st.booleans(),
    owned_alive=st.integers(0, 70),
    escaped_alive=st.integers(0, 2),
    escaped_total=st.integers(0, 3),
    timeout_fired=st.booleans(),
    signals_sent=st.lists(
        st.builds(SignalSent, signal=sigs, reason=st.sampled_from(["timeout", "forwarded"])),
        max_size=2,
    ).map(tuple),
    external_signals=st.lists(sigs, max_size=2).map(tuple),
    runner_finished=st.booleans(),
    runner_alive=st.booleans(),
    deadline_passed=st.booleans(),
    summary=summaries,
    census=censuses,
    package_mode=st.sampled_from(list(PackageMode)),
)


@given(evidence)
def test_never_failed_without_natural_return(ev: Evidence) -> None:
    if classify(ev).state is State.FAILED:
        assert natural_return(ev)


@given(evidence)
def test_never_succeeded_with_bad_exit_missing_summary_or_failed_input(ev: Evidence) -> None:
    if classify(ev).state is State.SUCCEEDED:
        assert ev.leader_exit_status == 0
        assert ev.summary is not None and ev.summary.present and ev.summary.consistent
        assert all(s.failed == 0 and s.succeeded == s.inputs for s in ev.summary.stages)


@given(evidence)
def test_interrupted_whenever_runner_signalled_or_outside_signal_ended_leader(
    ev: Evidence,
) -> None:
    v = classify(ev)
    if v.state is State.IN_PROGRESS:
        return  # the runner is still running: nothing is final yet
    if ev.signals_sent or ev.external_signals or ev.timeout_fired:
        assert v.state is State.INTERRUPTED
    if ev.leader_exit_signal is not None and ev.runner_finished:
        assert v.state is State.INTERRUPTED


@given(evidence)
def test_in_progress_while_owned_alive_and_no_timeout(ev: Evidence) -> None:
    quiet = not (ev.timeout_fired or ev.signals_sent or ev.external_signals)
    owned_live = ev.runner_alive or (ev.owned_alive > 0 and not ev.deadline_passed)
    if not ev.runner_finished and quiet and owned_live:
        assert classify(ev).state is State.IN_PROGRESS


@given(evidence, st.integers(0, 10_000))
def test_error_named_file_counts_never_change_the_state_alone(ev: Evidence, n: int) -> None:
    """C1: moving error-named files into succ-named ones (or back) is not a state change,
    as long as the terminal artifact (.run) is the same."""
    if ev.census is None:
        return
    root = ev.census.roots[0]
    moved = replace(
        ev.census,
        roots=(replace(root, error_logs=n if root.error_logs else 0),),
    )
    assert classify(replace(ev, census=moved)).state is classify(ev).state


@given(evidence)
def test_same_evidence_same_verdict(ev: Evidence) -> None:
    assert classify(ev) == classify(ev)


def test_incomplete_census_cannot_prove_a_missing_package() -> None:
    """C8 on a census that could not read part of the outputs: no conclusion (C2.5)."""
    hidden = replace(census(error=2, succ=2, run=0), unreadable=1)
    v = classify(natural(census=hidden))
    assert v.state is State.UNKNOWN
    assert any("complete artifact census" in m for m in v.missing)
    required = replace(census(error=0, run=0), unreadable=3)
    assert (
        classify(natural(census=required, package_mode=PackageMode.REQUIRED)).state is State.UNKNOWN
    )
    # A package was seen: the unreadable part cannot change the output check.
    seen = replace(census(error=2, run=1), unreadable=1)
    assert classify(natural(census=seen)).state is State.SUCCEEDED
    # A natural failure stays a failure: it rests on the exit status, not the census.
    assert classify(natural(leader_exit_status=1, summary=BAD, census=hidden)).state is (
        State.FAILED
    )
