"""The next step of a report, and the words of a success that compiled nothing (C2, C7).

Consulted through :mod:`skgate.verdict.words` (which re-exports ``NEXT_STEP`` and
``next_step``). A stage that installed a cached package compiled nothing: the state stays
succeeded (the run succeeded), but every reader is told "without compiling", and the next
step says it is not compile evidence (contract C2).
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.phrases import Lang
from skgate.model.records import State, Verdict
from skgate.model.running import ATTEMPT_DIRECTORY, DISOWNED, JOURNAL_GONE, UNRECORDED
from skgate.verdict.words_installs import install_next_step

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
        # Said where the missing evidence is, not "below": it is listed before this step.
        "en": "Do not conclude. Recover the evidence named under missing evidence, or run a "
        "clean retry with `skgate retry {a}`; failure is never inferred (C2.5).",
        "zh": "不要下结论。补齐“缺失证据”中列出的证据，或用 `skgate retry {a}` 做一次干净重试；"
        "不推断失败（C2.5）。",
    },
    State.NOT_STARTED: {
        "en": "Fix the blocker named in the reasons and run again; nothing was compiled.",
        "zh": "修复依据中列出的阻塞原因后重新运行；本次没有进行任何编译。",
    },
}

#: The next step when a command returned naturally with no [summary] line and no
#: op_compiler: nothing can decide, and a retry of the same controls would say the same,
#: so the step names the two ways that can change the answer (C2, C2.5; issue 30).
NOTHING_TO_DECIDE_NEXT: Mapping[str, str] = {
    "en": "Do not conclude: no [summary] line was printed and no op_compiler ran, so nothing "
    "can decide, and a retry would read the same. If the command is not a compile, declare "
    "it: run it again with `--verdict-from exit-status` (its exit status then decides). If "
    "it is a compile, make it print its [summary] lines or pass `--summary-pattern` (C2.5).",
    "zh": "不要下结论：没有打印 [summary] 行，也没有运行 op_compiler，因此没有任何证据可以判定，"
    "重试也会得到同样的结论。如果该命令不是编译，请声明这一点：加 `--verdict-from exit-status` "
    "重新运行（由其退出状态决定结论）。如果它是编译，请让它打印 [summary] 行，或传入 "
    "`--summary-pattern`（C2.5）。",
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


#: The next step while a live runner waits before launch (issue 30): nothing ran yet.
WAITING_NEXT: Mapping[Lang, str] = {
    Lang.EN: "Keep waiting: nothing was launched yet; the runner launches once its blockers "
    "end, which are never signalled (C4). Observe read-only with `skgate status {a}`; "
    "`skgate stop {a}` now ends it not started: nothing ran.",
    Lang.ZH: "继续等待：尚未启动任何进程；阻塞进程结束后运行器才会启动"
    "（阻塞进程从不被发送信号，C4）。用 `skgate status {a}` 只读观察；"
    "此时 `skgate stop {a}` 会使其以“未启动”结束：什么都没有运行。",
}


#: The next step when sealed evidence changed (issue 28): what it says is not believed.
CHANGED_NEXT: Mapping[Lang, str] = {
    Lang.EN: "Do not conclude: this attempt's evidence changed after sealing. Run `skgate "
    "verify {a}` to list every difference and restore those files from an intact copy; "
    "`skgate retry` refuses an attempt whose evidence changed, so for a new result run the "
    "command again with `skgate run` (C2.5).",
    Lang.ZH: "不要下结论：本次尝试的证据在封存后被改动。运行 `skgate verify {a}` 列出每一处差异，"
    "并从完好的副本恢复这些文件；`skgate retry` 会拒绝证据被改动的尝试，"
    "如需新的结果，请用 `skgate run` 重新运行该命令（C2.5）。",
}


#: The next step when an attempt's directory is gone though its root's ledger indexed it
#: (issue 28): nothing of it is left to read, and no older attempt answers for it.
REMOVED_NEXT: Mapping[Lang, str] = {
    Lang.EN: "Do not conclude: this attempt's directory was removed after the root's ledger "
    "indexed it, and no older attempt answers for it. Restore it from an intact copy "
    "(`skgate verify` of the evidence root names what is gone), or run the command again "
    "with `skgate run` for a new result (C2.5). If it was removed while it ran, its runner "
    "may still run: `skgate wait` waits for it to end and `skgate stop` stops it; kill "
    "nothing by hand (C4).",
    Lang.ZH: "不要下结论：根目录的账本登记了本次尝试，但其目录已被删除，更早的尝试也不能代替它。"
    "请从完好的副本恢复它（对证据根目录运行 `skgate verify` 会列出缺失的内容），"
    "或用 `skgate run` 重新运行该命令以得到新的结果（C2.5）。"
    "如果目录是在运行中被删除的，它的运行器可能仍在运行：`skgate wait` 会等待它结束，"
    "`skgate stop` 会停止它；不要手动终止任何进程（C4）。",
}


#: The next step when another process wrote at an attempt's final names while its run ran
#: (``Finished.disowned``): the runner's own verdict is in its journal, nothing is sealed.
DISOWNED_NEXT: Mapping[Lang, str] = {
    Lang.EN: "Do not conclude: while this attempt ran, another process wrote files its "
    "runner was to write (an agent's verdict.json?). The runner overwrote nothing, sealed "
    "nothing, and recorded its own verdict in its journal's finished record; `skgate "
    "recover` refuses the attempt. Find what wrote them, then run the command again with "
    "`skgate run` for a result (C2.5).",
    Lang.ZH: "不要下结论：本次尝试运行期间，有其他进程写入了本应由运行器写入的文件"
    "（某个代理写的 verdict.json？）。运行器没有覆盖任何文件，也没有封存，"
    "并把自己的结论记录在日志的 finished 记录中；`skgate recover` 会拒绝该尝试。"
    "请先查明是谁写入了这些文件，再用 `skgate run` 重新运行该命令以得到结果（C2.5）。",
}


#: The next step when an unsealed attempt's runner is gone and its verdict.json is none
#: it recorded (model.running.UNRECORDED): copied in, edited, or written by hand.
UNRECORDED_NEXT: Mapping[Lang, str] = {
    Lang.EN: "Do not conclude: this attempt's runner is gone, and its verdict.json is not "
    "the verdict the runner recorded (copied from another attempt, edited, or written by "
    "hand?). `skgate recover` refuses the attempt. Its command may still run: kill "
    "nothing by hand (C4). Find what wrote the file, then run the command again with "
    "`skgate run` for a result (C2.5).",
    Lang.ZH: "不要下结论：本次尝试的运行器已不在，而它的 verdict.json 不是运行器记录的结论"
    "（从其他尝试复制而来、被编辑，还是手工写入的？）。`skgate recover` 会拒绝该尝试。"
    "它的命令可能仍在运行：不要手动终止任何进程（C4）。请先查明是谁写入了该文件，"
    "再用 `skgate run` 重新运行该命令以得到结果（C2.5）。",
}


#: The classifier's reason when a command returned with no [summary] line and no
#: op_compiler (verdict.classify, C2.5): no evidence can decide.
NOTHING_TO_DECIDE = "C2.5: no [summary] line was printed and no op_compiler process was observed"


def next_step_of(v: Verdict, lang: Lang) -> str:
    """The next step for this verdict (``{a}``: the attempt's path): a retry is suggested
    only where one can change the answer."""
    if v.breach is not None:
        if v.breach.now == DISOWNED:
            return DISOWNED_NEXT[lang]
        if v.breach.now in (UNRECORDED, JOURNAL_GONE):
            return UNRECORDED_NEXT[lang]
        return REMOVED_NEXT[lang] if v.breach.file == ATTEMPT_DIRECTORY else CHANGED_NEXT[lang]
    if v.waiting is not None:
        return WAITING_NEXT[lang]
    if v.state is State.UNKNOWN and any(r.startswith(NOTHING_TO_DECIDE) for r in v.reasons):
        return NOTHING_TO_DECIDE_NEXT[lang]
    # C8: a failed install after a good compile is never a clean success.
    return install_next_step(v, lang) or next_step(v.state, v.compiled, lang)


def next_step(state: State, compiled: bool | None, lang: Lang) -> str:
    """The next step of a report (``{a}`` stands for the attempt's path)."""
    return UNCOMPILED_NEXT[lang] if uncompiled(state, compiled) else NEXT_STEP[state][lang]
