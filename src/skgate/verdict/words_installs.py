"""The words of package installs and uninstalls, in English and Chinese (C8, issue 27).

A failed install after a good compile is never a clean success: the state stays the
compile's verdict (succeeded), but the headline, the first reason, the report's state
words and its next step all say "compiled, but the package install failed: inference ran
without these static kernels"; with ``--package required`` the C8 output check fails
(state failed, exit 1), and the headline says it is no compiler failure (C7). An owned
process that ran the global ``ai_core/uninstall.sh`` is the first reason of every verdict
it appears in. The reasons themselves are written by :mod:`skgate.verdict.installs`;
their Chinese forms are :data:`INSTALL_REASONS_ZH` (consulted by ``words.reason_zh``).
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.phrases import Lang
from skgate.model.records import State, Verdict

#: The contract's words (C8), en / zh.
INSTALL_FAILED: Mapping[str, str] = {
    "en": "compiled, but the package install failed: inference ran without these static kernels",
    "zh": "已编译，但包安装失败：推理在没有这些静态 kernel 的情况下运行",
}
#: The same when no compile ran (a cached package whose install failed).
CACHED_INSTALL_FAILED: Mapping[str, str] = {
    "en": "no compile ran, and the package install failed: inference ran without these "
    "static kernels",
    "zh": "没有运行编译，且包安装失败：推理在没有这些静态 kernel 的情况下运行",
}
GLOBAL_UNINSTALL: Mapping[str, str] = {
    "en": "removes every static-kernel package on this host, other experiments' too",
    "zh": "会删除本机上所有静态 kernel 包，包括其他实验的包",
}

#: The reasons of :mod:`skgate.verdict.installs` as (English regex, Chinese template).
INSTALL_REASONS_ZH: tuple[tuple[str, str], ...] = (
    (
        r"C7: torch-npu (\S+) logs package install failures below the default level; the "
        r"failure was read from the package run's exit status",
        r"C7：torch-npu \1 以低于默认级别的日志记录包安装失败；该失败是从包运行的退出码读出的",
    ),
    (
        r"C8: compiled, but the package install failed: inference ran without these static "
        r"kernels \((.+)\)",
        r"C8：" + INSTALL_FAILED["zh"] + r"（\1）",
    ),
    (
        r"C8: no compile ran, and the package install failed: inference ran without these "
        r"static kernels \((.+)\)",
        r"C8：" + CACHED_INSTALL_FAILED["zh"] + r"（\1）",
    ),
    (
        r"C8: the package install failed: inference ran without these static kernels \((.+)\)",
        r"C8：包安装失败：推理在没有这些静态 kernel 的情况下运行（\1）",
    ),
    (
        r"C8: package mode 'required' and the package install failed",
        "C8：包模式为 required，且包安装失败",
    ),
    (
        r"C8: an owned process ran the global (\S+), which removes every static-kernel "
        r"package on this host, other experiments' too(.*)",
        r"C8：一个自有进程运行了全局卸载脚本 \1，它" + GLOBAL_UNINSTALL["zh"] + r"\2",
    ),
)

#: Fragments of the reasons above, said in Chinese after the template matched.
INSTALL_FRAGMENTS_ZH: tuple[tuple[str, str], ...] = (
    (r"(\S+) exited with status (-?\d+)", r"\1 以退出码 \2 结束"),
    (r"(\S+) was ended by (\S+)", r"\1 被 \2 结束"),
    (r"(\S+): the launcher printed 'install failed'", r"\1：启动器打印了 “install failed”"),
    (r"; exit status (-?\d+)", r"；退出码 \1"),
    (r"; ended by (\S+)", r"；被 \1 结束"),
    (r"; exit status not known", "；退出码未知"),
    (r"; the launcher printed '(un)?install (success|failed)'", r"；启动器打印了 “\1install \2”"),
    (r"(\d+) more", r"另外 \1 个"),
)


def install_failed_words(v: Verdict, lang: Lang) -> str:
    key = "zh" if lang is Lang.ZH else "en"
    return (CACHED_INSTALL_FAILED if v.compiled is False else INSTALL_FAILED)[key]


def install_headline(v: Verdict) -> str | None:
    """The headline of a verdict whose package install failed (None otherwise)."""
    if v.installed is not False:
        return None
    words = install_failed_words(v, Lang.EN)
    if v.state is State.SUCCEEDED:
        return f"SUCCEEDED: {words}"
    if v.state is State.FAILED and v.natural_return and _required_only(v):
        return (
            f"FAILED: {words} (package mode 'required'); the compile itself succeeded, "
            "this is not a compiler failure"
        )
    return None


def install_state_words(v: Verdict, lang: Lang) -> str | None:
    """How a report names a verdict whose package install failed (None otherwise)."""
    if v.installed is not False:
        return None
    zh = lang is Lang.ZH
    words = install_failed_words(v, lang)
    if v.state is State.SUCCEEDED:
        return f"成功：{words}" if zh else f"succeeded: {words}"
    if v.state is State.FAILED and v.natural_return and _required_only(v):
        return (
            f"失败：{words}（包模式 required；编译本身成功，不是编译失败）"
            if zh
            else f"failed: {words} (package mode 'required'; the compile itself succeeded, "
            "not a compiler failure)"
        )
    return None


INSTALL_NEXT: Mapping[str, str] = {
    "en": "Do not cite this run as using static kernels: the package install failed, so "
    "inference ran without them. Read the failed install in installs.json (and the "
    "launcher's 'install failed' message in run.log), fix it, and install the package or "
    "run again.",
    "zh": "不要把这次运行当作使用了静态 kernel：包安装失败，推理没有使用它们。"
    "请在 installs.json（以及 run.log 中启动器的 “install failed” 信息）中查看失败的安装，"
    "修复后安装该包或重新运行。",
}


def install_next_step(v: Verdict, lang: Lang) -> str | None:
    """The next step of a report whose package install failed (None otherwise)."""
    if v.installed is not False or v.state not in (State.SUCCEEDED, State.FAILED):
        return None
    return INSTALL_NEXT["zh" if lang is Lang.ZH else "en"]


def _required_only(v: Verdict) -> bool:
    """Failed by the required-mode install check alone (no other C2.3 reason)."""
    return any(r.startswith(REQUIRED_REASON) for r in v.reasons) and not any(
        r.startswith("C2.3") for r in v.reasons
    )


REQUIRED_REASON = "C8: package mode 'required' and the package install failed"
