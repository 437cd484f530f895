"""Words skgate uses for people, in English and Chinese (C7).

The one-line headline of each state (``skgate run/status/classify`` and the live view)
and the phrase tables of the reports live here, so the same state is always said the
same way, and never in words that can be mistaken for a compile failure. The C7 phrases
themselves are :data:`skgate.model.phrases.C7`, quoted here.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping

from skgate.model.phrases import C7
from skgate.model.records import State
from skgate.verdict.words_next import (
    NEXT_STEP,
    UNCOMPILED_COUNT,
    UNCOMPILED_HEADLINE,
    UNCOMPILED_WORDS,
    next_step,
    uncompiled,
)
from skgate.verdict.words_stages import STAGE_MISSING_ZH, STAGE_REASONS_ZH

__all__ = ["NEXT_STEP", "UNCOMPILED_COUNT", "next_step", "uncompiled"]

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
    "verdict": {"en": "Verdict", "zh": "结论"},
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
    "read_logs": {
        "en": "Error logs to read next (final compiler evidence after natural return):",
        "zh": "接下来请阅读这些 error 日志（自然返回后是最终编译证据）：",
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
}


def headline(state: State, compiled: bool | None = None) -> str:
    """The one-line headline of a verdict (``run``, ``status``, ``classify``, live view)."""
    return UNCOMPILED_HEADLINE if uncompiled(state, compiled) else HEADLINE[state]


def state_words(state: State, compiled: bool | None, lang: str) -> str:
    """How a verdict's state is named in a report (C7), "without compiling" included."""
    return UNCOMPILED_WORDS[lang] if uncompiled(state, compiled) else WORDS[state][lang]


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
}


def phrase(key: str, lang: str) -> str:
    return TEXT[key][lang]


# ---------------------------------------------------------------------------
# The classifier's reasons in Chinese
#
# The classifier (classify.py) writes its reasons in English, one template each; a
# Chinese report shows them in Chinese through this table. tests/test_words.py checks
# that every reason the classifier can produce has a translation, so the two cannot drift.

_REASONS_ZH: tuple[tuple[str, str], ...] = (
    (
        r"C2\.1: the runner that owns this attempt is alive and its frozen timeout has not "
        r"fired; keep waiting, observe read-only, kill nothing",
        "C2.1：拥有本次尝试的运行器仍在运行，冻结的顶层超时尚未触发；"
        "继续等待，只读观察，不终止任何进程",
    ),
    (
        r"C2\.1: (\d+) owned process\(es\) alive and the frozen deadline has not passed; "
        r"observe read-only, kill nothing\. The runner that owns this attempt is gone, so "
        r"nobody will record the natural return: the attempt can only end unknown, and a "
        r"clean retry will be needed",
        r"C2.1：\1 个自有进程仍存活且冻结的截止时间未到；只读观察，不终止任何进程。"
        "拥有本次尝试的运行器已不在，无人会记录自然返回：本次尝试只能以“未知”结束，之后需要一次干净重试",
    ),
    (
        r"C2\.1: owned processes still running, runner gone: (\d+) owned process\(es\) alive "
        r"after the frozen deadline, which nobody enforces now; observe read-only, kill "
        r"nothing by name or age, inspect the ownership manifest\. The attempt can only end "
        r"unknown, and a clean retry will be needed",
        r"C2.1：自有进程仍在运行，运行器已不在：截止时间已过，仍有 \1 个自有进程存活，"
        "现在无人执行超时；只读观察，不要按名称或进程年龄终止任何进程，请查看进程归属清单。"
        "本次尝试只能以“未知”结束，之后需要一次干净重试",
    ),
    (
        r"C2\.2: the compiler stack returned naturally with exit status 0",
        "C2.2：编译栈自然返回，退出码为 0",
    ),
    (
        r"C2\.2: the final summary reports every input of all (\d+) stage\(s\) succeeded",
        r"C2.2：最终汇总显示全部 \1 个阶段的所有输入均成功",
    ),
    (
        r"C2\.3: the compiler stack returned naturally with exit status (-?\d+)",
        r"C2.3：编译栈自然返回，退出码为 \1",
    ),
    (
        r"C2\.3: the final summary reports failures: (.+)",
        r"C2.3：最终汇总报告了失败的输入：\1",
    ),
    (
        r"C2\.3: kept error logs are now final compiler evidence",
        "C2.3：保留的 error 日志现在是最终编译证据",
    ),
    (
        r"C2\.4: the frozen top-level timeout fired; the runner signalled only its own "
        r"process group: (.+)",
        r"C2.4：冻结的顶层超时已触发；运行器只向它自己创建的进程组发送了信号：\1",
    ),
    (
        r"C2\.4: compile evidence is interrupted/invalid, not an operator failure; a clean "
        r"retry is required before judging compiler support",
        "C2.4：编译证据已中断、无效，不能当作算子问题；"
        "判断编译器是否支持之前，必须先做一次干净重试",
    ),
    (
        r"C2\.1: the runner that owns this attempt is alive and has not launched the "
        r"command yet \(preflight\); keep waiting, kill nothing",
        "C2.1：拥有本次尝试的运行器仍在运行，尚未启动命令（预检中）；继续等待，不终止任何进程",
    ),
    (
        r"C4: waiting for blockers, which are never signalled: (.+)",
        r"C4：正在等待阻塞项，绝不向它们发送信号：\1",
    ),
    (
        r"C2\.4: stopped through skgate stop: (.*)",
        r"C2.4：通过 skgate stop 停止：\1",
    ),
    (
        r"C2\.4: the runner received (.+) from outside and forwarded it",
        r"C2.4：运行器从外部收到 \1，并转发给了自己的进程组",
    ),
    (
        r"C2\.4: the top-level process was ended by (\S+) \(not sent by this runner: a kill "
        r"from outside, or a crash; either way the compile did not return naturally\)",
        r"C2.4：顶层进程被 \1 结束（不是本运行器发送的：可能是外部终止，也可能是崩溃；"
        "无论哪种，编译都没有自然返回）",
    ),
    (
        r"C2\.4: the top-level process was ended by (\S+)",
        r"C2.4：顶层进程被 \1 结束",
    ),
    (
        r"C2\.4: the runner signalled its own process group: (.+)",
        r"C2.4：运行器向自己的进程组发送了信号：\1",
    ),
    (
        r"C2\.5: the event journal \(events\.jsonl\) is missing; launch, exits and signals "
        r"cannot be established, so no conclusion is drawn",
        "C2.5：事件日志 events.jsonl 缺失；无法确定启动、退出和信号，因此不下结论",
    ),
    (
        r"C2\.5: the runner is gone without a verdict, its deadline has passed and (\d+) "
        r"owned process\(es\) still live; nobody enforces the timeout now\. Do not kill by "
        r"name or age; inspect the ownership manifest",
        r"C2.5：运行器已不在且没有留下结论，截止时间已过，仍有 \1 个自有进程存活；"
        "现在没有人执行超时。不要按名称或进程年龄终止进程；请查看进程归属清单",
    ),
    (
        r"C2\.5: the runner has not recorded the terminal status yet",
        "C2.5：运行器尚未记录终止状态",
    ),
    (
        r"C2\.5: the runner died before the verdict was written \(after natural return\); no "
        r"final state is derived from a partial set of files\. Once no owned process lives, "
        r"'skgate recover' finishes what can honestly be finished",
        "C2.5：运行器在写出结论之前终止（在自然返回之后）；不从不完整的文件集合推出最终状态。"
        "待没有自有进程存活后，'skgate recover' 会完成能如实完成的部分",
    ),
    (
        r"C2\.5: the runner died before the verdict was written \(before natural return\); no "
        r"final state is derived from a partial set of files\. Once no owned process lives, "
        r"'skgate recover' finishes what can honestly be finished",
        "C2.5：运行器在写出结论之前终止（在自然返回之前）；不从不完整的文件集合推出最终状态。"
        "待没有自有进程存活后，'skgate recover' 会完成能如实完成的部分",
    ),
    (
        r"C2\.5: recovered by 'skgate recover' after the runner died before launch: nothing "
        r"had been launched \(no run log exists\)",
        "C2.5：运行器在启动之前终止，由 'skgate recover' 恢复：没有启动任何进程（不存在运行日志）",
    ),
    (
        r"C2\.5: recovered by 'skgate recover' after the runner died before natural return: "
        r"nobody saw the owned tree end, so its natural return cannot be established",
        "C2.5：运行器在自然返回之前终止，由 'skgate recover' 恢复：无人看到自有进程树结束，"
        "因此无法确定其自然返回",
    ),
    (
        r"C2\.5: recovered by 'skgate recover' after the runner died after natural return: "
        r"the natural return was recorded; the files the runner had not written yet "
        r"\(census, summary\) were made at recovery, the census labelled late",
        "C2.5：运行器在自然返回之后终止，由 'skgate recover' 恢复：自然返回已有记录；"
        "运行器尚未写出的文件（产物统计、汇总）在恢复时生成，产物统计标记为迟到",
    ),
    (
        r"C2\.5: (\d+) escaped owned process\(es\) still lived when the runner finished, so "
        r"the tree did not return completely",
        r"C2.5：运行器结束时仍有 \1 个脱离进程组的自有进程存活，进程树没有完整返回",
    ),
    (
        r"C2\.5: the final summary contradicts itself: (.+)",
        r"C2.5：最终汇总自相矛盾：\1",
    ),
    (
        r"C2\.5: the artifact census could not read (\d+) director\(ies\) under the "
        r"outputs; a \.run package may be hidden there, so the C8 output check cannot "
        r"conclude",
        r"C2.5：产物统计有 \1 个输出目录无法读取；那里可能有 .run 包，"
        "因此 C8 输出检查无法下结论",
    ),
    (
        r"C2\.5: exit status, summary and outputs disagree",
        "C2.5：退出码、最终汇总与输出产物互相不一致",
    ),
    (
        r"C2\.5: evidence is missing; the verdict is blocked, failure is not inferred",
        "C2.5：证据缺失；结论被阻止，不推断为失败",
    ),
    (
        r"C4: (\d+) owned process\(es\) left the process group \(setsid\); they were watched, "
        r"never signalled, and (\d+) still lived when the runner finished",
        r"C4：\1 个自有进程离开了进程组（setsid）；它们被观察，从未被发送信号；"
        r"运行器结束时仍有 \2 个存活",
    ),
    (
        r"C4: (\d+) owned process\(es\) left the process group \(setsid\); they were watched, "
        r"never signalled",
        r"C4：\1 个自有进程离开了进程组（setsid）；它们被观察，从未被发送信号",
    ),
    (
        r"C8: (\d+) error-named log\(s\) and no \.run package after natural return",
        r"C8：自然返回后有 \1 个 error 命名日志且没有 .run 包",
    ),
    (
        r"C8: package mode 'required' and no \.run package after natural return",
        "C8：包模式为 required，自然返回后没有 .run 包",
    ),
    (
        r"C8: (\d+) entr\(ies\) already in the outputs directory before launch were not "
        r"counted: they are earlier runs' artifacts, not this attempt's \(skgate cleanup "
        r"preserves and clears them\)",
        r"C8：启动前输出目录里已有的 \1 项未计入：它们是之前运行的产物，不属于本次尝试"
        "（skgate cleanup 会先保存再清理）",
    ),
    (
        r"nothing was launched; this is not a compile result",
        "没有启动任何进程；这不是编译结果",
    ),
    # The compile-health gate's one sentence (skgate regress --health, C6).
    (
        r"later profiling may be accepted: the fresh-root compile-health run returned "
        r"naturally, every stage reported all inputs successful, exit status 0, and "
        r"inference reached its completion marker \(C6\)",
        "可以接受之后的性能分析：全新根目录下的编译健康检查自然返回，每个阶段的所有输入均成功，"
        "退出码为 0，推理到达了正常完成点（C6）",
    ),
    (
        r"later profiling may NOT be accepted: the compile-health run is not attributable "
        r"\((.+)\)",
        r"不能接受之后的性能分析：编译健康检查无法归因（\1）",
    ),
    (
        r"later profiling may NOT be accepted: the declared change did not reach the "
        r"compile; the compile-health run is no evidence for it until what the findings "
        r"name is cleared",
        "不能接受之后的性能分析：声明的改动没有进入编译；在清除检查结果列出的内容之前，"
        "这次编译健康检查不能作为该改动的证据",
    ),
    (
        r"later profiling may NOT be accepted: failed checks: (.+)",
        r"不能接受之后的性能分析：未通过的检查：\1",
    ),
)

_MISSING_ZH: Mapping[str, str] = {
    "ownership manifest (ownership.json)": "进程归属清单（ownership.json）",
    "terminal status (the runner's final record)": "终止状态（运行器的最终记录）",
    "natural return of escaped processes": "脱离进程组的进程的自然返回",
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
    return tuple(
        (re.compile(rf"\A{p}\Z", re.DOTALL), zh) for p, zh in (*STAGE_REASONS_ZH, *_REASONS_ZH)
    )


# Fragments the templates above capture verbatim, said in Chinese too.
_FRAGMENTS_ZH: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"stage (.+?): (\d+) of (\d+) failed"), r"阶段 \1：\3 个输入中 \2 个失败"),
    (re.compile(r"(SIG[A-Z0-9]+) \(timeout\)"), r"\1（超时）"),
    (re.compile(r"(SIG[A-Z0-9]+) \(grace-expired\)"), r"\1（宽限期已过）"),
    (re.compile(r"(SIG[A-Z0-9]+) \(forwarded\)"), r"\1（转发）"),
    (re.compile(r"）, (SIG)"), r"）、\1"),
)

#: Why the runner sent a signal (``signal_sent.reason``), in Chinese.
SIGNAL_REASONS_ZH: Mapping[str, str] = {
    "timeout": "超时",
    "grace-expired": "宽限期已过",
    "forwarded": "转发外部信号",
}


#: The clauses of the C3 ownership-record line (classify.coverage_reason), in Chinese.
_COVERAGE_CLAUSES_ZH: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"\A{p}\Z"), zh)
    for p, zh in (
        (
            r"every fork, exec and exit of the owned tree is on record",
            "自有进程树的每一次 fork、exec 和退出都有记录",
        ),
        (
            r"the kernel dropped process events (\d+) time\(s\) under load, so short-lived "
            r"processes may be missing",
            r"内核在高负载下丢弃了 \1 次进程事件，短命进程可能缺失",
        ),
        (
            r"processes shorter than the scan interval \(([0-9.e+-]+) s\) may be missing",
            r"短于扫描间隔（\1 秒）的进程可能缺失",
        ),
        (
            r"the attempt's cgroup holds every owned process, escapes included",
            "本次尝试的 cgroup 包含每一个自有进程（包括脱离进程组的进程）",
        ),
        (
            r"(\d+) processes beyond the first (\d+) are counted by name, not listed",
            r"前 \2 个之后的 \1 个进程只按名称计数，未逐个列出",
        ),
        (
            r"(\d+) argv\(s\) were gone before they could be read",
            r"\1 个进程的 argv 在读取之前已消失",
        ),
    )
)
_COVERAGE_RE = re.compile(r"\AC3: ownership record from ([a-z, ]+): (.+)\Z", re.DOTALL)


def _coverage_zh(reason: str) -> str | None:
    match = _COVERAGE_RE.match(reason)
    if match is None:
        return None
    parts: list[str] = []
    for clause in match.group(2).split("; "):
        for pattern, zh in _COVERAGE_CLAUSES_ZH:
            got = pattern.match(clause)
            if got:
                parts.append(got.expand(zh))
                break
        else:
            return None
    return f"C3：进程归属记录来源 {match.group(1)}：" + "；".join(parts)


def reason_zh(reason: str) -> str | None:
    """The Chinese form of one classifier reason, or None when it has no template."""
    coverage = _coverage_zh(reason)
    if coverage is not None:
        return coverage
    for pattern, zh in _reason_patterns():
        match = pattern.match(reason)
        if match:
            text = match.expand(zh)
            for fragment, fzh in _FRAGMENTS_ZH:
                text = fragment.sub(fzh, text)
            return text
    return None


def missing_zh(item: str) -> str | None:
    return _MISSING_ZH.get(item) or STAGE_MISSING_ZH.get(item)


def in_language(text: str, lang: str, kind: str = "reason") -> str:
    """A reason (or missing item) in the report's language; the original when no
    translation exists (preflight's free-form reasons), marked as such in Chinese."""
    if lang != "zh":
        return text
    zh = reason_zh(text) if kind == "reason" else missing_zh(text)
    return zh if zh is not None else f"{text}（原文）"


# ---------------------------------------------------------------------------
# Durations people read

_UNITS = {
    "en": ("s", "min", "h", "d"),
    "zh": ("秒", "分钟", "小时", "天"),
}


def duration(seconds: float, lang: str = "en") -> str:
    """A duration as a person reads it: "45 s", "12 min", "2 h", "3.5 d", "over a year".

    A timeout of 1e30 s (how "never" is often spelt) reads "over a year" rather than a
    float in exponent form; anything up to a year reads in the largest unit that keeps it
    short.
    """
    zh = lang == "zh"
    if math.isnan(seconds) or seconds >= 365 * 86400:
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
