"""Lint a report written by anyone (a person, an agent) against C7, in English and Chinese.

Rules (each finding prints as ``FILE:LINE: RULE message``):

- ``C7-failure-claim``: a claim that compilation failed ("compile failed", "operator X is
  not supported", 编译失败, ...) when the file (or the given attempt) has no naturally
  returned failure. Without ``--attempt`` a line may make the claim only if it says the
  failure came after natural return ("naturally returned final compiler failures",
  自然返回的最终编译失败); with ``--attempt`` the attempt's verdict decides.
- ``C1-unlabelled-error-files``: error-named files described without saying they are
  provisional (C1), or described as final evidence when there was no naturally returned
  failure.
- ``C1-hang-by-age``: a hang or stall claim that rests on process age, quiet output, CPU
  use or file counts (C1: none of these is hang evidence).
- ``C2-hang-claim``: any other hang or stall claim: the contract has no hang state; a live
  compile is in progress until it returns or the frozen top-level timeout fires.

What is not a claim: negated phrases ("not a compile failure", 不是编译失败), quoted
mentions (`"compile failed"`, 「编译失败」), and fenced code blocks (quoted evidence, such
as the verbatim ``[summary]`` lines of a skgate report).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from skgate.model.phrases import C7
from skgate.model.records import State, Verdict

RULE_FAILURE = "C7-failure-claim"
RULE_ERROR_FILES = "C1-unlabelled-error-files"
RULE_HANG_AGE = "C1-hang-by-age"
RULE_HANG = "C2-hang-claim"

_FAILURE = re.compile(
    r"\bcompil(?:e|es|ed|ing|ation|ations|er|ers)\b(?:\s+(?!not\b)[\w`'\".-]+){0,3}?\s+"
    r"(?:has\s+|have\s+|had\s+|was\s+|were\s+)?(?:failed|fails|failure|failures|broke|crashed)\b"
    r"|\bfail(?:ed|s|ing)?\s+to\s+compile\b"
    r"|\b(?:operator|op|kernel)s?\b(?:\s+[\w`'\".-]+){0,3}?\s+"
    r"(?:failed|fails|failure|(?:is|are)\s+unsupported|(?:is|are)\s+not\s+supported)\b"
    r"|\bunsupported\s+(?:operator|op|kernel)s?\b"
    r"|编译失败|编译出错|编译报错|编译不通过|编译未通过"
    r"|算子不支持|不支持(?:该|此|这个)?算子|算子.{0,8}?(?:编译)?失败",
    re.IGNORECASE,
)
_NATURAL = re.compile(r"\bnatural(?:ly)?\s+return|自然返回", re.IGNORECASE)

_ERROR_FILES = re.compile(
    r"_compile_error\.log|\bcompile_error\b|\berror[- ]named\b"
    r"|\berror\s+(?:log|logs|files?)\b|error\s*命名|错误日志|错误文件|error\s*日志|error\s*文件",
    re.IGNORECASE,
)
_PROVISIONAL = re.compile(
    r"\bprovisional|\btentative|\bnot\s+(?:yet\s+)?(?:final|evidence)"
    r"|暂时性|临时|非最终|不是最终|不是(?:失败)?证据",
    re.IGNORECASE,
)
_FINAL = re.compile(
    r"\bnatural(?:ly)?\s+return|\bfinal\s+(?:compiler\s+)?evidence|自然返回|最终(?:编译)?证据",
    re.IGNORECASE,
)

_HANG = re.compile(
    r"\b(?:hang|hangs|hung|hanging|stall|stalls|stalled|stalling|stuck|deadlock(?:s|ed)?)\b"
    r"|卡住|卡死|挂起|僵死|假死|停滞|无响应|不动了",
    re.IGNORECASE,
)
_HANG_BASIS = re.compile(
    r"\b\d+(?:\.\d+)?\s*(?:s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|days?)\b"
    r"|\b(?:too|so|very)\s+long\b|\blong(?:er)?\s+than\b|\bfor\s+(?:ages|hours|minutes)\b"
    r"|\bno\s+(?:new\s+)?(?:output|logs?|progress|messages?|lines?)\b|\bquiet\b|\bsilent\b"
    r"|\bidle\b|\bcpu\b|\bfile\s+counts?\b|\bnothing\s+(?:printed|written|logged)\b"
    r"|\bprocess\s+age\b|\b(?:old|older)\b|\bhas\s?n[o']t\s+(?:printed|logged|written)"
    r"|运行了|跑了|运行时间|太久|很久|好久|超过.{0,6}?(?:分钟|小时|秒)|\d+\s*(?:分钟|小时|秒)"
    r"|没有(?:新的?)?(?:输出|日志)|无输出|日志不动|日志没有更新|安静|进程年龄|文件数",
    re.IGNORECASE,
)

_NEG_EN = {
    "not",
    "no",
    "never",
    "nor",
    "without",
    "cannot",
    "isn't",
    "aren't",
    "wasn't",
    "weren't",
    "don't",
    "doesn't",
    "didn't",
    "mustn't",
    "shouldn't",
    "neither",
}
_NEG_ZH = re.compile(
    r"(?:不是|并非|并不是|不能|不可|不要|不应|不得|不代表|不等于|不意味着|不算|不构成|勿|别|而非|非|无法判定为|不能说|没有)"
    r"[^，。；！？,.;!?]{0,6}$"
)
_CLAUSE_END = re.compile(r"[.;!?。；！？:：]")
_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|“[^”]*”|「[^」]*」|『[^』]*』")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    message: str

    def format(self) -> str:
        return f"{self.path}:{self.line}: {self.rule} {self.message}"


def _negated(line: str, start: int) -> bool:
    """A negation just before ``start`` in the same clause ("not a ...", 不是...)."""
    before = line[:start]
    cut = max((m.end() for m in _CLAUSE_END.finditer(before)), default=0)
    clause = before[cut:]
    words = re.findall(r"[\w']+", clause.lower())
    if any(w in _NEG_EN for w in words[-4:]):
        return True
    return _NEG_ZH.search(clause) is not None


def _in_spans(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def _claims(pattern: re.Pattern[str], line: str, spans: list[tuple[int, int]]) -> bool:
    for m in pattern.finditer(line):
        if _in_spans(m.start(), m.end(), spans) or _negated(line, m.start()):
            continue
        return True
    return False


def _allowed(verdict: Verdict | None) -> bool | None:
    if verdict is None:
        return None
    return verdict.state is State.FAILED and verdict.natural_return


def lint_lines(
    lines: Iterable[str], path: str = "<text>", verdict: Verdict | None = None
) -> list[Finding]:
    """Check report lines. ``verdict``: the attempt the report is about, if known."""
    allowed = _allowed(verdict)
    state = verdict.state.value if verdict is not None else None
    findings: list[Finding] = []
    fence: str | None = None
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        stripped = line.lstrip()
        opener = re.match(r"(`{3,}|~{3,})", stripped)
        if opener:
            mark = opener.group(1)
            if fence is None:
                fence = mark
                continue
            if mark[0] == fence[0] and len(mark) >= len(fence):
                fence = None
                continue
        if fence is not None:
            continue  # quoted evidence, e.g. verbatim [summary] lines

        spans = [m.span() for m in _QUOTED.finditer(line)]

        def add(rule: str, message: str, lineno: int = n) -> None:
            findings.append(Finding(path, lineno, rule, message))

        if _claims(_FAILURE, line, spans):
            if allowed is False:
                add(
                    RULE_FAILURE,
                    f"claims a compile failure, but the attempt's verdict is {state!r}, "
                    "not a naturally returned failure (C7: say "
                    f"'{C7['interruption']['en']}', 'in progress' or "
                    "'unknown' as the verdict says)",
                )
            elif allowed is None and not _NATURAL.search(line):
                add(
                    RULE_FAILURE,
                    "claims a compile failure without a naturally returned failure (C7: "
                    f"only '{C7['final_failure']['en']}' / "
                    f"{C7['final_failure']['zh']} after natural return)",
                )

        if _claims(_ERROR_FILES, line, spans):
            provisional = _PROVISIONAL.search(line) is not None
            final = _FINAL.search(line) is not None
            if allowed is False and final and not provisional:
                add(
                    RULE_ERROR_FILES,
                    f"describes error-named files as final evidence, but the attempt's "
                    f"verdict is {state!r} (C1: they are provisional error-named files)",
                )
            elif allowed is not True and not provisional and not final:
                add(
                    RULE_ERROR_FILES,
                    "mentions error-named files without saying they are provisional (C1: "
                    "'provisional error-named files' / 暂时性 error 命名文件)",
                )

        if _claims(_HANG, line, spans):
            if _HANG_BASIS.search(line):
                add(
                    RULE_HANG_AGE,
                    "hang/stall claim rests on process age, quiet output, CPU or file "
                    "counts (C1: none of these is hang evidence)",
                )
            else:
                add(
                    RULE_HANG,
                    "hang/stall claim: the contract has no hang state (C2); a live compile "
                    "is in progress until natural return or the frozen top-level timeout",
                )
    return findings


def lint_text(text: str, path: str = "<text>", verdict: Verdict | None = None) -> list[Finding]:
    return lint_lines(text.splitlines(), path, verdict)
