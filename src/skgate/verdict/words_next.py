"""The next step of a report, and the words of a success that compiled nothing (C2, C7).

Consulted through :mod:`skgate.verdict.words` (which re-exports ``NEXT_STEP`` and
``next_step``). A stage that installed a cached package compiled nothing: the state stays
succeeded (the run succeeded), but every reader is told "without compiling", and the next
step says it is not compile evidence (contract C2).
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.phrases import Lang
from skgate.model.records import State

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

# C2: a stage that installed a cached package compiled nothing. The state stays
# succeeded (the run succeeded), but every reader is told "without compiling", and the
# next step says it is not compile evidence.
UNCOMPILED_HEADLINE = (
    "SUCCEEDED without compiling: a cached package was installed and no compile ran; "
    "this is not compile evidence"
)
#: Issue 27: the launcher had nothing to compile (no operators, all blacklisted, an
#: empty selection); the reasons name what was seen on disk.
IDLE_HEADLINE = (
    "SUCCEEDED without compiling: the launcher had nothing to compile and ran no "
    "op_compiler; this is not compile evidence"
)
UNCOMPILED_WORDS: Mapping[str, str] = {
    "en": "succeeded without compiling",
    "zh": "成功（未编译）",
}
UNCOMPILED_NEXT: Mapping[str, str] = {
    "en": "This is not compile evidence: no compile ran; the reasons say what the launcher "
    "found instead (a cached package, or nothing left to compile) and how to get a real "
    "compile. For a cached package, turn the launcher's static kernel compile cache off, or "
    "clear static_kernel_compile_outputs/static_kernel_cache after `skgate cleanup` (which "
    "preserves this scene first), then run again.",
    "zh": "这不是编译证据：没有运行编译；依据中说明了启动器实际发现的情况（缓存中的包，或没有"
    "需要编译的内容）以及如何真正编译。若安装的是缓存中的包，请关闭启动器的静态 kernel "
    "编译缓存，或在 `skgate cleanup`（会先保留本次现场）之后清除 "
    "static_kernel_compile_outputs/static_kernel_cache，然后重新运行。",
}
#: "N of them without a compile" beside the succeeded count of a root summary.
UNCOMPILED_COUNT: Mapping[str, str] = {
    "en": "{n} of them without a compile",
    "zh": "其中 {n} 次未编译",
}


def uncompiled(state: State, compiled: bool | None) -> bool:
    """Succeeded, and a cached package was installed instead of a compile (C2)."""
    return state is State.SUCCEEDED and compiled is False


def next_step(state: State, compiled: bool | None, lang: Lang) -> str:
    """The next step of a report (``{a}`` stands for the attempt's path)."""
    return UNCOMPILED_NEXT[lang] if uncompiled(state, compiled) else NEXT_STEP[state][lang]
