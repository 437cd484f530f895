"""Seal problems are typed and worded in both languages: a Chinese report names every
changed file in Chinese (C7: every label of a zh report in Chinese), and "unfinished"
(recover finishes it) is the problem's kind, not a word matched in its text (issue 12)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from test_seal import ended_attempt

from skgate.evidence import seal
from skgate.evidence.files import CONTROL, EVENTS, RUN_LOG, VERDICT
from skgate.evidence.seal_problem import Flaw, Phase, problem
from skgate.model.phrases import Lang
from skgate.report import load
from skgate.report import markdown as report

CJK = re.compile(r"[\u4e00-\u9fff]")
#: English words a Chinese template may keep: file and command names, a digest's name.
KEPT = {"seal", "json", "manifest", "control", "verdict", "sha", "skgate", "recover", "cleanup"}
KEPT |= {"retry"}
SAMPLE = {
    "why": "Permission denied",
    "size": "12",
    "sealed": "10",
    "named": "'0002'",
    "attempt": "/r/attempts/0001",
    "number": "3",
    "limit": "1048576",
}


@pytest.mark.parametrize("flaw", list(Flaw))
@pytest.mark.parametrize("phase", list(Phase))
def test_every_flaw_reads_in_chinese(flaw: Flaw, phase: Phase) -> None:
    keys = set(re.findall(r"\{(\w+)\}", flaw.value[0])) - {"where", "what"}
    p = problem("0001/x", flaw, phase, **{k: SAMPLE[k] for k in keys})
    zh = p.text(Lang.ZH)
    assert CJK.search(zh), zh
    # Only the values and kept names are Latin; no English sentence leaks into zh.
    bare = zh
    for value in SAMPLE.values():
        bare = bare.replace(value, "")
    latin = set(re.findall(r"[A-Za-z]{3,}", bare))
    assert latin <= KEPT, (flaw, latin - KEPT)
    assert p.text(Lang.ZH).startswith("0001/x：")
    assert str(p) == p.text(Lang.EN)


@pytest.mark.parametrize("flaw", list(Flaw))
def test_unfinished_kind_agrees_with_the_verify_cli_words(flaw: Flaw) -> None:
    """``skgate verify`` still prints UNFINISHED/CHANGED from its lines (problem_kind):
    the typed kind and that reading must never disagree."""
    keys = set(re.findall(r"\{(\w+)\}", flaw.value[0])) - {"where", "what"}
    p = problem("0001/x", flaw, Phase.SEALING, **{k: SAMPLE[k] for k in keys})
    assert (seal.problem_kind(str(p)) == "unfinished") is p.unfinished


def test_attempt_problems_keep_verify_words_and_kinds(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    with (a / RUN_LOG).open("r+b") as fh:
        fh.write(b"X")
    (a / EVENTS).unlink()
    (a / "note.txt").write_text("added", encoding="utf-8")
    found = seal.attempt_problems(a)
    assert [str(p) for p in found] == seal.verify_attempt(a)
    assert {p.flaw for p in found} == {Flaw.HASH_DIFFERS, Flaw.REMOVED, Flaw.ADDED}
    assert not any(p.unfinished for p in found)


def test_zh_report_names_a_changed_file_in_chinese(tmp_path: Path) -> None:
    a = ended_attempt(tmp_path)
    os.chmod(a / VERDICT, 0o644)
    data = json.loads((a / VERDICT).read_text(encoding="utf-8"))
    data["reasons"] = ["rewritten"]
    (a / VERDICT).write_text(json.dumps(data), encoding="utf-8")
    rep = load.build_report(a, load.default_verdict_of)
    zh = report.render(rep, Lang.ZH, "md")
    seal_part = zh.rsplit("封存\n", 1)[1]
    assert "0001/verdict.json：封存后被改动" in seal_part
    assert "changed after sealing" not in seal_part
    en = report.render(rep, Lang.EN, "md")
    assert "0001/verdict.json: changed after sealing" in en.rsplit("Seal\n", 1)[1]


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_a_changed_attempt_withholds_its_sections_instead_of_calling_them_missing(
    tmp_path: Path, fmt: str
) -> None:
    """C2.5: what the changed files say is not shown, and the report says so, rather than
    "ownership.json missing" or "an older skgate's attempt" for files that are there."""
    a = ended_attempt(tmp_path)
    before = load.build_report(a, load.default_verdict_of)
    untouched = {lang: report.render(before, lang, fmt) for lang in Lang}
    os.chmod(a / CONTROL, 0o644)
    data = json.loads((a / CONTROL).read_text(encoding="utf-8"))
    (a / CONTROL).write_text(json.dumps({**data, "note": "failed=1"}), encoding="utf-8")
    rep = load.build_report(a, load.default_verdict_of)
    for lang, shown in ((Lang.EN, "Not shown"), (Lang.ZH, "未显示的内容")):
        text = report.render(rep, lang, fmt)
        if fmt == "json":
            attempt = json.loads(text)["attempts"][0]
            assert attempt["withheld"] is True
            continue
        assert shown in text and shown not in untouched[lang]
        assert "skgate verify" in text.split(shown, 1)[1]
        for missing in ("ownership.json", "stages.json", "failed=1"):
            assert missing not in text, (lang, missing)
    assert json.loads(report.render(load.build_report(a, load.default_verdict_of), Lang.EN, "json"))
