"""HTML report (report/html.py): the same facts as md and json, self-contained, aggregated.

The browser checks (console errors, DOM, screenshots) are in test_browser.py; these run
without a browser.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import gated_run
from evidence_fixtures import (
    live_verdict_of,
    make_attempt,
    make_big_attempt,
    make_many,
    make_plain_command,
    make_swallowed_failure,
)
from skgate.cli.main import main
from skgate.model.events import ForeignWait, ForeignWaitEnd
from skgate.model.phrases import C7, Lang
from skgate.model.records import ProcessRecord, State
from skgate.report import chart, load, markdown, sentences, svg
from skgate.report.html import render_html
from skgate.verdict.words import WORDS, phrase


class _Text(HTMLParser):
    """The text a person reads (tags dropped, entities decoded, SVG text included)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("style", "title"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "title"):
            self._skip -= 1

    def handle_data(self, d: str) -> None:
        if not self._skip:
            self.parts.append(d)


def page_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    # Parts join without a space: inline <code> sits inside a sentence.
    return " ".join("".join(parser.parts).split())


def flat(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def facts_of(doc: dict[str, Any]) -> list[str]:
    """Sentences every format must state, taken from the JSON form."""
    out: list[str] = []
    for a in doc["attempts"]:
        out += [a["headline"], *a["reasons"], a["next_step"], *a["summary_lines"]]
        out += a["error_logs_to_read"]
        for st in a["stages"]:
            out += [f["input"] for f in st["failed_inputs"]]
    if doc["health"]:
        out.append(doc["health"])
    return out


def build(path: Path, lang: Lang, live: bool = False) -> tuple[str, dict[str, Any], str]:
    verdict_of = live_verdict_of if live else load.default_verdict_of
    rep = load.build_report(path, verdict_of)
    md_text = markdown.render(rep, lang, "md")
    doc = json.loads(markdown.render(rep, lang, "json"))
    return md_text, doc, render_html(rep, lang)


CASES = [*(s for s in State), "swallowed", "root"]


@pytest.mark.parametrize("lang", list(Lang))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_three_formats_state_the_same_facts(tmp_path: Path, case: object, lang: Lang) -> None:
    if case == "swallowed":
        path = make_swallowed_failure(tmp_path)
    elif case == "root":
        make_many(tmp_path, 8)
        path = tmp_path
    else:
        assert isinstance(case, State)
        path = make_attempt(tmp_path, 1, case)
    md_text, doc, page = build(path, lang, live=case is State.IN_PROGRESS)
    md_flat, html_flat = flat(md_text), page_text(page)
    facts = facts_of(doc)
    assert facts, "the fixture states no facts"
    for fact in facts:
        assert flat(fact) in md_flat, f"markdown lacks: {fact}"
        assert flat(fact) in html_flat, f"html lacks: {fact}"
    # Census counts and the seal's status, said in the same words in md and html.
    for a in doc["attempts"]:
        if a["census"] is not None and a["census"]["exists"]:
            succ = "succ 日志" if lang == "zh" else "succ logs"
            assert re.search(rf"{succ} {a['census']['roots'][0]['succ_logs']}\b", html_flat)
    assert doc["lang"] == lang


def test_swallowed_failure_names_the_failed_input_and_its_log(tmp_path: Path) -> None:
    a = make_swallowed_failure(tmp_path)
    _, doc, page = build(a, Lang.EN)
    att = doc["attempts"][0]
    assert att["state"] == "failed" and att["verdict"]["exit_status"] == 0
    [stage] = att["stages"]
    assert (stage["inputs"], stage["failed"], stage["final"]) == (8, 1, True)
    log = stage["failed_inputs"][0]["error_log"]
    assert log.endswith("_compile_error.log")
    assert att["error_logs_to_read"] == [log]
    text = page_text(page)
    assert "op_compiler pid 501: -j 8, inputs 8, succeeded 7, failed 1" in text
    assert f"read next {log}" in text
    assert f"{phrase('read_logs', Lang.EN)}{log}" in text
    assert WORDS[State.FAILED]["en"] in text


def test_no_error_log_is_named_before_natural_return(tmp_path: Path) -> None:
    # C1: an error-named file next to a live or interrupted compiler is not a log to read.
    for n, state in enumerate((State.INTERRUPTED, State.UNKNOWN, State.SUCCEEDED), 1):
        a = make_attempt(tmp_path, n, state, errors=4)
        _, doc, page = build(a, Lang.EN)
        assert doc["attempts"][0]["error_logs_to_read"] == []
        assert "Error logs to read next" not in page


def test_page_is_self_contained(tmp_path: Path) -> None:
    a = make_swallowed_failure(tmp_path)
    for lang in Lang:
        page = build(a, lang)[2]
        parser = _Text()
        parser.feed(page)
        tags = {t for t, _ in parser.tags}
        assert not tags & {"script", "link", "img", "iframe", "object", "embed"}
        for _, attrs in parser.tags:
            for key in ("src", "href"):
                value = attrs.get(key)
                assert value is None or value.startswith("#"), (key, value)
        # The only URL is the SVG namespace name, which no browser fetches.
        urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
        assert urls <= {"http://www.w3.org/2000/svg"}
        assert "default-src 'none'" in page


def test_timeline_draws_signals_deadline_grace_and_sigkill(tmp_path: Path) -> None:
    a = make_attempt(tmp_path, 1, State.INTERRUPTED)
    page = build(a, Lang.EN)[2]
    text = page_text(page)
    assert "frozen deadline (timeout 2 h)" in text
    assert "SIGTERM: runner → -500 (timeout)" in text
    assert 'class="grace"' in page and 'class="deadline"' in page
    assert C7["interruption"]["en"] in text


def _records(n: int) -> list[ProcessRecord]:
    return [
        ProcessRecord(
            pid=10 + i,
            start_ticks=i,
            ppid=1,
            pgid=1,
            sid=1,
            argv=("opc",),
            name="opc",
            first_seen=float(i % 7),
            last_seen=float(i % 7 + i % 3 + 1),
            exit_status=0,
        )
        for i in range(n)
    ]


def test_concurrency_curve_is_exact_and_keeps_peaks() -> None:
    procs = _records(50)
    brute = max(
        sum(1 for p in procs if p.first_seen <= t < p.last_seen)
        for t in (x / 10 for x in range(100))
    )
    curve = chart._sweep((p.first_seen, p.last_seen) for p in procs)
    assert max(n for _, n in curve) == brute
    assert curve[-1][1] == 0
    reduced = chart._reduce(curve, 10.0) if len(curve) > chart.BINS * 2 else curve
    assert max(n for _, n in reduced) == brute


@pytest.mark.slow
def test_large_tree_is_aggregated_small_and_counted_exactly(tmp_path: Path) -> None:
    a = make_big_attempt(tmp_path, 10_000)
    rep = load.build_report(a)
    page = render_html(rep, Lang.EN)
    assert len(page.encode()) < 5_000_000
    bars = page.count('class="bar ')
    assert 3 <= bars <= chart.MAX_BARS
    assert 'class="strip"' in page
    text = page_text(page)
    assert "of 10000 owned processes are drawn as density strips" in text
    ev = rep.attempts[0]
    c = chart.chart_of(ev.events, ev.ownership, frozen_jobs=8)
    assert c is not None
    # 16 opc at once by construction (make_big_attempt), whatever the aggregation.
    assert c.peak_opc == 16
    assert c.aggregated + len(c.bars) == 10_000
    assert len(c.concurrency) <= 2 * chart.BINS + 1


def test_root_lists_attempts_links_retries_and_marks_clean_retry(tmp_path: Path) -> None:
    make_many(tmp_path, 50)
    _, doc, page = build(tmp_path, Lang.EN)
    assert len(doc["attempts"]) == 50
    assert "<th>attempt</th><th>verdict</th><th>retry of</th><th>retried by</th>" in page
    retry = next(a for a in doc["attempts"] if a["retry_of_attempt"])
    assert f'href="#a-{retry["retry_of_attempt"]}"' in page
    assert f'id="a-{retry["attempt"]}"' in page
    assert retry["clean_retry_result"]
    clean = sum(1 for a in doc["attempts"] if a["clean_retry_result"])
    assert clean and page.count('<td><span class="badge s-succeeded clean"') == clean
    # One line counts every state, in the C7 words, in md and html alike.
    rep = load.build_report(tmp_path)
    head, parts = sentences.state_counts(rep, Lang.EN)
    assert (
        head == "50 attempts" and ("succeeded clean", f"{clean} {C7['clean_retry']['en']}") in parts
    )
    assert sum(int(text.split(" ", 1)[0]) for state, text in parts if " " not in state) == 50
    md_text = markdown.render(rep, Lang.EN, "md")
    text = page_text(page)
    for _, part in parts:
        assert part in md_text and part in text


def test_cli_writes_html(tmp_path: Path) -> None:
    a = make_swallowed_failure(tmp_path / "root")
    out = tmp_path / "r.html"
    assert main(["report", str(a), "--format", "html", "--lang", "zh", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'lang="zh-CN"' in page
    assert WORDS[State.FAILED]["zh"] in page_text(page)


ENGLISH_LABELS = (
    "path:",
    "command:",
    "timeout ",
    "grace ",
    "exit status",
    "succ logs",
    "stage op_compiler",
    "Frozen controls",
    "Reasons",
    "escaped:",
    "owned:",
    "outputs:",
)


@pytest.mark.parametrize("case", ["swallowed", State.INTERRUPTED, State.SUCCEEDED], ids=str)
def test_chinese_report_has_no_english_labels(tmp_path: Path, case: object) -> None:
    if isinstance(case, State):
        a = make_attempt(tmp_path, 1, case)
    else:
        a = make_swallowed_failure(tmp_path)
    md_text, doc, page = build(a, Lang.ZH)
    for text in (md_text, page_text(page)):
        for label in ENGLISH_LABELS:
            assert label not in text, label
    assert "最终编译失败的最终" not in md_text + page
    # Reasons in Chinese in the JSON, originals kept in verdict.reasons.
    att = doc["attempts"][0]
    assert att["reasons"] and all("（原文）" not in r for r in att["reasons"])
    assert att["verdict"]["reasons"][0].startswith("C2.")
    assert att["reasons"] != att["verdict"]["reasons"]


def test_a_foreign_wait_is_drawn_and_never_blamed(tmp_path: Path) -> None:
    # C4: a compiler this attempt does not own is waited for; the wait shows on the
    # timeline with the blockers' pids, before the launch.
    a = make_attempt(tmp_path, 1, State.SUCCEEDED)
    ev = load.load_attempt(a)
    t0 = ev.events[0].t
    assert t0 is not None
    blocker = {"pid": 900, "start_ticks": 1, "name": "opc"}
    events = [
        ev.events[0],
        ForeignWait(t=t0 + 0.05, blockers=(blocker,), timeout=600),
        ForeignWaitEnd(t=t0 + 0.15, outcome="cleared", waited_s=0.1),
        *ev.events[1:],
    ]
    c = chart.chart_of(events, ev.ownership, frozen_jobs=8)
    assert c is not None
    [span] = c.foreign
    assert (round(span.start, 2), round(span.end, 2)) == (0.05, 0.15)
    assert "pid 900" in span.label and "never touched (C4)" in span.label


def test_matrix_session_shows_the_attribution_table(tmp_path: Path) -> None:
    # A regress --matrix session: one evidence root per arm, regress.json with the rows.
    session = tmp_path / "diag"
    make_attempt(session / "runs" / "baseline", 1, State.SUCCEEDED)
    make_attempt(session / "runs" / "startup_hook", 1, State.FAILED)
    row = {"runs": [{"state": "succeeded", "status": "pass"}], "proves": "p", "does_not_prove": "q"}
    record = {
        "schema": "skgate.regress/1",
        "kind": "matrix",
        "baseline": {**row, "arm": "baseline", "change": "none", "outcome": "baseline"},
        "arms": [
            {
                **row,
                "arm": "startup_hook",
                "change": "start-up hook hooks/override",
                "outcome": "fail",
                "runs": [{"state": "failed", "status": "fail"}],
                "proves": "the start-up hook launch path triggers the failure",
            }
        ],
        "conclusion": {"kind": "startup_hook_trigger", "lines": ["only the hook arm fails"]},
    }
    (session / "regress.json").write_text(json.dumps(record), encoding="utf-8")
    md_text, doc, page = build(session, Lang.EN)
    assert [a["attempt"] for a in doc["attempts"]] == ["baseline/0001", "startup_hook/0001"]
    assert doc["matrix"]["rows"][1]["verdicts"] == "failed"
    text = page_text(page)
    for needle in ("the start-up hook launch path triggers the failure", "only the hook arm fails"):
        assert needle in text and needle in md_text
    assert "<th>the one change</th>" in page


@pytest.mark.parametrize(
    ("make", "tone", "words"),
    [
        (lambda r: make_attempt(r, 1, State.SUCCEEDED), "t-compiled", "succeeded"),
        (lambda r: make_plain_command(r, 0), "t-declared", "by its declared exit status 0"),
        (lambda r: make_plain_command(r, 3), "t-declared", "by its declared exit status 3"),
        (make_swallowed_failure, "t-stage", "an op_compiler stage; the launcher exited 0"),
    ],
)
def test_headline_band_tone_and_words_follow_the_kind_of_result(
    tmp_path: Path, make: Any, tone: str, words: str
) -> None:
    # Green (t-compiled) only for a compile that compiled (issue 23).
    page = render_html(load.build_report(make(tmp_path / "ev")), Lang.EN)
    assert f'data-tone="{tone}"' in page
    band = page.split('<div class="words"', 1)[1].split("</div>", 1)[0]
    assert words in band
    if tone != "t-compiled":
        assert "t-compiled" not in page.split('<div class="verdict', 1)[1].split(">", 1)[0]


def test_argv_that_is_not_utf8_renders_as_escapes_in_a_utf8_page(tmp_path: Path) -> None:
    # skgate run -- echo $'\xff' (issue 21): the page failed with UnicodeEncodeError.
    run = gated_run(tmp_path, ["echo", "caf\xe9 \udcff"])
    assert (run.attempt / "verdict.json").is_file(), run.output
    out = tmp_path / "page.html"
    code = main(["report", "--format", "html", "-o", str(out), str(run.attempt)])
    assert code == 0
    page = out.read_bytes().decode("utf-8")  # strict: the page is valid UTF-8
    assert "echo" in page and "café \\xff" in page


def test_the_page_asks_for_an_installed_cjk_font_before_the_generic_one(tmp_path: Path) -> None:
    """With no font named, a zh page falls to whatever 'sans-serif' is, often boxes: the
    body and code stacks name Noto CJK and WenQuanYi first (issue 30)."""
    page = build(make_swallowed_failure(tmp_path), Lang.ZH)[2]
    body = re.search(r"body\{[^}]*font:([^;]*);", page)
    code = re.search(r"code,pre,\.mono\{font-family:([^;]*);", page)
    assert body is not None and code is not None
    for stack, generic, cjk in (
        (body.group(1), "sans-serif", ('"Noto Sans CJK SC"', '"WenQuanYi Micro Hei"')),
        (code.group(1), "monospace", ('"Noto Sans Mono CJK SC"', '"WenQuanYi Micro Hei Mono"')),
    ):
        fonts = [f.strip() for f in stack.split(",")]
        for font in cjk:
            assert font in fonts and fonts.index(font) < fonts.index(generic), (font, fonts)


@pytest.mark.parametrize(("start", "ended"), [(0.0, "exit 1"), (3.5, "SIGKILL"), (0.2, "SIGKILL")])
def test_an_exit_or_signal_label_sits_at_its_instant_not_the_bar_start(
    start: float, ended: str
) -> None:
    """A bar that ends near the right edge: its label ends at the bar's end (the instant it
    names), never at the bar's start, where it would read as at launch (issue 30)."""
    from skgate.report import svg
    from skgate.report.chart import Bar

    frame = svg.Frame(0.0, 4.0)
    bar = Bar(7, "opc", "opc", start, 4.0, False, ended, False, 1)
    drawn = "".join(svg._bar(bar, frame, 0.0, 0.0, Lang.EN))
    label = re.search(r'<text class="end-label[^"]*" x="([\d.]+)"[^>]*>([^<]*)</text>', drawn)
    assert label is not None and label.group(2) == ended, drawn
    assert abs(float(label.group(1)) - frame.x(4.0)) <= 6, (label.group(1), frame.x(4.0))


_CIRCLE = re.compile(r'<circle class="badge[^"]*" cx="([-\d.]+)" cy="([-\d.]+)" r="([-\d.]+)"')


@pytest.mark.parametrize("n", [2, 12, 90])
def test_badges_of_marks_close_in_time_never_overlap_and_fit_the_picture(n: int) -> None:
    """A stop signals a group's members one by one, milliseconds apart: their numbered
    badges once fell back onto their own mark when the rows were full, one over the other.
    Every badge has its own place now, rows added below when needed, inside the picture."""
    marks = tuple(
        chart.Mark(5.0 + i * 0.001, "signal_sent", f"SIGTERM: runner → {100 + i}") for i in range(n)
    )
    c = chart.Chart(
        t_end=10.0,
        launched=0.0,
        deadline=5.0,
        grace_end=None,
        timeout=5.0,
        grace=None,
        bars=(),
        strips=(),
        aggregated=0,
        owned_total=0,
        marks=marks,
        foreign=(),
        census=(),
        census_final=False,
        concurrency=(),
        peak_opc=0,
        frozen_jobs=None,
    )
    picture = svg.timeline_svg(c, Lang.EN)
    box = re.search(r'viewBox="0 0 [\d.]+ ([\d.]+)"', picture)
    assert box is not None
    height = float(box.group(1))
    badges = [(float(x), float(y), float(r)) for x, y, r in _CIRCLE.findall(picture)]
    assert len(badges) == n
    for i, (x, y, r) in enumerate(badges):
        assert y - r >= 0 and y + r <= height
        for x2, y2, r2 in badges[i + 1 :]:
            assert ((x - x2) ** 2 + (y - y2) ** 2) ** 0.5 >= r + r2, (x, y, x2, y2)
