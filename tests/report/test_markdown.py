"""Reports (report.py, cli_evidence report): C7 words, provisional census, verbatim summary."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evidence_fixtures import live_verdict_of, make_attempt
from skgate.cli import specs
from skgate.model.errors import EvidenceError
from skgate.model.frozen import replace
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.report import load
from skgate.report import markdown as report
from skgate.verdict.lint import lint_text

BANNED = ("compile failed", "编译失败")
ALL_STATES = list(State)


def render(path: Path, lang: Lang, fmt: str = "md", verdict_of: object = None) -> str:
    rep = load.build_report(path, verdict_of or load.default_verdict_of)  # type: ignore[arg-type]
    return report.render(rep, lang, fmt)


def test_failed_uses_final_failure_words_and_final_census(tmp_path: Path) -> None:
    a = make_attempt(tmp_path, 1, State.FAILED)
    en = render(a, Lang.EN)
    zh = render(a, Lang.ZH)
    assert "failed: naturally returned final compiler failures" in en
    assert "失败：自然返回的最终编译失败" in zh
    assert "Artifact census (final)" in en
    assert "产物统计 (最终)" in zh
    # The [summary] lines verbatim (C3).
    assert "[summary] stage=compile inputs=4 succeeded=3 failed=1" in en
    assert "[summary] stage=package inputs=1 succeeded=0 failed=1" in zh


@pytest.mark.parametrize("lang", list(Lang))
def test_interrupted_says_clean_retry_and_never_failed(tmp_path: Path, lang: Lang) -> None:
    a = make_attempt(tmp_path, 1, State.INTERRUPTED)
    text = render(a, lang)
    for banned in BANNED:
        assert banned not in text
    if lang == "en":
        assert "interrupted: top-level timeout or external interruption" in text
        assert "A clean retry is required before judging compiler support" in text
        assert "Artifact census (provisional)" in text
        assert "provisional error-named files" in text
    else:
        assert "中断：顶层超时/外部中断" in text
        assert "干净重试" in text
        assert "产物统计 (暂时性)" in text
        assert "暂时性 error 命名文件" in text
    assert f"skgate retry {a}" in text
    # Timeline: launch, the timeout, the signal the runner sent, the exit.
    needles = {
        "en": ("pid 500, pgid 500", "SIGTERM (target -500, reason timeout)", "signal SIGTERM"),
        "zh": ("pid 500, pgid 500", "SIGTERM (目标 -500，原因 超时)", "信号 SIGTERM"),
    }
    for needle in needles[lang]:
        assert needle in text


def test_in_progress_census_is_provisional(tmp_path: Path) -> None:
    a = make_attempt(tmp_path, 1, State.IN_PROGRESS)
    en = render(a, Lang.EN, verdict_of=live_verdict_of)
    zh = render(a, Lang.ZH, verdict_of=live_verdict_of)
    assert "in progress" in en
    assert "error-named files 3: provisional error-named files" in en
    assert "(taken while compilation was live)" in en
    assert "进行中" in zh
    assert "暂时性 error 命名文件" in zh
    for banned in BANNED:
        assert banned not in en + zh
    # Observations are collapsed: the first and the last, with the total.
    assert "(5 observations in all)" in en


def test_unknown_lists_missing_evidence(tmp_path: Path) -> None:
    a = make_attempt(tmp_path, 1, State.UNKNOWN)
    en = render(a, Lang.EN)
    assert "## Missing evidence" in en
    assert "- ownership manifest (ownership.json)" in en
    assert "- terminal status (the runner's final record)" in en
    assert "ownership manifest (ownership.json) is missing" in en
    zh = render(a, Lang.ZH)
    assert "缺失的证据" in zh
    for banned in BANNED:
        assert banned not in en + zh


def test_succeeded_and_not_started(tmp_path: Path) -> None:
    ok = render(make_attempt(tmp_path, 1, State.SUCCEEDED, errors=0, runs=1), Lang.EN)
    assert "**verdict: succeeded**" in ok
    ns = render(make_attempt(tmp_path, 2, State.NOT_STARTED), Lang.ZH)
    assert "未启动" in ns
    assert "不是编译结果" in ns


@pytest.mark.parametrize("state", ALL_STATES)
@pytest.mark.parametrize("lang", list(Lang))
def test_every_report_passes_the_linter(tmp_path: Path, state: State, lang: Lang) -> None:
    # The report must obey the same rules it asks of others (C7): lint it both with and
    # without the attempt's verdict.
    a = make_attempt(tmp_path, 1, state)
    rep = load.build_report(
        a, live_verdict_of if state is State.IN_PROGRESS else load.default_verdict_of
    )
    text = report.render(rep, lang)
    assert lint_text(text, "r.md", rep.attempts[0].verdict) == []
    assert lint_text(text, "r.md") == []
    if state is not State.FAILED:
        for banned in BANNED:
            assert banned not in text


def test_root_report_links_retry_as_valid_clean_retry(tmp_path: Path) -> None:
    first = make_attempt(tmp_path, 1, State.INTERRUPTED)
    make_attempt(tmp_path, 2, State.SUCCEEDED, retry_of=str(first), errors=0, runs=1)
    make_attempt(tmp_path, 3, State.NOT_STARTED)
    en = render(tmp_path, Lang.EN)
    zh = render(tmp_path, Lang.ZH)
    lines = en.splitlines()
    i1 = lines.index(
        "- 0001: interrupted: top-level timeout or external interruption; "
        "retried by 0002 (valid clean-retry result: succeeded)"
    )
    i2 = lines.index("- 0002: valid clean-retry result: succeeded; retry of 0001")
    assert i1 < i2  # oldest first
    assert en.index("## skgate report: attempt 0001") < en.index("## skgate report: attempt 0002")
    assert "有效干净重试结果：成功" in zh
    data = json.loads(render(tmp_path, Lang.EN, "json"))
    assert data["kind"] == "root"
    by_id = {x["attempt"]: x for x in data["attempts"]}
    assert by_id["0002"]["retry_of_attempt"] == "0001"
    assert by_id["0002"]["clean_retry_result"] is True
    assert by_id["0001"]["retried_by"] == ["0002"]
    assert by_id["0001"]["clean_retry_result"] is False


def test_interrupted_retry_is_not_a_valid_result(tmp_path: Path) -> None:
    first = make_attempt(tmp_path, 1, State.INTERRUPTED)
    make_attempt(tmp_path, 2, State.INTERRUPTED, retry_of=str(first))
    en = render(tmp_path, Lang.EN)
    assert "valid clean-retry result" not in en


def test_summary_lines_verbatim_even_with_backticks(tmp_path: Path) -> None:
    lines = (
        "[summary] stage=compile inputs=4 succeeded=4 failed=0",
        "[summary] note ```odd``` \\xff  spaces  ",
    )
    a = make_attempt(tmp_path, 1, State.SUCCEEDED, summary_lines=lines, errors=0, runs=1)
    text = render(a, Lang.EN)
    body = text.split("## Final summary lines (verbatim)\n\n", 1)[1].splitlines()
    assert body[0] == "````text"
    assert tuple(body[1:3]) == lines
    assert body[3] == "````"


def test_json_report_shape(tmp_path: Path) -> None:
    a = make_attempt(tmp_path, 1, State.FAILED)
    data = json.loads(render(a, Lang.ZH, "json"))
    assert data["schema"] == "skgate.report/1"
    assert data["kind"] == "attempt"
    (att,) = data["attempts"]
    assert att["state"] == "failed"
    assert att["words"]["zh"] == "失败：自然返回的最终编译失败"
    assert att["census_label"] == "final"
    assert att["summary_lines"][0].startswith("[summary] stage=compile")
    assert att["verdict"]["schema"] == "skgate.verdict/1"


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        ("truncate", "not valid JSON"),
        ("version", "unsupported schema version"),
        ("shape", "field 'argv'"),
    ],
)
def test_damaged_evidence_is_a_one_line_error(tmp_path: Path, damage: str, needle: str) -> None:
    a = make_attempt(tmp_path, 1, State.FAILED)
    control = a / "control.json"
    data = json.loads(control.read_text())
    if damage == "truncate":
        control.write_text(control.read_text()[:40])
    elif damage == "version":
        control.write_text(json.dumps({**data, "schema": "skgate.control/7"}))
    else:
        del data["request"]["argv"]
        control.write_text(json.dumps(data))
    with pytest.raises(EvidenceError) as info:
        load.build_report(a)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_cli_report_writes_atomically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    make_attempt(tmp_path, 1, State.INTERRUPTED)
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    specs.SPECS["report"](sub)
    out = tmp_path / "out" / "r.md"
    out.parent.mkdir()
    out.write_text("old content that is much longer than nothing\n" * 100)
    args = parser.parse_args(["report", str(tmp_path), "--lang", "zh", "-o", str(out), "--force"])
    assert args.handler(args) == 0
    assert out.read_text(encoding="utf-8").startswith("# skgate 报告：证据根目录")
    assert "old content" not in out.read_text(encoding="utf-8")
    assert os.listdir(out.parent) == ["r.md"]  # no temp file left behind
    args = parser.parse_args(["report", str(tmp_path / "attempts" / "0001")])
    assert args.handler(args) == 0
    assert "# skgate report: attempt 0001" in capsys.readouterr().out


def _report_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from skgate.cli.main import main

    capsys.readouterr()
    code = main(["report", *argv])
    err = capsys.readouterr().err
    return code, err


def test_report_output_never_touches_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Why (audit finding 3): -o onto a sealed evidence file replaced it, so verify said
    # CHANGED and the recorded verdict was gone. Evidence is append-only: -o must refuse
    # any target inside an attempt directory or attempts/, even with --force.
    from skgate.evidence import seal

    root = tmp_path / "runs"
    a = make_attempt(root, 1, State.FAILED)
    seal.seal_attempt(a)
    sealed = seal.verify(a)  # (only "not in the ledger": the fixture keeps no ledger)
    assert not any("changed" in p for p in sealed)
    (root / "ledger.jsonl").write_bytes(b"")  # (the fixture keeps no ledger lines)
    before = {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()}
    link = tmp_path / "link"
    link.symlink_to(a)
    targets = [
        a / "verdict.json",  # an existing evidence file
        a / "new-report.md",  # a new file inside the attempt
        root / "attempts" / "0002",  # would block the next allocation
        root / "attempts" / "x" / ".." / "0001" / "seal.json",  # through '..'
        link / "verdict.json",  # through a symbolic link
        root / "ledger.jsonl",  # the root's hash-chained ledger
    ]
    for target in targets:
        for extra in ((), ("--force",)):
            code, err = _report_main(capsys, str(root), "-o", str(target), *extra)
            assert code == 2, (target, extra)
            assert err.count("\n") == 1, err
            assert "evidence" in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()} == before
    assert not (root / "attempts" / "0002").exists()
    assert (root / "ledger.jsonl").read_bytes() == b""
    assert seal.verify(a) == sealed


def test_report_output_refuses_existing_file_without_force_and_directories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Why (audit finding 3): -o silently replaced any existing file, and a directory gave
    # a traceback with exit 1 ("failed"). Now: refuse unless --force; one line, exit 2.
    root = tmp_path / "runs"
    make_attempt(root, 1, State.FAILED)
    mine = tmp_path / "notes.md"
    mine.write_text("my notes\n", encoding="utf-8")
    code, err = _report_main(capsys, str(root), "-o", str(mine))
    assert code == 2
    assert "already exists; pass --force" in err and err.count("\n") == 1
    assert mine.read_text(encoding="utf-8") == "my notes\n"
    for extra in ((), ("--force",)):
        code, err = _report_main(capsys, str(root), "-o", str(tmp_path), *extra)
        assert code == 2
        assert "is a directory" in err and err.count("\n") == 1
    code, err = _report_main(capsys, str(root), "-o", str(tmp_path / "no" / "dir" / "r.md"))
    assert code == 2
    assert "cannot write there" in err and err.count("\n") == 1
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):  # root ignores modes
            code, err = _report_main(capsys, str(root), "-o", str(locked / "r.md"))
            assert code == 2
            assert "cannot write there" in err and err.count("\n") == 1
    finally:
        locked.chmod(0o700)
    code, _ = _report_main(capsys, str(root), "-o", str(mine), "--force")
    assert code == 0
    assert mine.read_text(encoding="utf-8").startswith("# skgate report: evidence root")
    fresh = tmp_path / "fresh.md"
    code, _ = _report_main(capsys, str(root), "-o", str(fresh))
    assert code == 0
    assert fresh.read_text(encoding="utf-8").startswith("# skgate report: evidence root")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    from skgate.cli.main import main

    assert main(["report", "--help"]) == 0
    helptext = " ".join(capsys.readouterr().out.split())
    assert "--force" in helptext and "refuses an existing FILE unless --force" in helptext


def test_cli_main_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from skgate.cli.main import main

    a = make_attempt(tmp_path, 1, State.FAILED)
    assert main(["report", str(a), "--format", "json"]) == 0
    json.loads(capsys.readouterr().out)
    (a / "verdict.json").unlink()
    (a / "control.json").write_text("{")
    assert main(["report", str(a)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "not valid JSON" in err
    assert main(["report", str(tmp_path / "nowhere")]) == 2


def test_incomplete_census_is_said_in_both_languages(tmp_path: Path) -> None:

    from skgate.report.load import load_attempt
    from skgate.report.markdown import _md_census

    att = make_attempt(tmp_path, 1, State.SUCCEEDED)
    ev = load_attempt(att)
    assert ev.census is not None
    ev = replace(ev, census=replace(ev.census, unreadable=2))
    assert any("incomplete: 2" in line for line in _md_census(ev, Lang.EN, "##"))
    assert any("2 个目录无法读取" in line for line in _md_census(ev, Lang.ZH, "##"))
