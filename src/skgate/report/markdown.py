"""Markdown reports of attempts in the contract's language (C7), English and Chinese.

The facts come from :mod:`skgate.report.facts` and their sentences from
:mod:`skgate.report.sentences` (shared with the JSON and HTML forms); this module only
lays them out as Markdown: the headline verdict, the reasons, the next step (after a
natural failure, the error logs to read), the timeline, the frozen controls as a table,
the stages, the ownership manifest, the census (labelled provisional unless final, C1),
the verbatim ``[summary]`` lines in a code block (C3) and the seal. ``unknown`` lists the
missing evidence; ``interrupted`` says a clean retry is required before anyone judges
compiler support (C2.4, C4). Renderers return strings; the CLI prints or writes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from skgate.evidence import ledger
from skgate.evidence.load import health_findings
from skgate.model.errors import UsageError
from skgate.model.installed import WORDS as INSTALLED_WORDS
from skgate.model.installed import report_lines as installed_lines
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.model.request import frozen_jobs
from skgate.report import rows
from skgate.report.facts import (
    FORMATS,
    MATRIX_HEAD,
    check_lang,
    fmt_time,
    headline,
    matrix_rows,
    report_health,
    report_json,
    timeline,
)
from skgate.report.html import render_html
from skgate.report.load import AttemptEvidence, Report, VerdictOf, build_report, default_verdict_of
from skgate.report.sentences import (
    backticks,
    census_heading,
    census_lines,
    colon,
    counts_line,
    damaged_ledgers,
    ownership_lines,
    path_line,
    request_lines,
    retry_lines,
    seal_text,
    section_label,
    verdict_facts,
)
from skgate.report.stages import stage_lines, stage_plogs, stage_title
from skgate.verdict.words import in_language, phrase
from skgate.verdict.words_next import next_step_of
from skgate.verdict.words_values import control_value


def _fence(lines: Sequence[str]) -> list[str]:
    # A fence longer than any backtick run inside keeps verbatim lines verbatim (C3).
    run = 3
    for line in lines:
        count = 0
        for ch in line:
            count = count + 1 if ch == "`" else 0
            run = max(run, count + 1)
    fence = "`" * run
    return [fence + "text", *lines, fence]


def _items(lines: Sequence[tuple[int, str]]) -> list[str]:
    return [f"{'  ' * level}- {text}" for level, text in lines]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _controls(ev: AttemptEvidence, lang: Lang) -> list[str]:
    table = rows.control_rows(ev.control.get("controls"))
    if not table:
        return []
    head = [phrase("col_section", lang), phrase("col_key", lang), phrase("col_value", lang)]
    body = [
        (section_label(r.section, lang), f"`{r.key}`", f"`{control_value(r.value, lang)}`")
        for r in table
    ]
    return ["", *_table(head, body)]


def _logs(ev: AttemptEvidence, lang: Lang) -> list[str]:
    logs, total = rows.error_logs_to_read(ev.verdict, ev.census, rows.stage_rows_of(ev.stages))
    if not logs:
        return []
    out = [phrase("read_logs", lang), ""]
    out += [f"- `{log}`" for log in logs]
    if total > len(logs):
        out.append(f"- {phrase('more', lang).format(n=total - len(logs))}")
    out.append("")
    return out


def _md_census(ev: AttemptEvidence, lang: Lang, hh: str) -> list[str]:
    return [f"{hh} {census_heading(ev, lang)}", "", *_items(census_lines(ev, lang, backticks)), ""]


def _md_attempt(report: Report, ev: AttemptEvidence, lang: Lang, level: int) -> list[str]:
    h = "#" * level
    hh = "#" * (level + 1)
    v = ev.verdict
    out: list[str] = [f"{h} {phrase('title_attempt', lang)} {ev.attempt}", ""]
    out += [f"**{phrase('verdict', lang)}{colon(lang)}{headline(ev, lang)}**", ""]
    out += ["- " + verdict_facts(v, lang, backticks), f"- {path_line(ev, lang, backticks)}"]
    out += [f"- {line}" for line in retry_lines(report, ev, lang)]
    out.append("")

    out += [f"{hh} {phrase('reasons', lang)}", ""]
    out += [f"- {in_language(r, lang)}" for r in v.reasons] or [f"- {phrase('none', lang)}"]
    out.append("")

    if v.state is State.UNKNOWN or v.missing:
        out += [f"{hh} {phrase('missing', lang)}", ""]
        out += [f"- {in_language(m, lang, 'missing')}" for m in v.missing] or [
            f"- {phrase('none', lang)}"
        ]
        out.append("")

    out += [
        f"{hh} {phrase('next', lang)}",
        "",
        next_step_of(v, lang).format(a=ev.path),
        "",
    ]
    out += _logs(ev, lang)

    if ev.withheld:
        out += [f"{hh} {phrase('withheld_title', lang)}", ""]
        out += [f"- {phrase('withheld', lang).format(a=ev.path)}", ""]
        return out + _md_seal(ev, lang, hh)

    out += [f"{hh} {phrase('timeline', lang)}", ""]
    tl = timeline(ev.events, lang)
    if not tl:
        out.append(f"- {phrase('no_events', lang)}")
    for item in tl:
        off = item["offset"]
        unit = " 秒" if lang is Lang.ZH else " s"
        rel = f" ({off:+.1f}{unit})" if isinstance(off, float) else ""
        detail = f"{colon(lang)}{item['detail']}" if item["detail"] else ""
        out.append(f"- {fmt_time(item['t'])}{rel} {item['label']}{detail}")
    out.append("")

    out += [f"{hh} {phrase('controls', lang)}", ""]
    out += [f"- {line}" for line in request_lines(ev, lang, backticks)]
    out += _controls(ev, lang)
    out.append("")

    out += [f"{hh} {phrase('ownership', lang)}", ""]
    out += _items(ownership_lines(ev, lang, backticks))
    out.append("")

    out += _md_census(ev, lang, hh)

    out += [f"{hh} {stage_title(lang)}", ""]
    frozen = frozen_jobs(ev.control.get("controls"))
    plogs = stage_plogs(ev.stages, ev.ownership, ev.plogs, ev.path)
    out += [*stage_lines(ev.stages, v, frozen, lang, plogs), ""]
    installed = installed_lines(ev.installed, lang)
    if installed:
        out += [f"{hh} {INSTALLED_WORDS['title'][lang]}", "", *installed, ""]

    out += [f"{hh} {phrase('summary', lang)}", ""]
    if ev.summary_lines:
        out += _fence(ev.summary_lines)
    else:
        out.append(f"- {phrase('no_summary', lang)}")
    out.append("")
    return out + _md_seal(ev, lang, hh)


def _md_seal(ev: AttemptEvidence, lang: Lang, hh: str) -> list[str]:
    out = [f"{hh} {phrase('seal', lang)}", "", f"- {seal_text(ev, lang)}"]
    if ev.seal is not None:
        out += [f"  - {p.text(lang)}" for p in ev.seal.problems]
    out.append("")
    return out


def _md_ledgers(report: Report, lang: Lang) -> list[str]:
    """The evidence root's ledger, when it is torn or changed (C4), else nothing."""
    damaged = damaged_ledgers(report, lang)
    if not damaged:
        return []
    out = [f"## {phrase('ledger', lang)}", ""]
    for words, problems in damaged:
        out += [f"- {words}", *(f"  - {p}" for p in problems)]
    return [*out, ""]


def _md_matrix(report: Report, lang: Lang) -> list[str]:
    m = matrix_rows(report.matrix)
    if m is None:
        return []
    title = "单因素诊断矩阵（C6）" if lang is Lang.ZH else "One-factor-at-a-time diagnosis (C6)"
    keys = ("arm", "change", "verdicts", "outcome", "proves", "does_not_prove")
    out = [f"## {title}", "", *_table(MATRIX_HEAD[lang], [[r[k] for k in keys] for r in m["rows"]])]
    out += ["", *(f"- {line}" for line in m["conclusion"]), ""]
    return out


def _md_nodes(report: Report, lang: Lang) -> list[str]:
    """One row per attempt that ran on a cluster node (the ledger's import entries)."""
    by_root: dict[Path, dict[str, dict[str, object]]] = {}
    rows: list[str] = []
    for a in report.attempts:
        root = ledger.root_of(a.path)
        if root is None:
            continue
        if root not in by_root:
            by_root[root] = ledger.nodes(root)
        node = by_root[root].get(a.attempt)
        if node is not None:
            where = f"{root.name}/{a.attempt}"
            cells = (where, node.get("hostname"), node.get("node_id"), node.get("task_id"))
            rows.append("| " + " | ".join(f"`{c}`" for c in cells) + " |")
    if not rows:
        return []
    head = ("attempt_col", "hostname", "node_id", "ray_task")
    return [
        f"## {phrase('nodes', lang)}",
        "",
        "| " + " | ".join(phrase(h, lang) for h in head) + " |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
    ]


def render_markdown(report: Report, lang: Lang = Lang.EN) -> str:
    check_lang(lang)
    out: list[str] = []
    if report.kind == "attempt":
        out += _md_attempt(report, report.attempts[0], lang, 1) + _md_ledgers(report, lang)
        return "\n".join(out).rstrip() + "\n"
    out += [f"# {phrase('title_root', lang)} `{report.target}`", ""]
    out += [f"## {phrase('attempts', lang)}", ""]
    if not report.attempts:
        out.append(f"- {phrase('none', lang)}")
    else:
        out += [counts_line(report, lang), ""]
    for a in report.attempts:
        line = f"- {a.attempt}: {headline(a, lang)}"
        parent = report.retry_of.get(a.attempt)
        if parent:
            line += f"; {phrase('retry_of', lang)} {parent}"
        kids = report.retried_by.get(a.attempt, ())
        if kids:
            by_id = {x.attempt: x for x in report.attempts}
            line += f"; {phrase('retried_by', lang)} " + ", ".join(
                f"{k} ({headline(by_id[k], lang)})" for k in kids
            )
        out.append(line)
    out.append("")
    out += _md_ledgers(report, lang)
    out += _md_nodes(report, lang)
    health = report_health(report)
    if health is not None:
        out += [f"## {phrase('health', lang)}", "", f"- {in_language(health, lang)}"]
        # C6: each reason the declared change did not reach the compile, and what to clear.
        out += [f"- {line}" for line in health_findings(Path(report.target), lang)] + [""]
    out += _md_matrix(report, lang)
    for a in report.attempts:
        out += _md_attempt(report, a, lang, 2)
    return "\n".join(out).rstrip() + "\n"


def render(report: Report, lang: Lang = Lang.EN, fmt: str = "md") -> str:
    """The report as text in the chosen language and format (md, json or html)."""
    check_lang(lang)
    if fmt == "md":
        return render_markdown(report, lang)
    if fmt == "json":
        return json.dumps(report_json(report, lang), indent=2, ensure_ascii=False) + "\n"
    if fmt == "html":
        return render_html(report, lang)
    raise UsageError(f"unknown report format {fmt!r}; use one of: {', '.join(FORMATS)}")


def render_attempt_markdown(
    attempt_dir: Path, lang: Lang = Lang.EN, verdict_of: VerdictOf = default_verdict_of
) -> str:
    """Markdown report of one attempt directory (used by ``skgate demo``)."""
    return render_markdown(build_report(attempt_dir, verdict_of), lang)
