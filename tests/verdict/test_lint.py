"""The report linter (lint.py, lint-report): a corpus of good and bad sentences, en and zh."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from evidence_fixtures import make_attempt
from skgate.cli import specs
from skgate.model.records import Cause, State, Verdict
from skgate.verdict.lint import (
    RULE_ERROR_FILES,
    RULE_FAILURE,
    RULE_HANG,
    RULE_HANG_AGE,
    lint_text,
)

BAD: list[tuple[str, str]] = [
    # C7: failure claims without a naturally returned failure.
    ("The compile failed because static_kernel_X_compile_error.log exists.", RULE_FAILURE),
    ("Compilation failed for HcPre.", RULE_FAILURE),
    ("Operator HcPre failed to compile.", RULE_FAILURE),
    ("The operator HcPre is not supported by the compiler.", RULE_FAILURE),
    ("HcPre is an unsupported operator.", RULE_FAILURE),
    ("静态编译失败了。", RULE_FAILURE),
    ("算子 HcPre 编译失败。", RULE_FAILURE),
    ("该环境下算子不支持。", RULE_FAILURE),
    # C1: error-named files without the provisional label.
    ("There are 12 error logs under the outputs directory.", RULE_ERROR_FILES),
    ("Found static_kernel_X_d0_compile_error.log in the build dir.", RULE_ERROR_FILES),
    ("输出目录里有 12 个 error 命名文件。", RULE_ERROR_FILES),
    ("发现错误日志 static_kernel_X_compile_error.log。", RULE_ERROR_FILES),
    # C1: hang claims resting on age or quiet output.
    ("opc has been running for 40 minutes, so it hangs.", RULE_HANG_AGE),
    ("The compiler is stuck: no output since 10:02.", RULE_HANG_AGE),
    ("op_compiler is hung, CPU is idle.", RULE_HANG_AGE),
    ("opc 运行了两个小时，已经卡死。", RULE_HANG_AGE),
    ("没有新的日志输出，编译卡住了。", RULE_HANG_AGE),
    # C2: hang claims with no basis at all.
    ("The static compile stalled.", RULE_HANG),
    ("编译进程挂起了。", RULE_HANG),
]

GOOD: list[str] = [
    "The attempt is in progress; observe read-only and kill nothing.",
    "Verdict: failed: naturally returned final compiler failures.",
    "After natural return, compile failed with exit status 1.",
    "It ended by top-level timeout or external interruption; this is not a compile failure.",
    "There are 3 provisional error-named files; they are not evidence of failure.",
    "12 error logs are provisional while compilation is live.",
    "After natural return the error logs are final compiler evidence.",
    "Valid clean-retry result: succeeded.",
    "Process age is not hang evidence, and a quiet log is not a hang either.",
    "The compiler is not stuck; it is in progress.",
    'Never write "compile failed" because a provisional error-named file existed.',
    "Do not write `compile failed` for an interrupted attempt.",
    "结论：自然返回的最终编译失败。",
    "顶层超时/外部中断：不是编译失败，需要干净重试。",
    "有 3 个暂时性 error 命名文件。",
    "进程运行时间不是卡死的证据，没有卡住。",
    "有效干净重试结果：成功。",
    "不要写「编译失败」。",
    "The frozen top-level timeout fired after 7200 s.",
]


@pytest.mark.parametrize(("sentence", "rule"), BAD)
def test_bad_sentences_are_flagged(sentence: str, rule: str) -> None:
    rules = [f.rule for f in lint_text(sentence, "r.md")]
    assert rule in rules, (sentence, rules)


@pytest.mark.parametrize("sentence", GOOD)
def test_good_sentences_are_clean(sentence: str) -> None:
    assert lint_text(sentence, "r.md") == []


def test_code_fences_are_quoted_evidence() -> None:
    text = "Summary lines:\n```text\n[summary] compile failed: 0 hang\n```\nAll fine.\n"
    assert lint_text(text) == []


def test_attempt_verdict_decides() -> None:
    interrupted = Verdict(State.INTERRUPTED, Cause.TIMEOUT, ("x",), timeout_fired=True)
    failed = Verdict(State.FAILED, None, ("x",), natural_return=True, exit_status=1)
    claim = "naturally returned final compiler failures: compile failed"
    # Wording alone cannot turn an interrupted attempt into a failure.
    assert [f.rule for f in lint_text(claim, "r.md", interrupted)] == [RULE_FAILURE]
    assert lint_text(claim, "r.md", failed) == []
    # After a naturally returned failure, error logs are final evidence: no label needed.
    assert lint_text("See the 3 error logs.", "r.md", failed) == []
    final = "The error logs are final compiler evidence."
    assert [f.rule for f in lint_text(final, "r.md", interrupted)] == [RULE_ERROR_FILES]


def test_finding_format_and_line_numbers() -> None:
    text = "fine line\n\ncompile failed\n"
    (f,) = lint_text(text, "notes/r.md")
    assert f.format() == (
        f"notes/r.md:3: {RULE_FAILURE} claims a compile failure without a naturally returned "
        "failure (C7: only 'naturally returned final compiler failures' / "
        "自然返回的最终编译失败 after natural return)"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    specs.SPECS["lint-report"](parser.add_subparsers())
    return parser


def test_cli_lint_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.md"
    good.write_text("\n".join(GOOD) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.md"
    bad.write_text("\n".join(s for s, _ in BAD) + "\n", encoding="utf-8")
    args = _parser().parse_args(["lint-report", str(good)])
    assert args.handler(args) == 0
    assert capsys.readouterr().out == ""
    args = _parser().parse_args(["lint-report", str(good), str(bad)])
    assert args.handler(args) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) >= len(BAD)
    assert out[0].startswith(f"{bad}:1: {RULE_FAILURE} ")


def test_cli_lint_with_attempt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_attempt(tmp_path, 1, State.INTERRUPTED)
    f = tmp_path / "r.md"
    f.write_text("naturally returned final compiler failures\n", encoding="utf-8")
    args = _parser().parse_args(["lint-report", str(f), "--attempt", str(a)])
    assert args.handler(args) == 1
    assert "'interrupted'" in capsys.readouterr().out
