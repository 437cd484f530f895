"""Stage rules (C2): when an op_compiler invocation is a final summary, and what it says.

The property tests generate evidence with no ``[summary]`` line at all (torchair's case)
and check the two promises of issue 10: the state is never ``failed`` before every
observed op_compiler returned naturally, and never ``succeeded`` while any input lacks a
succ log. They measure that the strategy reaches every state they speak about.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from skgate.model.frozen import replace
from skgate.model.launcher import LauncherFacts
from skgate.model.phrases import Lang
from skgate.model.records import Evidence, Stage, State, Summary, Verdict
from skgate.model.stages import (
    AnnouncedRoot,
    CacheEntry,
    CacheFile,
    InputOutcome,
    InputResult,
    StageCensus,
    StageRecord,
    Stages,
    parse_compiler_argv,
)
from skgate.regress.matrix.core import outcome_of
from skgate.verdict.classify import classify, natural_return
from skgate.verdict.stages import (
    compile_evidence_refusals,
    disagreements,
    jobs_mismatch,
    not_final_reason,
    returned_naturally,
)
from skgate.verdict.words import headline, in_language, reason_zh

ARGV = ("op_compiler", "-p", "/o/r/1_opcompile_selected", "-v", "S", "-j", "2", "-o", "/o/r")


def census(  # noqa: PLR0917 - a test builder; every count has a default
    ok: int = 3,
    bad: int = 0,
    lost: int = 0,
    both: int = 0,
    after: bool = True,
    unpaired: int = 0,
    extra: int = 0,
) -> StageCensus:
    named = [
        InputResult(f"f{i}", InputOutcome.FAILED, (f"/o/r/1_compile_log/f{i}_compile_error.log",))
        for i in range(bad)
    ]
    named += [InputResult(f"n{i}", InputOutcome.NO_LOG) for i in range(lost)]
    named += [InputResult(f"b{i}", InputOutcome.BOTH_LOGS, ("e", "s")) for i in range(both)]
    named += [
        InputResult("A", InputOutcome.UNPAIRED, (), "A", None, ("A_1", "A_2"))
        for _ in range(unpaired)
    ]
    return StageCensus(
        params_dir="/o/r/1_opcompile_selected",
        output_root="/o/r",
        params_readable=True,
        inputs=ok + bad + lost + both + unpaired,
        succeeded=ok,
        failed=bad,
        no_log=lost,
        both_logs=both,
        named=tuple(named),
        run_packages=("/o/r/x.run",) if ok else (),
        unreadable=0,
        after_return=after,
        unpaired=unpaired,
        extra_logs=extra,
        unpaired_logs=tuple(f"/o/r/1_compile_log/x{i}_compile_succ.log" for i in range(extra)),
    )


ROOT = "/o/static_kernel_compile_outputs/ts20261201000000000000_pid9_outputs"


def announced(
    logs: int = 0, pre: bool = False, chosen: int | None = None
) -> tuple[AnnouncedRoot, ...]:
    return (AnnouncedRoot(ROOT, None, True, 3, logs, 0, pre, chosen),)


def cache(pre: bool = True, exists: bool = True) -> tuple[CacheFile, ...]:
    entry = CacheEntry("k" * 64, "/o/old/static_kernel_1_2.run", exists, True)
    return (
        CacheFile(
            "/o/static_kernel_compile_outputs/static_kernel_cache/CANN-9_X.json", pre, (entry,)
        ),
    )


def disk_ev(
    roots: tuple[AnnouncedRoot, ...], caches: tuple[CacheFile, ...], **kw: object
) -> Evidence:
    st_ = Stages((), 0, ("opc", "op_compiler"), True, roots, caches)
    return replace(ev(**kw), stages=st_)  # type: ignore[arg-type]


def stage(
    c: StageCensus | None = None,
    *,
    ended: bool = True,
    sig: int | None = None,
    pid: int = 7,
    argv: tuple[str, ...] = ARGV,
) -> StageRecord:
    return StageRecord(
        pid=pid,
        start_ticks=1,
        args=parse_compiler_argv(argv),
        first_seen=1.0,
        last_seen=2.0,
        ended=ended,
        exit_signal=sig,
        inputs_first_seen=3,
        census=c if c is not None else census(),
    )


def ev(
    *stages_: StageRecord,
    exit_status: int = 0,
    frozen: int | None = None,
    errors: int = 0,
    hits: int = 0,
    **kw: object,
) -> Evidence:
    facts = LauncherFacts(
        compiler_errors=tuple(
            {"rank": None, "message": ["op_compiler said no"]} for _ in range(errors)
        ),
        cache_hits=tuple({"rank": None, "path": "/c/x.run"} for _ in range(hits)),
    )
    base: dict[str, object] = {
        "launched": True,
        "ownership_recorded": True,
        "leader_ended": True,
        "leader_exit_status": exit_status,
        "tree_ended": True,
        "runner_finished": True,
        "stages": Stages(tuple(stages_), 2, ("opc", "op_compiler"), True),
        "launcher": facts,
        "frozen_jobs": frozen,
    }
    base.update(kw)
    return Evidence(**base)  # type: ignore[arg-type]


def test_a_final_stage_is_the_summary_when_no_line_was_printed() -> None:
    v = classify(ev(stage()))
    assert v.state is State.SUCCEEDED and v.summary_source == "op_compiler census"
    assert v.summary is not None and v.summary.stages == (Stage("op_compiler pid 7", 3, 3, 0),)
    assert v.effective_jobs == (2,) and v.compiled is True


def test_a_failed_stage_fails_the_attempt_even_with_exit_0() -> None:
    v = classify(ev(stage(census(ok=2, bad=1))))
    assert v.state is State.FAILED and v.exit_status == 0
    assert any("/o/r/1_compile_log/f0_compile_error.log" in r for r in v.reasons)


def test_the_launcher_error_line_alone_fails_a_naturally_returned_stack() -> None:
    v = classify(ev(errors=1))
    assert v.state is State.FAILED
    assert any("execute op_compiler error" in r and "does not turn it" in r for r in v.reasons)


def test_a_stage_killed_by_a_signal_is_never_failed() -> None:
    v = classify(ev(stage(census(ok=1, bad=2), sig=9), errors=1, exit_status=1))
    assert v.state is State.UNKNOWN
    assert any("was ended by SIGKILL" in r for r in v.reasons)


def test_not_final_reasons() -> None:
    assert not_final_reason(stage(), True) is None
    assert "has not returned naturally" in (not_final_reason(stage(), False) or "")
    assert "no census" in (not_final_reason(stage(census(after=False)), True) or "")
    lost = not_final_reason(stage(census(lost=1, both=1)), True) or ""
    assert "1 input(s) without a compile log (n0), 1 with both" in lost
    assert "argv names no -p" in (not_final_reason(stage(argv=("op_compiler",)), True) or "")


def test_disagreement_matches_stages_by_counts_not_names() -> None:
    printed = Summary(("[summary] ...",), (Stage("compile", 3, 3, 0), Stage("package", 1, 1, 0)))
    rec = Stages((stage(),), 0, (), True)
    assert disagreements(printed, rec, True) == []
    bad = Stages((stage(census(ok=2, bad=1)),), 0, (), True)
    (why,) = disagreements(printed, bad, True)
    assert "inputs=3 succeeded=2 failed=1 on disk" in why
    v = classify(ev(stage(census(ok=2, bad=1)), summary=printed))
    assert v.state is State.UNKNOWN and v.summary_source == "summary_lines"


def test_cache_hit_without_compile_succeeds_uncompiled_and_is_refused_as_evidence() -> None:
    v = classify(ev(hits=1))
    assert v.state is State.SUCCEEDED and v.compiled is False
    assert compile_evidence_refusals(v, None)[0].startswith(
        "no compile ran: a cached package was installed"
    )
    assert outcome_of(v).status == "not-comparable"
    # A launcher that returned non-zero after a hit failed on its own, as any command
    # with no compiler observed (C2.3; stand-in 2's cache-hit-then-launcher-fails): never
    # a compiler failure, and the hit is still said.
    failing = classify(ev(hits=1, exit_status=1))
    assert failing.state is State.FAILED and failing.compiled is False
    assert failing.reasons[0].startswith("C2.3: the command returned naturally with exit")
    assert "not a compiler result" in failing.reasons[0]
    assert any(r.startswith("C2.3: no compile ran: a cached package") for r in failing.reasons)
    assert not any("kept error logs are now final" in r for r in failing.reasons)
    assert headline(failing).startswith("FAILED: the command returned naturally with exit")


def test_a_silent_cache_hit_is_seen_on_disk_and_only_then() -> None:
    """Issue 19: no hit line at the default log level; the disk shows the hit or nothing."""
    v = classify(disk_ev(announced(), cache()))
    assert v.state is State.SUCCEEDED and v.compiled is False
    # The chosen inputs counted (3), or no chosen directory made (cache-compile path).
    for chosen in (3, None):
        assert classify(disk_ev(announced(chosen=chosen), cache())).compiled is False
    joined = "\n".join(v.reasons)
    assert f"the launcher announced {ROOT}" in joined and "static_kernel_1_2.run" in joined
    # Each missing piece makes it no hit: then nothing says what happened (unknown).
    for roots, caches in (
        (announced(), cache(pre=False)),  # the cache was written by this attempt
        (announced(), cache(exists=False)),  # the cached .run is gone (a recompile)
        (announced(logs=2), cache()),  # something compiled into the announced root
        (announced(pre=True), cache()),  # an earlier run's root, not this one's
        ((), cache()),  # nothing announced
        (announced(chosen=0), cache()),  # nothing chosen (all blacklisted): no lookup
        (announced(), ()),  # no cache
    ):
        other = classify(disk_ev(roots, caches))
        assert other.state is State.UNKNOWN and other.compiled is None, (roots, caches)
    said = classify(disk_ev(announced(), ()))
    assert any(f"C2.5: the launcher announced {ROOT} and dumped" in r for r in said.reasons)
    # A failing exit with a hit: the command's own failure (C2.3), not a compiler result.
    hit_failed = classify(disk_ev(announced(), cache(), exit_status=1))
    assert hit_failed.state is State.FAILED and "not a compiler result" in hit_failed.reasons[0]


HIDDEN = "/o/static_kernel_compile_outputs/ts20261202000000000001_pid9_outputs"


def hidden_root() -> AnnouncedRoot:
    return AnnouncedRoot(HIDDEN, None, True, 2, 0, 0, unannounced=True)


@pytest.mark.parametrize(
    ("roots", "made"),
    [
        ((hidden_root(),), f"the launcher made {HIDDEN} without a start line"),
        (
            (*announced(), hidden_root()),
            f"the launcher announced {ROOT} and made {HIDDEN} without a start line",
        ),
    ],
    ids=["hidden", "both"],
)
def test_a_root_no_start_line_named_is_never_said_announced(
    roots: tuple[AnnouncedRoot, ...], made: str
) -> None:
    """A hidden start line (PYTHONWARNINGS=ignore): the root is still this attempt's, but
    the reasons say what is known, made by an owned process, never "announced" (C2)."""
    for caches, state in ((cache(), State.SUCCEEDED), ((), State.UNKNOWN)):
        v = classify(disk_ev(roots, caches))
        assert v.state is state
        joined = "\n".join(v.reasons)
        assert made in joined, joined
        assert f"announced {HIDDEN}" not in joined
        zh = [in_language(r, Lang.ZH) for r in v.reasons if "without a start line" in r]
        assert zh and all("（原文）" not in z and "without" not in z for z in zh), zh
        assert all("（未打印启动行）" in z and "创建了" in z for z in zh), zh
        if len(roots) == 2:
            assert all("宣布了" in z for z in zh), zh


def test_unpaired_inputs_and_logs_are_named_and_never_succeed() -> None:
    v = classify(ev(stage(census(ok=2, unpaired=1))))
    assert v.state is State.UNKNOWN
    assert any("A (one of A_1 A_2)" in r for r in v.reasons), v.reasons
    x = classify(ev(stage(census(ok=3, extra=1))))
    assert x.state is State.UNKNOWN
    assert any("x0_compile_succ.log" in r for r in x.reasons), x.reasons


def test_a_stage_without_its_package_is_not_final() -> None:
    c = census(ok=3)
    no_run = StageCensus(**{**c.__dict__, "run_packages": ()})
    v = classify(ev(stage(no_run)))
    assert v.state is State.UNKNOWN
    assert any("no .run package was written" in r for r in v.reasons)


def test_jobs_mismatch_is_a_note_and_an_undeclared_difference() -> None:
    assert jobs_mismatch((2,), 2) is None and jobs_mismatch((2,), None) is None
    v = classify(ev(stage(), frozen=1))
    assert v.state is State.SUCCEEDED
    assert (
        "C5: frozen jobs 1, but op_compiler ran with -j 2: the launcher does not honour the "
        "frozen value (NPU_STATIC_KERNEL_COMPILE_JOBS); the control was not in effect"
    ) in v.reasons
    assert outcome_of(v, (), 1).status == "not-comparable"
    assert outcome_of(v, (), 2).status == "pass"


# -- properties -------------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=3)


@st.composite
def censuses(draw: st.DrawFn) -> StageCensus | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    return census(
        ok=draw(counts),
        bad=draw(counts) if draw(st.booleans()) else 0,
        lost=draw(counts) if draw(st.integers(0, 3)) == 0 else 0,
        both=1 if draw(st.integers(0, 5)) == 0 else 0,
        after=draw(st.integers(0, 6)) > 0,
        unpaired=1 if draw(st.integers(0, 5)) == 0 else 0,
        extra=1 if draw(st.integers(0, 5)) == 0 else 0,
    )


@st.composite
def stage_records(draw: st.DrawFn) -> StageRecord:
    return stage(
        draw(censuses()),
        ended=draw(st.integers(0, 6)) > 0,
        sig=9 if draw(st.integers(0, 6)) == 0 else None,
        pid=draw(st.integers(1, 50)),
    )


@st.composite
def no_summary_evidence(draw: st.DrawFn) -> Evidence:
    stages_ = draw(st.lists(stage_records(), min_size=0, max_size=2))
    interrupted = draw(st.integers(0, 6)) == 0
    if not stages_ and draw(st.booleans()):
        # A compile announced and no op_compiler: a hit seen on disk, or nothing.
        e = disk_ev(
            announced(logs=draw(st.sampled_from([0, 0, 1]))),
            cache(pre=draw(st.booleans()), exists=draw(st.booleans()))
            if draw(st.booleans())
            else (),
            exit_status=draw(st.sampled_from([0, 0, 1])),
            tree_ended=draw(st.integers(0, 8)) > 0,
        )
        return e
    return ev(
        *stages_,
        exit_status=draw(st.sampled_from([0, 0, 0, 1])),
        errors=1 if draw(st.integers(0, 3)) == 0 else 0,
        hits=1 if not stages_ and draw(st.booleans()) else 0,
        tree_ended=draw(st.integers(0, 8)) > 0,
        timeout_fired=interrupted,
        summary=draw(st.sampled_from([None, Summary((), ())])),
    )


def lacks_succ_log(e: Evidence) -> bool:
    stages_ = e.stages.stages if e.stages is not None else ()
    return any(
        s.census is None or s.census.succeeded != s.census.inputs or not s.census.after_return
        for s in stages_
    )


def check(e: Evidence, reached: set[str]) -> Verdict:
    v = classify(e)
    natural = natural_return(e)
    stages_ = e.stages.stages if e.stages is not None else ()
    if v.state is State.FAILED:
        # Never failed before the natural return of every observed op_compiler (C2, C1).
        assert all(returned_naturally(s, natural) for s in stages_), v.reasons
    if v.state is State.SUCCEEDED:
        assert not lacks_succ_log(e), v.reasons
    key = v.state.value
    if v.state is State.FAILED and v.exit_status == 0:
        key = "failed_with_exit_0"
    if v.state is State.SUCCEEDED and v.compiled is False:
        key = "succeeded_uncompiled"
    if v.state is State.UNKNOWN and lacks_succ_log(e) and natural:
        key = "unknown_lacking_logs"
    if v.state is State.SUCCEEDED and e.stages is not None and e.stages.caches:
        key = "succeeded_uncompiled_on_disk"
        # A hit seen on disk only with a cache from before launch naming a package.
        assert e.stages.cached_packages and not e.stages.stages, v.reasons
    if v.state is State.SUCCEEDED:
        # Never a success over an input or a log that could not be paired (C2).
        assert all(
            s.census is not None and not s.census.unpaired and not s.census.extra_logs
            for s in stages_
        ), v.reasons
    if v.compiled is False and v.state is State.FAILED:
        # A cache hit is failed only by the launcher's own non-zero natural exit, and
        # then said so: never a compiler failure (C2.3, C7).
        assert natural and e.leader_exit_status, v.reasons
        assert "not a compiler result" in v.reasons[0], v.reasons
        assert not any("kept error logs are now final" in r for r in v.reasons), v.reasons
        key = "failed_uncompiled"
    event(key)
    reached.add(key)
    return v


@pytest.mark.slow
def test_no_summary_properties_and_their_coverage() -> None:
    reached: set[str] = set()

    @settings(max_examples=600, deadline=None, database=None)
    @given(no_summary_evidence())
    def prop(e: Evidence) -> None:
        check(e, reached)

    prop()
    wanted = {
        "succeeded",
        "succeeded_uncompiled",
        "succeeded_uncompiled_on_disk",
        "failed",
        "failed_with_exit_0",
        "failed_uncompiled",
        "unknown",
        "unknown_lacking_logs",
        "interrupted",
    }
    assert wanted <= reached, f"strategy never reached {sorted(wanted - reached)}"


def test_torch_npu_2_7_jobs_rule_is_said_not_a_bare_mismatch() -> None:
    """Issue 27: two ranks under 2.7 pass -j cpu_count // LOCAL_WORLD_SIZE (2.7.1.post2
    static_kernel.py l.284-298): the note says so, from the root's layout or from the
    release preflight recorded, in English and Chinese."""
    root = "/w/aclnn_static_shape_kernel_outputs/20261203000000000001_41_outputs"
    argv = ("op_compiler", "-p", root + "/41_opcompile", "-v", "S", "-l", "info", "-j", "1")
    v = classify(ev(stage(argv=(*argv, "-o", root)), frozen=2))
    said = [r for r in v.reasons if r.startswith("C5:")]
    assert said and "torch-npu 2.7 passes -j os.cpu_count() // LOCAL_WORLD_SIZE" in said[0]
    assert "does not honour" not in said[0] and "ran with -j" not in said[0]
    zh = reason_zh(said[0])
    assert zh is not None and "LOCAL_WORLD_SIZE" in zh and "torch-npu 2.7" in zh
    # Recorded by preflight: the same words with the 2.9 root layout.
    recorded = classify(ev(stage(), frozen=1, torch_npu="2.14.0"))
    c5 = [r for r in recorded.reasons if r.startswith("C5:")]
    assert c5 and "torch-npu 2.14 passes -j os.cpu_count()" in c5[0], recorded.reasons
    assert reason_zh(c5[0]) is not None


def test_a_failure_2_7_never_printed_is_explained_by_its_release() -> None:
    """Issue 27: 2.7 logs op_compiler failures with logger.warning (2.7.1.post2
    static_kernel.py l.72), hidden at the default level: the verdict says where it read
    the failure instead; with the launcher's own line printed, nothing is added."""
    failing = stage(census(ok=2, bad=1))
    v = classify(ev(failing, torch_npu="2.7.1.post2"))
    assert v.state is State.FAILED
    note = [r for r in v.reasons if "below the default level" in r]
    assert note and reason_zh(note[0]) is not None
    assert not any("below the default level" in r for r in classify(ev(failing)).reasons)
    printed = classify(ev(failing, torch_npu="2.7.1.post2", errors=1))
    assert not any("below the default level" in r for r in printed.reasons)
