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

The JSON form (schema ``skgate.report/1``) carries the same facts for controllers.
Renderers return strings; the CLI prints or writes them.

Schema history: ``skgate.report/1``: first version (2026-11).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate import __version__
from skgate.evidence.files import CENSUS, CONTROL, EVENTS, OWNERSHIP, SUMMARY, VERDICT, read_events
from skgate.evidence.files import read_json as _read_json
from skgate.evidence.ledger import resolve
from skgate.evidence.load import current_verdict
from skgate.model.errors import EvidenceError, UsageError
from skgate.model.records import Census, Ownership, ProcessRecord, State, Verdict
from skgate.model.request import RunRequest
from skgate.model.schema import SCHEMA_CONTROL, check_schema
from skgate.regress.health import health_statement
from skgate.verdict.classify import signal_name
from skgate.verdict.words import C7, EVENT_WORDS, NEXT_STEP, WORDS, in_language, phrase

SCHEMA_REPORT = "skgate.report/1"
LANGS = ("en", "zh")
FORMATS = ("md", "json")

VerdictOf = Callable[[Path], Verdict]

# ---------------------------------------------------------------------------
# Reading an attempt


def default_verdict_of(attempt_dir: Path) -> Verdict:
    """The attempt's current verdict: recorded if the run finished, else a live look."""
    return current_verdict(attempt_dir)


@dataclass(frozen=True)
class AttemptEvidence:
    """Everything a report shows about one attempt, read from its directory."""

    path: Path
    attempt: str
    control: Mapping[str, Any]
    request: RunRequest | None
    verdict: Verdict
    events: tuple[Mapping[str, Any], ...]
    ownership: Ownership | None
    census: Census | None
    summary_lines: tuple[str, ...]
    summary_source: str


def load_attempt(path: Path, verdict_of: VerdictOf = default_verdict_of) -> AttemptEvidence:
    """Read one attempt directory; a damaged evidence file is a one-line EvidenceError."""
    control_path = path / CONTROL
    control = check_schema(_read_json(control_path), SCHEMA_CONTROL, str(control_path))
    request_raw = control.get("request")
    request = (
        RunRequest.from_dict(request_raw, f"{control_path}: request")
        if isinstance(request_raw, dict)
        else None
    )
    verdict = verdict_of(path)
    events = tuple(read_events(path / EVENTS))
    ownership = None
    if (path / OWNERSHIP).exists():
        ownership = Ownership.from_dict(_read_json(path / OWNERSHIP), str(path / OWNERSHIP))
    census = verdict.census
    if census is None and (path / CENSUS).exists():
        census = Census.from_dict(_read_json(path / CENSUS), str(path / CENSUS))
    summary_lines: tuple[str, ...] = ()
    source = ""
    if (path / SUMMARY).exists():
        try:
            text = (path / SUMMARY).read_text(encoding="utf-8", errors="backslashreplace")
        except OSError as exc:
            raise EvidenceError(f"{path / SUMMARY}: unreadable ({exc.strerror})") from None
        summary_lines = tuple(text.splitlines())
        source = SUMMARY
    elif verdict.summary is not None:
        summary_lines = verdict.summary.lines
        source = VERDICT
    attempt_id = control.get("attempt")
    return AttemptEvidence(
        path=path,
        attempt=attempt_id if isinstance(attempt_id, str) else path.name,
        control=control,
        request=request,
        verdict=verdict,
        events=events,
        ownership=ownership,
        census=census,
        summary_lines=summary_lines,
        summary_source=source,
    )


# ---------------------------------------------------------------------------
# Facts shared by both formats


def census_label(census: Census | None, verdict: Verdict) -> str:
    """``final`` only for a naturally returned failure and a census taken after it (C1)."""
    if census is None:
        return "none"
    if not census.live and verdict.state is State.FAILED and verdict.natural_return:
        return "final"
    return "provisional"


def is_clean_retry_result(ev: AttemptEvidence) -> bool:
    """A retry whose own compile reached a terminal, natural verdict (C7 fourth row)."""
    return (
        ev.request is not None
        and ev.request.retry_of is not None
        and ev.verdict.state in (State.SUCCEEDED, State.FAILED)
        and ev.verdict.natural_return
    )


def headline(ev: AttemptEvidence, lang: str) -> str:
    words = WORDS[ev.verdict.state][lang]
    if is_clean_retry_result(ev):
        sep = "：" if lang == "zh" else ": "
        return f"{C7['clean_retry'][lang]}{sep}{words}"
    return words


def _fmt_time(t: float | None) -> str:
    if t is None:
        return "?"
    stamp = dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 10000:02d}Z"


def _counts_text(counts: Any, lang: str) -> str:
    if not isinstance(counts, dict):
        return ""
    err = counts.get("error_logs", 0)
    succ = counts.get("succ_logs", 0)
    run = counts.get("run_packages", 0)
    if lang == "zh":
        return f"error 命名文件 {err}（暂时性）、succ 日志 {succ}、.run {run}"
    return f"error-named files {err} (provisional), succ logs {succ}, .run {run}"


def _event_detail(e: Mapping[str, Any], lang: str) -> str:
    name = e.get("event")
    if name == "launched":
        return (
            f"pid {e.get('pid')}, pgid {e.get('pgid')}, sid {e.get('sid')}, "
            f"timeout {e.get('timeout')} s, grace {e.get('grace')} s"
        )
    if name == "observation":
        alive = e.get("owned_alive")
        label = "自有存活进程" if lang == "zh" else "owned alive"
        return f"{label} {alive}; {_counts_text(e.get('counts'), lang)}"
    if name in ("signal_sent", "signal_received"):
        sig = e.get("signal")
        sname = e.get("name") or (signal_name(sig) if isinstance(sig, int) else "?")
        extra = []
        if e.get("target") is not None:
            extra.append(f"target {e.get('target')}")
        if e.get("reason"):
            extra.append(f"reason {e.get('reason')}")
        return f"{sname}" + (f" ({', '.join(extra)})" if extra else "")
    if name in ("leader_exited", "reaped"):
        pid = f"pid {e['pid']}, " if e.get("pid") is not None else ""
        if e.get("exit_signal") is not None:
            sig = e["exit_signal"]
            return f"{pid}signal {signal_name(sig) if isinstance(sig, int) else sig}"
        return f"{pid}exit status {e.get('exit_status')}"
    if name == "tree_ended":
        return f"escaped alive {e.get('escaped_alive', 0)}"
    if name == "finished":
        cause = f", cause {e['cause']}" if e.get("cause") else ""
        return f"state {e.get('state')}{cause}"
    if name == "blocked":
        return str(e.get("reason") or e.get("reasons") or "")
    return ""


def timeline(events: Sequence[Mapping[str, Any]], lang: str) -> list[dict[str, Any]]:
    """Launch, observations (first, last, count), signals, exits, in journal order."""
    launched = next((e for e in events if e.get("event") == "launched"), None)
    t0 = launched.get("t") if launched else (events[0].get("t") if events else None)
    observations = [e for e in events if e.get("event") == "observation"]
    reaped = [e for e in events if e.get("event") == "reaped"]
    out: list[dict[str, Any]] = []
    for e in events:
        name = str(e.get("event"))
        if name == "observation" and e is not observations[0] and e is not observations[-1]:
            continue
        if name == "reaped" and len(reaped) > 3 and e is not reaped[-1]:
            continue
        detail = _event_detail(e, lang)
        if name == "observation" and len(observations) > 2 and e is observations[-1]:
            n = len(observations)
            detail += f" ({n} 次观察)" if lang == "zh" else f" ({n} observations in all)"
        if name == "reaped" and len(reaped) > 3:
            n = len(reaped)
            detail += f" (共 {n} 个)" if lang == "zh" else f" ({n} reaped in all)"
        t = e.get("t")
        tv = float(t) if isinstance(t, (int, float)) else None
        out.append(
            {
                "t": tv,
                "offset": (tv - float(t0))
                if tv is not None and isinstance(t0, (int, float))
                else None,
                "event": name,
                "label": EVENT_WORDS.get(name, {}).get(lang, name),
                "detail": detail,
            }
        )
    return out


def _resolve_retry(retry_of: str | None, by_path: Mapping[Path, str]) -> str | None:
    if not retry_of:
        return None
    p = Path(retry_of)
    try:
        key = p.resolve()
    except OSError:
        key = p
    if key in by_path:
        return by_path[key]
    for path, aid in by_path.items():
        if p.name == path.name and (p.name == retry_of or str(path).endswith(retry_of)):
            return aid
    return None


def attempt_json(
    ev: AttemptEvidence,
    lang: str,
    retry_of_attempt: str | None = None,
    retried_by: Sequence[str] = (),
) -> dict[str, Any]:
    v = ev.verdict
    label = census_label(ev.census, v)
    return {
        "attempt": ev.attempt,
        "path": str(ev.path),
        "state": v.state.value,
        "cause": v.cause.value if v.cause else None,
        "words": {lg: WORDS[v.state][lg] for lg in LANGS},
        "headline": headline(ev, lang),
        "clean_retry_result": is_clean_retry_result(ev),
        "retry_of": ev.request.retry_of if ev.request else None,
        "retry_of_attempt": retry_of_attempt,
        "retried_by": list(retried_by),
        "verdict": v.to_dict(),
        "next_step": NEXT_STEP[v.state][lang].format(a=ev.path),
        "timeline": timeline(ev.events, lang),
        "request": ev.request.to_dict() if ev.request else None,
        "controls": dict(ev.control.get("controls") or {}),
        "ownership": ev.ownership.to_dict() if ev.ownership else None,
        "census": ev.census.to_dict() if ev.census else None,
        "census_label": label,
        "summary_lines": list(ev.summary_lines),
        "summary_source": ev.summary_source or None,
        "missing": list(v.missing),
    }


# ---------------------------------------------------------------------------
# Building and rendering


@dataclass(frozen=True)
class Report:
    """A report of one attempt or of every attempt in a root, ready to render."""

    target: str
    kind: str  # "attempt" or "root"
    attempts: tuple[AttemptEvidence, ...]
    retry_of: Mapping[str, str | None]
    retried_by: Mapping[str, tuple[str, ...]]


def build_report(target: Path, verdict_of: VerdictOf = default_verdict_of) -> Report:
    """Read an attempt directory or an evidence root (oldest attempt first)."""
    paths = resolve(target)
    kind = "attempt" if len(paths) == 1 and paths[0] == target else "root"
    attempts = tuple(load_attempt(p, verdict_of) for p in paths)
    by_path: dict[Path, str] = {}
    for a in attempts:
        try:
            by_path[a.path.resolve()] = a.attempt
        except OSError:
            by_path[a.path] = a.attempt
    retry_of: dict[str, str | None] = {}
    retried_by: dict[str, list[str]] = {}
    for a in attempts:
        parent = _resolve_retry(a.request.retry_of if a.request else None, by_path)
        retry_of[a.attempt] = parent
        if parent is not None:
            retried_by.setdefault(parent, []).append(a.attempt)
    return Report(
        target=str(target),
        kind=kind,
        attempts=attempts,
        retry_of=retry_of,
        retried_by={k: tuple(v) for k, v in retried_by.items()},
    )


def report_json(report: Report, lang: str = "en") -> dict[str, Any]:
    _check_lang(lang)
    return {
        "schema": SCHEMA_REPORT,
        "skgate_version": __version__,
        "generated_at": time.time(),
        "target": report.target,
        "kind": report.kind,
        "lang": lang,
        "attempts": [
            attempt_json(
                a, lang, report.retry_of.get(a.attempt), report.retried_by.get(a.attempt, ())
            )
            for a in report.attempts
        ],
        "health": _health(report),
    }


def _health(report: Report) -> str | None:
    """C6: a compile-health root says whether later profiling may be accepted."""
    if report.kind != "root":
        return None
    return health_statement(Path(report.target))


def _check_lang(lang: str) -> None:
    if lang not in LANGS:
        raise UsageError(f"unknown language {lang!r}; use one of: {', '.join(LANGS)}")


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
        out.append(f"- {_fmt_time(item['t'])}{rel} {item['label']}{detail}")
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
    _check_lang(lang)
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
    health = _health(report)
    if health is not None:
        out += [f"## {phrase('health', lang)}", "", f"- {in_language(health, lang)}", ""]
    for a in report.attempts:
        out += _md_attempt(report, a, lang, 2)
    return "\n".join(out).rstrip() + "\n"


def render(report: Report, lang: str = "en", fmt: str = "md") -> str:
    """The report as text in the chosen language and format."""
    _check_lang(lang)
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
