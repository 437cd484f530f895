"""Reports of attempts in the contract's language (C7), English and Chinese, md and json.

The report only renders: the state comes from the verdict (``skgate.evidence.load``), never
from this module. What it guarantees:

- the state is named in the C7 words of the chosen language (``WORDS``);
- "compile failed" / 编译失败 appear only for ``failed`` after natural return (C7);
- the census is labelled provisional while live, and after any verdict but a naturally
  returned ``failed`` (C1); error-named files are never described without that label;
- the ``[summary]`` lines are quoted verbatim in a code block (C3);
- ``unknown`` lists the missing evidence; ``interrupted`` says a clean retry is required
  before anyone judges compiler support (C2.4, C4);
- for an evidence root, attempts come oldest first, each retry is linked to what it
  retries, and a retry's terminal verdict is shown as the valid clean-retry result (C7).

The JSON form (schema ``skgate.report/1``, :mod:`skgate.report.facts`) carries the same
facts for controllers; what is read comes from :mod:`skgate.report.load`. Renderers return
strings; the CLI prints or writes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from skgate.model.errors import UsageError
from skgate.model.phrases import C7
from skgate.model.records import ProcessRecord, State
from skgate.model.request import frozen_jobs
from skgate.report.facts import (
    FORMATS,
    census_label,
    check_lang,
    fmt_time,
    headline,
    report_health,
    report_json,
    timeline,
)
from skgate.report.load import AttemptEvidence, Report, VerdictOf, build_report, default_verdict_of
from skgate.report.stages import stage_lines, stage_title
from skgate.verdict.classify import signal_name
from skgate.verdict.words import NEXT_STEP, in_language, phrase

# ---------------------------------------------------------------------------
# Building and rendering


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


def _bool(flag: bool, lang: str) -> str:
    return phrase("yes" if flag else "no", lang)


def _proc(p: ProcessRecord, lang: str) -> str:
    end = ""
    if p.exit_signal is not None:
        end = f", signal {signal_name(p.exit_signal)}"
    elif p.exit_status is not None:
        end = f", exit {p.exit_status}"
    esc = (", 已脱离进程组" if lang == "zh" else ", escaped the group") if p.escaped else ""
    return f"pid {p.pid} `{p.name}` (start {p.start_ticks}, pgid {p.pgid}{end}{esc})"


def _md_attempt(report: Report, ev: AttemptEvidence, lang: str, level: int) -> list[str]:
    h = "#" * level
    hh = "#" * (level + 1)
    v = ev.verdict
    out: list[str] = []
    title = f"{phrase('title_attempt', lang)} {ev.attempt}"
    out += [f"{h} {title}", ""]
    out.append(f"**{phrase('verdict', lang)}: {headline(ev, lang)}**")
    out.append("")
    facts = [
        f"{phrase('state', lang)} `{v.state.value}`",
        f"{phrase('cause', lang)} `{v.cause.value if v.cause else '-'}`",
        f"{phrase('exit_status', lang)} {v.exit_status if v.exit_status is not None else '-'}",
    ]
    if v.exit_signal is not None:
        facts.append(f"{phrase('exit_signal', lang)} {signal_name(v.exit_signal)}")
    facts.append(f"{phrase('natural', lang)}: {_bool(v.natural_return, lang)}")
    out += ["- " + "; ".join(facts), f"- path: `{ev.path}`"]
    parent = report.retry_of.get(ev.attempt)
    if ev.request is not None and ev.request.retry_of:
        shown = parent or ev.request.retry_of
        out.append(f"- {phrase('retry_of', lang)}: {shown}")
    kids = report.retried_by.get(ev.attempt, ())
    if kids:
        by_id = {a.attempt: a for a in report.attempts}
        parts = []
        for k in kids:
            child = by_id[k]
            parts.append(f"{k} ({headline(child, lang)})")
        out.append(f"- {phrase('retried_by', lang)}: " + "; ".join(parts))
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

    out += [f"{hh} {phrase('next', lang)}", "", NEXT_STEP[v.state][lang].format(a=ev.path), ""]

    out += [f"{hh} {phrase('timeline', lang)}", ""]
    tl = timeline(ev.events, lang)
    if not tl:
        out.append(f"- {phrase('no_events', lang)}")
    for item in tl:
        off = item["offset"]
        rel = f" ({off:+.1f} s)" if isinstance(off, float) else ""
        detail = f": {item['detail']}" if item["detail"] else ""
        out.append(f"- {fmt_time(item['t'])}{rel} {item['label']}{detail}")
    out.append("")

    out += [f"{hh} {phrase('controls', lang)}", ""]
    if ev.request is not None:
        r = ev.request
        out.append(f"- command: `{' '.join(r.argv)}`")
        out.append(f"- cwd: `{r.cwd}`; outputs: `{r.outputs or '-'}`")
        out.append(
            f"- timeout {r.timeout:g} s, grace {r.grace:g} s, package {r.package_mode.value}"
        )
    controls = ev.control.get("controls")
    if isinstance(controls, dict):
        for key in sorted(controls):
            text = json.dumps(controls[key], ensure_ascii=False, sort_keys=True)
            if len(text) > 300:
                text = text[:297] + "..."
            out.append(f"- {key}: `{text}`")
    out.append("")

    out += [f"{hh} {phrase('ownership', lang)}", ""]
    own = ev.ownership
    if own is None:
        out.append(f"- {phrase('no_ownership', lang)}")
    else:
        if own.leader is not None:
            out.append(f"- leader: {_proc(own.leader, lang)}")
        out.append(f"- pgid {own.pgid}, sid {own.sid}, complete: {_bool(own.complete, lang)}")
        out.append(f"- owned: {len(own.owned)}")
        out += [f"  - {_proc(p, lang)}" for p in own.owned[:20]]
        if len(own.owned) > 20:
            out.append(f"  - ... {len(own.owned) - 20} more")
        esc = own.escaped
        out.append(
            f"- escaped: {len(esc)}" + (f" ({', '.join(str(p.pid) for p in esc)})" if esc else "")
        )
        foreign_note = "（从未触碰，C4）" if lang == "zh" else " (never touched, C4)"
        out.append(f"- foreign compilers seen: {len(own.foreign)}{foreign_note}")
        out += [f"  - {_proc(p, lang)}" for p in own.foreign[:20]]
    out.append("")

    out += _md_census(ev, lang, hh)

    out += [f"{hh} {stage_title(lang)}", ""]
    frozen = frozen_jobs(ev.control.get("controls"))
    out += [*stage_lines(ev.stages, v, frozen, lang), ""]

    out += [f"{hh} {phrase('summary', lang)}", ""]
    if ev.summary_lines:
        out += _fence(ev.summary_lines)
    else:
        out.append(f"- {phrase('no_summary', lang)}")
    out.append("")
    return out


def _md_census(ev: AttemptEvidence, lang: str, hh: str) -> list[str]:
    c = ev.census
    label = census_label(c, ev.verdict)
    out: list[str] = []
    if lang == "zh":
        tag = {"provisional": "暂时性", "final": "最终", "none": ""}[label]
    else:
        tag = label if label != "none" else ""
    out += [f"{hh} {phrase('census', lang)}" + (f" ({tag})" if tag else ""), ""]
    if c is None:
        return [*out, f"- {phrase('no_census', lang)}", ""]
    if not c.exists:
        return [*out, f"- `{c.outputs}`: {phrase('no_outputs', lang)}", ""]
    if label == "final":
        err_words = (
            f"error 命名文件 {c.error_logs}：{C7['final_failure']['zh']}的最终证据"
            if lang == "zh"
            else f"error-named files {c.error_logs}: final evidence of {C7['final_failure']['en']}"
        )
    elif lang == "zh":
        err_words = f"error 命名文件 {c.error_logs}：{C7['provisional']['zh']}（C1：不是失败证据）"
    else:
        err_words = (
            f"error-named files {c.error_logs}: {C7['provisional']['en']} "
            "(C1: not evidence of failure)"
        )
    when = "（编译进行中时统计）" if lang == "zh" and c.live else ""
    if lang == "en" and c.live:
        when = " (taken while compilation was live)"
    out.append(f"- outputs: `{c.outputs}`{when}")
    out.append(f"- {err_words}")
    out.append(f"- succ logs {c.succ_logs}, .run packages {c.run_packages}")
    if c.unreadable:
        out.append(
            f"- 不完整：{c.unreadable} 个目录无法读取，计数只是下限"
            if lang == "zh"
            else f"- incomplete: {c.unreadable} director(ies) could not be read; "
            "the counts are a lower bound"
        )
    for r in c.roots:
        prov = "暂时性" if lang == "zh" else "provisional"
        fin = "最终编译证据" if lang == "zh" else "final compiler evidence"
        out.append(
            f"  - `{r.root}`: error-named {r.error_logs} ({fin if label == 'final' else prov}), "
            f"succ {r.succ_logs}, .run {r.run_packages}"
        )
    out.append("")
    return out


def render_markdown(report: Report, lang: str = "en") -> str:
    check_lang(lang)
    out: list[str] = []
    if report.kind == "attempt":
        out += _md_attempt(report, report.attempts[0], lang, 1)
        return "\n".join(out).rstrip() + "\n"
    out += [f"# {phrase('title_root', lang)} `{report.target}`", ""]
    out += [f"## {phrase('attempts', lang)}", ""]
    if not report.attempts:
        out.append(f"- {phrase('none', lang)}")
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
    health = report_health(report)
    if health is not None:
        out += [f"## {phrase('health', lang)}", "", f"- {in_language(health, lang)}", ""]
    for a in report.attempts:
        out += _md_attempt(report, a, lang, 2)
    return "\n".join(out).rstrip() + "\n"


def render(report: Report, lang: str = "en", fmt: str = "md") -> str:
    """The report as text in the chosen language and format."""
    check_lang(lang)
    if fmt == "md":
        return render_markdown(report, lang)
    if fmt == "json":
        return json.dumps(report_json(report, lang), indent=2, ensure_ascii=False) + "\n"
    raise UsageError(f"unknown report format {fmt!r}; use one of: {', '.join(FORMATS)}")


def render_attempt_markdown(
    attempt_dir: Path, lang: str = "en", verdict_of: VerdictOf = default_verdict_of
) -> str:
    """Markdown report of one attempt directory (used by ``skgate demo``)."""
    return render_markdown(build_report(attempt_dir, verdict_of), lang)
