"""Chinese words for the values a report shows from its records (C7: every label of a zh
report in Chinese): the state and cause words of the verdict facts and the timeline, the
package mode, and the fixed notes the frozen controls carry.

The records keep their English values (they are data, read by programs); only a zh
render says them in Chinese. A value with no entry here (a path, an argv, a number, a
name) is shown as it is. The report layer imports it beside :mod:`skgate.verdict.words`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from skgate.model.modes import PackageMode
from skgate.model.phrases import Lang
from skgate.model.records import State
from skgate.model.running import Cause

#: One short word per state, for "state X" in facts and timeline (C2's five, plus
#: not_started); the long words are :data:`skgate.verdict.words.WORDS`.
STATE_SHORT: Mapping[State, Mapping[str, str]] = {
    State.IN_PROGRESS: {"en": "in_progress", "zh": "进行中"},
    State.SUCCEEDED: {"en": "succeeded", "zh": "成功"},
    State.FAILED: {"en": "failed", "zh": "失败"},
    State.INTERRUPTED: {"en": "interrupted", "zh": "中断"},
    State.UNKNOWN: {"en": "unknown", "zh": "未知"},
    State.NOT_STARTED: {"en": "not_started", "zh": "未启动"},
}

CAUSE_WORDS: Mapping[Cause, Mapping[str, str]] = {
    Cause.TIMEOUT: {"en": "timeout", "zh": "超时"},
    Cause.EXTERNAL: {"en": "external", "zh": "外部中断"},
}

PACKAGE_WORDS: Mapping[PackageMode, Mapping[str, str]] = {
    PackageMode.REQUIRED: {"en": "required", "zh": "必需"},
    PackageMode.OPTIONAL: {"en": "optional", "zh": "可选"},
}


def state_short(state: State | None, lang: Lang) -> str:
    return "-" if state is None else STATE_SHORT[state][lang]


def cause_word(cause: Cause | str | None, lang: Lang) -> str:
    if cause is None:
        return "-"
    try:
        return CAUSE_WORDS[Cause(cause)][lang]
    except ValueError:
        return str(cause)


def package_word(mode: PackageMode, lang: Lang) -> str:
    return PACKAGE_WORDS[mode][lang]


#: The fixed English notes of control.json (written by preflight and the runner), as a zh
#: report says them; matched whole, so a note that changes shows in English, not wrongly.
_NOTES_ZH: tuple[tuple[str, str], ...] = (
    # controls.torch_npu (preflight/torch_npu.py, issue 27).
    (
        r"no torch_npu dist-info in the workload interpreter's PYTHONPATH or site "
        r"directories: the static-kernel behaviour of its release is not stated",
        "工作负载解释器的 PYTHONPATH 和 site 目录中没有 torch_npu 的 dist-info："
        "无法说明其版本的静态 kernel 行为",
    ),
    (
        r"the workload interpreter is not known, so its torch-npu is not read",
        "工作负载的解释器未知，因此未读取其 torch-npu 版本",
    ),
    (
        r"torch-npu (\S+) is not in skgate's release table; its static-kernel behaviour is "
        r"not stated",
        r"torch-npu \1 不在 skgate 的版本表中；无法说明其静态 kernel 行为",
    ),
    (
        r"--jobs (\d+) is above the (\d+) usable CPUs \(kept as asked\)",
        r"--jobs \1 高于可用的 \2 个 CPU（按要求保留）",
    ),
    (
        r"values of secret-looking names \(TOKEN, PASSWORD, SECRET, KEY, \.\.\.\) are recorded "
        r"as <redacted>",
        "名称像密钥的变量（TOKEN、PASSWORD、SECRET、KEY 等）的值记录为 <redacted>",
    ),
    (
        r"no schedule requested: the framework default schedule applies",
        "未请求调度：使用框架的默认调度",
    ),
    (
        r"entries present before launch are not counted in this attempt's census",
        "启动前已存在的条目不计入本次尝试的产物统计",
    ),
    (r"\(empty\)", "（空）"),
    (r"command argv\[0\]", "命令的 argv[0]"),
    (r"python3 on the workload PATH", "工作负载 PATH 上的 python3"),
    (r"shebang of (.+)", r"\1 的 shebang"),
    (
        r"\.pth path lines only extend sys\.path and import nothing: not a hook",
        ".pth 路径行只扩展 sys.path，不导入任何模块：不是钩子",
    ),
    (
        r"setuptools distutils-precedence\.pth \(packaging hook, matched by content\): it imports "
        r"only setuptools' _distutils_hack, nothing of the application",
        "setuptools 的 distutils-precedence.pth（打包钩子，按内容匹配）：只导入 setuptools 的 "
        "_distutils_hack，不导入应用的任何内容",
    ),
    (r"(sitecustomize|usercustomize) is imported at every start-up", r"每次启动都会导入 \1"),
    (r"it imports nothing of the application and no framework", "不导入任何应用代码或框架"),
    (r"it imports (.+)", r"它导入 \1"),
    (r"\.pth import line runs: (.+)", r".pth 导入行会执行：\1"),
    (
        r"module '([^']+)' is imported at interpreter start-up",
        r"解释器启动时会导入模块 '\1'",
    ),
    (
        r"module '([^']+)' is imported at interpreter start-up \(a known hook's companion, "
        r"but not from where the catalogue allows\)",
        r"解释器启动时会导入模块 '\1'（已知钩子的配套模块，但不在目录允许的位置）",
    ),
    (
        r"module '([^']+)' is imported at interpreter start-up \(framework imported before "
        r"the launcher's own initialisation\)",
        r"解释器启动时会导入模块 '\1'（框架在启动器自身初始化之前被导入）",
    ),
    (
        r"it only installs apport's crash reporter as sys\.excepthook when apport is installed",
        "只在安装了 apport 时把 apport 的崩溃报告器设为 sys.excepthook",
    ),
    (
        r"virtualenv's own patch of distutils/setuptools install paths for the venv",
        "virtualenv 自身对 venv 中 distutils/setuptools 安装路径的修补",
    ),
    (
        r"_distutils_hack is loaded by an allowed packaging or distribution hook",
        "_distutils_hack 由已允许的打包或发行版钩子加载",
    ),
)


_BOTH = re.compile(r"(^|; )en=.*?; (?=zh=)", re.S)


@functools.cache
def _notes_zh() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(p), zh) for p, zh in _NOTES_ZH)


def control_value(value: str, lang: Lang) -> str:
    """A frozen control's value as a report in ``lang`` shows it: the fixed notes (also
    inside a ``key=value; ...`` record) in Chinese for zh; anything else as it is."""
    if lang is not Lang.ZH:
        return value
    # A record that carries its own words in both languages (en=...; zh=..., the skips
    # findings) is shown by its zh words only.
    value = _BOTH.sub(r"\1", value)
    parts = value.split("; ")
    out: list[str] = []
    for part in parts:
        key, sep, text = part.partition("=") if "=" in part else ("", "", part)
        for pattern, zh in _notes_zh():
            if pattern.fullmatch(text):
                text = pattern.sub(zh, text)
                break
        out.append(f"{key}{sep}{text}")
    return "; ".join(out)
