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

from skgate.evidence import ledger, seal
from skgate.evidence.files import CONTROL, EVENTS, RUN_LOG, VERDICT
from skgate.evidence.seal_problem import Flaw, Odd, Phase, SealProblem, problem
from skgate.model.phrases import Lang
from skgate.report import load
from skgate.report import markdown as report

CJK = re.compile(r"[\u4e00-\u9fff]")
#: English words a Chinese template may keep: file and command names, a digest's name.
KEPT = {"seal", "json", "manifest", "control", "verdict", "sha", "skgate", "recover", "cleanup"}
KEPT |= {"retry", "JSON"}
SAMPLE = {
    "why": "Permission denied",
    "size": "12",
    "sealed": "10",
    "named": "'0002'",
    "attempt": "/r/attempts/0001",
    "number": "3",
    "limit": "1048576",
    "name": "0007",
    "root": "/r",
    "schema": "skgate.ledger/1",
    "target": "/elsewhere/attempts/0001",
    "count": "2",
    "names": "verdict.json",
}


def sample(flaw: Flaw, phase: Phase = Phase.SEALING, odd: Odd = Odd.LINK_TO) -> SealProblem:
    """A problem of this kind with the sample values its words name."""
    keys = set(re.findall(r"\{(\w+)\}", flaw.value[0])) - {"where", "what"}
    values: dict[str, object] = {k: SAMPLE[k] for k in keys - {"odd"}}
    if "odd" in keys:
        values |= {"odd": odd, "target": SAMPLE["target"]}
    return problem("0001/x", flaw, phase, **values)


@pytest.mark.parametrize("flaw", list(Flaw))
@pytest.mark.parametrize("phase", list(Phase))
def test_every_flaw_reads_in_chinese(flaw: Flaw, phase: Phase) -> None:
    p = sample(flaw, phase)
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


#: The kinds ``skgate recover`` finishes (a runner, cleanup, retry or ledger append that
#: died part-way); every other kind is a change (issue 12: never confused).
UNFINISHED = {
    Flaw.NO_CONTROL,
    Flaw.SEALING_INTERRUPTED,
    Flaw.NEVER_FINISHED,
    Flaw.SCENE_UNFINISHED,
    Flaw.SCENE_TEMP,
    Flaw.SEAL_TEMP,
    Flaw.LEDGER_TORN,
    Flaw.LEDGER_NO_END,
    Flaw.SCENE_NOT_INDEXED,
}

#: Each kind's English, as ``skgate verify`` printed it before the ledger's problems were
#: typed (byte for byte: tests and docs quote these lines), with the sample values.
ENGLISH = {
    Flaw.REMOVED: "0001/x: removed after sealing",
    Flaw.UNREADABLE_WHY: "0001/x: unreadable (Permission denied)",
    Flaw.UNREADABLE: "0001/x: unreadable",
    Flaw.REPLACED: "0001/x: replaced by a non-regular file after sealing",
    Flaw.RESIZED: "0001/x: changed after sealing (size 12, sealed 10)",
    Flaw.HASH_DIFFERS: "0001/x: changed after sealing (sha256 differs)",
    Flaw.MANIFEST_BAD: "0001/x: Permission denied",
    Flaw.OTHER_ATTEMPT: "0001/x: names attempt '0002' (copied from elsewhere?)",
    Flaw.SEAL_NOT_REGULAR: "0001/x: not a regular file",
    Flaw.SCENE_NO_MANIFEST: "0001/x: scene added after sealing has no manifest.json",
    Flaw.LINK_CHANGED: "0001/x: preserved link changed or removed",
    Flaw.ADDED: "0001/x: added after sealing",
    Flaw.NOT_REGULAR: "0001/x: not a regular file (evidence never holds links)",
    Flaw.OVERLONG: (
        "0001/x: line 3 is longer than 1048576 bytes (a damaged record, refused and never read)"
    ),
    Flaw.CONTROL_DAMAGED: (
        "0001/x: damaged and not sealed (Permission denied); it was altered, or written by a "
        "skgate without whole-file writes: inspect it by hand"
    ),
    Flaw.NO_CONTROL: (
        "0001/x: unfinished: no control.json (the runner died before freezing its controls, "
        "or it was removed); run 'skgate recover /r/attempts/0001'"
    ),
    Flaw.SEALING_INTERRUPTED: (
        "0001/x: interrupted while sealing: it has a verdict but no seal.json (the runner "
        "died before sealing); run 'skgate recover /r/attempts/0001'"
    ),
    Flaw.DISOWNED: (
        "0001/x: verdict.json written by another process while the run ran (its runner found "
        "them at its final names, wrote none of its own and sealed nothing); not recovered: a "
        "seal would vouch for evidence its runner did not write"
    ),
    Flaw.UNRECORDED: (
        "0001/x: verdict.json is not the verdict its runner recorded (the runner is gone and "
        "its journal records no verdict with this content: copied from another attempt, "
        "edited, or written by hand?); not recovered: a seal would vouch for evidence its "
        "runner did not write"
    ),
    Flaw.NEVER_FINISHED: (
        "0001/x: never finished: no verdict.json and its runner is gone (it died before the "
        "verdict was written); run 'skgate recover /r/attempts/0001'"
    ),
    Flaw.SCENE_UNFINISHED: (
        "0001/x: unfinished: a scene without its manifest.json (a cleanup or retry was "
        "interrupted while preserving it); run 'skgate recover /r/attempts/0001'"
    ),
    Flaw.SCENE_TEMP: (
        "0001/x: unfinished: a temporary file left when a cleanup or retry was interrupted "
        "while preserving a scene; run 'skgate recover /r/attempts/0001'"
    ),
    Flaw.SEAL_TEMP: (
        "0001/x: a temporary file left when the runner was interrupted while sealing (never "
        "evidence); run 'skgate recover /r/attempts/0001'"
    ),
    Flaw.READ_THROUGH_LINK: (
        "0001/x: is a symbolic link (to /elsewhere/attempts/0001); evidence is never read "
        "through a link"
    ),
    Flaw.ATTEMPT_THROUGH_LINK: (
        "0001/x: is a symbolic link (to /elsewhere/attempts/0001); an attempt is never read "
        "or recovered through a link"
    ),
    Flaw.LEDGER_THROUGH_LINK: (
        "0001/x: is a symbolic link (to /elsewhere/attempts/0001); the ledger is never read "
        "through a link"
    ),
    Flaw.LEDGER_LINE_TOO_LONG: "0001/x: line 3 is longer than 1048576 bytes (damaged, not read)",
    Flaw.LEDGER_NOT_JSON: "0001/x: line 3 is not a JSON entry (torn or edited)",
    Flaw.LEDGER_WRONG_SCHEMA: "0001/x: line 3 is not a 'skgate.ledger/1' entry",
    Flaw.LEDGER_CHAIN_BROKEN: (
        "0001/x: line 3 breaks the hash chain (the line before it was changed, removed or "
        "reordered)"
    ),
    Flaw.LEDGER_TORN: (
        "0001/x: line 3 is torn: an append stopped before its line end (its writer was "
        "killed or the disk filled) and no entry depends on it; run 'skgate recover /r' to "
        "cut it back"
    ),
    Flaw.INDEXED_GONE: "0001/x: attempt 0007 is indexed but its directory is gone",
    Flaw.INDEXED_OTHER: (
        "0001/x: attempt 0007 is indexed, but its directory holds another attempt's evidence "
        "(its journal names another runner than the ledger: copied from another root?)"
    ),
    Flaw.LEDGER_SEAL_REMOVED: "0001/x: removed (the ledger recorded it)",
    Flaw.LEDGER_REMOVED: (
        "0001/x: removed, though 2 sealed attempt(s) of this root were indexed in it (the "
        "first run into a root creates it, and nothing of skgate removes it)"
    ),
    Flaw.LEDGER_DIFFERS: "0001/x: differs from the one the ledger recorded",
    Flaw.NOT_IN_LEDGER: "0001/x: not in the ledger (added by hand?)",
    Flaw.SEAL_NOT_RECORDED: "0001/x: not recorded in the ledger (re-made?)",
    Flaw.LEDGER_NO_END: (
        "0001/x: interrupted while sealing: seal.json matches the files but the ledger has "
        "no end entry; run 'skgate recover /r/attempts/0001' to index it"
    ),
    Flaw.SCENE_NOT_INDEXED: (
        "0001/x: unfinished: not in the ledger (a cleanup or retry was interrupted before "
        "indexing it); run 'skgate recover /r/attempts/0001'"
    ),
}


@pytest.mark.parametrize("flaw", list(Flaw))
def test_every_kind_has_its_class_and_both_wordings(flaw: Flaw) -> None:
    """``skgate verify`` prints UNFINISHED or CHANGED from the kind alone (no word of the
    line is matched): an unfinished kind says to run ``skgate recover`` in both languages,
    a change never does."""
    p = sample(flaw)
    assert p.unfinished is (flaw in UNFINISHED)
    assert str(p) == p.text(Lang.EN) == ENGLISH[flaw]
    zh = p.text(Lang.ZH)
    assert CJK.search(zh) and zh != str(p)
    for text in (str(p), zh):
        assert ("'skgate recover " in text) is p.unfinished, text


@pytest.mark.parametrize("odd", list(Odd))
def test_what_stands_in_place_of_evidence_is_worded_in_both_languages(odd: Odd) -> None:
    p = sample(Flaw.ATTEMPT_THROUGH_LINK, odd=odd)
    english = {
        Odd.LINK_TO: "a symbolic link (to /elsewhere/attempts/0001)",
        Odd.LINK: "a symbolic link",
        Odd.NOT_DIR: "not a directory",
        Odd.NOT_REGULAR: "not a regular file",
    }[odd]
    assert str(p) == f"0001/x: is {english}; an attempt is never read or recovered through a link"
    zh = p.text(Lang.ZH)
    assert english not in zh and "symbolic" not in zh and CJK.search(zh.split("；")[0])


def test_a_matrix_arm_says_its_root_first_in_both_languages(tmp_path: Path) -> None:
    for arm in ("a", "b"):
        ended_attempt(tmp_path / "runs" / arm, record=False)
    found = seal.find_problems(tmp_path)
    assert [str(p) for p in found] == [
        "runs/a: 0001: not in the ledger (added by hand?)",
        "runs/b: 0001: not in the ledger (added by hand?)",
    ]
    assert found[0].text(Lang.ZH) == "runs/a：0001：不在账本中（手工加入？）"


def test_the_verify_cli_prints_each_kind_from_the_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One root with an unfinished and a changed problem at each level: the attempt's, the
    ledger's and its cross-references; UNFINISHED/CHANGED come from the kinds."""
    from conftest import run_skgate

    root = tmp_path / "r"
    changed = ended_attempt(root)
    (changed / "note.txt").write_text("added", encoding="utf-8")
    unsealed = ended_attempt(root)
    os.unlink(unsealed / "seal.json")  # the ledger recorded it: a change
    died = ledger.allocate(root)  # a runner killed before freezing its controls: unfinished
    (died / EVENTS).write_text('{"schema":"skgate.event/1","event":"created"}\n')
    with (root / "ledger.jsonl").open("ab") as fh:
        fh.write(b'{"schema":')  # torn: unfinished
    monkeypatch.chdir(tmp_path)
    found = seal.find_problems(Path("r"))
    res = run_skgate("verify", "r", cwd=tmp_path)
    assert res.returncode == 1
    assert res.stdout.splitlines() == [
        f"{'UNFINISHED' if p.unfinished else 'CHANGED'}: {p}" for p in found
    ]
    listed = json.loads(run_skgate("verify", "r", "--json", cwd=tmp_path).stdout)
    assert listed["problems"] == [str(p) for p in found]
    assert listed["kinds"] == ["unfinished" if p.unfinished else "changed" for p in found]
    assert {p.flaw for p in found} == {
        Flaw.ADDED,
        Flaw.NO_CONTROL,
        Flaw.LEDGER_SEAL_REMOVED,
        Flaw.LEDGER_TORN,
    }


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
