"""Facts as sentences, in the report's language: Markdown and HTML print the same ones.

Each helper says one fact of :mod:`skgate.report.facts` / :mod:`skgate.report.load` in
English or Chinese (every label translated, the C7 phrases exactly as
:mod:`skgate.verdict.words` gives them). ``code`` marks a command or path: backticks in
Markdown, nothing in HTML (which escapes and styles it itself).
"""

from __future__ import annotations

from collections.abc import Callable

from skgate.model.phrases import C7, Lang, count
from skgate.model.records import ProcessRecord, State, Verdict
from skgate.model.signals import signal_name
from skgate.report.facts import census_label, headline, is_clean_retry_result
from skgate.report.load import AttemptEvidence, Report
from skgate.report.rows import LedgerState, SealState
from skgate.verdict.words import CONTROL_SECTIONS, WORDS, count_words, duration, phrase
from skgate.verdict.words_next import UNCOMPILED_COUNT, uncompiled
from skgate.verdict.words_values import cause_word, package_word, state_short

Code = Callable[[str], str]


def plain(text: str) -> str:
    return text


def backticks(text: str) -> str:
    return f"`{text}`"


def yes_no(flag: bool, lang: Lang) -> str:
    return phrase("yes" if flag else "no", lang)


def colon(lang: Lang) -> str:
    return "：" if lang is Lang.ZH else ": "


def path_line(ev: AttemptEvidence, lang: Lang, code: Code = plain) -> str:
    return f"{phrase('path', lang)}{colon(lang)}{code(str(ev.path))}"


def retry_lines(report: Report, ev: AttemptEvidence, lang: Lang) -> list[str]:
    out = []
    parent = report.retry_of.get(ev.attempt)
    if ev.request is not None and ev.request.retry_of:
        out.append(f"{phrase('retry_of', lang)}{colon(lang)}{parent or ev.request.retry_of}")
    kids = report.retried_by.get(ev.attempt, ())
    if kids:
        by_id = {a.attempt: a for a in report.attempts}
        parts = [f"{k} ({headline(by_id[k], lang)})" for k in kids]
        out.append(f"{phrase('retried_by', lang)}{colon(lang)}" + "; ".join(parts))
    return out


def request_lines(ev: AttemptEvidence, lang: Lang, code: Code = plain) -> list[str]:
    """The command, where it ran, and the frozen timeout, grace and package mode."""
    r = ev.request
    if r is None:
        return []
    c = colon(lang)
    t, g = duration(r.timeout, lang), duration(r.grace, lang)
    if lang is Lang.ZH:
        limits = f"超时 {t}，宽限期 {g}，包模式 {package_word(r.package_mode, lang)}"
        where = f"工作目录：{code(r.cwd)}；输出目录：{code(r.outputs or '-')}"
    else:
        limits = f"timeout {t}, grace {g}, package {r.package_mode.value}"
        where = f"cwd: {code(r.cwd)}; outputs: {code(r.outputs or '-')}"
    return [f"{phrase('command', lang)}{c}{code(' '.join(r.argv))}", where, limits]


def proc_end(p: ProcessRecord, lang: Lang) -> str:
    if p.exit_signal is not None:
        return f"{'信号' if lang is Lang.ZH else 'signal'} {signal_name(p.exit_signal)}"
    if p.exit_status is not None:
        return f"{phrase('exit_status', lang)} {p.exit_status}"
    return "-"


def proc_text(p: ProcessRecord, lang: Lang, code: Code = plain) -> str:
    end = proc_end(p, lang)
    tail = f", {end}" if end != "-" else ""
    esc = (", 已脱离进程组" if lang is Lang.ZH else ", escaped the group") if p.escaped else ""
    start = "启动" if lang is Lang.ZH else "start"
    return f"pid {p.pid} {code(p.name)} ({start} {p.start_ticks}, pgid {p.pgid}{tail}{esc})"


def ownership_lines(
    ev: AttemptEvidence, lang: Lang, code: Code = plain, limit: int = 20
) -> list[tuple[int, str]]:
    """(indent, text) lines of the manifest; ``limit`` processes listed (0: none)."""
    own = ev.ownership
    zh = lang is Lang.ZH
    c = colon(lang)
    if own is None:
        return [(0, phrase("no_ownership", lang))]
    out: list[tuple[int, str]] = []
    if own.leader is not None:
        out.append((0, f"{'顶层进程' if zh else 'leader'}{c}{proc_text(own.leader, lang, code)}"))
    done = "完整" if zh else "complete"
    out.append((0, f"pgid {own.pgid}, sid {own.sid}, {done}{c}{yes_no(own.complete, lang)}"))
    out.append((0, f"{'自有进程' if zh else 'owned'}{c}{len(own.owned)}"))
    out += [(1, proc_text(p, lang, code)) for p in own.owned[:limit]]
    if limit and len(own.owned) > limit:
        out.append((1, phrase("more", lang).format(n=len(own.owned) - limit)))
    esc = own.escaped
    pids = f" ({', '.join(str(p.pid) for p in esc)})" if esc else ""
    out.append((0, f"{'脱离进程组' if zh else 'escaped'}{c}{len(esc)}{pids}"))
    seen = "见到的外部编译进程" if zh else "foreign compilers seen"
    note = "（从未触碰，C4）" if zh else " (never touched, C4)"
    out.append((0, f"{seen}{c}{len(own.foreign)}{note}"))
    out += [(1, proc_text(p, lang, code)) for p in own.foreign[: limit or 20]]
    return out


def census_heading(ev: AttemptEvidence, lang: Lang) -> str:
    label = census_label(ev.census, ev.verdict)
    if lang is Lang.ZH:
        tag = {"provisional": "暂时性", "final": "最终", "none": ""}[label]
    else:
        tag = label if label != "none" else ""
    return phrase("census", lang) + (f" ({tag})" if tag else "")


def census_lines(ev: AttemptEvidence, lang: Lang, code: Code = plain) -> list[tuple[int, str]]:
    """(indent, text) lines of the census: provisional unless final (C1, C7)."""
    c = ev.census
    zh = lang is Lang.ZH
    label = census_label(c, ev.verdict)
    if c is None:
        return [(0, phrase("no_census", lang))]
    if not c.exists:
        return [(0, f"{code(c.outputs)}{colon(lang)}{phrase('no_outputs', lang)}")]
    if label == "final":
        err_words = (
            f"error 命名文件 {c.error_logs}：{C7['final_failure']['zh']}的证据"
            if zh
            else f"error-named files {c.error_logs}: final evidence of {C7['final_failure']['en']}"
        )
    elif zh:
        err_words = f"error 命名文件 {c.error_logs}：{C7['provisional']['zh']}（C1：不是失败证据）"
    else:
        err_words = (
            f"error-named files {c.error_logs}: {C7['provisional']['en']} "
            "(C1: not evidence of failure)"
        )
    when = ""
    if c.live:
        when = "（编译进行中时统计）" if zh else " (taken while compilation was live)"
    out = [
        (0, f"{'输出目录' if zh else 'outputs'}{colon(lang)}{code(c.outputs)}{when}"),
        (0, err_words),
    ]
    if zh:
        out.append((0, f"succ 日志 {c.succ_logs}，.run 包 {c.run_packages}"))
    else:
        out.append((0, f"succ logs {c.succ_logs}, .run packages {c.run_packages}"))
    if c.unreadable:
        out.append(
            (0, f"不完整：{c.unreadable} 个目录无法读取，计数只是下限")
            if zh
            else (
                0,
                f"incomplete: {count(c.unreadable, 'directory')} could not be read; "
                "the counts are a lower bound",
            )
        )
    for r in c.roots:
        if zh:
            kind = "最终编译证据" if label == "final" else "暂时性"
            text = f"error 命名 {r.error_logs}（{kind}），succ {r.succ_logs}，.run {r.run_packages}"
        else:
            kind = "final compiler evidence" if label == "final" else "provisional"
            text = f"error-named {r.error_logs} ({kind}), succ {r.succ_logs}, .run {r.run_packages}"
        out.append((1, f"{code(r.root)}{colon(lang)}{text}"))
    return out


def damaged_ledgers(report: Report, lang: Lang) -> list[tuple[str, list[str]]]:
    """Each evidence root ledger that is not intact: what it is (unfinished or changed)
    and its problems, in ``lang`` (C4: a report never leaves a damaged ledger unsaid)."""
    return [
        (phrase(f"ledger_{led.state.value}", lang), [p.text(lang) for p in led.problems])
        for led in report.ledgers
        if led.state is not LedgerState.INTACT
    ]


def seal_text(ev: AttemptEvidence, lang: Lang) -> str:
    state = ev.seal.state if ev.seal else SealState.NOT_SEALED
    return phrase(f"seal_{state.value}", lang)


def section_label(section: str, lang: Lang) -> str:
    return CONTROL_SECTIONS.get(section, {}).get(lang, section)


def _value(word: str, lang: Lang, code: Code) -> str:
    """A record value: as code in English (the record's own word), as words in Chinese."""
    return word if lang is Lang.ZH else code(word)


def verdict_facts(v: Verdict, lang: Lang, code: Code = plain) -> str:
    items = [
        f"{phrase('state', lang)} {_value(state_short(v.state, lang), lang, code)}",
        f"{phrase('cause', lang)} {_value(cause_word(v.cause, lang), lang, code)}",
        f"{phrase('exit_status', lang)} {v.exit_status if v.exit_status is not None else '-'}",
    ]
    if v.exit_signal is not None:
        items.append(f"{phrase('exit_signal', lang)} {signal_name(v.exit_signal)}")
    items.append(f"{phrase('natural', lang)}{colon(lang)}{yes_no(v.natural_return, lang)}")
    return ("；" if lang is Lang.ZH else "; ").join(items)


def state_counts(report: Report, lang: Lang) -> tuple[str, list[tuple[str, str]]]:
    """The attempt count and, per state, (state value, "words n") in the C7 words."""
    counts: dict[tuple[State, str], int] = {}
    for a in report.attempts:
        key = (a.verdict.state, count_words(a.verdict, lang))
        counts[key] = counts.get(key, 0) + 1
    zh = lang is Lang.ZH

    def counted(words: str, k: int) -> str:
        # The count first in English ("2 interrupted: ..."), after the words in Chinese.
        return f"{words} {k} 次" if zh else f"{k} {words}"

    parts = [(s.value, counted(words, k)) for (s, words), k in counts.items()]
    cached = sum(1 for a in report.attempts if uncompiled(a.verdict.state, a.verdict.compiled))
    if cached:
        # C2: a cache hit succeeded without compiling; the count shows it apart.
        note = UNCOMPILED_COUNT[lang].format(n=cached)
        note = f"（{note}）" if zh else f" ({note})"
        plain = WORDS[State.SUCCEEDED][lang]

        def is_plain_success(state: str, text: str) -> bool:
            said = text.startswith(plain) if zh else text.endswith(plain)
            return state == State.SUCCEEDED.value and said

        parts = [(v, t + note if is_plain_success(v, t) else t) for v, t in parts]
    clean = sum(1 for a in report.attempts if is_clean_retry_result(a))
    if clean:
        parts.append(("succeeded clean", counted(C7["clean_retry"][lang], clean)))
    n = len(report.attempts)
    head = f"共 {n} 次尝试" if zh else count(n, "attempt")
    return head, parts


def counts_line(report: Report, lang: Lang) -> str:
    """How many attempts ended in each state, in the C7 words (root reports). The state
    words hold colons of their own, so the head is set off by a dash and the parts by
    semicolons: "2 attempts — 1 succeeded; 1 interrupted: top-level ..."."""
    head, parts = state_counts(report, lang)
    zh = lang is Lang.ZH
    return head + ("——" if zh else " — ") + ("；" if zh else "; ").join(t for _, t in parts)
