"""What will make a compile skip, named before launch (C6), and its words (en / zh).

A compile that succeeds and did nothing costs more time than one that fails: a static-kernel
cache hit installs an old package, a ``kernel_meta/<name>.o`` left from before
short-circuits the SuperKernel compile, a build path too deep makes every per-input file
name fail with ENAMETOOLONG (which the launcher swallows), and a multi-card launcher with
``LOCAL_WORLD_SIZE`` unset turns static kernels off with only a UserWarning. Preflight
(:mod:`skgate.preflight.skips`) gathers the facts; this module holds the rules and the
words, as :class:`SkipFinding` records. Each is a warning except the path refusal.
Facts and their sources: ``docs/cann-static-compile.md`` (4a, 5a-5b, 6f, 8a-8b, and
"How deep a build path may be"). Nothing here does I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from skgate.model.frozen import record
from skgate.model.phrases import Lang

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The longest file name a Linux file system accepts, in bytes (NAME_MAX).
NAME_MAX = 255

#: The fixed part of the longest file name a real compile is known to make in a build
#: directory, in bytes: a per-input log ``static_kernel_<OpType>_<64 hex>_<pid>_d<n>
#: _compile_error.log`` without its op type (``static_kernel_`` 14, ``_`` 1, the hash 64,
#: ``_`` 1, a pid of up to 7 digits, ``_d0`` 3, ``_compile_error.log`` 18). The op type
#: only adds to it, so an estimate built on this never exceeds the real length under
#: the reading of :func:`derived_name_bytes`.
LONGEST_FIXED_NAME = 14 + 1 + 64 + 1 + 7 + 3 + 18


def derived_name_bytes(path: str) -> int:
    """The estimated length, in bytes, of the longest file name derived from ``path``.

    op_compiler flattens the working directory's path into the names of the files it
    makes; exactly how is not published (docs/cann-static-compile.md, "How deep a build
    path may be": an unconfirmed reading). The estimate is the path with ``/`` replaced
    (``_``, the same length; the leading one dropped), joined by one ``_`` to the fixed
    part of the longest name CANN makes in a build directory (:data:`LONGEST_FIXED_NAME`).
    It is a lower bound under that reading: the op type of a real log name only makes
    the name longer. A result above :data:`NAME_MAX` fails with ENAMETOOLONG.
    """
    flat = path.rstrip("/").lstrip("/").encode("utf-8", "surrogateescape")
    return len(flat) + 1 + LONGEST_FIXED_NAME


def path_too_deep(path: str) -> bool:
    """True when :func:`derived_name_bytes` of ``path`` passes :data:`NAME_MAX`."""
    return derived_name_bytes(path) > NAME_MAX


#: Environment variables that show a multi-card launch (torchrun and most launchers).
MULTI_CARD_VARS = ("WORLD_SIZE", "RANK", "LOCAL_RANK")
#: The prefix of vLLM's own environment variables (a vLLM launch, vllm-ascend issue 10191).
VLLM_PREFIX = "VLLM_"
LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE"


def static_off_markers(env: Mapping[str, str]) -> tuple[str, ...]:
    """The variables that show a launch where torchair would turn static kernels off.

    torchair disables the static compile in a multi-card context when ``LOCAL_WORLD_SIZE``
    is unset, with only a UserWarning (fact 6f). Only what the environment shows counts:
    ``WORLD_SIZE`` other than 1, ``RANK`` or ``LOCAL_RANK`` set, or vLLM's ``VLLM_*``
    variables, each named ``NAME=value``; empty when ``LOCAL_WORLD_SIZE`` is set or none
    of them is there (never guessed).
    """
    if env.get(LOCAL_WORLD_SIZE):
        return ()
    found: list[str] = []
    for name in MULTI_CARD_VARS:
        value = env.get(name)
        if value is None or (name == "WORLD_SIZE" and value.strip() in ("", "1")):
            continue
        found.append(f"{name}={value}")
    vllm = sorted(n for n in env if n.startswith(VLLM_PREFIX))
    found.extend(vllm[:5])
    if len(vllm) > 5:
        found.append(f"... {len(vllm) - 5} more VLLM_* variables")
    return tuple(found)


class SkipKind(enum.Enum):
    """What will make the compile skip (each a warning, except ``PATH_TOO_DEEP``)."""

    CACHE = "static_kernel_cache"
    KERNEL_META = "stale_kernel_meta"
    PATH_TOO_DEEP = "path_too_deep"
    PATH_ALLOWED = "path_too_deep_allowed"
    STATIC_OFF = "static_kernels_off"


#: Words of each finding's first clause, English / Chinese (C7: one table for both).
WORDS: dict[SkipKind, dict[str, str]] = {
    SkipKind.CACHE: {
        "en": "static-kernel cache present: a hit installs the cached package without compiling",
        "zh": "存在静态 Kernel 缓存：命中时直接安装缓存的包，不会编译",
    },
    SkipKind.KERNEL_META: {
        "en": "stale kernel_meta objects: the SuperKernel compile returns early when "
        "kernel_meta/<name>.o exists",
        "zh": "残留的 kernel_meta 目标文件：kernel_meta/<name>.o 存在时 SuperKernel 编译直接返回",
    },
    SkipKind.PATH_TOO_DEEP: {
        "en": "build path too deep: derived file names pass NAME_MAX and fail with ENAMETOOLONG",
        "zh": "构建路径过深：派生的文件名超过 NAME_MAX，会因 ENAMETOOLONG 失败",
    },
    SkipKind.PATH_ALLOWED: {
        "en": "build path too deep, allowed by --allow-long-paths: derived file names may "
        "fail with ENAMETOOLONG",
        "zh": "构建路径过深，已由 --allow-long-paths 放行：派生的文件名可能因 ENAMETOOLONG 失败",
    },
    SkipKind.STATIC_OFF: {
        "en": "static kernels may be silently off: multi-card launcher environment with "
        "LOCAL_WORLD_SIZE unset",
        "zh": "静态 Kernel 可能被静默关闭：多卡启动环境中未设置 LOCAL_WORLD_SIZE",
    },
}

#: The detail clauses, English / Chinese.
DETAIL = {
    "cache_key": {
        "en": "the key covers only the ops' hashes, the super-kernel config (torch-npu 2.11 "
        "and later: its optimize and debug options too) and deterministic mode and level, "
        "not replaced .o files",
        "zh": "缓存键只包含算子哈希、super-kernel 配置（torch-npu 2.11 及以后还包含其优化与调试"
        "选项）以及确定性模式与级别，不包含被替换的 .o 文件",
    },
    "cache_fix": {
        "en": "to compile for real: set the torchair option disable_static_kernel_compile_cache, "
        "or clear it with skgate cleanup (it preserves the old scene first)",
        "zh": "要真正编译：设置 torchair 选项 disable_static_kernel_compile_cache，"
        "或用 skgate cleanup 清理（先保存旧现场）",
    },
    "meta_fix": {
        "en": "move them away with skgate cleanup (it preserves the old scene first)",
        "zh": "用 skgate cleanup 移走（先保存旧现场）",
    },
    "path_fix": {
        "en": "run from a shorter working directory, or pass --allow-long-paths",
        "zh": "换一个更短的工作目录，或加 --allow-long-paths",
    },
    "static_off_fix": {
        "en": "torchair then only warns; set LOCAL_WORLD_SIZE or launch with torchrun",
        "zh": "torchair 只会给出 UserWarning；请设置 LOCAL_WORLD_SIZE 或用 torchrun 启动",
    },
}


@record
class SkipFinding:
    """One thing that will make the compile skip, in both languages."""

    kind: SkipKind
    en: str
    zh: str
    #: Refuses the launch (exit 3, not started); every other finding only warns.
    blocks: bool = False

    def text(self, lang: Lang) -> str:
        return self.zh if lang is Lang.ZH else self.en

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "en": self.en, "zh": self.zh, "blocks": self.blocks}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SkipFinding | None:
        """Lenient (old or partial records): None when it is not a finding."""
        try:
            kind = SkipKind(data.get("kind"))
        except ValueError:
            return None
        en, zh = data.get("en"), data.get("zh")
        if not isinstance(en, str) or not isinstance(zh, str):
            return None
        return cls(kind, en, zh, data.get("blocks") is True)


def _finding(kind: SkipKind, en: str, zh: str, *, blocks: bool = False) -> SkipFinding:
    return SkipFinding(kind, f"{WORDS[kind]['en']}: {en}", f"{WORDS[kind]['zh']}：{zh}", blocks)


#: Entries (and objects) a finding's words name, at the most; the record keeps more.
SHOWN = 5


def cache_finding(path: str, entries: Sequence[tuple[str, bool]], omitted: int = 0) -> SkipFinding:
    """A cache file and its ``(run path, exists)`` entries (facts 5a, 5b, 5d); the words
    name the first :data:`SHOWN`, then how many more (``omitted``: not even read)."""
    shown = "; ".join(
        f"{run} ({'exists' if ok else 'missing: a silent miss, then a compile'})"
        for run, ok in entries[:SHOWN]
    )
    shown_zh = "；".join(
        f"{run}（{'存在' if ok else '不存在：静默未命中后重新编译'}）"
        for run, ok in entries[:SHOWN]
    )
    n = len(entries) + omitted
    more = n - min(len(entries), SHOWN)
    if more:
        shown += f"; and {more} more"
        shown_zh += f"；另有 {more} 个"
    return _finding(
        SkipKind.CACHE,
        f"{path}, {n} entr{'y' if n == 1 else 'ies'}{': ' + shown if shown else ''}; "
        f"{DETAIL['cache_key']['en']}; {DETAIL['cache_fix']['en']}",
        f"{path}，{n} 个条目{'：' + shown_zh if shown_zh else ''}；"
        f"{DETAIL['cache_key']['zh']}；{DETAIL['cache_fix']['zh']}",
    )


def kernel_meta_finding(
    directory: str, objects: Sequence[tuple[str, int, float]], omitted: int = 0
) -> SkipFinding:
    """``kernel_meta/*.o`` files as ``(name, size, mtime)`` (facts 8a, 8b); the mtime is
    shown in seconds since the epoch, the same in both languages (nothing here reads a
    clock or a time zone)."""
    listed = ", ".join(
        f"{name} ({size} bytes, mtime {mtime:.0f})" for name, size, mtime in objects[:SHOWN]
    )
    extra = omitted + max(0, len(objects) - SHOWN)
    more = f" and {extra} more" if extra else ""
    more_zh = f" 及另外 {extra} 个" if extra else ""
    return _finding(
        SkipKind.KERNEL_META,
        f"{directory}: {listed}{more}; extract_sub_bin_file skips the same way; "
        f"{DETAIL['meta_fix']['en']}",
        f"{directory}：{listed}{more_zh}；extract_sub_bin_file 同样会跳过；"
        f"{DETAIL['meta_fix']['zh']}",
    )


def path_finding(path: str, *, allowed: bool) -> SkipFinding:
    """The build path and its estimated derived-name length against :data:`NAME_MAX`."""
    n = derived_name_bytes(path)
    kind = SkipKind.PATH_ALLOWED if allowed else SkipKind.PATH_TOO_DEEP
    fix_en = "" if allowed else f"; {DETAIL['path_fix']['en']}"
    fix_zh = "" if allowed else f"；{DETAIL['path_fix']['zh']}"
    return _finding(
        kind,
        f"{path}: estimated derived name length {n} bytes > limit {NAME_MAX} (C6){fix_en}",
        f"{path}：估计派生文件名长度 {n} 字节 > 上限 {NAME_MAX}（C6）{fix_zh}",
        blocks=not allowed,
    )


def static_off_finding(markers: Sequence[str]) -> SkipFinding:
    """The variables that show the launch (:func:`static_off_markers`) (fact 6f)."""
    shown = ", ".join(markers)
    return _finding(
        SkipKind.STATIC_OFF,
        f"the environment shows {shown}; {DETAIL['static_off_fix']['en']}",
        f"环境中有 {shown}；{DETAIL['static_off_fix']['zh']}",
    )


def findings_of(controls: Mapping[str, Any]) -> tuple[SkipFinding, ...]:
    """The findings ``control.json["controls"]["skips"]`` recorded (lenient)."""
    skips = controls.get("skips")
    raw = skips.get("findings") if isinstance(skips, dict) else None
    if not isinstance(raw, list):
        return ()
    out = [SkipFinding.from_dict(f) for f in raw if isinstance(f, dict)]
    return tuple(f for f in out if f is not None)
