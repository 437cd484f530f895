"""A report says when the evidence root's ledger is torn or changed (C4), in both
languages and every format, with the words docs/contract.md gives, and lists each
problem as ``skgate verify`` names it (one reader: ``seal.ledger_problems``)."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest

from evidence_fixtures import make_attempt
from skgate.evidence import ledger, seal
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.report import load
from skgate.report import markdown as report
from skgate.verdict.words import TEXT

ROOT = Path(__file__).resolve().parents[2]
#: An append a full disk stopped part-way: the beginning of an entry, no line end.
TORN = b'{"schema":"skgate.ledger/1","seq":3,"ev'
#: A whole line whose ``prev`` is not the hash of the line before it.
FORGED = b'{"schema":"skgate.ledger/1","seq":3,"event":"start","prev":"' + b"0" * 64 + b'"}\n'


def contract_ledger_table() -> dict[str, str]:
    """English -> Chinese, from the ledger table of docs/contract.md (C4)."""
    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    section = text.split("| ledger | English | 中文 |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in section.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[1]] = cells[2]
    return rows


def test_the_words_are_the_contract_table() -> None:
    keys = ("ledger_unfinished", "ledger_changed")
    assert contract_ledger_table() == {TEXT[k]["en"]: TEXT[k]["zh"] for k in keys}


def rooted(tmp_path: Path, damage: str) -> Path:
    """Two attempts in a root, both indexed; then the ledger damaged as asked."""
    root = tmp_path / "r"
    for n in (1, 2):
        ledger.record_start(root, make_attempt(root, n, State.FAILED), None)
    with (root / ledger.LEDGER).open("ab") as fh:
        fh.write({"torn": TORN, "changed": FORGED, "intact": b""}[damage])
    return root / "attempts" / "0002"


@pytest.mark.parametrize("lang", list(Lang))
@pytest.mark.parametrize(("damage", "state"), [("torn", "unfinished"), ("changed", "changed")])
def test_a_damaged_ledger_is_said_in_every_format(
    tmp_path: Path, lang: Lang, damage: str, state: str
) -> None:
    attempt = rooted(tmp_path, damage)
    root = attempt.parent.parent
    problems = [p.text(lang) for p in seal.ledger_problems(root)]
    assert problems and all(p.unfinished is (damage == "torn") for p in ledger.check_chain(root))
    words = TEXT[f"ledger_{state}"][lang]
    for target in (attempt, root):
        built = load.build_report(target)
        md = report.render(built, lang, "md")
        assert f"- {words}" in md
        assert all(f"  - {p}" in md for p in problems)
        page = report.render(built, lang, "html")
        assert all(escape(x) in page for x in [words, *problems])
        data = json.loads(report.render(built, lang, "json"))
        assert data["ledgers"] == [{"root": str(root), "status": state, "problems": problems}]
    if lang is Lang.ZH:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in problems[0])


def test_an_intact_ledger_adds_nothing_but_its_json_status(tmp_path: Path) -> None:
    attempt = rooted(tmp_path, "intact")
    built = load.build_report(attempt)
    for lang in Lang:
        assert TEXT["ledger"][lang] not in report.render(built, lang, "md")
    data = json.loads(report.render(built, Lang.EN, "json"))
    assert data["ledgers"] == [
        {"root": str(attempt.parent.parent), "status": "intact", "problems": []}
    ]


def test_a_linked_ledger_is_a_change(tmp_path: Path) -> None:
    attempt = rooted(tmp_path, "intact")
    root = attempt.parent.parent
    real = tmp_path / "elsewhere.jsonl"
    (root / ledger.LEDGER).rename(real)
    (root / ledger.LEDGER).symlink_to(real)
    data = json.loads(report.render(load.build_report(attempt), Lang.EN, "json"))
    (led,) = data["ledgers"]
    assert led["status"] == "changed"
    assert led["problems"] == [str(p) for p in seal.ledger_problems(root)]
    assert "never read through a link" in led["problems"][0]


def test_a_removed_ledger_is_a_change_and_a_root_without_one_adds_nothing(
    tmp_path: Path,
) -> None:
    # Before: a report (as verify) said nothing of a root whose ledger was deleted.
    attempt = rooted(tmp_path, "intact")
    root = attempt.parent.parent
    (root / ledger.LEDGER).unlink()
    data = json.loads(report.render(load.build_report(root), Lang.EN, "json"))
    assert data["ledgers"] == [], "hand-built attempts, none sealed: no ledger to miss"
    seal.seal_attempt(attempt, chain=False)  # sealed, as every finished attempt is
    built = load.build_report(root)
    data = json.loads(report.render(built, Lang.EN, "json"))
    (led,) = data["ledgers"]
    assert led["status"] == "changed" and "removed, though 1 sealed attempt" in led["problems"][0]
    assert f"- {TEXT['ledger_changed'][Lang.EN]}" in report.render(built, Lang.EN, "md")
