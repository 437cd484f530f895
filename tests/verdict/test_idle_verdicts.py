"""Issue 27: every way the real launcher runs no compile is ``compiled: false`` (C2).

Never unknown and never failed once the disk shows why; the headline says "SUCCEEDED
without compiling", each reason names what was seen and how to get a real compile, in
English and Chinese. Without such evidence an attempt with no op_compiler stays unknown.
"""

from __future__ import annotations

import pytest

from skgate.model.frozen import replace
from skgate.model.idle import Idle, IdleKind
from skgate.model.launcher import LauncherFacts
from skgate.model.records import Evidence, State
from skgate.model.stages import AnnouncedRoot, Stages
from skgate.verdict.classify import classify
from skgate.verdict.words import headline, reason_zh

ROOT = "/w/static_kernel_compile_outputs/ts20261203000000000001_pid41_outputs"
CACHED = "/c/static_kernel_compile_outputs/ts20261101000000000001_pid7_outputs"

FINDINGS = {
    IdleKind.CACHED_INSTALL: (
        Idle(IdleKind.CACHED_INSTALL, CACHED, 1, ("static_kernel_1_7.run",)),
        f"cached packages from {CACHED} were installed",
    ),
    IdleKind.PRINTED_INSTALL: (
        Idle(IdleKind.PRINTED_INSTALL, "/a/opp/static_kernel/ai_core", 1, ("static_kernel_2",)),
        "package(s) static_kernel_2 were installed",
    ),
    IdleKind.NO_OPERATORS: (
        Idle(IdleKind.NO_OPERATORS, ROOT),
        f"the launcher dumped no operator into {ROOT}",
    ),
    IdleKind.ALL_BLACKLISTED: (
        Idle(IdleKind.ALL_BLACKLISTED, ROOT + "/41_opcompile_blacklist", 4),
        f"4 input(s) blacklisted to {ROOT}/41_opcompile_blacklist",
    ),
    IdleKind.EMPTY_SELECTION: (
        Idle(IdleKind.EMPTY_SELECTION, ROOT + "/41_opcompile_selected", 3),
        f"empty selection in {ROOT}/41_opcompile_selected",
    ),
}


def ev(idle: tuple[Idle, ...], exit_status: int = 0) -> Evidence:
    roots = (
        ()
        if not idle or idle[0].kind is IdleKind.CACHED_INSTALL
        else (AnnouncedRoot(ROOT, None, True, 3, 0, 0),)
    )
    return Evidence(
        launched=True,
        ownership_recorded=True,
        leader_ended=True,
        leader_exit_status=exit_status,
        tree_ended=True,
        runner_finished=True,
        stages=Stages((), 0, ("opc", "op_compiler"), True, roots, (), idle),
        launcher=LauncherFacts(),
    )


@pytest.mark.parametrize("kind", list(IdleKind))
def test_each_way_of_doing_nothing_succeeds_without_compiling(kind: IdleKind) -> None:
    idle, seen = FINDINGS[kind]
    v = classify(ev((idle,)))
    assert v.state is State.SUCCEEDED and v.compiled is False, v.reasons
    assert headline(v).startswith("SUCCEEDED without compiling"), headline(v)
    said = [r for r in v.reasons if "no compile ran" in r]
    assert len(said) == 1 and seen in said[0] and "for a real compile" in said[0], said
    zh = reason_zh(said[0])
    assert zh is not None and "没有运行编译" in zh and "如需真正编译" in zh, said[0]
    # Only an install says a cached package was installed.
    installs = (IdleKind.CACHED_INSTALL, IdleKind.PRINTED_INSTALL)
    assert ("cached package" in headline(v)) is (kind in installs)


def test_without_a_finding_the_same_run_stays_unknown() -> None:
    """C2.5: a fresh root and no op_compiler, with nothing on disk saying why."""
    v = classify(ev(()))
    assert v.state is State.UNKNOWN and v.compiled is None


def test_a_failing_command_is_its_own_failure_never_a_compiler_result() -> None:
    idle, _ = FINDINGS[IdleKind.NO_OPERATORS]
    v = classify(ev((idle,), exit_status=3))
    assert v.state is State.FAILED and v.compiled is False
    assert any("not a compiler result" in r for r in v.reasons), v.reasons


def test_a_failed_cached_install_is_never_said_installed() -> None:
    idle = replace(FINDINGS[IdleKind.CACHED_INSTALL][0], failed=("static_kernel_1_7.run",))
    v = classify(ev((idle,)))
    said = next(r for r in v.reasons if "no compile ran" in r)
    assert "were installed" not in said and "exited non-zero" in said
    assert reason_zh(said) is not None


def test_an_empty_root_after_the_launcher_said_it_skipped_is_no_graph_without_operators() -> None:
    """A Gloo probe that failed returns after making the root and before the dump
    (torch-npu 2.14.0 static_kernel.py l.336-350): nothing shows the graph was empty."""
    idle, _ = FINDINGS[IdleKind.NO_OPERATORS]
    said = "Rank 1: skipping static kernel compilation for multi card: local Gloo probe failed"
    v = classify(replace(ev((idle,)), launcher=LauncherFacts(skips=(said,))))
    assert v.state is State.UNKNOWN and v.compiled is None


def test_regress_refuses_an_idle_attempt_with_its_own_words() -> None:
    """A launcher with nothing to compile is no compile-health evidence either, and the
    refusal never says a cached package was installed when none was (C6)."""
    from skgate.verdict.stages import compile_evidence_refusals

    idle, seen = FINDINGS[IdleKind.ALL_BLACKLISTED]
    why = compile_evidence_refusals(classify(ev((idle,))), None)
    assert len(why) == 1 and seen in why[0] and "cached package" not in why[0]


def test_the_report_and_the_reach_check_say_it_as_found_in_both_languages() -> None:
    from skgate.model.phrases import Lang
    from skgate.verdict.words import idle_said

    idle, seen = FINDINGS[IdleKind.EMPTY_SELECTION]
    assert seen in idle_said(idle, Lang.EN)
    zh = idle_said(idle, Lang.ZH)
    assert zh.startswith("没有运行编译") and "选择为空" in zh
