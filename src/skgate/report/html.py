"""The HTML report: one self-contained page (inline CSS and SVG, no script, no network).

Built from the same data as the JSON report (:func:`skgate.report.facts.report_json`),
so the three formats state the same facts (tests/report/test_html.py compares them); the
pictures come from :mod:`skgate.report.chart` and :mod:`skgate.report.svg`. The page opens
on an air-gapped host and can be attached to an issue as it is.

What a reader sees first, for an attempt: the headline verdict in the C7 words on a band
coloured by state, the reasons in the report's language, the next step (after a natural
failure, the error logs to read). Then the timeline, the concurrency curve, the stages,
the census (labelled provisional unless final, C1), the verbatim ``[summary]`` lines (C3),
the frozen controls as a table, the ownership manifest and the seal. For a root: one row
per attempt, retries linked to what they retry, the valid clean-retry result marked (C7),
the compile-health sentence and a diagnosis matrix's attribution table (C6).

No JavaScript: nothing can raise a console error, nothing differs between browsers that
allow scripts and those that do not, and native ``<title>`` tooltips show exact values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from skgate import __version__
from skgate.model.installed import WORDS as INSTALLED_WORDS
from skgate.model.installed import report_lines as installed_lines
from skgate.model.phrases import C7, Lang
from skgate.model.records import State, Verdict
from skgate.model.request import frozen_jobs
from skgate.report import chart as chart_mod
from skgate.report import facts, load, svg
from skgate.report import sentences as say
from skgate.report.stages import stage_lines, stage_plogs, stage_title
from skgate.verdict.words import Kind, in_language, kind_of, phrase
from skgate.verdict.words_values import control_value

#: Rows of the ownership table before "N more" (the manifest itself has them all).
MAX_PROCESS_ROWS = 200


def _visible(text: str) -> str:
    """``text`` as valid UTF-8, with bytes that were not UTF-8 shown as ``\\xNN``.

    Argv and file names that are not UTF-8 reach Python as ``surrogateescape`` text (the
    evidence keeps them losslessly, issue 12); a page that declares ``charset=utf-8``
    cannot hold them, and writing it failed with UnicodeEncodeError (issue 21). Shown as
    escapes, the original bytes stay readable (C3: the argv on record, exactly).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that was never a byte (\ud800)
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return text


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def _prose(text: str) -> str:
    """Escaped text whose `back-ticked` parts (commands, paths) show as code."""
    parts = _e(text).split("`")
    if len(parts) % 2 == 0:
        return _e(text)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


CSS = """
:root{--ok:#1e7b34;--uncompiled:#8a6d00;--fail:#b3261e;--intr:#b35c00;--unk:#5b4b8a;--live:#1f5fa8;--ns:#5f6368;
--ink:#1d232a;--muted:#5c6670;--line:#d7dce1;--bg:#f6f7f9}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",
"Noto Sans CJK SC","Noto Sans SC","Source Han Sans SC","WenQuanYi Micro Hei",
"WenQuanYi Zen Hei","PingFang SC","Microsoft YaHei",sans-serif;color:var(--ink);
background:var(--bg)}
main{max-width:1120px;margin:0 auto;padding:16px 20px 48px}
h1{font-size:20px;margin:8px 0 4px}h2{font-size:17px;margin:28px 0 8px}
h3{font-size:15px;margin:20px 0 6px;color:var(--muted);text-transform:none}
code,pre,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"Noto Sans Mono CJK SC",
"WenQuanYi Micro Hei Mono",monospace;font-size:13px}
.meta{color:var(--muted);font-size:13px;overflow-wrap:anywhere}
.verdict{border-radius:10px;padding:14px 18px;color:#fff;margin:12px 0}
.verdict .words{font-size:22px;font-weight:700;line-height:1.3}
.verdict .facts{font-size:13px;opacity:.95;margin-top:4px}
.s-succeeded{background:var(--ok)}.s-failed{background:var(--fail)}
.s-interrupted{background:var(--intr)}.s-unknown{background:var(--unk)}
.s-in_progress{background:var(--live)}.s-not_started{background:var(--ns)}
.verdict.t-succeeded{background:var(--ok)}.verdict.t-compiled{background:var(--ok)}
.verdict.t-uncompiled{background:var(--uncompiled)}
.verdict.t-declared{background:#2f5d73}.verdict.t-command{background:#7a3b2e}
.verdict.t-stage{background:#8c1d18}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;color:#fff;font-size:12px;
font-weight:600;white-space:nowrap}
.badge.clean{box-shadow:0 0 0 2px #fff,0 0 0 4px var(--ok)}
.counts{font-weight:600}.counts .badge{margin:2px 4px 2px 0;font-size:13px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:12px 16px;
margin:10px 0}
.reasons li{margin:3px 0}.next{border-left:4px solid var(--ink);padding-left:10px}
.next code,.meta,li{overflow-wrap:anywhere}.hint{display:none}
.logs code{overflow-wrap:anywhere}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
svg{display:block;width:100%;min-width:720px;height:auto}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
td{overflow-wrap:anywhere}td .badge{white-space:normal}
th{background:#eef1f4;font-weight:600}td.v{overflow-wrap:anywhere;font-family:ui-monospace,monospace}
pre.summary{background:#0f1720;color:#e6edf3;border-radius:8px;padding:10px 12px;overflow-x:auto}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;font-size:12px;color:var(--muted);margin:6px 0}
.legend i{display:inline-block;width:14px;height:10px;border-radius:2px;margin-right:4px;
vertical-align:middle}
.marks{font-size:13px;margin:6px 0;padding-left:22px}
.warn{color:var(--intr);font-weight:600}
.grid{stroke:#e3e6ea;stroke-width:1}.tick{font-size:11px;fill:#5c6670}
.lane{font-size:11.5px;fill:#1d232a}
.bar.leader{fill:#24476b}.bar.op_compiler{fill:#7b3fa0}.bar.opc{fill:#1b8a7a}.bar.other{fill:#8a939c}
.bar.open{fill-opacity:.55}
.bar.escaped{stroke:#b3261e;stroke-width:2;stroke-dasharray:4 2}
.end-label{font-size:10.5px;fill:#5c6670}.end-label.killed{fill:#b3261e;font-weight:700}
.end-label.inbar,.end-label.inbar.killed{fill:#fff}
.foreign{fill:#c4c9cf}.strip{fill:#1b8a7a}.strip-frame{fill:none;stroke:#9aa4ad;stroke-width:.6}
.grace{fill:#b3261e;fill-opacity:.10}
.deadline{stroke:#b3261e;stroke-width:1.6;stroke-dasharray:6 3}
.deadline-label{font-size:11px;fill:#b3261e;font-weight:600}
.mark{stroke:#b35c00;stroke-width:1.4}.mark.leader_exited{stroke:#24476b;stroke-dasharray:2 2}
.mark.timeout{stroke:#b3261e}.badge.signal_sent,.badge.signal_received{fill:#b35c00}
circle.badge{fill:#b35c00}circle.badge.timeout{fill:#b3261e}circle.badge.leader_exited{fill:#24476b}
.badge-n{font-size:10px;fill:#fff;font-weight:700}
.census-bg{fill:#fafbfc;stroke:#e3e6ea}
.series{fill:none;stroke-width:2}.series.err{stroke:#d9822b}.series.succ{stroke:#1e7b34}
.series.run{stroke:#1f5fa8}.series.opc{stroke:#1b8a7a;stroke-width:2.2}
.jobs{stroke-width:1.4}.jobs.frozen{stroke:#24476b;stroke-dasharray:6 3}
.jobs.effective{stroke:#7b3fa0;stroke-dasharray:2 3}.jobs-label{font-size:11px;fill:#24476b}
.jobs-label.eff{fill:#7b3fa0}
@media (max-width:640px){main{padding:10px 10px 32px}
.hint{display:block;font-size:12px;color:var(--muted)}.verdict .words{font-size:19px}
.verdict{padding:12px 14px}h2{font-size:16px}body{font-size:14.5px}}
"""

_LEGEND = (
    ("leader", "#24476b", {"en": "leader (top-level command)", "zh": "顶层进程"}),
    ("op_compiler", "#7b3fa0", {"en": "op_compiler stage", "zh": "op_compiler 阶段"}),
    ("opc", "#1b8a7a", {"en": "opc child", "zh": "opc 子进程"}),
    ("other", "#8a939c", {"en": "other owned process", "zh": "其他自有进程"}),
    ("foreign", "#c4c9cf", {"en": "foreign wait (C4)", "zh": "等待外部进程（C4）"}),
    ("grace", "#f3d9d7", {"en": "grace after the deadline", "zh": "截止后的宽限期"}),
)

_HTML_TEXT: Mapping[str, Mapping[str, str]] = {
    "concurrency": {"en": "Concurrency (C5)", "zh": "并发（C5）"},
    "events": {"en": "Events (as in the Markdown report)", "zh": "事件（与 Markdown 报告一致）"},
    "marks": {"en": "Signals and exits on the timeline", "zh": "时间线上的信号与退出"},
    "aggregated": {
        "en": "{n} of {total} owned processes are drawn as density strips (shade = how many "
        "were alive); the leader, every op_compiler, escaped and signalled processes keep "
        "their own bar.",
        "zh": "{total} 个自有进程中的 {n} 个以密度条显示（颜色深浅表示同时存活的数量）；"
        "顶层进程、每个 op_compiler、脱离进程组和被信号结束的进程保留各自的条。",
    },
    "no_chart": {"en": "nothing with a time stamp to draw", "zh": "没有带时间戳的记录可画"},
    "more_rows": {"en": "{n} more in ownership.json", "zh": "另有 {n} 个，见 ownership.json"},
    "generated": {"en": "generated by skgate {v}", "zh": "由 skgate {v} 生成"},
    "matrix": {"en": "One-factor-at-a-time diagnosis (C6)", "zh": "单因素诊断矩阵（C6）"},
    "conclusion": {"en": "Conclusion", "zh": "结论"},
    "close_up": {
        "en": "Close-up of the end: the frozen deadline, the grace and the signals "
        "(time from the deadline)",
        "zh": "结尾特写：冻结截止时间、宽限期与信号（从截止时刻起计时）",
    },
    "hint": {
        "en": "← swipe sideways to see the whole timeline →",
        "zh": "← 左右滑动查看完整时间线 →",
    },
}


def _h(key: str, lang: Lang) -> str:
    return _HTML_TEXT[key][lang]


def _badge(state: str, text: str) -> str:
    return f'<span class="badge s-{_e(state)}">{_e(text)}</span>'


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], mono_last: bool = False) -> str:
    out = ["<table><thead><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="v"' if mono_last and i == len(row) - 1 else ""
            cells.append(f"<td{cls}>{cell}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


#: The band's colour by the kind of result (issue 23): green only for a compile that
#: compiled; a plain command's declared exit status, a command's own failure and a failed
#: op_compiler stage each have their own. Kinds not named here take their state's colour.
TONES: Mapping[Kind, str] = {
    Kind.COMPILED: "t-compiled",
    Kind.NOT_COMPILED: "t-uncompiled",
    Kind.DECLARED: "t-declared",
    Kind.COMMAND: "t-command",
    Kind.LAUNCHER: "t-command",  # the launcher's own failure, like a command's
    Kind.STAGE: "t-stage",
}


def band_tone(v: Verdict) -> str:
    """The CSS class of a verdict's headline band: a function of the verdict's fields
    (state, summary_source, compiled, reasons) through :func:`kind_of`; extend TONES."""
    if v.installed is False and kind_of(v) is Kind.COMPILED:
        return TONES[Kind.NOT_COMPILED]  # C8: a failed install is never the clean green
    return TONES.get(kind_of(v), f"t-{v.state.value}")


def _verdict_band(a: Mapping[str, Any], ev: load.AttemptEvidence, lang: Lang) -> str:
    v = ev.verdict
    words = phrase("verdict", lang) + say.colon(lang) + a["headline"]
    tone = band_tone(v)
    return (
        f'<div class="verdict s-{_e(v.state.value)} {tone}" data-state="{_e(v.state.value)}" '
        f'data-tone="{_e(tone)}">'
        f'<div class="words" id="headline-{_e(a["attempt"])}">{_e(words)}</div>'
        f'<div class="facts">{_e(say.verdict_facts(v, lang))}</div></div>'
    )


def _reasons(a: Mapping[str, Any], lang: Lang) -> str:
    items = a["reasons"] or [phrase("none", lang)]
    out = [f'<h3>{_e(phrase("reasons", lang))}</h3><ul class="reasons">']
    out += [f"<li>{_e(r)}</li>" for r in items]
    out.append("</ul>")
    if a["missing"]:
        out.append(f"<h3>{_e(phrase('missing', lang))}</h3><ul>")
        out += [f"<li>{_e(in_language(m, lang, 'missing'))}</li>" for m in a["missing"]]
        out.append("</ul>")
    return "".join(out)


def _next(a: Mapping[str, Any], lang: Lang) -> str:
    out = [f'<h3>{_e(phrase("next", lang))}</h3><div class="next">{_prose(a["next_step"])}']
    logs = a["error_logs_to_read"]
    if logs:
        out.append(f'<div class="logs"><p>{_e(phrase("read_logs", lang))}</p><ul>')
        out += [f"<li><code>{_e(p)}</code></li>" for p in logs]
        more = a["error_logs_total"] - len(logs)
        if more > 0:
            out.append(f"<li>{_e(phrase('more', lang).format(n=more))}</li>")
        out.append("</ul></div>")
    out.append("</div>")
    return "".join(out)


def _legend(lang: Lang, provisional: bool) -> str:
    items = [f'<span><i style="background:{c}"></i>{_e(t[lang])}</span>' for _, c, t in _LEGEND]
    zh = lang is Lang.ZH
    items.append(
        '<span><i style="background:#fff;border:2px dashed #b3261e"></i>'
        f"{_e('已脱离进程组（只观察）' if zh else 'escaped the group (watched only)')}</span>"
    )
    err = (
        C7["provisional"][lang]
        if provisional
        else ("error 命名文件" if zh else "error-named files")
    )
    for color, name in (("#d9822b", err), ("#1e7b34", "succ"), ("#1f5fa8", ".run")):
        items.append(f'<span><i style="background:{color};height:3px"></i>{_e(name)}</span>')
    return '<div class="legend">' + "".join(items) + "</div>"


def _frozen_jobs(controls: Mapping[str, Any]) -> int | None:
    jobs = controls.get("jobs")
    value = jobs.get("value") if isinstance(jobs, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _effective_jobs(ev: load.AttemptEvidence, verdict: Mapping[str, Any]) -> list[int]:
    raw = verdict.get("effective_jobs")
    if isinstance(raw, list) and raw:
        return [j for j in raw if isinstance(j, int)]
    stages = ev.stages.stages if ev.stages is not None else ()
    return [st.args.jobs for st in stages if st.args.jobs is not None]


def _pictures(a: Mapping[str, Any], ev: load.AttemptEvidence, lang: Lang) -> str:
    c = chart_mod.chart_of(
        ev.events,
        ev.ownership,
        frozen_jobs=_frozen_jobs(a["controls"]),
        effective_jobs=_effective_jobs(ev, a["verdict"]),
        census_final=a["census_label"] == "final",
        lang=lang,
    )
    out = [f"<h3>{_e(phrase('timeline', lang))}</h3>"]
    if c is None:
        return out[0] + f"<p>{_e(_h('no_chart', lang))}</p>"
    out.append(_legend(lang, a["census_label"] != "final"))
    out.append(f'<p class="hint">{_e(_h("hint", lang))}</p>')
    out.append(f'<div class="scroll">{svg.timeline_svg(c, lang)}</div>')
    close = svg.end_frame(c)
    if close is not None:
        out.append(f'<p class="meta">{_e(_h("close_up", lang))}</p>')
        out.append(f'<div class="scroll">{svg.timeline_svg(c, lang, close, c.deadline)}</div>')
    if c.aggregated:
        note = _h("aggregated", lang).format(n=c.aggregated, total=c.owned_total)
        out.append(f'<p class="meta">{_e(note)}</p>')
    if c.marks:
        out.append(f'<p class="meta">{_e(_h("marks", lang))}:</p><ol class="marks">')
        zero = c.launched or 0.0
        unit = " 秒" if lang is Lang.ZH else " s"
        out += [f"<li>{m.t - zero:+.2f}{unit}: {_e(m.label)}</li>" for m in c.marks]
        out.append("</ol>")
    out.append(f"<h3>{_e(_h('concurrency', lang))}</h3>")
    out.append(f'<div class="scroll">{svg.concurrency_svg(c, lang)}</div>')
    return "".join(out)


def _events(a: Mapping[str, Any], lang: Lang) -> str:
    rows = []
    for item in a["timeline"]:
        off = item["offset"]
        rel = f"{off:+.1f}{' 秒' if lang is Lang.ZH else ' s'}" if isinstance(off, float) else ""
        rows.append((_e(facts.fmt_time(item["t"])), _e(rel), _e(item["label"]), _e(item["detail"])))
    if not rows:
        return f"<p>{_e(phrase('no_events', lang))}</p>"
    head = [
        "UTC",
        "Δ",
        "事件" if lang is Lang.ZH else "event",
        "详情" if lang is Lang.ZH else "detail",
    ]
    return f"<details><summary>{_e(_h('events', lang))}</summary>{_table(head, rows)}</details>"


def _stages(ev: load.AttemptEvidence, lang: Lang) -> str:
    """The stage section of :mod:`skgate.report.stages` (the Markdown's very lines)."""
    frozen = frozen_jobs(ev.control.get("controls"))
    plogs = stage_plogs(ev.stages, ev.ownership, ev.plogs, ev.path)
    lines = stage_lines(ev.stages, ev.verdict, frozen, lang, plogs)
    items = [((len(x) - len(x.lstrip(" "))) // 2, x.strip().removeprefix("- ")) for x in lines]
    return f"<h3>{_e(stage_title(lang))}</h3>" + _nested(items, _prose)


def _installed(ev: load.AttemptEvidence, lang: Lang) -> str:
    """The installed static binaries (C8), the Markdown's very lines."""
    lines = installed_lines(ev.installed, lang)
    if not lines:
        return ""
    items = [(0, x.removeprefix("- ")) for x in lines]
    return f"<h3>{_e(INSTALLED_WORDS['title'][lang])}</h3>" + _nested(items, _prose)


def _nested(lines: Sequence[tuple[int, str]], fmt: Callable[[str], str] = _e) -> str:
    out = ["<ul>"]
    depth = 0
    for level, text in lines:
        while depth < level:
            out.append("<ul>")
            depth += 1
        while depth > level:
            out.append("</ul>")
            depth -= 1
        out.append(f"<li>{fmt(text)}</li>")
    out.append("</ul>" * (depth + 1))
    return "".join(out)


def _census(ev: load.AttemptEvidence, lang: Lang) -> str:
    out = [f"<h3>{_e(say.census_heading(ev, lang))}</h3>", _nested(say.census_lines(ev, lang))]
    return "".join(out)


def _summary(a: Mapping[str, Any], lang: Lang) -> str:
    out = f"<h3>{_e(phrase('summary', lang))}</h3>"
    if not a["summary_lines"]:
        return out + f"<p>{_e(phrase('no_summary', lang))}</p>"
    return out + '<pre class="summary">' + _e("\n".join(a["summary_lines"])) + "</pre>"


def _controls(ev: load.AttemptEvidence, a: Mapping[str, Any], lang: Lang) -> str:
    out = [f"<h3>{_e(phrase('controls', lang))}</h3>"]
    # The argv and paths as code, as in the Markdown report: data, not words of a language.
    lines = say.request_lines(ev, lang, lambda t: f"\x00{t}\x01")
    items = (_e(x).replace("\x00", "<code>").replace("\x01", "</code>") for x in lines)
    out.append("<ul>" + "".join(f"<li>{x}</li>" for x in items) + "</ul>")
    rows = [
        (
            _e(say.section_label(r["section"], lang)),
            f"<code>{_e(r['key'])}</code>",
            _e(control_value(r["value"], lang)),
        )
        for r in a["controls_table"]
    ]
    if rows:
        head = [phrase("col_section", lang), phrase("col_key", lang), phrase("col_value", lang)]
        out.append(f"<details><summary>{_e(phrase('controls', lang))} ({len(rows)})</summary>")
        out.append(_table(head, rows, mono_last=True) + "</details>")
    return "".join(out)


def _ownership(ev: load.AttemptEvidence, lang: Lang) -> str:
    lines = say.ownership_lines(ev, lang, limit=0)
    out = [f"<h3>{_e(phrase('ownership', lang))}</h3>", _nested(lines)]
    own = ev.ownership
    if own is not None and own.owned:
        rows = [
            (
                str(p.pid),
                _e(p.name),
                str(p.ppid),
                str(p.pgid),
                _e(say.proc_end(p, lang)),
                _e(" ".join(p.argv)),
            )
            for p in own.owned[:MAX_PROCESS_ROWS]
        ]
        if len(own.owned) > MAX_PROCESS_ROWS:
            more = _h("more_rows", lang).format(n=len(own.owned) - MAX_PROCESS_ROWS)
            rows.append(("…", _e(more), "", "", "", ""))
        zh = lang is Lang.ZH
        head = ["pid", "名称" if zh else "name", "ppid", "pgid", "结束" if zh else "end", "argv"]
        out.append(
            f"<details><summary>{_e(phrase('ownership', lang))} ({len(own.owned)})</summary>"
        )
        out.append(_table(head, rows, mono_last=True) + "</details>")
    return "".join(out)


def _seal(ev: load.AttemptEvidence, lang: Lang) -> str:
    out = f"<h3>{_e(phrase('seal', lang))}</h3><p>{_e(say.seal_text(ev, lang))}</p>"
    if ev.seal is not None and ev.seal.problems:
        out += "<ul>" + "".join(f"<li>{_e(p.text(lang))}</li>" for p in ev.seal.problems) + "</ul>"
    return out


def _ledgers(report: load.Report, lang: Lang) -> str:
    """The evidence root's ledger, when it is torn or changed (C4), else nothing."""
    items = "".join(
        f"<p>{_e(words)}</p><ul>" + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul>"
        for words, problems in say.damaged_ledgers(report, lang)
    )
    return f'<h2>{_e(phrase("ledger", lang))}</h2><div class="card">{items}</div>' if items else ""


def _attempt(
    report: load.Report, ev: load.AttemptEvidence, a: Mapping[str, Any], lang: Lang
) -> str:
    out = [f'<section class="attempt" id="a-{_e(a["attempt"])}">']
    if report.kind == "root":
        out.append(f"<h2>{_e(phrase('title_attempt', lang))} {_e(a['attempt'])}</h2>")
    out.append(f'<p class="meta">{_e(say.path_line(ev, lang))}</p>')
    out.append(_verdict_band(a, ev, lang))
    links = say.retry_lines(report, ev, lang)
    if links:
        out.append('<p class="meta">' + "<br>".join(_e(x) for x in links) + "</p>")
    out.append('<div class="card">' + _reasons(a, lang) + _next(a, lang) + "</div>")
    if ev.withheld:
        # C2.5: changed evidence decides nothing, so none of it is drawn.
        words = phrase("withheld", lang).format(a=ev.path)
        title = f"<h3>{_e(phrase('withheld_title', lang))}</h3>"
        out.append(f'<div class="card">{title}<p>{_e(words)}</p>{_seal(ev, lang)}</div>')
        out.append("</section>")
        return "".join(out)
    out.append('<div class="card">' + _pictures(a, ev, lang) + _events(a, lang) + "</div>")
    body = _stages(ev, lang) + _installed(ev, lang) + _census(ev, lang) + _summary(a, lang)
    out.append('<div class="card">' + body + "</div>")
    out.append(
        '<div class="card">'
        + _controls(ev, a, lang)
        + _ownership(ev, lang)
        + _seal(ev, lang)
        + "</div>"
    )
    out.append("</section>")
    return "".join(out)


def _root_table(report: load.Report, data: Mapping[str, Any], lang: Lang) -> str:
    zh = lang is Lang.ZH
    head = [
        "尝试" if zh else "attempt",
        phrase("verdict", lang),
        phrase("retry_of", lang),
        phrase("retried_by", lang),
    ]
    rows = []
    for a in data["attempts"]:
        aid = a["attempt"]
        # The headline already says "valid clean-retry result"; the badge gets a ring.
        mark = " clean" if a["clean_retry_result"] else ""
        parent = a["retry_of_attempt"]
        parent_cell = (
            f'<a href="#a-{_e(parent)}">{_e(parent)}</a>'
            if parent
            else (_e(a["retry_of"]) if a["retry_of"] else "")
        )
        kids = ", ".join(f'<a href="#a-{_e(k)}">{_e(k)}</a>' for k in a["retried_by"])
        rows.append(
            (
                f'<a href="#a-{_e(aid)}">{_e(aid)}</a>',
                _badge(a["state"] + mark, a["headline"]),
                parent_cell,
                kids,
            )
        )
    out = f"<h2>{_e(phrase('attempts', lang))}</h2>"
    if not rows:
        return out + f"<p>{_e(phrase('none', lang))}</p>"
    total, parts = say.state_counts(report, lang)
    badges = " ".join(_badge(state, text) for state, text in parts)
    out += f'<p class="counts">{_e(total + say.colon(lang))}{badges}</p>'
    return out + '<div class="card scroll">' + _table(head, rows) + "</div>"


def _matrix(data: Mapping[str, Any], lang: Lang) -> str:
    m = data.get("matrix")
    if not m:
        return ""
    rows = [
        (
            _e(r["arm"]),
            _e(r["change"]),
            _e(r["verdicts"]),
            _e(r["outcome"]),
            _e(r["proves"]),
            _e(r["does_not_prove"]),
        )
        for r in m["rows"]
    ]
    head = facts.MATRIX_HEAD[lang]
    out = [f'<h2>{_e(_h("matrix", lang))}</h2><div class="card scroll">', _table(head, rows)]
    out.append(f"<h3>{_e(_h('conclusion', lang))}</h3><ul>")
    out += [f"<li>{_e(x)}</li>" for x in m["conclusion"]]
    out.append("</ul></div>")
    return "".join(out)


def render_html(report: load.Report, lang: Lang = Lang.EN) -> str:
    """The whole page as one string (UTF-8, no external resource)."""
    data = facts.report_json(report, lang)
    by_id = {a["attempt"]: a for a in data["attempts"]}
    title = (
        f"{phrase('title_attempt', lang)} {report.attempts[0].attempt}"
        if report.kind == "attempt"
        else f"{phrase('title_root', lang)} {report.target}"
    )
    body: list[str] = [f"<h1>{_e(title)}</h1>"]
    body.append(
        f'<p class="meta">{_e(_h("generated", lang).format(v=__version__))} · '
        f"{_e(facts.fmt_time(data['generated_at']))}</p>"
    )
    body.append(_ledgers(report, lang))
    if report.kind == "root":
        body.append(_root_table(report, data, lang))
        if data["health"]:
            body.append(
                f"<h2>{_e(phrase('health', lang))}</h2>"
                f'<div class="card">{_e(in_language(data["health"], lang))}</div>'
            )
        body.append(_matrix(data, lang))
    many = report.kind == "root" and len(report.attempts) > 3
    for ev in report.attempts:
        a = by_id[ev.attempt]
        section = _attempt(report, ev, a, lang)
        if many:
            words = a["headline"]
            section = (
                f'<details class="attempt-box"><summary>{_e(ev.attempt)} '
                f"{_badge(ev.verdict.state.value, words)}</summary>{section}</details>"
            )
        body.append(section)
    return _visible(
        f'<!DOCTYPE html>\n<html lang="{"zh-CN" if lang is Lang.ZH else "en"}">'
        '<head><meta charset="utf-8">'
        # Nothing may load from anywhere (air-gapped hosts; an attached file never calls
        # home); a violation would show as a console error, which the browser test catches.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>"
        + "".join(body)
        + "</main></body></html>\n"
    )


__all__ = ["State", "render_html"]
