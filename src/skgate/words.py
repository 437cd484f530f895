"""Words skgate uses for people, in English and Chinese (C7).

The one-line headline of each state (``skgate run/status/classify`` and the live view)
and the phrase tables of the reports live here, so the same state is always said the
same way, and never in words that can be mistaken for a compile failure. The C7 phrases
are exactly those of the contract.
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model import State

HEADLINE = {
    State.IN_PROGRESS: "IN PROGRESS: the compile is still running; keep waiting, kill nothing",
    State.SUCCEEDED: "SUCCEEDED: the compiler returned naturally and every input succeeded",
    State.FAILED: "FAILED: naturally returned final compiler failures",
    State.INTERRUPTED: "INTERRUPTED: top-level timeout or external interruption; "
    "not a compile result, a clean retry is required",
    State.UNKNOWN: "UNKNOWN: evidence is missing or contradictory; no conclusion, "
    "failure is not inferred",
    State.NOT_STARTED: "NOT STARTED: blocked before launch; nothing ran, not a compile result",
}

#: C7 phrases, exactly as contract.md gives them.
C7 = {
    "provisional": {"en": "provisional error-named files", "zh": "暂时性 error 命名文件"},
    "final_failure": {
        "en": "naturally returned final compiler failures",
        "zh": "自然返回的最终编译失败",
    },
    "interruption": {
        "en": "top-level timeout or external interruption",
        "zh": "顶层超时/外部中断",
    },
    "clean_retry": {"en": "valid clean-retry result", "zh": "有效干净重试结果"},
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
    "reasons": {"en": "Reasons", "zh": "依据（原文）"},
    "next": {"en": "Next step", "zh": "下一步"},
    "timeline": {"en": "Timeline", "zh": "时间线"},
    "controls": {"en": "Frozen controls", "zh": "冻结的控制参数"},
    "ownership": {"en": "Ownership", "zh": "进程归属"},
    "census": {"en": "Artifact census", "zh": "产物统计"},
    "summary": {"en": "Final summary lines (verbatim)", "zh": "最终汇总行（原文）"},
    "missing": {"en": "Missing evidence", "zh": "缺失的证据"},
    "attempts": {"en": "Attempts (oldest first)", "zh": "尝试列表（从旧到新）"},
    "retry_of": {"en": "retry of", "zh": "重试自"},
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
}

NEXT_STEP: Mapping[State, Mapping[str, str]] = {
    State.IN_PROGRESS: {
        "en": "Keep waiting for natural return. Observe read-only with `skgate status {a}`; "
        "kill nothing: process age, quiet output and error-named files are not evidence (C1).",
        "zh": "继续等待自然返回。用 `skgate status {a}` 只读观察；不要终止任何进程："
        "进程运行时间、输出安静和暂时性 error 命名文件都不是失败证据（C1）。",
    },
    State.SUCCEEDED: {
        "en": "None: every stage reports all inputs succeeded after natural return; "
        "the result can be cited.",
        "zh": "无需操作：自然返回后每个阶段的所有输入均成功；可以引用此结果。",
    },
    State.FAILED: {
        "en": "Read the kept error logs: after natural return they are final compiler "
        "evidence (C2.3).",
        "zh": "查看保留的 error 日志：自然返回后它们是最终编译证据（C2.3）。",
    },
    State.INTERRUPTED: {
        "en": "A clean retry is required before judging compiler support: use "
        "`skgate retry {a}`. The interrupted scene is kept as it is (C4).",
        "zh": "在判断编译器是否支持之前必须先做一次干净重试：使用 `skgate retry {a}`。"
        "中断现场保持原样（C4）。",
    },
    State.UNKNOWN: {
        "en": "Do not conclude. Recover the missing evidence listed below, or run a clean "
        "retry with `skgate retry {a}`; failure is never inferred (C2.5).",
        "zh": "不要下结论。补齐下面列出的缺失证据，或用 `skgate retry {a}` 做一次干净重试；"
        "不推断失败（C2.5）。",
    },
    State.NOT_STARTED: {
        "en": "Fix the blocker named in the reasons and run again; nothing was compiled.",
        "zh": "修复依据中列出的阻塞原因后重新运行；本次没有进行任何编译。",
    },
}

EVENT_WORDS: Mapping[str, Mapping[str, str]] = {
    "created": {"en": "attempt created", "zh": "创建尝试"},
    "preflight": {"en": "preflight checked", "zh": "预检完成"},
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
