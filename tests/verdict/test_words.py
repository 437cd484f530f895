"""The words people read: every classifier reason and missing item exists in Chinese."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from test_classify import evidence as evidence_strategy

from skgate.model.frozen import replace
from skgate.model.phrases import Lang
from skgate.model.records import Evidence
from skgate.verdict.classify import classify
from skgate.verdict.lint import lint_text
from skgate.verdict.words import duration, in_language, missing_zh, reason_zh


@pytest.mark.slow
@settings(max_examples=300)
@given(evidence_strategy())
def test_every_reason_the_classifier_gives_has_a_chinese_form(ev: Evidence) -> None:
    verdict = classify(ev)
    for reason in verdict.reasons:
        if reason in ev.not_started_reasons:
            continue  # preflight's own words, carried verbatim (shown as the original)
        zh = reason_zh(reason)
        assert zh is not None, reason
        rule = reason.split(":", 1)[0]
        if re.fullmatch(r"C\d(\.\d)?", rule):
            assert zh.startswith(rule)  # the rule id stays first
    for item in verdict.missing:
        assert missing_zh(item) is not None, item


@pytest.mark.slow
@settings(max_examples=200)
@given(evidence_strategy())
def test_chinese_reasons_pass_the_report_linter_for_their_verdict(ev: Evidence) -> None:
    verdict = classify(ev)
    text = "\n".join(f"- {in_language(r, Lang.ZH)}" for r in verdict.reasons)
    assert lint_text(text, "r.md", verdict) == []


def test_untranslated_text_is_shown_as_the_original() -> None:
    assert in_language("hook found at /x", Lang.ZH) == "hook found at /x（原文）"
    assert in_language("hook found at /x", Lang.EN) == "hook found at /x"


def test_reasons_of_rare_evidence_have_a_chinese_form() -> None:

    from test_classify import census, natural

    cases = [
        natural(census=replace(census(error=1, run=0), unreadable=2)),
        natural(census=replace(census(), preexisting=3)),
        natural(escaped_total=2, escaped_alive=1),
        Evidence(launched=True, journal_missing=True),
        Evidence(launched=False),
        Evidence(launched=False, runner_alive=True, waiting_for=("foreign opc[7]",)),
        natural(leader_exit_signal=15, external_signals=(15,), stop_reasons=("budget",)),
    ]
    for ev in cases:
        verdict = classify(ev)
        for reason in verdict.reasons:
            assert reason_zh(reason) is not None, reason
        for item in verdict.missing:
            assert missing_zh(item) is not None, item


def test_health_statements_have_a_chinese_form() -> None:
    from skgate.model.outcomes import HealthOutcome
    from skgate.regress.health import Check, HealthResult

    def result(kind: str) -> HealthResult:
        return HealthResult(
            result=HealthOutcome(kind),
            reference="r/attempts/0001",
            attempt=None,
            root="h",
            declared=(),
            checks=(Check("exit status 0", kind == "pass", ""),),
            differences=(),
            state=None,
            reasons=("undeclared difference in env.X",),
        )

    for kind in ("pass", "fail", "blocked"):
        zh = reason_zh(result(kind).statement())
        assert zh is not None, kind
        assert ("可以接受" in zh) == (kind == "pass")


@pytest.mark.parametrize(
    ("seconds", "en", "zh"),
    [
        (45, "45 s", "45秒"),
        (2.5, "2.5 s", "2.5秒"),
        (600, "10 min", "10分钟"),
        (7199.8, "2 h", "2小时"),
        (3 * 86400, "3 d", "3天"),
        (1e30, "over a year", "超过一年"),
    ],
)
def test_durations_read_as_people_say_them(seconds: float, en: str, zh: str) -> None:
    # A huge timeout (1e30 s is how "never" is often spelt) never shows as "1e+30 s".
    assert duration(seconds, Lang.EN) == en
    assert duration(seconds, Lang.ZH) == zh


def test_translated_reasons_and_missing_items_are_shown_in_chinese() -> None:
    """Found by mutation testing: in_language must use the tables, per kind."""
    reason = "C2.2: the compiler stack returned naturally with exit status 0"
    assert in_language(reason, Lang.ZH) == "C2.2：编译栈自然返回，退出码为 0"
    assert in_language(reason, Lang.EN) == reason
    item = "event journal (events.jsonl)"
    assert in_language(item, Lang.ZH, kind="missing") == "事件日志（events.jsonl）"
    assert in_language(item, Lang.ZH) == f"{item}（原文）"  # a missing item is not a reason
    assert in_language(reason, Lang.ZH, kind="missing") == f"{reason}（原文）"


def test_a_launcher_that_failed_after_its_stages_succeeded_is_not_a_compiler_failure() -> None:
    """Stand-in 2's launcher-exits-nonzero: every input of the stage succeeded, then the
    launcher returned 1. Failed (C2.3), in words that never say "compiler failures" (C7),
    and every reason in Chinese."""
    from test_stage_rules import census, ev, stage

    from skgate.model.records import State
    from skgate.verdict.words import Kind, headline, kind_of, state_words

    v = classify(ev(stage(census(ok=2)), exit_status=1))
    assert v.state is State.FAILED and kind_of(v) is Kind.LAUNCHER, v.reasons
    assert v.reasons[0].startswith("C2.3: the launcher returned naturally with exit status 1")
    assert "compiler failures" not in headline(v) and "not a compiler failure" in headline(v)
    assert not any("kept error logs are now final" in r for r in v.reasons)
    zh = state_words(v, Lang.ZH)
    assert "启动器" in zh and "不是编译失败" in zh
    for reason in v.reasons:
        assert reason_zh(reason) is not None, reason
