"""Did the declared change reach the compile? (C6, issue 20 section 2)

A compile that succeeds and did nothing is what costs people most: a replaced kernel
``.o`` that never ran because the static-kernel cache key does not cover it (a field
note's authors found out only from profiler counters). The health gate (and a matrix arm
with ``touches``) therefore asks, of a candidate that succeeded, whether the change it
declares can have reached the compile at all. It did not when:

- its stage was a cache hit (``compiled`` false: a cached package was installed);
- its op_compiler compiled none of the op types the change touches (when the
  declaration names them): an op type is compiled when it has inputs with succ logs in a
  stage of the candidate (``stages.json``, the per-op-type tallies);
- a ``kernel_meta/<name>.o`` that was there before launch (named by preflight in
  ``control.json``, else found by :func:`skgate.preflight.kernel_meta.stale_kernel_meta`
  against the launch time) was still in place afterwards: graph-autofusion returns early
  when it exists (``docs/cann-static-compile.md`` 8a/8b);
- for a kernel change: its installed package is byte-identical to the reference's
  (sha256 of the ``.run`` files under each attempt's stage roots, recorded by the census
  after return, ``run_sha256``, else computed while the file is still there; a hit's
  cached package is the reference's own file by its path).

Each finding names what to clear, in English and Chinese. Read-only: nothing here
signals, moves or deletes anything (C4); clearing is the person's, with ``skgate cleanup``
(which preserves first, C8).
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skgate.evidence import files
from skgate.evidence.digest import sha256_file
from skgate.evidence.load import load_control
from skgate.evidence.stages import load_stages
from skgate.model.errors import EvidenceError
from skgate.model.phrases import Lang
from skgate.model.records import State, Verdict
from skgate.model.stages import Stages
from skgate.preflight.kernel_meta import KernelMetaObject, from_controls, stale_kernel_meta
from skgate.regress.change import Change
from skgate.verdict.stages import CACHE_ADVICE, MAX_LISTED, cache_paths
from skgate.verdict.words import idle_said

#: The finding's headline, and its Chinese form (docs/contract.md, C6).
NOT_REACHED = "the declared change did not reach the compile"
NOT_REACHED_ZH = "声明的改动没有进入编译"

_CACHE_ADVICE_ZH = (
    "关闭启动器的静态 kernel 编译缓存（或在 `skgate cleanup` 之后删除 "
    "static_kernel_compile_outputs/static_kernel_cache），以便真正编译"
)
_KERNEL_META_ADVICE = (
    "move kernel_meta/ out of the working directory with `skgate cleanup` (it preserves "
    "first) before the next run"
)
_KERNEL_META_ADVICE_ZH = "下次运行前用 `skgate cleanup` 把 kernel_meta/ 移出工作目录（会先保存）"
_OP_TYPES_ADVICE = (
    "make the workload compile inputs of these op types (clear the cache and kernel_meta "
    "named here; check the op types' spelling against the stage's inputs)"
)
_OP_TYPES_ADVICE_ZH = (
    "让工作负载编译这些算子类型的输入（清除此处列出的缓存和 kernel_meta；"
    "对照阶段的输入检查算子类型的拼写）"
)
_PACKAGE_ADVICE = (
    "make sure the changed kernel is what the compile reads (the replaced .o in place, "
    "the cache and kernel_meta cleared), then run again"
)
_PACKAGE_ADVICE_ZH = (
    "确认编译读取的是改动后的 kernel（替换的 .o 已就位，缓存和 kernel_meta 已清除），然后重新运行"
)

#: Hashing a package stops here (a .run is tens of MiB; this bounds a pathological one).
MAX_PACKAGE_BYTES = 4 << 30


class ReachCheck(str, enum.Enum):
    """Which of the checks found that the change did not reach the compile."""

    CACHE_HIT = "cache_hit"
    #: The launcher had nothing to compile (issue 27: no operators, all blacklisted,
    #: an empty selection, a cache-compile install).
    NOTHING_COMPILED = "nothing_compiled"
    OP_TYPES = "op_types"
    KERNEL_META = "kernel_meta"
    SAME_PACKAGE = "same_package"


@dataclass(frozen=True)
class ReachFinding:
    """One reason the declared change did not reach the compile, and what to clear."""

    check: ReachCheck
    en: str
    zh: str
    clear_en: str
    clear_zh: str

    def text(self, lang: Lang = Lang.EN) -> str:
        if lang is Lang.ZH:
            return f"{NOT_REACHED_ZH}：{self.zh}；{self.clear_zh}"
        return f"{NOT_REACHED}: {self.en}; {self.clear_en}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check.value,
            "en": self.text(Lang.EN),
            "zh": self.text(Lang.ZH),
            "clear": self.clear_en,
            "clear_zh": self.clear_zh,
        }


def touched_op_types(changes: Iterable[Change]) -> tuple[str, ...]:
    return tuple(sorted({op for ch in changes for op in ch.op_types}))


def compiled_op_types(stages: Stages | None) -> tuple[str, ...]:
    """Op types with inputs that have succ logs in some stage (the census tallies)."""
    if stages is None:
        return ()
    found = {
        t.op_type
        for st in stages.stages
        if st.census is not None
        for t in st.census.op_types
        if t.inputs > 0 and t.succeeded > 0
    }
    return tuple(sorted(found))


def _sha256(path: str) -> str | None:
    """sha256 of a package still there (not a link, not a directory, within the bound)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_PACKAGE_BYTES:
        return None
    return sha256_file(Path(path))


def installed_packages(stages: Stages | None, compiled: bool | None) -> dict[str, str | None]:
    """``{path: sha256}`` of the ``.run`` files under the stage roots, or of the cached
    package a hit installed: the digest the census recorded after return, else the file's
    own while it is still there (None: moved away, not guessed)."""
    if stages is None:
        return {}
    recorded: dict[str, str] = {}
    paths: list[str] = []
    for st in stages.stages:
        if st.census is not None:
            recorded.update(st.census.run_sha256)
            paths.extend(os.path.join(st.census.output_root, p) for p in st.census.run_packages)
    if compiled is False:
        paths.extend(stages.cached_packages)
    return {p: recorded.get(p) or _sha256(p) for p in paths}


def _stages(attempt: Path) -> Stages | None:
    try:
        return load_stages(attempt / files.STAGES)
    except EvidenceError:
        return None


def _kernel_meta_in_place(attempt: Path) -> list[KernelMetaObject]:
    """Objects there before the candidate's launch and still in place after it."""
    control = load_control(attempt)
    named = from_controls(control.raw.get("controls"))
    if named is None:
        launched = control.raw.get("created_at")
        if isinstance(launched, bool) or not isinstance(launched, (int, float)):
            return []
        # control.json is written before launch: older objects were there before it.
        named = stale_kernel_meta(Path(control.request.cwd), float(launched))
    return [o for o in named if o.still_in_place()]


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    more = len(names) - MAX_LISTED
    return shown + (f" +{more}" if more > 0 else "") if names else "-"


def not_reached(
    reference: Path, candidate: Path, verdict: Verdict, changes: Sequence[Change]
) -> tuple[ReachFinding, ...]:
    """Why the declared ``changes`` did not reach ``candidate``'s compile (see module doc).

    Asked only of a candidate that succeeded and declared a change: a failed or unknown
    one is judged by its state, and with nothing declared there is nothing to reach.
    """
    if not changes or verdict.state is not State.SUCCEEDED:
        return ()
    out: list[ReachFinding] = []
    stages = _stages(candidate)
    idle = stages.idle if stages is not None else ()
    if verdict.compiled is False and idle:
        # Issue 27: the launcher had nothing to compile: said as found (en, zh).
        out.append(
            ReachFinding(
                ReachCheck.NOTHING_COMPILED,
                idle_said(idle[0], Lang.EN),  # the sentence ends with how to compile
                idle_said(idle[0], Lang.ZH),
                "then run the candidate again",
                "然后重新运行候选",
            )
        )
    elif verdict.compiled is False:
        caches = _listed(cache_paths(stages))
        out.append(
            ReachFinding(
                ReachCheck.CACHE_HIT,
                f"its stage was a cache hit: a cached package was installed and nothing was "
                f"compiled (cache {caches})",
                f"其阶段命中了缓存：安装的是缓存中的包，没有任何编译（缓存 {caches}）",
                CACHE_ADVICE,
                _CACHE_ADVICE_ZH,
            )
        )
    touched = touched_op_types(changes)
    compiled = compiled_op_types(stages)
    if touched and not set(touched) & set(compiled):
        ops, did = _listed(touched), _listed(compiled)
        out.append(
            ReachFinding(
                ReachCheck.OP_TYPES,
                f"its op_compiler compiled none of the op types the change touches ({ops}); "
                f"op types compiled: {did}",
                f"其 op_compiler 没有编译改动涉及的任何算子类型（{ops}）；已编译的算子类型：{did}",
                _OP_TYPES_ADVICE,
                _OP_TYPES_ADVICE_ZH,
            )
        )
    stale = _kernel_meta_in_place(candidate)
    if stale:
        shown = _listed([f"{o.path} ({o.size} bytes, mtime {o.mtime:.0f})" for o in stale])
        out.append(
            ReachFinding(
                ReachCheck.KERNEL_META,
                f"kernel_meta object(s) that were there before launch were still in place "
                f"after it: {shown}; the SuperKernel compile returns early when its .o exists",
                f"启动前就存在的 kernel_meta 目标文件在运行后仍原样存在：{shown}；"
                "其 .o 存在时 SuperKernel 编译会提前返回",
                _KERNEL_META_ADVICE,
                _KERNEL_META_ADVICE_ZH,
            )
        )
    if any(ch.kind == "kernel" for ch in changes):
        mine = installed_packages(stages, verdict.compiled)
        ref = installed_packages(_stages(reference), True)
        theirs = {d for d in ref.values() if d is not None}
        # The same file (a hit installs the reference's own .run) or the same bytes.
        same = sorted(p for p, d in mine.items() if p in ref or (d is not None and d in theirs))
        if mine and len(same) == len(mine):
            shown = _listed(same)
            out.append(
                ReachFinding(
                    ReachCheck.SAME_PACKAGE,
                    f"its installed package is byte-identical to the reference's ({shown})",
                    f"其安装的包与参考尝试的包逐字节相同（{shown}）",
                    _PACKAGE_ADVICE,
                    _PACKAGE_ADVICE_ZH,
                )
            )
    return tuple(out)
