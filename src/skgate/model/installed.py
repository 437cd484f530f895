"""Installed static binaries (C8): which dumped op types got none, and the words for it.

After install, a package's manifest
``$ASCEND_OPP_PATH/static_kernel/ai_core/<package stem>/config/<soc>/binary_info_config.json``
maps each op type to its ``staticList`` (fact 4a). An op type of the dumped inputs
(``*_opcompile/*.json`` ``"op_type"``) that the manifest lacks, or lists with an empty
``staticList``, has no static binary: it runs without one, silently. Real harnesses compute
exactly this by hand (fact 4b). :mod:`skgate.evidence.installed` reads the files; the rule
and the words are here. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skgate.model.frozen import field, record
from skgate.model.phrases import Lang

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record
class PackageManifest:
    """One installed package's manifest(s), one per ``config/<soc>/`` directory."""

    stem: str
    #: The manifest files read (absolute paths); empty when none was found.
    paths: tuple[str, ...]
    #: Op type -> number of entries of its ``staticList`` (0: listed with none).
    op_types: Mapping[str, int] = field(default_factory=dict)
    #: Why a manifest could not be used (not a regular file, not JSON, too large).
    problems: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PackageManifest:
        ops = data.get("op_types")
        return cls(
            stem=str(data.get("stem", "")),
            paths=tuple(str(p) for p in data.get("paths", ()) if isinstance(p, str)),
            op_types={
                str(k): v
                for k, v in (ops.items() if isinstance(ops, dict) else ())
                if isinstance(v, int) and not isinstance(v, bool)
            },
            problems=tuple(str(p) for p in data.get("problems", ()) if isinstance(p, str)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "stem": self.stem,
            "paths": list(self.paths),
            "op_types": dict(sorted(self.op_types.items())),
            "problems": list(self.problems),
        }


@record
class InstalledBinaries:
    """The C8 check of installed static binaries for one outputs directory."""

    opp: str | None
    #: Op type -> the dumped input JSONs that carry it (the first few).
    descriptors: Mapping[str, tuple[str, ...]]
    packages: tuple[PackageManifest, ...]

    @property
    def manifest_found(self) -> bool:
        return any(p.paths and not p.problems for p in self.packages)

    def without_binary(self) -> tuple[str, ...]:
        """Descriptor op types no found manifest gives a non-empty ``staticList`` (C8).

        Empty when no manifest was found: nothing can be named then, only said.
        """
        if not self.manifest_found:
            return ()
        have: set[str] = set()
        for p in self.packages:
            have.update(op for op, n in p.op_types.items() if n > 0)
        return tuple(sorted(op for op in self.descriptors if op not in have))

    def listed_empty(self) -> tuple[str, ...]:
        """The op types of :meth:`without_binary` that a manifest lists with no entry."""
        listed = {op for p in self.packages for op, n in p.op_types.items() if n == 0}
        return tuple(op for op in self.without_binary() if op in listed)

    @classmethod
    def from_dict(cls, data: Any) -> InstalledBinaries | None:
        """Lenient (an old or partial ``installed.json``): None when it is not one."""
        if not isinstance(data, dict):
            return None
        descs = data.get("descriptor_op_types")
        packages = data.get("packages")
        opp = data.get("opp")
        return cls(
            opp=opp if isinstance(opp, str) else None,
            descriptors={
                str(k): tuple(str(p) for p in v)
                for k, v in (descs.items() if isinstance(descs, dict) else ())
                if isinstance(v, list)
            },
            packages=tuple(
                PackageManifest.from_dict(p)
                for p in (packages if isinstance(packages, list) else ())
                if isinstance(p, dict)
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "opp": self.opp,
            "descriptor_op_types": {k: list(v) for k, v in sorted(self.descriptors.items())},
            "packages": [p.to_dict() for p in self.packages],
            "manifest_found": self.manifest_found,
            "without_binary": list(self.without_binary()),
            "listed_empty": list(self.listed_empty()),
        }


#: The words, English / Chinese.
WORDS = {
    "title": {"en": "Installed static binaries (C8)", "zh": "已安装的静态二进制（C8）"},
    "ok": {
        "en": "every dumped op type has a static binary in the installed manifest",
        "zh": "每个导出的算子类型在已安装的索引中都有静态二进制",
    },
    "missing": {
        "en": "descriptor op type(s) with no static binary installed",
        "zh": "没有安装静态二进制的算子类型",
    },
    "no_manifest": {
        "en": "no installed manifest found (torchair uninstalls its packages at process "
        "exit, fact 4b: read it while the process lives, or reinstall the package)",
        "zh": "未找到已安装的索引文件（torchair 在进程退出时卸载静态 Kernel 包，见事实 4b："
        "请在进程存活时读取，或重新安装该包）",
    },
    "not_checked": {
        "en": "installed static binaries not checked: no --opp given and ASCEND_OPP_PATH unset",
        "zh": "未检查已安装的静态二进制：未给出 --opp，且未设置 ASCEND_OPP_PATH",
    },
}


def report_lines(found: InstalledBinaries | None, lang: Lang) -> list[str]:
    """The report's lines for an attempt's ``installed.json`` (empty: nothing to say)."""
    if found is None or not found.descriptors or (not found.packages and found.opp is not None):
        return []
    if found.opp is None:
        return [f"- {WORDS['not_checked'][lang]}"]
    if not found.manifest_found:
        return [f"- {WORDS['no_manifest'][lang]}"]
    missing = found.without_binary()
    if not missing:
        return [f"- {WORDS['ok'][lang]} ({len(found.descriptors)})"]
    return [f"- {missing_text(missing, found.listed_empty(), lang)}"]


def missing_text(ops: Sequence[str], empty: Sequence[str], lang: Lang = Lang.EN) -> str:
    """``<words>: A, B (listed with an empty staticList: B)``."""
    shown = ", ".join(ops)
    if lang is Lang.ZH:
        tail = f"（staticList 为空：{', '.join(empty)}）" if empty else ""
        return f"{WORDS['missing']['zh']}：{shown}{tail}"
    tail = f" (listed with an empty staticList: {', '.join(empty)})" if empty else ""
    return f"{WORDS['missing']['en']}: {shown}{tail}"
