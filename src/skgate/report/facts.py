"""The facts every report format shows, and the JSON form (schema ``skgate.report/1``).

The Markdown and HTML renderers print what :func:`report_json` carries (their sentences
come from :mod:`skgate.report.sentences`), so the three formats state the same facts.

Schema history: ``skgate.report/1``: first version (2026-11); 2026-12: ``reasons`` (in
the report's language; ``verdict.reasons`` keeps the originals), ``controls_table``,
``stages``, ``error_logs_to_read``, ``error_logs_total``, ``seal``, and ``matrix`` at
the top level; ``ledgers`` at the top level (each evidence root's ledger: intact,
unfinished or changed, C4) (added fields only: readers of the first version are
unaffected)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skgate import __version__
from skgate.evidence.load import health_statement
from skgate.model.errors import UsageError
from skgate.model.events import (
    Blocked,
    Event,
    Finished,
    ForeignWait,
    ForeignWaitEnd,
    Launched,
    LeaderExited,
    Observation,
    Preflight,
    PreflightStep,
    Reaped,
    SignalReceived,
    SignalSent,
    TreeEnded,
)
from skgate.model.phrases import C7, LANGS, Lang
from skgate.model.records import Census, State, Verdict
from skgate.model.signals import signal_name
from skgate.report import rows
from skgate.report.load import AttemptEvidence, Report
from skgate.verdict.words import (
    EVENT_WORDS,
    SIGNAL_REASONS_ZH,
    duration,
    in_language,
    phrase,
    state_words,
)
from skgate.verdict.words_next import next_step_of
from skgate.verdict.words_values import cause_word, state_short

SCHEMA_REPORT = "skgate.report/1"


FORMATS = ("md", "json", "html")


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


def headline(ev: AttemptEvidence, lang: Lang) -> str:
    words = state_words(ev.verdict, lang)
    if is_clean_retry_result(ev):
        sep = "：" if lang is Lang.ZH else ": "
        return f"{C7['clean_retry'][lang]}{sep}{words}"
    return words


def fmt_time(t: float | None) -> str:
    if t is None:
        return "?"
    stamp = dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 10000:02d}Z"


def _counts_text(counts: Any, lang: Lang) -> str:
    if not isinstance(counts, dict):
        return ""
    err = counts.get("error_logs", 0)
    succ = counts.get("succ_logs", 0)
    run = counts.get("run_packages", 0)
    if lang is Lang.ZH:
        return f"error 命名文件 {err}（暂时性）、succ 日志 {succ}、.run 包 {run}"
    return f"error-named files {err} (provisional), succ logs {succ}, .run {run}"


def _sig(value: Any) -> str:
    return signal_name(value) if isinstance(value, int) else str(value)


def _secs(value: Any, lang: Lang) -> str:
    return duration(float(value), lang) if isinstance(value, (int, float)) else "?"


def _event_detail(e: Event, lang: Lang) -> str:
    zh = lang is Lang.ZH
    if isinstance(e, Launched):
        t, g = _secs(e.timeout, lang), _secs(e.grace, lang)
        ids = f"pid {e.pid}, pgid {e.pgid}, sid {e.sid}"
        if zh:
            return f"{ids}，超时 {t}，宽限期 {g}"
        return f"{ids}, timeout {t}, grace {g}"
    if isinstance(e, Observation):
        alive = e.owned_alive
        label = "自有存活进程" if zh else "owned alive"
        counts = dict(e.counts) if e.counts is not None else None
        return f"{label} {alive}; {_counts_text(counts, lang)}"
    if isinstance(e, (SignalSent, SignalReceived)):
        sig = e.signal
        sname = e.name or (signal_name(sig) if sig is not None else "?")
        extra = []
        target = e.target if isinstance(e, SignalSent) else None
        if target is not None:
            shown = str(target)
            if zh and shown.startswith("process group "):
                shown = "进程组 " + shown.removeprefix("process group ")
            extra.append(f"{'目标' if zh else 'target'} {shown}")
        reason = e.reason if isinstance(e, SignalSent) else None
        if reason:
            said = SIGNAL_REASONS_ZH.get(str(reason), str(reason)) if zh else str(reason)
            extra.append(f"{'原因' if zh else 'reason'} {said}")
        sep = "，" if zh else ", "
        return f"{sname}" + (f" ({sep.join(extra)})" if extra else "")
    if isinstance(e, (LeaderExited, Reaped)):
        pid = f"pid {e.pid}, " if e.pid is not None else ""
        if e.exit_signal is not None:
            return f"{pid}{'信号' if zh else 'signal'} {_sig(e.exit_signal)}"
        return f"{pid}{phrase('exit_status', lang)} {e.exit_status}"
    if isinstance(e, TreeEnded):
        return f"{'仍存活的脱离进程' if zh else 'escaped alive'} {e.escaped_alive}"
    if isinstance(e, (ForeignWait, ForeignWaitEnd)):
        return _wait_detail(e, lang)
    if isinstance(e, Preflight) and e.step_kind is PreflightStep.LEASE_WAIT:
        who = e.details.get("holder")
        holder = who.get("pid") if isinstance(who, dict) else None
        if lang is Lang.ZH:
            return f"设备 {e.details.get('device')}，持有者 pid {holder}"
        return f"device {e.details.get('device')}, held by pid {holder}"
    if isinstance(e, Preflight) and e.step_kind is PreflightStep.LEASE_ACQUIRED:
        waited = e.details.get("waited_s")
        secs = f"{waited:.1f}" if isinstance(waited, (int, float)) else "?"
        return f"等待 {secs} 秒" if lang is Lang.ZH else f"after {secs} s"
    if isinstance(e, Finished):
        cause = ""
        if e.cause:
            said = cause_word(e.cause, lang)
            cause = f"，{phrase('cause', lang)} {said}" if zh else f", cause {said}"
        return f"{phrase('state', lang)} {state_short(e.state, lang)}{cause}"
    if isinstance(e, Blocked):
        return str(list(e.reasons) or "")
    return ""


def _wait_detail(e: ForeignWait | ForeignWaitEnd, lang: Lang) -> str:
    """A foreign-compiler wait: its blockers (pid, name) and, at its end, duration and
    outcome (C4: they are waited for, never signalled)."""
    shown = ", ".join(f"{b.get('name')}[{b.get('pid')}]" for b in e.blockers if isinstance(b, dict))
    if isinstance(e, ForeignWait):
        timeout = e.timeout
        if lang is Lang.ZH:
            return f"阻塞进程：{shown}；最多等待 {timeout} 秒"
        return f"blockers: {shown}; waiting at most {timeout} s"
    waited = e.waited_s
    secs = f"{waited:.1f}" if isinstance(waited, (int, float)) else "?"
    cleared = e.outcome == "cleared"
    if lang is Lang.ZH:
        how = "外部编译进程已全部结束" if cleared else "仍有外部编译进程，超时未启动"
        return f"等待 {secs} 秒，{how}；阻塞进程：{shown}"
    how = "every blocker ended on its own" if cleared else "timed out, blockers still alive"
    return f"waited {secs} s, {how}; blockers: {shown}"


def _label_key(e: Event) -> str:
    """Preflight steps with words of their own (a lease wait) are labelled by the step,
    so two different steps never read as two identical "preflight checked" lines."""
    step = e.step if isinstance(e, Preflight) else None
    return step if step is not None and step in EVENT_WORDS else e.event_name


def timeline(events: Sequence[Event], lang: Lang) -> list[dict[str, Any]]:
    """Launch, observations (first, last, count), signals, exits, in journal order."""
    launched = next((e for e in events if isinstance(e, Launched)), None)
    t0 = launched.t if launched else (events[0].t if events else None)
    observations = [e for e in events if isinstance(e, Observation)]
    reaped = [e for e in events if isinstance(e, Reaped)]
    out: list[dict[str, Any]] = []
    for e in events:
        name = e.event_name
        if isinstance(e, Observation) and e is not observations[0] and e is not observations[-1]:
            continue
        if isinstance(e, Reaped) and len(reaped) > 3 and e is not reaped[-1]:
            continue
        detail = _event_detail(e, lang)
        if isinstance(e, Observation) and len(observations) > 2 and e is observations[-1]:
            n = len(observations)
            detail += f" ({n} 次观察)" if lang is Lang.ZH else f" ({n} observations in all)"
        if isinstance(e, Reaped) and len(reaped) > 3:
            n = len(reaped)
            detail += f" (共 {n} 个)" if lang is Lang.ZH else f" ({n} reaped in all)"
        t = e.t
        tv = float(t) if isinstance(t, (int, float)) else None
        out.append(
            {
                "t": tv,
                "offset": (tv - float(t0))
                if tv is not None and isinstance(t0, (int, float))
                else None,
                "event": name,
                "label": EVENT_WORDS.get(_label_key(e), {}).get(lang, name),
                "detail": detail,
            }
        )
    return out


def attempt_json(
    ev: AttemptEvidence,
    lang: Lang,
    retry_of_attempt: str | None = None,
    retried_by: Sequence[str] = (),
) -> dict[str, Any]:
    v = ev.verdict
    label = census_label(ev.census, v)
    stage_rows = rows.stage_rows_of(ev.stages)
    logs, n_logs = rows.error_logs_to_read(v, ev.census, stage_rows)
    return {
        "attempt": ev.attempt,
        "path": str(ev.path),
        "state": v.state.value,
        "cause": v.cause.value if v.cause else None,
        "words": {lg.value: state_words(v, lg) for lg in Lang},
        "headline": headline(ev, lang),
        "clean_retry_result": is_clean_retry_result(ev),
        "retry_of": ev.request.retry_of if ev.request else None,
        "retry_of_attempt": retry_of_attempt,
        "retried_by": list(retried_by),
        "verdict": v.to_dict(),
        "next_step": next_step_of(v, lang).format(a=ev.path),
        "timeline": timeline(ev.events, lang),
        "request": ev.request.to_dict() if ev.request else None,
        "controls": dict(ev.control.get("controls") or {}),
        "ownership": ev.ownership.to_dict() if ev.ownership else None,
        "census": ev.census.to_dict() if ev.census else None,
        "census_label": label,
        "summary_lines": list(ev.summary_lines),
        "summary_source": ev.summary_source or None,
        "missing": list(v.missing),
        "reasons": [in_language(r, lang) for r in v.reasons],
        "controls_table": [r.to_dict() for r in rows.control_rows(ev.control.get("controls"))],
        "stages": [s.to_dict() for s in stage_rows],
        "error_logs_to_read": logs,
        "error_logs_total": n_logs,
        "seal": ev.seal.to_dict(lang) if ev.seal else None,
        "withheld": ev.withheld,
    }


#: Column heads of the attribution table (C6), in md and html.
MATRIX_HEAD: Mapping[str, tuple[str, ...]] = {
    "en": ("arm", "the one change", "verdict per repeat", "outcome", "proves", "does not prove"),
    "zh": ("分组", "唯一的改动", "每次重复的结论", "结果", "证明了什么", "不能证明什么"),
}


def matrix_rows(matrix: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The attribution table of a matrix record: one row per arm, baseline first."""
    if not matrix:
        return None
    rows = []
    arms = [matrix.get("baseline"), *(matrix.get("arms") or [])]
    for row in arms:
        if not isinstance(row, Mapping):
            continue
        runs = [r for r in row.get("runs") or [] if isinstance(r, Mapping)]
        verdicts = ", ".join(
            str(r.get("state"))
            + ("" if r.get("status") in ("pass", "fail") else f" ({r.get('status')})")
            for r in runs
        )
        rows.append(
            {
                "arm": str(row.get("arm", "")),
                "change": str(row.get("change", "")),
                "verdicts": verdicts,
                "outcome": str(row.get("outcome", "")),
                "proves": str(row.get("proves", "")),
                "does_not_prove": str(row.get("does_not_prove", "")),
            }
        )
    conclusion = matrix.get("conclusion")
    lines = conclusion.get("lines") if isinstance(conclusion, Mapping) else None
    return {"rows": rows, "conclusion": [str(x) for x in lines or []]}


def report_json(report: Report, lang: Lang = Lang.EN) -> dict[str, Any]:
    check_lang(lang)
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
        "health": report_health(report),
        "matrix": matrix_rows(report.matrix),
        "ledgers": [led.to_dict(lang) for led in report.ledgers],
    }


def report_health(report: Report) -> str | None:
    """C6: a compile-health root says whether later profiling may be accepted."""
    if report.kind != "root":
        return None
    return health_statement(Path(report.target))


def parse_lang(text: str) -> Lang:
    """``text`` as a :class:`Lang` (the edge: a CLI option, an MCP argument); bad input is
    a one-line UsageError (exit 2)."""
    try:
        return Lang(text)
    except ValueError:
        raise UsageError(f"unknown language {text!r}; use one of: {', '.join(LANGS)}") from None


def check_lang(lang: Lang) -> None:
    """A caller of the Python API may still hand a string: refuse what is no language."""
    parse_lang(lang)
