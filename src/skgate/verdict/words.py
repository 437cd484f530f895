"""Words skgate uses for people, in English and Chinese (C7).

The one-line headline of each state (``skgate run/status/classify`` and the live view)
and the phrase tables of the reports live here, so the same state is always said the
same way, and never in words that can be mistaken for a compile failure. The C7 phrases
themselves are :data:`skgate.model.phrases.C7`, quoted here.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping

from skgate.model.modes import SOURCE_EXIT_STATUS
from skgate.model.phrases import C7, Lang
from skgate.model.records import State, Verdict
from skgate.model.running import DISOWNED_MISSING, LEDGER_MISSING, REMOVED_MISSING
from skgate.verdict.words_installs import (
    INSTALL_FRAGMENTS_ZH,
    INSTALL_REASONS_ZH,
    install_headline,
    install_state_words,
)

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

    from skgate.model.idle import Idle

#: C6 wording of the diagnosis (regress --matrix): what a failing start-up-hook arm proves
#: and what it does not.
HOOK_TRIGGER = "the start-up launch path is the trigger"
HOOK_NOT_PROVEN = (
    "does not prove the schedule value, the profiler feature, SK trace or the named "
    "operators defective"
)

HEADLINE = {
    State.IN_PROGRESS: "IN PROGRESS: the compile is still running; keep waiting, kill nothing",
    State.SUCCEEDED: "SUCCEEDED: the compiler returned naturally and every input succeeded",
    State.FAILED: f"FAILED: {C7['final_failure']['en']}",
    State.INTERRUPTED: f"INTERRUPTED: {C7['interruption']['en']}; "
    "not a compile result, a clean retry is required",
    State.UNKNOWN: "UNKNOWN: evidence is missing or contradictory; no conclusion, "
    "failure is not inferred",
    State.NOT_STARTED: "NOT STARTED: blocked before launch; nothing ran, not a compile result",
}


class Kind(str, enum.Enum):
    """What kind of result a verdict is, beyond its state: the headline's words and the
    HTML band's colour follow it (:func:`kind_of`), so a plain command's result never
    reads like a compile's (issue 23). Only :attr:`COMPILED` is a compile that compiled."""

    #: Succeeded by the compiler evidence, and a compile ran: the only green.
    COMPILED = "compiled"
    #: Succeeded with no compile run (a cache hit, ``compiled: false``; issue 19's words).
    NOT_COMPILED = "not_compiled"
    #: Decided by the declared exit status (``--verdict-from exit-status``, C2).
    DECLARED = "declared"
    #: Failed by the command's own exit status, no compiler ever observed (C2.3).
    COMMAND = "command"
    #: Failed by an op_compiler stage's final per-input outcomes (C2).
    STAGE = "stage"
    #: Failed by the launcher's own exit status after every op_compiler stage succeeded
    #: (C2.3): the launcher's failure, never "compiler failures" (C7).
    LAUNCHER = "launcher"
    #: Anything else: the state's own words.
    STATE = "state"


#: The classifier's words for a failure with no compiler observed (verdict.exits.exit_reason
#: and declared_exit_status both start so).
_COMMAND_FAILURE = "C2.3: the command returned naturally with exit status"
#: The classifier's words for a launcher that failed after every stage succeeded
#: (verdict.exits.exit_reason starts so).
LAUNCHER_FAILURE = "C2.3: the launcher returned naturally with exit status"


def kind_of(v: Verdict) -> Kind:
    """The kind of a verdict, from its fields alone (the report and the CLI agree)."""
    if v.state in (State.SUCCEEDED, State.FAILED) and v.summary_source == SOURCE_EXIT_STATUS:
        return Kind.DECLARED
    if v.state is State.SUCCEEDED:
        return Kind.NOT_COMPILED if v.compiled is False else Kind.COMPILED
    if v.state is State.FAILED:
        if any(r.startswith(LAUNCHER_FAILURE) for r in v.reasons):
            return Kind.LAUNCHER
        if v.summary_source == "op_compiler census":
            return Kind.STAGE
        if v.summary_source is None and any(r.startswith(_COMMAND_FAILURE) for r in v.reasons):
            return Kind.COMMAND
    return Kind.STATE


def headline(v: Verdict) -> str:
    """The one-line headline of ``skgate run/status/classify`` (C7 words where a compiler
    failed; never "compiler failures" when no compiler was observed)."""
    if v.breach is not None:
        return f"UNKNOWN: {v.breach.line()}"  # issue 28: the change comes first
    if v.waiting is not None:
        # The words of a verdict withheld, and of one that compiled nothing, are loaded by
        # the verdicts that have them: the status of a finished compile has neither
        # (issue 29).
        from skgate.verdict.changed import waiting_words  # noqa: PLC0415

        return waiting_words(v.waiting, Lang.EN, headline=True)
    installs = install_headline(v)  # C8: a failed install is never a clean success
    if installs is not None:
        return installs
    kind = kind_of(v)
    status = v.exit_status
    if kind is Kind.DECLARED:
        word = "SUCCEEDED" if v.state is State.SUCCEEDED else "FAILED"
        what = "compile" if v.state is State.SUCCEEDED else "compiler"
        return (
            f"{word}: the command returned naturally with exit status {status}, its declared "
            f"result (--verdict-from exit-status); not a {what} result"
        )
    if kind is Kind.COMMAND:
        return (
            f"FAILED: the command returned naturally with exit status {status}; no compiler "
            "was observed, so this is not a compiler result"
        )
    if kind is Kind.LAUNCHER:
        return (
            f"FAILED: the launcher returned naturally with exit status {status} after every "
            "op_compiler stage succeeded; its own failure, not a compiler failure"
        )
    if kind is Kind.STAGE:
        tail = "; the launcher exited 0, which never makes a success" if status == 0 else ""
        return f"FAILED: {C7['final_failure']['en']} in an op_compiler stage{tail}"
    if kind is Kind.NOT_COMPILED:
        # C2: a cache hit compiled nothing (issue 19); a launcher with nothing to compile
        # installed nothing either (issue 27): the headline never says it did.
        from skgate.verdict.words_next import IDLE_HEADLINE, UNCOMPILED_HEADLINE  # noqa: PLC0415

        cached = any("no compile ran:" in r and " installed" in r for r in v.reasons)
        return UNCOMPILED_HEADLINE if cached or not v.reasons else IDLE_HEADLINE
    return HEADLINE[v.state]


def state_words(v: Verdict, lang: Lang) -> str:
    """How a report names this verdict (:data:`WORDS`, refined by :func:`kind_of`)."""
    zh = lang is Lang.ZH
    if v.breach is not None:
        line = v.breach.line()
        return f"未知：{reason_zh(line) or line}" if zh else f"unknown: {line}"
    if v.waiting is not None:
        from skgate.verdict.changed import waiting_words  # noqa: PLC0415 - as headline()

        return waiting_words(v.waiting, lang)
    installs = install_state_words(v, lang)  # C8: a failed install is named first
    if installs is not None:
        return installs
    kind = kind_of(v)
    status = v.exit_status
    if kind is Kind.DECLARED:
        if v.state is State.SUCCEEDED:
            return (
                "成功：按声明的退出码 0 判定（--verdict-from exit-status；不是编译结果）"
                if zh
                else "succeeded by its declared exit status 0 (--verdict-from exit-status; "
                "not a compile result)"
            )
        return (
            f"失败：按声明的退出码 {status} 判定（--verdict-from exit-status；不是编译结果）"
            if zh
            else f"failed by its declared exit status {status} (--verdict-from exit-status; "
            "not a compiler result)"
        )
    if kind is Kind.COMMAND:
        return (
            f"失败：命令以退出码 {status} 自然返回；未观察到编译进程（不是编译结果）"
            if zh
            else f"failed: the command returned naturally with exit status {status}; no "
            "compiler was observed (not a compiler result)"
        )
    if kind is Kind.LAUNCHER:
        return (
            f"失败：启动器在所有 op_compiler 阶段成功之后以退出码 {status} 自然返回"
            "（启动器自身的失败，不是编译失败）"
            if zh
            else f"failed: the launcher returned naturally with exit status {status} after "
            "every op_compiler stage succeeded (its own failure, not a compiler failure)"
        )
    if kind is Kind.STAGE:
        if zh:
            tail = "；启动器退出码为 0，这不会让失败变成成功" if status == 0 else ""
            return f"失败：{C7['final_failure']['zh']}（op_compiler 阶段{tail}）"
        tail = "; the launcher exited 0, which never makes a success" if status == 0 else ""
        return f"failed: {C7['final_failure']['en']} (an op_compiler stage{tail})"
    if kind is Kind.NOT_COMPILED:
        from skgate.verdict.words_next import UNCOMPILED_WORDS  # noqa: PLC0415 - as headline()

        return UNCOMPILED_WORDS[lang]
    return WORDS[v.state][lang]


#: How a count of attempts names a kind whose :func:`state_words` hold an exit status
#: (root reports: "2 failed: the command's own exit status ..."); other kinds use WORDS.
COUNT_WORDS: Mapping[tuple[State, Kind], Mapping[str, str]] = {
    (State.FAILED, Kind.COMMAND): {
        "en": "failed: the command's own exit status, no compiler observed",
        "zh": "失败：命令自身的退出码，未观察到编译进程",
    },
    (State.FAILED, Kind.LAUNCHER): {
        "en": "failed: the launcher's own exit status after its stages succeeded",
        "zh": "失败：启动器在各阶段成功之后以非零退出码返回",
    },
    (State.FAILED, Kind.DECLARED): {
        "en": "failed by the declared exit status (--verdict-from exit-status)",
        "zh": "失败：按声明的退出码判定（--verdict-from exit-status）",
    },
    (State.SUCCEEDED, Kind.DECLARED): {
        "en": "succeeded by the declared exit status (--verdict-from exit-status)",
        "zh": "成功：按声明的退出码判定（--verdict-from exit-status）",
    },
}


def count_words(v: Verdict, lang: Lang) -> str:
    """The words of one group in a count of attempts (kind-aware, no exit status)."""
    # A success without compiling is counted with the successes, and said apart beside
    # them ("2 succeeded (1 of them without a compile)", report.sentences).
    if v.waiting is not None:  # issue 30: nothing is compiling yet
        return (
            "等待启动（尚未启动任何进程；不终止任何进程）"
            if lang is Lang.ZH
            else ("waiting before launch (nothing launched yet; kill nothing)")
        )
    got = COUNT_WORDS.get((v.state, kind_of(v)))
    return got[lang] if got is not None else WORDS[v.state][lang]


#: How each state is named. failed and interrupted use the C7 phrases (C7).
WORDS: Mapping[State, Mapping[str, str]] = {
    State.IN_PROGRESS: {
        "en": "in progress (compilation is live; observe read-only, kill nothing)",
        "zh": "进行中（编译仍在运行；只读观察，不终止任何进程）",
    },
    State.SUCCEEDED: {"en": "succeeded", "zh": "成功"},
    State.FAILED: {
        "en": f"failed: {C7['final_failure']['en']}",
        "zh": f"失败：{C7['final_failure']['zh']}",
    },
    State.INTERRUPTED: {
        "en": f"interrupted: {C7['interruption']['en']}",
        "zh": f"中断：{C7['interruption']['zh']}",
    },
    State.UNKNOWN: {
        "en": "unknown (evidence missing or contradictory; no conclusion is drawn)",
        "zh": "未知（证据缺失或自相矛盾；不下结论）",
    },
    State.NOT_STARTED: {
        "en": "not started (nothing was launched; not a compile result)",
        "zh": "未启动（没有启动任何进程；不是编译结果）",
    },
}

TEXT: Mapping[str, Mapping[str, str]] = {
    "title_attempt": {"en": "skgate report: attempt", "zh": "skgate 报告：尝试"},
    "title_root": {"en": "skgate report: evidence root", "zh": "skgate 报告：证据根目录"},
    # Lowercase like the labels beside it (state, cause, exit status).
    "verdict": {"en": "verdict", "zh": "结论"},
    "state": {"en": "state", "zh": "状态"},
    "cause": {"en": "cause", "zh": "原因类别"},
    "exit_status": {"en": "exit status", "zh": "退出码"},
    "exit_signal": {"en": "ended by signal", "zh": "结束信号"},
    "natural": {"en": "natural return", "zh": "自然返回"},
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
    "reasons": {"en": "Reasons", "zh": "依据"},
    "health": {"en": "Compile-health gate (C6)", "zh": "编译健康检查（C6）"},
    "next": {"en": "Next step", "zh": "下一步"},
    "timeline": {"en": "Timeline", "zh": "时间线"},
    "withheld_title": {"en": "Not shown", "zh": "未显示的内容"},
    "withheld": {
        "en": "the timeline, frozen controls, ownership, census, stages and summary lines are "
        "not shown: this attempt's evidence changed after sealing, and changed evidence "
        "decides nothing (C2.5); `skgate verify {a}` names every difference",
        "zh": "不显示时间线、冻结的控制参数、进程归属、产物统计、阶段和最终汇总行：本次尝试的"
        "证据在封存后被改动，被改动的证据不能决定任何内容（C2.5）；"
        "`skgate verify {a}` 会逐项列出差异",
    },
    "controls": {"en": "Frozen controls", "zh": "冻结的控制参数"},
    "ownership": {"en": "Ownership", "zh": "进程归属"},
    "census": {"en": "Artifact census", "zh": "产物统计"},
    "summary": {"en": "Final summary lines (verbatim)", "zh": "最终汇总行（原文）"},
    "missing": {"en": "Missing evidence", "zh": "缺失的证据"},
    "attempts": {"en": "Attempts (oldest first)", "zh": "尝试列表（从旧到新）"},
    "retry_of": {"en": "retry of", "zh": "重试自"},
    "nodes": {"en": "Nodes (attempts run on a cluster)", "zh": "节点（在集群上运行的尝试）"},
    "attempt_col": {"en": "attempt", "zh": "尝试"},
    "hostname": {"en": "host", "zh": "主机名"},
    "node_id": {"en": "node id", "zh": "节点 ID"},
    "ray_task": {"en": "Ray task", "zh": "Ray 任务"},
    "retried_by": {"en": "retried by", "zh": "重试为"},
    "no_events": {"en": "no events recorded", "zh": "没有记录事件"},
    "no_ownership": {
        "en": "ownership manifest (ownership.json) is missing",
        "zh": "进程归属清单（ownership.json）缺失",
    },
    "no_census": {"en": "no census recorded", "zh": "没有产物统计"},
    "no_outputs": {"en": "outputs directory did not exist", "zh": "输出目录不存在"},
    "no_summary": {
        "en": "no [summary] or matched summary lines were archived",
        "zh": "没有归档 [summary] 行或匹配的汇总行",
    },
    "none": {"en": "none", "zh": "无"},
    "seal": {"en": "Seal", "zh": "封存"},
    "path": {"en": "path", "zh": "路径"},
    "command": {"en": "command", "zh": "命令"},
    "seal_intact": {
        "en": "sealed; every file matches seal.json",
        "zh": "已封存；每个文件都与 seal.json 一致",
    },
    "seal_problems": {
        "en": "seal problems (skgate verify names them):",
        "zh": "封存有问题（skgate verify 会逐项列出）：",
    },
    "seal_not_sealed": {
        "en": "not sealed yet (the attempt is still running)",
        "zh": "尚未封存（尝试仍在运行）",
    },
    # The evidence root's ledger, when it is not intact (C4; docs/contract.md's table).
    "ledger": {"en": "Ledger", "zh": "账本"},
    "ledger_unfinished": {
        "en": "the evidence root's ledger is unfinished (skgate recover finishes it):",
        "zh": "证据根目录的账本未完成（skgate recover 可将其完成）：",
    },
    "ledger_changed": {
        "en": "the evidence root's ledger changed after it was written (skgate verify names "
        "every difference):",
        "zh": "证据根目录的账本在写入后被改动（skgate verify 会逐项列出）：",
    },
    "col_section": {"en": "control", "zh": "控制项"},
    "col_key": {"en": "field", "zh": "字段"},
    "col_value": {"en": "value", "zh": "取值"},
    "stages": {"en": "Stages (one per op_compiler)", "zh": "编译阶段（每个 op_compiler 一个）"},
    "stage_final": {"en": "returned naturally, final", "zh": "已自然返回，结果为最终"},
    "stage_not_final": {
        "en": "not returned naturally: outcomes provisional",
        "zh": "未自然返回：结果为暂时性",
    },
    "failed_input": {"en": "failed input", "zh": "失败的输入"},
    "no_log": {"en": "no error log found", "zh": "没有找到 error 日志"},
    "unaccounted": {"en": "input without a final log", "zh": "没有最终日志的输入"},
    # Follows the next step, which already says to read them and why (C2.3): a list
    # heading only, so the two never say the same thing twice.
    "read_logs": {
        "en": "The kept error logs (after natural return):",
        "zh": "保留的 error 日志（自然返回后）：",
    },
    "more": {"en": "... and {n} more", "zh": "……另有 {n} 个"},
}

#: Section names of the frozen-controls table (control.json "controls").
CONTROL_SECTIONS: Mapping[str, Mapping[str, str]] = {
    "jobs": {"en": "compile jobs (C5)", "zh": "编译并发数（C5）"},
    "env": {"en": "environment delta", "zh": "环境变量差异"},
    "pythonpath": {"en": "PYTHONPATH (in order)", "zh": "PYTHONPATH（按顺序）"},
    "profiler": {"en": "profiler schedule (C6)", "zh": "性能分析调度（C6）"},
    "hooks": {"en": "start-up hook scan (C6)", "zh": "启动钩子扫描（C6）"},
    "python": {"en": "Python interpreter", "zh": "Python 解释器"},
    "foreign": {"en": "foreign compilers (C4)", "zh": "外部编译进程（C4）"},
    "leases": {"en": "device leases", "zh": "设备租约"},
    "host": {"en": "host", "zh": "主机"},
    "outputs_before": {"en": "outputs before launch", "zh": "启动前的输出目录"},
    "skgate_self": {"en": "skgate's own interpreter", "zh": "skgate 自身的解释器"},
    "skips": {"en": "skipped compiles and caches (C6)", "zh": "跳过的编译与缓存（C6）"},
}


EVENT_WORDS: Mapping[str, Mapping[str, str]] = {
    "created": {"en": "attempt created", "zh": "创建尝试"},
    "preflight": {"en": "preflight checked", "zh": "预检完成"},
    "foreign_wait": {
        "en": "waiting for foreign compilers (never signalled, C4)",
        "zh": "等待外部编译进程（从不发送信号，C4）",
    },
    "foreign_wait_end": {"en": "foreign-compiler wait ended", "zh": "外部编译进程等待结束"},
    "lease_wait": {"en": "waiting for a device lease", "zh": "等待设备租约"},
    "lease_acquired": {"en": "device lease taken", "zh": "已取得设备租约"},
    "blocked": {"en": "blocked before launch", "zh": "启动前被阻止"},
    "launched": {"en": "launched", "zh": "启动"},
    "observation": {"en": "observed", "zh": "观察"},
    "signal_received": {"en": "signal received from outside", "zh": "收到外部信号"},
    "signal_sent": {"en": "signal sent to the own process group", "zh": "向自有进程组发送信号"},
    "timeout": {"en": "frozen top-level timeout fired", "zh": "顶层冻结超时触发"},
    "leader_exited": {"en": "top-level process exited", "zh": "顶层进程退出"},
    "reaped": {"en": "owned processes reaped", "zh": "回收自有进程"},
    "tree_ended": {"en": "owned process tree ended", "zh": "自有进程树结束"},
    "finished": {"en": "runner finished", "zh": "运行器结束"},
    "stage_seen": {"en": "op_compiler stage seen", "zh": "观察到 op_compiler 阶段"},
    "signals_ignored": {"en": "inherited ignored signals", "zh": "继承的被忽略信号"},
    "runner_signal": {"en": "runner signalled", "zh": "运行器收到信号"},
    "finishing_cut_short": {"en": "finishing cut short", "zh": "收尾被中断"},
    "recovered": {"en": "recovered", "zh": "已恢复"},
    "adopted": {"en": "adopted by a new runner", "zh": "由新的运行器接管"},
    "adopted_tree_ended": {"en": "adopted tree ended", "zh": "接管的进程树结束"},
    "verdict": {"en": "verdict recorded", "zh": "记录结论"},
    "lease_wait_end": {"en": "device lease wait ended", "zh": "设备租约等待结束"},
    "foreign_cleared": {"en": "foreign compilers cleared", "zh": "外部编译进程已结束"},
}


def phrase(key: str, lang: Lang) -> str:
    return TEXT[key][lang]


# ---------------------------------------------------------------------------
_MISSING_ZH: Mapping[str, str] = {
    REMOVED_MISSING: "尝试目录",
    LEDGER_MISSING: "登记该尝试的根目录账本（ledger.jsonl）",
    DISOWNED_MISSING: "运行器自己的最终文件（verdict.json、seal.json）",
    "ownership manifest (ownership.json)": "进程归属清单（ownership.json）",
    "terminal status (the runner's final record)": "终止状态（运行器的最终记录）",
    "natural return of escaped processes": "脱离进程组的进程的自然返回",
    "natural return of the top-level process": "顶层进程的自然返回",
    "exit status of the top-level process": "顶层进程的退出码",
    "final aggregate summary ([summary] lines or a --summary-pattern match)": (
        "最终聚合汇总（[summary] 行或 --summary-pattern 匹配）"
    ),
    "a complete artifact census (unreadable directories under the outputs)": (
        "完整的产物统计（输出目录下有无法读取的目录）"
    ),
    "event journal (events.jsonl)": "事件日志（events.jsonl）",
    "the verdict (verdict.json), the runner's final record": (
        "结论（verdict.json），运行器的最终记录"
    ),
}


@functools.cache
def _reason_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    """The reason templates, compiled on the first Chinese report (not at import: the
    runner and the CLI load this module on every start)."""
    # The Chinese tables load with the first Chinese report too: an English status does
    # not need them (start-up, issue 29).
    import re  # noqa: PLC0415 - an English status loads no re (issue 29)

    from skgate.verdict.words_reasons import REASONS_ZH  # noqa: PLC0415
    from skgate.verdict.words_stages import STAGE_REASONS_ZH  # noqa: PLC0415

    return tuple(
        (re.compile(rf"\A{p}\Z", re.DOTALL), zh)
        for p, zh in (*STAGE_REASONS_ZH, *REASONS_ZH, *INSTALL_REASONS_ZH)
    )


@functools.cache
def _fragments_zh() -> tuple[tuple[re.Pattern[str], str], ...]:
    """Fragments the templates above capture verbatim, said in Chinese too (compiled on
    first use, as :func:`_reason_patterns`)."""
    import re  # noqa: PLC0415 - as in _reason_patterns

    from skgate.verdict.words_reasons import REMOVED_FRAGMENTS_ZH  # noqa: PLC0415 - as there

    return (
        (re.compile(r"但an owned op_compiler was observed"), "但观察到了自有 op_compiler"),
        (re.compile(r"但the launcher reported a compile cache hit"), "但启动器报告了编译缓存命中"),
        (re.compile(r"但a final summary was printed"), "但打印了最终汇总"),
        # What the launcher did with its build directories (verdict.stages._made).
        (re.compile(r"启动器announced (.+?) and made "), r"启动器宣布了 \1，并创建了 "),
        (re.compile(r"启动器announced "), "启动器宣布了 "),
        (re.compile(r"启动器made "), "启动器创建了 "),
        (re.compile(r" without a start line"), "（未打印启动行）"),
        (re.compile(r" after a start line that names no directory"), "（启动行未指明目录）"),
        (re.compile(r"（succeeded）"), "（成功）"),
        (re.compile(r"（failed）"), "（失败）"),
        (re.compile(r"表明 succeeded"), "表明成功"),
        (re.compile(r"表明 failed"), "表明失败"),
        (re.compile(r"stage (.+?): (\d+) of (\d+) failed"), r"阶段 \1：\3 个输入中 \2 个失败"),
        (re.compile(r"(SIG[A-Z0-9]+) \(timeout\)"), r"\1（超时）"),
        (re.compile(r"(SIG[A-Z0-9]+) \(grace-expired\)"), r"\1（宽限期已过）"),
        (re.compile(r"(SIG[A-Z0-9]+) \(forwarded\)"), r"\1（转发）"),
        (re.compile(r"）, (SIG)"), r"）、\1"),
        *((re.compile(p), zh) for p, zh in INSTALL_FRAGMENTS_ZH),
        *((re.compile(p), zh) for p, zh in REMOVED_FRAGMENTS_ZH),
    )


#: Why the runner sent a signal (``signal_sent.reason``), in Chinese.
SIGNAL_REASONS_ZH: Mapping[str, str] = {
    "timeout": "超时",
    "grace-expired": "宽限期已过",
    "forwarded": "转发外部信号",
}


def idle_said(idle: Idle, lang: Lang) -> str:
    """One way the launcher ran no compile (issue 27), in ``lang`` (the reason's words
    without its rule prefix)."""
    # Only a report names a launcher that ran no compile: ``status`` does without it.
    from skgate.model.idle import idle_reason  # noqa: PLC0415

    en = idle_reason(idle)
    if lang is not Lang.ZH:
        return en
    zh = reason_zh(f"C2.2: {en}")
    return zh.removeprefix("C2.2：") if zh is not None else en


def reason_zh(reason: str) -> str | None:
    """The Chinese form of one classifier reason, or None when it has no template."""
    from skgate.verdict.words_coverage import coverage_zh  # noqa: PLC0415 - zh only

    coverage = coverage_zh(reason)
    if coverage is not None:
        return coverage
    for pattern, zh in _reason_patterns():
        match = pattern.match(reason)
        if match:
            text = match.expand(zh)
            for fragment, fzh in _fragments_zh():
                text = fragment.sub(fzh, text)
            return text
    return None


#: A sealed file that changed (skgate.verdict.changed): "FILE as sealed".
_AS_SEALED = " as sealed"


def missing_zh(item: str) -> str | None:
    if item.endswith(_AS_SEALED):  # issue 28
        return f"封存时的 {item.removesuffix(_AS_SEALED)}"
    from skgate.verdict.words_stages import STAGE_MISSING_ZH  # noqa: PLC0415 - zh only

    return _MISSING_ZH.get(item) or STAGE_MISSING_ZH.get(item)


def in_language(text: str, lang: Lang, kind: str = "reason") -> str:
    """A reason (or missing item) in the report's language; the original when no
    translation exists (preflight's free-form reasons), marked as such in Chinese."""
    if lang is not Lang.ZH:
        return text
    zh = reason_zh(text) if kind == "reason" else missing_zh(text)
    return zh if zh is not None else f"{text}（原文）"


# ---------------------------------------------------------------------------
# Durations people read

_UNITS = {
    "en": ("s", "min", "h", "d"),
    "zh": ("秒", "分钟", "小时", "天"),
}


def duration(seconds: float, lang: Lang = Lang.EN) -> str:
    """A duration as a person reads it: "45 s", "12 min", "2 h", "3.5 d", "over a year".

    A timeout of 1e30 s (how "never" is often spelt) reads "over a year" rather than a
    float in exponent form; anything up to a year reads in the largest unit that keeps it
    short.
    """
    zh = lang is Lang.ZH
    # NaN is the one float unequal to itself (``math`` is an import status does without).
    if seconds != seconds or seconds >= 365 * 86400:  # noqa: PLR0124
        return "超过一年" if zh else "over a year"
    s_, m_, h_, d_ = _UNITS["zh" if zh else "en"]
    sep = "" if zh else " "
    a = abs(seconds)
    # Thresholds just under the round values, so 7199.8 s reads "2 h", not "120 min".
    if a < 119.5:
        value, unit = seconds, s_
    elif a < 7170:
        value, unit = seconds / 60, m_
    elif a < 3 * 86400 - 1800:
        value, unit = seconds / 3600, h_
    else:
        value, unit = seconds / 86400, d_
    text = f"{value:.1f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:.0f}"
    return f"{text}{sep}{unit}"
