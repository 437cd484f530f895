"""What ``verify`` finds wrong, as typed records worded in English and Chinese.

:func:`skgate.evidence.seal.verify_attempt` used to return English lines only, so a Chinese
report (``skgate report --lang zh``) listed its seal problems in English, and whether a
problem meant "unfinished" (``skgate recover`` finishes it) or "changed" was told by
matching words in the line. A :class:`SealProblem` carries its :class:`Flaw`, which says
both, and renders itself in either language. The English text is the one ``verify``
prints, unchanged (C2.5: evidence that changed after sealing decides no verdict).

Every problem ``verify`` reports is one: those of one attempt (its seal, its scenes),
those of the root's ledger (its hash chain, a torn last line, its cross-references to
seals and scenes) and those of the root's entries (a linked ``attempts/`` or ledger).
``skgate verify`` prints ``UNFINISHED:`` or ``CHANGED:`` from :attr:`Flaw.unfinished`
(issue 29's leftover: no word of a line is ever matched). Nothing here does I/O.
"""

from __future__ import annotations

import enum

from skgate.model.frozen import record
from skgate.model.phrases import Lang

_RECOVER_EN = "run 'skgate recover {attempt}'"
_RECOVER_ZH = "运行 'skgate recover {attempt}'"


class Phase(enum.Enum):
    """When a manifest was taken: at sealing (``seal.json``) or when a cleanup or retry
    preserved a scene (``scene/<k>/manifest.json``)."""

    SEALING = ("sealing", "封存")
    PRESERVING = ("preserving", "保存现场")

    def word(self, lang: Lang) -> str:
        return self.value[1] if lang is Lang.ZH else self.value[0]


class Odd(enum.Enum):
    """What stands where a directory or a regular file should (``{odd}`` in a template):
    evidence is never read through a link (issue 21)."""

    LINK_TO = ("a symbolic link (to {target})", "指向 {target} 的符号链接")
    LINK = ("a symbolic link", "符号链接")
    NOT_DIR = ("not a directory", "非目录")
    NOT_REGULAR = ("not a regular file", "非普通文件")

    def word(self, lang: Lang) -> str:
        return self.value[1] if lang is Lang.ZH else self.value[0]


class Flaw(enum.Enum):
    """One kind of problem: (English template, Chinese template, unfinished?).

    ``unfinished``: the runner, a cleanup or a retry died part-way and ``skgate recover``
    finishes the attempt; otherwise the evidence changed (issue 12: told apart, never
    confused). Templates take ``{where}`` and the problem's own values; ``{what}`` is the
    :class:`Phase` in the template's language."""

    REMOVED = ("{where}: removed after {what}", "{where}：{what}后被删除", False)
    UNREADABLE_WHY = ("{where}: unreadable ({why})", "{where}：无法读取（{why}）", False)
    UNREADABLE = ("{where}: unreadable", "{where}：无法读取", False)
    REPLACED = (
        "{where}: replaced by a non-regular file after {what}",
        "{where}：{what}后被替换为非普通文件",
        False,
    )
    RESIZED = (
        "{where}: changed after {what} (size {size}, sealed {sealed})",
        "{where}：{what}后被改动（现在大小 {size}，{what}时 {sealed}）",
        False,
    )
    HASH_DIFFERS = (
        "{where}: changed after {what} (sha256 differs)",
        "{where}：{what}后被改动（sha256 不同）",
        False,
    )
    MANIFEST_BAD = ("{where}: {why}", "{where}：清单不可用：{why}", False)
    OTHER_ATTEMPT = (
        "{where}: names attempt {named} (copied from elsewhere?)",
        "{where}：记录的是尝试 {named}（从别处复制而来？）",
        False,
    )
    SEAL_NOT_REGULAR = ("{where}: not a regular file", "{where}：不是普通文件", False)
    SCENE_NO_MANIFEST = (
        "{where}: scene added after sealing has no manifest.json",
        "{where}：封存后加入的现场没有 manifest.json",
        False,
    )
    LINK_CHANGED = (
        "{where}: preserved link changed or removed",
        "{where}：保存的链接被改动或删除",
        False,
    )
    ADDED = ("{where}: added after sealing", "{where}：封存后被加入", False)
    NOT_REGULAR = (
        "{where}: not a regular file (evidence never holds links)",
        "{where}：不是普通文件（证据从不包含链接）",
        False,
    )
    OVERLONG = (
        "{where}: line {number} is longer than {limit} bytes "
        "(a damaged record, refused and never read)",
        "{where}：第 {number} 行超过 {limit} 字节（损坏的记录，已拒绝，从不读取）",
        False,
    )
    CONTROL_DAMAGED = (
        "{where}: damaged and not sealed ({why}); it was altered, or written by a skgate "
        "without whole-file writes: inspect it by hand",
        "{where}：已损坏且未封存（{why}）；它被改动过，或由不做整文件写入的 skgate 写出："
        "请手工检查",
        False,
    )
    NO_CONTROL = (
        "{where}: unfinished: no control.json (the runner died before freezing its controls, "
        "or it was removed); " + _RECOVER_EN,
        "{where}：未完成：没有 control.json（运行器在冻结控制参数前退出，或该文件被删除）；"
        + _RECOVER_ZH,
        True,
    )
    SEALING_INTERRUPTED = (
        "{where}: interrupted while sealing: it has a verdict but no seal.json (the runner "
        "died before sealing); " + _RECOVER_EN,
        "{where}：封存时被中断：已有结论但没有 seal.json（运行器在封存前退出）；" + _RECOVER_ZH,
        True,
    )
    DISOWNED = (
        "{where}: {names} written by another process while the run ran (its runner found "
        "them at its final names, wrote none of its own and sealed nothing); not recovered: "
        "a seal would vouch for evidence its runner did not write",
        "{where}：{names} 在运行期间被其他进程写入（其运行器在写最终文件时发现它们已存在，"
        "未写入自己的最终文件，也未封存）；不恢复：封存会为不是其运行器写入的证据担保",
        False,
    )
    UNRECORDED = (
        "{where}: verdict.json is not the verdict its runner recorded (the runner is gone and "
        "its journal records no verdict with this content: copied from another attempt, "
        "edited, or written by hand?); not recovered: a seal would vouch for evidence its "
        "runner did not write",
        "{where}：verdict.json 不是其运行器记录的结论（运行器已不在，且其日志中没有内容与之相同的"
        "结论记录：从其他尝试复制而来、被编辑，还是手工写入的？）；不恢复：封存会为不是其运行器"
        "写入的证据担保",
        False,
    )
    NEVER_FINISHED = (
        "{where}: never finished: no verdict.json and its runner is gone (it died before the "
        "verdict was written); " + _RECOVER_EN,
        "{where}：从未完成：没有 verdict.json，且运行器已不在（在写出结论前退出）；" + _RECOVER_ZH,
        True,
    )
    SCENE_UNFINISHED = (
        "{where}: unfinished: a scene without its manifest.json (a cleanup or retry was "
        "interrupted while preserving it); " + _RECOVER_EN,
        "{where}：未完成：现场缺少 manifest.json（cleanup 或 retry 在保存现场时被中断）；"
        + _RECOVER_ZH,
        True,
    )
    SCENE_TEMP = (
        "{where}: unfinished: a temporary file left when a cleanup or retry was interrupted "
        "while preserving a scene; " + _RECOVER_EN,
        "{where}：未完成：cleanup 或 retry 在保存现场时被中断，留下了临时文件；" + _RECOVER_ZH,
        True,
    )
    SEAL_TEMP = (
        "{where}: a temporary file left when the runner was interrupted while sealing "
        "(never evidence); " + _RECOVER_EN,
        "{where}：运行器在封存时被中断留下的临时文件（从来不是证据）；" + _RECOVER_ZH,
        True,
    )

    # The root's entries (issue 21): each is named, since the walks never follow them.
    READ_THROUGH_LINK = (
        "{where}: is {odd}; evidence is never read through a link",
        "{where}：实为{odd}；证据从不经由链接读取",
        False,
    )
    ATTEMPT_THROUGH_LINK = (
        "{where}: is {odd}; an attempt is never read or recovered through a link",
        "{where}：实为{odd}；从不经由链接读取或恢复尝试",
        False,
    )
    LEDGER_THROUGH_LINK = (
        "{where}: is {odd}; the ledger is never read through a link",
        "{where}：实为{odd}；从不经由链接读取账本",
        False,
    )
    LEDGER_REMOVED = (
        "{where}: removed, though {count} sealed attempt(s) of this root were indexed in it "
        "(the first run into a root creates it, and nothing of skgate removes it)",
        "{where}：已被删除，但本根目录有 {count} 个已封存的尝试曾登记在其中"
        "（首次运行到该根目录时创建，skgate 从不删除它）",
        False,
    )
    # The ledger's lines (``ledger.check_chain``, C4: an append-only hash chain).
    LEDGER_LINE_TOO_LONG = (
        "{where}: line {number} is longer than {limit} bytes (damaged, not read)",
        "{where}：第 {number} 行超过 {limit} 字节（已损坏，未读取）",
        False,
    )
    LEDGER_NOT_JSON = (
        "{where}: line {number} is not a JSON entry (torn or edited)",
        "{where}：第 {number} 行不是 JSON 条目（残缺或被编辑）",
        False,
    )
    LEDGER_WRONG_SCHEMA = (
        "{where}: line {number} is not a '{schema}' entry",
        "{where}：第 {number} 行不是 '{schema}' 条目",
        False,
    )
    LEDGER_CHAIN_BROKEN = (
        "{where}: line {number} breaks the hash chain (the line before it was changed, "
        "removed or reordered)",
        "{where}：第 {number} 行断开了哈希链（它之前的行被改动、删除或调换了顺序）",
        False,
    )
    LEDGER_TORN = (
        "{where}: line {number} is torn: an append stopped before its line end (its writer "
        "was killed or the disk filled) and no entry depends on it; run 'skgate recover "
        "{root}' to cut it back",
        "{where}：第 {number} 行残缺：一次追加在写到行尾前中断（写入者被终止或磁盘已满），"
        "且没有条目依赖它；运行 'skgate recover {root}' 将其截去",
        True,
    )
    # The ledger against the attempts: seals, scenes, presence.
    INDEXED_GONE = (
        "{where}: attempt {name} is indexed but its directory is gone",
        "{where}：尝试 {name} 已登记，但其目录已不存在",
        False,
    )
    INDEXED_OTHER = (
        "{where}: attempt {name} is indexed, but its directory holds another attempt's "
        "evidence (its journal names another runner than the ledger: copied from another "
        "root?)",
        "{where}：尝试 {name} 已登记，但其目录中是另一个尝试的证据（其日志记录的运行器与账本"
        "不同：从另一个根目录复制而来？）",
        False,
    )
    LEDGER_SEAL_REMOVED = (
        "{where}: removed (the ledger recorded it)",
        "{where}：已被删除（账本记录过它）",
        False,
    )
    LEDGER_DIFFERS = (
        "{where}: differs from the one the ledger recorded",
        "{where}：与账本记录的不同",
        False,
    )
    NOT_IN_LEDGER = (
        "{where}: not in the ledger (added by hand?)",
        "{where}：不在账本中（手工加入？）",
        False,
    )
    SEAL_NOT_RECORDED = (
        "{where}: not recorded in the ledger (re-made?)",
        "{where}：账本中没有记录（被重新生成？）",
        False,
    )
    LEDGER_NO_END = (
        "{where}: interrupted while sealing: seal.json matches the files but the ledger has "
        "no end entry; run 'skgate recover {attempt}' to index it",
        "{where}：封存时被中断：seal.json 与文件相符，但账本没有结束条目；运行 "
        "'skgate recover {attempt}' 将其登记",
        True,
    )
    SCENE_NOT_INDEXED = (
        "{where}: unfinished: not in the ledger (a cleanup or retry was interrupted before "
        "indexing it); " + _RECOVER_EN,
        "{where}：未完成：不在账本中（cleanup 或 retry 在登记前被中断）；" + _RECOVER_ZH,
        True,
    )

    @property
    def unfinished(self) -> bool:
        return bool(self.value[2])


@record
class SealProblem:
    """One problem: where (the attempt-relative name ``verify`` prints, or the ledger's
    path), what kind, and the values its words name (``why``, ``size``, ``attempt`` ...),
    as text, or an :class:`Odd` for ``{odd}``. ``within``: the matrix arm's root it was
    found in (``runs/<arm>``), said first."""

    where: str
    flaw: Flaw
    values: tuple[tuple[str, str | Odd], ...] = ()
    phase: Phase = Phase.SEALING
    within: str = ""

    def text(self, lang: Lang = Lang.EN) -> str:
        template = self.flaw.value[1] if lang is Lang.ZH else self.flaw.value[0]
        plain = {k: v for k, v in self.values if isinstance(v, str)}
        words = {k: v.word(lang).format(**plain) for k, v in self.values if isinstance(v, Odd)}
        said = template.format(where=self.where, what=self.phase.word(lang), **plain, **words)
        if not self.within:
            return said
        return f"{self.within}{'：' if lang is Lang.ZH else ': '}{said}"

    @property
    def unfinished(self) -> bool:
        return self.flaw.unfinished

    def __str__(self) -> str:
        return self.text(Lang.EN)


def problem(
    where: str, flaw: Flaw, phase: Phase = Phase.SEALING, /, **values: object
) -> SealProblem:
    """A :class:`SealProblem`, its values given by name (an :class:`Odd` kept as it is)."""
    kept = tuple((k, v if isinstance(v, Odd) else str(v)) for k, v in values.items())
    return SealProblem(where, flaw, kept, phase)
